import Foundation
import Testing

/// `--reader pcsc` end to end through a real pcscd: vsmartcard's vpcd driver, and the project's virtual
/// reader-and-tag (`vlogger-vcard`) behind it, in the bench's network namespace (`bench/pcsc/bench.sh`,
/// started by `.ci/run`). Skipped where no bench runs, unless VLOGGER_REQUIRE_PCSCD=1 (CI), which makes a
/// missing bench a failure.
enum PCSCBench {
    static let socket = "/run/pcscd/pcscd.comm"
    static var required: Bool { ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_PCSCD"] == "1" }
    static var available: Bool { FileManager.default.fileExists(atPath: socket) || required }
    static var namespace: String { ProcessInfo.processInfo.environment["VLOGGER_PCSC_NETNS"] ?? "vlogger-pcsc" }

    /// Starts a virtual card on a copy of the tags `files` of the folder `from` (the demo field by default); returns the
    /// process and the field folder.
    static func card(_ files: [String], _ options: [String] = [], from: String = "Config/demo-field") throws -> (
        Process, URL
    ) {
        guard FileManager.default.fileExists(atPath: socket) else {
            throw CLITests.CLIFailure(
                "no pcscd at \(socket): start the bench with `bash bench/pcsc/bench.sh start` (as root)")
        }
        let dir = try CLITests.scratch("pcsc", copying: files, from: from)
        let vcard = try CLITests.binary().deletingLastPathComponent().appendingPathComponent("vlogger-vcard")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") {
            p.executableURL = URL(fileURLWithPath: "/sbin/ip")
        }
        p.arguments = ["netns", "exec", namespace, vcard.path, "--field", dir.path] + options
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        // Wait until pcscd reports the card (the tag) present.
        for _ in 0..<50 {
            if let d = try? CLITests.run(["devices"]), d.out.contains("0: Virtual PCD 00 00  card present") {
                return (p, dir)
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        p.terminate()
        throw CLITests.CLIFailure("the virtual card did not show up in pcscd within 5 s")
    }

    static func stop(_ p: Process, _ dir: URL) {
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        try? FileManager.default.removeItem(at: dir)
        // Let pcscd notice the removal before the next card connects.
        for _ in 0..<30 {
            if let d = try? CLITests.run(["devices"]), !d.out.contains("0: Virtual PCD 00 00  card present") { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }
}

@Suite(.serialized, .enabled(if: PCSCBench.available, "no PC/SC bench running (bash bench/pcsc/bench.sh start)"))
struct PCSCBenchTests {
    typealias CLI = CLITests
    let cage = "E008010000004212", pallet = "E004010812345601"

    @Test func scanInfoReadWriteThroughPcscd() throws {
        let (card, dir) = try PCSCBench.card(["mb89r118-cage-12.json", "slix2-pallet-0001.json"])
        defer { PCSCBench.stop(card, dir) }
        let scan = try CLI.run(["scan", "--reader", "pcsc", "--trace"])
        // Two tags answer the first one-slot request together (collision); one mask bit separates them.
        #expect(
            scan.code == 0 && scan.out.contains("collision") && scan.out.contains(cage) && scan.out.contains(pallet)
                && scan.out.contains("2 tag(s)"),
            "\(scan.out)\(scan.err)")
        let info = try CLI.run(["info", "--reader", "pcsc", "--uid", cage])
        #expect(info.code == 0 && info.out.contains("256") && info.out.contains("MB89R118"), "\(info.out)\(info.err)")
        let read = try CLI.run(["read", "--reader", "pcsc", "--uid", cage, "--block", "0xF8", "--trace"])
        // The demo cage sensor block (Config/demo-field README): 66 08 C2 01 42 37 00 01.
        #expect(read.code == 0 && read.out.contains("0xF8   66 08 C2 01 42 37 00 01"), "\(read.out)\(read.err)")
        let write = try CLI.run([
            "write", "--reader", "pcsc", "--uid", cage, "--block", "0xF9", "--data", "0102030405060708",
        ])
        #expect(write.code == 0 && write.out.contains("verified"), "\(write.out)\(write.err)")
        // The virtual card's field file changed: the write went through pcscd to the simulated tag.
        let json = try String(contentsOf: dir.appendingPathComponent("mb89r118-cage-12.json"), encoding: .utf8)
        #expect(json.contains("0102030405060708"))
        let ndef = try CLI.run(["ndef", "read", "--reader", "pcsc", "--uid", pallet])
        #expect(ndef.code == 0 && ndef.out.contains("\"vlogger demo\""), "\(ndef.out)\(ndef.err)")
    }

    @Test func timeoutsAndCRCErrorsAreTypedErrors() throws {
        // Exchanges 1–2 are Get System Information (answered); 3, 4 and 5 are the read and its two retries.
        let (card, dir) = try PCSCBench.card(
            ["mb89r118-cage-12.json"], ["--timeout-at", "2", "--timeout-at", "3", "--timeout-at", "4"])
        let t = try CLI.run(["read", "--reader", "pcsc", "--uid", cage, "--block", "0xF8"])
        PCSCBench.stop(card, dir)
        #expect(t.code != 0 && t.err.contains("no answer from the tag (timeout)"), "\(t.out)\(t.err)")
        // Exchanges 2–7 corrupted: the read and its retries get CRC errors even when pcscd's own card handling
        // (a reset under load in CI) shifts the exchange count by one or two.
        let (card2, dir2) = try PCSCBench.card(["mb89r118-cage-12.json"], (2...7).flatMap { ["--crc-at", String($0)] })
        defer { PCSCBench.stop(card2, dir2) }
        let c = try CLI.run(["read", "--reader", "pcsc", "--uid", cage, "--block", "0xF8"])
        #expect(c.code != 0 && c.err.contains("CRC error"), "\(c.out)\(c.err)")
    }

    /// Issue 52: the virtual reader answering HID OMNIKEY's `FF 68 0E 03` or Identiv's `FF FD` in place of the
    /// transparent exchange (docs/reference/reader-paths.md §2.6; silence and unclean answers in the bench's form):
    /// `devices` names the codec it found, the one-slot tree walk separates two tags, a block is read and a write is
    /// verified by read-back, a silent tag is a typed timeout, and the agent polls through it.
    @Test(arguments: [
        ["--envelope", "omnikey"], ["--envelope", "identiv"], ["--envelope", "identiv", "--identiv-crc"],
    ])
    func eachVendorEnvelopeCarriesTheAgent(_ envelope: [String]) throws {
        let label =
            envelope[1] == "omnikey" ? "HID OMNIKEY transparent command (FF 68 0E 03)" : "Identiv Traverse (FF FD)"
        let (card, dir) = try PCSCBench.card(["mb89r118-cage-12.json", "slix2-pallet-0001.json"], envelope)
        let devices = try CLI.run(["devices", "--reader", "pcsc"])
        #expect(devices.out.contains("ISO 15693 through \(label)"), "\(devices.out)\(devices.err)")
        let scan = try CLI.run(["scan", "--reader", "pcsc", "--trace"])
        #expect(
            scan.code == 0 && scan.out.contains(cage) && scan.out.contains(pallet) && scan.out.contains("2 tag(s)"),
            "\(envelope): \(scan.out)\(scan.err)")
        let read = try CLI.run(["read", "--reader", "pcsc", "--uid", cage, "--block", "0xF8"])
        #expect(read.code == 0 && read.out.contains("0xF8   66 08 C2 01 42 37 00 01"), "\(read.out)\(read.err)")
        let write = try CLI.run([
            "write", "--reader", "pcsc", "--uid", pallet, "--block", "0x30", "--data", "CAFEF00D",
        ])
        #expect(write.code == 0 && write.out.contains("verified"), "\(write.out)\(write.err)")
        let image = try String(contentsOf: dir.appendingPathComponent("slix2-pallet-0001.json"), encoding: .utf8)
        #expect(image.contains("CAFEF00D"))
        let work = try CLI.scratch("pcsc-envelope", copying: ["rules.toml", "assets.csv"])
        try CLI.writeOneReaderConfig(work)
        defer { try? FileManager.default.removeItem(at: work) }
        let config = work.appendingPathComponent("vlogger.toml").path, store = work.appendingPathComponent("e.db").path
        let run = try CLI.run([
            "run", "--config", config, "--store", store, "--reader", "pcsc", "--cycles", "5", "--interval", "300ms",
        ])
        #expect(run.code == 0, "\(run.out)\(run.err)")
        PCSCBench.stop(card, dir)
        let csv = try CLI.run(["export", "--config", config, "--store", store, "--since", "1h", "--uid", cage])
        let rows = csv.out.split(separator: "\r\n").dropFirst()
        #expect(rows.count >= 4 && rows.allSatisfy { $0.contains("6608C20142370001") }, "\(csv.out)\n\(run.err)")
        // Exchanges 2–9 silent (the first is `devices`' probe while the card shows up): with the codec forced by the
        // device string (a silent probe proves nothing of a reader not named Identiv), the read and its retries time
        // out, a typed error.
        let (silent, sdir) = try PCSCBench.card(
            ["mb89r118-cage-12.json"], envelope + (2...9).flatMap { ["--timeout-at", String($0)] })
        defer { PCSCBench.stop(silent, sdir) }
        let t = try CLI.run([
            "read", "--reader", "pcsc", "--device", "\(envelope[1]):", "--uid", cage, "--block", "0xF8",
        ])
        #expect(t.code != 0 && t.err.contains("no answer from the tag (timeout)"), "\(t.out)\(t.err)")
    }

    @Test func storageCardFallbackSaysWhatIsMissing() throws {
        let (card, dir) = try PCSCBench.card(["slix2-pallet-0001.json"], ["--storage-only"])
        defer { PCSCBench.stop(card, dir) }
        let scan = try CLI.run(["scan", "--reader", "pcsc"])
        #expect(scan.code == 0 && scan.out.contains(pallet), "\(scan.out)\(scan.err)")
        // Block 0 of the demo SLIX2: the CC E1 40 0A 01; Read Multiple becomes FF B0 per block.
        let read = try CLI.run(["read", "--reader", "pcsc", "--block", "0", "--count", "2"])
        #expect(
            read.code == 0 && read.out.contains("E1 40 0A 01") && read.out.contains("03 13 D1 01"),
            "\(read.out)\(read.err)")
        let lock = try CLI.run(["lock", "--reader", "pcsc", "--block", "5", "--yes"])
        #expect(lock.code != 0 && lock.err.contains("storage-card mode"), "\(lock.out)\(lock.err)")
    }

    @Test func theAgentSurvivesAPcscdRestart() throws {
        let (card, dir) = try PCSCBench.card(["mb89r118-cage-12.json"])
        defer { PCSCBench.stop(card, dir) }
        let work = try CLI.scratch("pcsc-restart", copying: ["rules.toml", "assets.csv"])
        try CLI.writeOneReaderConfig(work)
        defer { try? FileManager.default.removeItem(at: work) }
        let config = work.appendingPathComponent("vlogger.toml").path, store = work.appendingPathComponent("r.db").path
        let agent = Process()
        agent.executableURL = try CLI.binary()
        agent.arguments = [
            "run", "--config", config, "--store", store, "--reader", "pcsc", "--duration", "7s", "--interval", "300ms",
        ]
        agent.currentDirectoryURL = CLI.root
        let err = Pipe()
        agent.standardError = err
        agent.standardOutput = FileHandle.nullDevice
        try agent.run()
        Thread.sleep(forTimeInterval: 2)
        // system(), not Process: the restarted pcscd keeps running, and Foundation's Process waits for every
        // holder of its internal descriptors.
        let rc = system("bash '\(CLI.root.appendingPathComponent("bench/pcsc/bench.sh").path)' restart")
        #expect(rc == 0)
        let back = Date().addingTimeInterval(1)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        agent.waitUntilExit()
        // pcscd gone: typed reader errors, no crash; pcscd back: polling resumes by itself.
        #expect(agent.terminationStatus == 0, "\(log)")
        #expect(log.contains("reader went away") || log.contains("cannot reach pcscd"), "\(log)")
        let since = ISO8601DateFormatter().string(from: back)
        let csv = try CLI.run(["export", "--config", config, "--store", store, "--since", since, "--uid", cage])
        #expect(
            csv.out.split(separator: "\r\n").count >= 3,
            "readings after the restart (since \(since)): \(csv.out)\(csv.err)")
    }

