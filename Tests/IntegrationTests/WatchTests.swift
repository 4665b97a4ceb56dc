import Foundation
import Testing

/// `vlogger watch` driven as an installer would drive it, in a real terminal: tmux (a private server) starts it
/// in a 150 × 40 pane, capture-pane reads the screen, send-keys presses q. Needs tmux; CI sets
/// VLOGGER_REQUIRE_TMUX=1 so a missing tmux fails there instead of skipping.
@Suite struct WatchTests {
    typealias CLI = CLITests
    @Test func watchDrawsTheFieldInPlaceAndQuitsOnQ() throws {
        let tmux = ["/usr/bin/tmux", "/bin/tmux", "/usr/local/bin/tmux"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let tmux else {
            #expect(
                ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_TMUX"] != "1",
                "tmux is required here (VLOGGER_REQUIRE_TMUX=1)")
            return
        }
        let work = try CLI.scratch(
            "watch", copying: ["vlogger.toml", "rules.toml", "assets.csv", "demo-field", "demo-field-dock"])
        defer { try? FileManager.default.removeItem(at: work) }
        let socket = "vlogger-watch-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let exitFile = work.appendingPathComponent("exit")
        func t(_ args: [String]) throws -> (code: Int32, out: String, err: String) {
            try ServiceTests.shell("exec \"$1\" -L \"$2\" \"${@:3}\"", [tmux, socket] + args)
        }
        defer { _ = try? t(["kill-server"]) }  // this test's own server only (-L)
        let command =
            "cd '\(work.path)' && '\(try CLI.binary().path)' watch --config vlogger.toml --reader-id cage-room --interval 200ms --window 5; echo \"exit=$?\" > '\(exitFile.path)'"
        // The server tmux starts here would keep every descriptor it inherits, the test's output pipes among
        // them: they are closed first and its output goes to a file.
        let started = try ServiceTests.shell(
            """
            for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
            exec "$1" -L "$2" new-session -d -x 150 -y 40 -s w "$3" >"$4" 2>&1 </dev/null
            """,
            [tmux, socket, command, work.appendingPathComponent("tmux.log").path])
        #expect(started.code == 0, "\(started.err)")

        // The screen after a few cycles: the eight demo tags with their read rate and decoded values.
        var screen = ""
        let end = Date().addingTimeInterval(20)
        while Date() < end {
            screen = (try? t(["capture-pane", "-p", "-t", "w"]).out) ?? ""
            if screen.contains("cycle 6 ") { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(screen.contains("vlogger watch — reader cage-room"), "\(screen)")
        // The register's names (Config/assets.csv: CAGE-12, "Cold cage 12") and the plan's units (°C).
        #expect(
            screen.contains("E008010000004212  CAGE-12 Cold cage 12   Fujitsu MB89R118")
                && screen.contains("5/5     100 %"),
            "\(screen)")
        #expect(screen.contains("label=TOOL-077") && screen.contains("tag_asset_id=AS-00042"), "\(screen)")
        #expect(screen.contains(" °C") && screen.contains("(Europe/Berlin)"), "\(screen)")
        #expect(screen.contains("air time") && screen.contains("q: quit"))
        // Redrawn in place: one title line on the screen, not one per cycle.
        #expect(screen.components(separatedBy: "vlogger watch — ").count == 2, "\(screen)")

        // q quits with exit code 0.
        _ = try t(["send-keys", "-t", "w", "q"])
        let quitBy = Date().addingTimeInterval(10)
        while Date() < quitBy, !FileManager.default.fileExists(atPath: exitFile.path) {
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(((try? String(contentsOf: exitFile, encoding: .utf8)) ?? "").contains("exit=0"))
    }
}
