import Foundation
import Testing

/// Chromium for the pages' tests: `$VLOGGER_CHROMIUM`, else Debian's `/usr/bin/chromium`. In CI
/// (VLOGGER_REQUIRE_CHROMIUM=1) it must be there.
func chromiumPath() -> String? {
    let env = ProcessInfo.processInfo.environment
    if let p = env["VLOGGER_CHROMIUM"], FileManager.default.isExecutableFile(atPath: p) { return p }
    if FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") { return "/usr/bin/chromium" }
    return env["VLOGGER_REQUIRE_CHROMIUM"] == "1" ? "/usr/bin/chromium" : nil
}

/// The operator's pages in a real browser, and the alarm state as a plant sees it.
@Suite(.serialized) struct PagesTests {
    typealias CLI = CLITests
    typealias Fault = SyncFaultTests

    /// The status page, a tag's page and an audit report in headless Chromium (driven over the DevTools protocol:
    /// Support/cdp_pages.py) at 1280 and 400 CSS pixels: nothing is wider than the viewport at 400 px (the tables
    /// become cards), the pages name assets and link to tags, and the alarm of the demo's rising cold-room
    /// temperature is a red row. The screenshots go to `$VLOGGER_SCREENSHOTS` when set (docs/screenshots holds a
    /// set made this way).
    @Test(.enabled(if: chromiumPath() != nil, "no chromium here (Debian: apt install chromium)"))
    func thePagesFitAPhoneInABrowser() throws {
        let s = try AgentCLITests.setup(interval: "1s", batch: 50, flush: "500ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let log = s.dir.appendingPathComponent("gw.log")
        // Twenty times faster than the wall: the cold cage (Config/demo-field/scenario.json, 21.5 °C rising 900 °C an
        // hour) passes the rule's 24 °C after 10 s of run time.
        let pid = try Fault.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --listen 127.0.0.1:0 --clock-rate 20 --duration 2h"#,
            [s.dir.path, try CLI.binary().path, s.config], stdout: "/dev/null", stderr: log.path)
        defer {
            kill(pid, SIGTERM)
            _ = Fault.wait(pid)
        }
        let port = try #require(ServiceTests.listenPort(log), "the service did not listen")
        let audit = try CLI.run([
            "audit", "run", "--config", s.config, "--store", s.store, "--location", "Cold room, cage 12",
            "--fast-clock",
        ])
        #expect(audit.code == 0, "\(audit.err)")
        Thread.sleep(forTimeInterval: 3)
        let out =
            ProcessInfo.processInfo.environment["VLOGGER_SCREENSHOTS"]
            ?? s.dir.appendingPathComponent("shots")
            .path
        let script = CLI.root.appendingPathComponent("Tests/IntegrationTests/Support/cdp_pages.py").path
        let run = try Fault.shell(
            #"python3 "$1" "$2" "http://127.0.0.1:$3" "$4" status=/ tag=/tags/E008010000004212 audit=/audits/1"#,
            [script, try #require(chromiumPath()), String(port), out])
        #expect(run.code == 0, "\(run.err)")
        let pages = run.out.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(pages.count == 6, "\(run.out)\(run.err)")
        for p in pages {
            let name = "\(p["name"] ?? "?") at \(p["width"] ?? "?") px"
            // Nothing runs off the right edge: the document is no wider than the viewport, no element ends past it.
            #expect(
                (p["scroll_width"] as? Int ?? .max) <= (p["client_width"] as? Int ?? 0)
                    && (p["overflow"] as? [String] ?? ["?"]).isEmpty, "\(name): \(p)")
            #expect(FileManager.default.fileExists(atPath: p["file"] as? String ?? ""), "\(name)")
        }
        let status = pages.filter { $0["name"] as? String == "status" }
        #expect(status.allSatisfy { ($0["alarms"] as? Int ?? 0) >= 1 && ($0["links"] as? Int ?? 0) >= 8 }, "\(status)")
        let report = pages.filter { $0["name"] as? String == "audit" }
        #expect(report.allSatisfy { ($0["h1"] as? String) == "Audit 1: Cold room, cage 12" }, "\(report)")
        print(
            "pages: "
                + pages.map { "\($0["name"] ?? "")@\($0["width"] ?? "") \($0["scroll_width"] ?? "")px" }
                .joined(separator: ", "))
    }

    /// An alarm as a state, as the plant sees it: a cold cage whose temperature swings between 21 and 25 °C
    /// (a scenario signal: 23 °C ± 2 °C, one swing a minute of run time) past a rule's 24 °C. When the violation
    /// event is stored, the status page already lists it as an active alarm (red, with its since time and the
    /// value) and /metrics has `vlogger_rule_violation` at 1 and the temperature above 24; when the temperature
    /// is back under 24, a violation_ended event is stored, the page has no alarm and the gauge is gone.
    @Test func anAlarmStartsAndEndsOnThePageAndInTheMetrics() throws {
        let dir = try CLI.scratch("alarm", copying: [])
        defer { try? FileManager.default.removeItem(at: dir) }
        let field = dir.appendingPathComponent("field")
        try FileManager.default.createDirectory(at: field, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: CLI.root.appendingPathComponent("Config/demo-field/mb89r118-cage-12.json"),
            to: field.appendingPathComponent("mb89r118-cage-12.json"))
        try #"""
        {"vlogger-scenario": 1, "description": "the cold cage swings between 21 and 25 °C", "steps": [],
         "signals": [{"uid": "E008010000004212", "block": "0xF8", "byte": 0, "type": "i16le", "scale": 0.01,
                      "start": 23.0, "amplitude": 2.0, "period": "60s"}]}
        """#.write(to: field.appendingPathComponent("scenario.json"), atomically: true, encoding: .utf8)
        try """
        [gateway]
        id = "gw-alarm"
        time-zone = "Europe/Berlin"
        [[reader]]
        id = "cage-room"
        driver = "sim"
        field = "field"
        location = "Cold room"
        [polling]
        interval = "1s"
        [store]
        path = "vlogger.db"
        batch-size = 10
        flush-interval = "1s"
        [rules]
        file = "rules.toml"
        register = "assets.csv"
        [[plan]]
        name = "cage"
        match.model = "MB89R118"
          [[plan.read]]
          first = 0xF8
          [[plan.field]]
          name = "temperature"
          block = 0xF8
          type = "i16le"
          scale = 0.01
          unit = "°C"
        """.write(to: dir.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        try """
        [[rule]]
        name = "cold cage too warm"
        kind = "range"
        field = "temperature"
        max = 24.0
        severity = "critical"
        """.write(to: dir.appendingPathComponent("rules.toml"), atomically: true, encoding: .utf8)
        try "uid,asset_id,description,location\nE008010000004212,CAGE-12,Cold cage 12,Cold room\n".write(
            to: dir.appendingPathComponent("assets.csv"), atomically: true, encoding: .utf8)
        let log = dir.appendingPathComponent("gw.log")
        // Ten times faster than the wall: a cycle every 100 ms, a swing every 6 s.
        let pid = try Fault.spawn(
            #"cd "$1" && exec "$2" run --config vlogger.toml --listen 127.0.0.1:0 --clock-rate 10 --duration 2h"#,
            [dir.path, try CLI.binary().path], stdout: "/dev/null", stderr: log.path)
        defer {
            kill(pid, SIGTERM)
            _ = Fault.wait(pid)
        }
        let port = try #require(ServiceTests.listenPort(log), "the service did not listen")
        let started = Date()
        func at() -> String { String(format: "t+%.1fs", Date().timeIntervalSince(started)) }
        func stored(_ kind: String) throws -> [[String: Any]] {
            let r = try ServiceTests.get(port, "/api/v1/events?kind=\(kind)")
            return MQTTTests.object(r.body)?["items"] as? [[String: Any]] ?? []
        }
        /// `vlogger_rule_violation` of the rule, and the temperature, from /metrics (nil: not there).
        func metrics() throws -> (violation: Double?, temperature: Double?) {
            let text = try ServiceTests.get(port, "/metrics").body
            func value(_ prefix: String, _ contains: String) -> Double? {
                text.split(separator: "\n").first { $0.hasPrefix(prefix) && $0.contains(contains) }
                    .flatMap { Double($0.split(separator: " ").last ?? "") }
            }
            return (
                value("vlogger_rule_violation{", #"rule="cold cage too warm""#),
                value("vlogger_field_value{", #"field="temperature""#)
            )
        }
        var timeline: [String] = []
        // 1. The first violation event stored: the page and /metrics show it.
        var violation: [String: Any]?
        let deadline = Date().addingTimeInterval(40)
        while violation == nil, Date() < deadline {
            violation = try stored("violation").first
            if violation == nil { Thread.sleep(forTimeInterval: 0.1) }
        }
        let v = try #require(violation, "no violation event within 40 s")
        let page = try ServiceTests.get(port, "/").body
        let m = try metrics()
        timeline.append("\(at()): violation event at \(v["time"] ?? "?"): \(v["detail"] ?? "")")
        timeline.append(
            "\(at()): page lists it as an active alarm: \(page.contains("<tr class=\"alarm\"><td data-label=\"severity\">critical</td><td data-label=\"rule\">cold cage too warm</td>")); /metrics: vlogger_rule_violation \(m.violation.map { "\($0)" } ?? "absent"), temperature \(m.temperature.map { "\($0)" } ?? "absent")"
        )
        #expect(
            page.contains(
                "<tr class=\"alarm\"><td data-label=\"severity\">critical</td><td data-label=\"rule\">cold cage too warm</td><td data-label=\"asset\"><a href=\"/tags/E008010000004212\">CAGE-12 — Cold cage 12</a>"
            ), "\(page)")
        #expect(page.contains("+01:00 (for ") || page.contains("+02:00 (for "), "the since time, local with its offset")
        #expect(m.violation == 1 && (m.temperature ?? 0) > 24, "\(m)")
        // 2. The temperature back under 24 °C: violation_ended is stored, the alarm and the gauge are gone.
        var ended: [String: Any]?
        let later = Date().addingTimeInterval(40)
        while ended == nil, Date() < later {
            ended = try stored("violation_ended").first
            if ended == nil { Thread.sleep(forTimeInterval: 0.1) }
        }
        let e = try #require(ended, "no violation_ended event within 40 s")
        let after = try ServiceTests.get(port, "/").body
        let m2 = try metrics()
        timeline.append("\(at()): violation_ended event at \(e["time"] ?? "?"): \(e["detail"] ?? "")")
        timeline.append(
            "\(at()): page without alarms: \(after.contains("No rule is violated now.")); /metrics: vlogger_rule_violation \(m2.violation.map { "\($0)" } ?? "absent"), temperature \(m2.temperature.map { "\($0)" } ?? "absent")"
        )
        #expect(e["name"] as? String == "cold cage too warm" && (e["detail"] as? String ?? "").contains("again"))
        #expect(after.contains("No rule is violated now.") && m2.violation == nil, "\(m2)")
        print("alarm timeline:\n  " + timeline.joined(separator: "\n  "))
    }

    /// Issue 47, item 2: a page left open while the gateway dies. On 6b52d4c the status page still said "store
    /// committing · readers answering" in green 75 s after the service was killed (its script swallowed the failed
    /// refreshes), and a value's "read" time was HH:MM only. Now, in headless Chromium (Support/cdp_stale.py): while
    /// the gateway lives, each value in the field tables has its age, counting; after a SIGKILL the page turns grey
    /// under "No contact with the gateway since HH:MM:SS" within two refresh intervals (the page refreshes every
    /// 10 s, and at once when its stream breaks), and the ages go on counting. The screenshot goes to
    /// `$VLOGGER_SCREENSHOTS` when set.
    @Test(.enabled(if: chromiumPath() != nil, "no chromium here (Debian: apt install chromium)"))
    func aPageTurnsGreyWhenTheGatewayDies() throws {
        let s = try AgentCLITests.setup(interval: "1s", batch: 50, flush: "500ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let log = s.dir.appendingPathComponent("gw.log")
        let pid = try Fault.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --listen 127.0.0.1:0"#,
            [s.dir.path, try CLI.binary().path, s.config], stdout: "/dev/null", stderr: log.path)
        var alive = true
        defer {
            if alive {
                kill(pid, SIGKILL)
                _ = Fault.wait(pid)
            }
        }
        let port = try #require(ServiceTests.listenPort(log), "the service did not listen")
        Thread.sleep(forTimeInterval: 3)
        let out =
            ProcessInfo.processInfo.environment["VLOGGER_SCREENSHOTS"] ?? s.dir.appendingPathComponent("shots").path
        try? FileManager.default.removeItem(atPath: out + "/loaded")
        try? FileManager.default.removeItem(atPath: out + "/killed")
        let script = CLI.root.appendingPathComponent("Tests/IntegrationTests/Support/cdp_stale.py").path
        let report = s.dir.appendingPathComponent("stale.jsonl").path
        let browser = try Fault.spawn(
            #"exec python3 "$@""#, [script, try #require(chromiumPath()), "http://127.0.0.1:\(port)/", out],
            stdout: report, stderr: s.dir.appendingPathComponent("stale.err").path)
        let end = Date().addingTimeInterval(40)
        while !FileManager.default.fileExists(atPath: out + "/loaded") && Date() < end {
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(FileManager.default.fileExists(atPath: out + "/loaded"), "the page did not load")
        kill(pid, SIGKILL)
        _ = Fault.wait(pid)
        alive = false
        _ = FileManager.default.createFile(atPath: out + "/killed", contents: Data("killed\n".utf8))
        #expect(
            Fault.wait(browser) == 0,
            "\((try? String(contentsOfFile: s.dir.appendingPathComponent("stale.err").path, encoding: .utf8)) ?? "")")
        let lines = ((try? String(contentsOfFile: report, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let before = try #require(lines.first { $0["phase"] as? String == "alive" }, "\(lines)")
        let after = try #require(lines.first { $0["phase"] as? String == "dead" }, "\(lines)")
        #expect(before["stale"] as? Bool == false && (before["banner"] as? String ?? "x").isEmpty, "\(before)")
        // Each value's age: "N s" (the script's count, as the server writes it).
        let ages = before["ages"] as? [String] ?? []
        #expect(!ages.isEmpty && ages.allSatisfy { $0.hasSuffix(" s") || $0.hasSuffix(" min") }, "\(before)")
        #expect(after["stale"] as? Bool == true, "\(after)")
        #expect(
            (after["seconds"] as? Double ?? 99) <= 20, "grey after \(after["seconds"] ?? "?") s (two refreshes: 20 s)")
        let banner = after["banner"] as? String ?? ""
        #expect(
            banner.range(of: #"^No contact with the gateway since \d\d:\d\d:\d\d"#, options: .regularExpression) != nil,
            "\(banner)")
        #expect((after["filter"] as? String ?? "").contains("grayscale"), "\(after)")
        // The ages went on counting while the gateway was gone.
        func seconds(_ text: String) -> Int { Int(text.split(separator: " ").first ?? "") ?? 0 }
        let later = after["ages"] as? [String] ?? []
        #expect(
            later.count == ages.count
                && zip(ages, later).allSatisfy { seconds($1) > seconds($0) || $1.hasSuffix("min") },
            "\(ages) then \(later)")
        #expect(FileManager.default.fileExists(atPath: out + "/dead.png"))
        print("dead gateway: grey after \(after["seconds"] ?? "?") s; \(banner); ages \(ages) then \(later)")
    }
}