    @Test func theAgentPollsThroughPcscdAndSurvivesARemovalMidExchange() throws {
        let (card, dir) = try PCSCBench.card(
            ["mb89r118-cage-12.json", "slix2-pallet-0001.json"], ["--remove-at", "12", "--away-ms", "600"])
        defer { PCSCBench.stop(card, dir) }
        let work = try CLI.scratch("pcsc-run", copying: ["rules.toml", "assets.csv"])
        try CLI.writeOneReaderConfig(work)
        defer { try? FileManager.default.removeItem(at: work) }
        let config = work.appendingPathComponent("vlogger.toml").path
        let store = work.appendingPathComponent("pcsc.db").path
        let run = try CLI.run([
            "run", "--config", config, "--store", store, "--reader", "pcsc", "--cycles", "10", "--interval", "300ms",
            "--log-level", "info",
        ])
        #expect(run.code == 0, "\(run.out)\(run.err)")
        #expect(run.err.contains("polling with PC/SC (Virtual PCD 00 00)"), "\(run.err)")
        let csv = try CLI.run(["export", "--config", config, "--store", store, "--since", "1h", "--uid", cage])
        let rows = csv.out.split(separator: "\r\n").dropFirst()
        // The cage's 0xF8 reading in at least half the cycles (the removal costs the cycles while the card is away,
        // and the departure and return of the quiet tags).
        #expect(
            rows.count >= 5 && rows.allSatisfy { $0.contains("6608C20142370001") },
            "\(csv.out)\nthe run's log:\n\(run.err)")
    }

    /// Issue 54: a card that answers the ISO 15693 mandatory and optional commands and stays silent to every custom
    /// command (`--silent-custom`), with the ICODE SLI of the issue's transcript: read, write (verified by read-back),
    /// a queued write made by the agent, `ndef write` and `dump` all succeed; no write waits on an optional query.
    @Test func aChipSilentToCustomCommandsIsReadAndWritten() throws {
        let sli = "E00401008A5C982E"
        let (card, dir) = try PCSCBench.card(
            ["icode-sli-8a5c982e.json"], ["--silent-custom"], from: "Tests/IntegrationTests/Fixtures/sli-field")
        defer { PCSCBench.stop(card, dir) }
        let image = dir.appendingPathComponent("icode-sli-8a5c982e.json")
        let read = try CLI.run(["read", "--reader", "pcsc", "--uid", sli, "--block", "0", "--count", "2"])
        #expect(read.code == 0 && read.out.contains("E1 40 0E 01"), "\(read.out)\(read.err)")
        let write = try CLI.run([
            "write", "--reader", "pcsc", "--uid", sli, "--block", "3", "--data", "CAFEF00D", "--trace",
        ])
        #expect(write.code == 0 && write.out.contains("verified by read-back"), "\(write.out)\(write.err)")
        #expect(!write.out.contains("Protection Status"), "\(write.out)")
        #expect(try String(contentsOf: image, encoding: .utf8).contains("CAFEF00D"))
        // The gateway: a write queued until the tag is seen, made by the agent through pcscd.
        let work = try CLI.scratch("pcsc-sli", copying: ["rules.toml", "assets.csv"])
        try CLI.writeOneReaderConfig(work)
        defer { try? FileManager.default.removeItem(at: work) }
        let config = work.appendingPathComponent("vlogger.toml").path, store = work.appendingPathComponent("s.db").path
        let queued = try CLI.run([
            "write", "--when-seen", "--uid", sli, "--block", "4", "--data", "0BADBEEF", "--config", config, "--store",
            store,
        ])
        #expect(queued.code == 0, "\(queued.out)\(queued.err)")
        let run = try CLI.run([
            "run", "--config", config, "--store", store, "--reader", "pcsc", "--cycles", "3", "--interval", "300ms",
        ])
        #expect(run.code == 0, "\(run.out)\(run.err)")
        let list = try CLI.run(["writes", "list", "--config", config, "--store", store])
        #expect(list.out.contains("done") && list.out.contains("written and read back"), "\(list.out)\(run.err)")
        #expect(try String(contentsOf: image, encoding: .utf8).contains("0BADBEEF"))
        let ndef = try CLI.run(["ndef", "write", "--reader", "pcsc", "--uid", sli, "--text", "silent SLI"])
        #expect(ndef.code == 0, "\(ndef.out)\(ndef.err)")
        let back = try CLI.run(["ndef", "read", "--reader", "pcsc", "--uid", sli])
        #expect(back.code == 0 && back.out.contains("silent SLI"), "\(back.out)\(back.err)")
        let dump = try CLI.run(["dump", "--reader", "pcsc", "--uid", sli, "--format", "flipper"])
        #expect(
            dump.code == 0 && dump.out.contains("UID: E0 04 01 00 8A 5C 98 2E") && dump.out.contains("Block Count: 28"),
            "\(dump.out)\(dump.err)")
    }
}
