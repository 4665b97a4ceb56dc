import Foundation
import VLoggerStore
import Testing
import ISO15693
import VLoggerCore

/// Polling never waits for the store: `vlogger run` at a 100 ms interval while another process holds the
/// store's write lock for 10 s, and while the store's file system is full. These run in real time (the
/// lock and the full disk are real); each takes about 14 s.
@Suite(.serialized) struct StoreFaultTests {
    /// The demo field with a scenario of its own: the Tag-it tool leaves at 4 s and comes back at 8 s.
    static func setup(queueLimit: Int? = nil) throws -> (dir: URL, config: String, store: String) {
        let s = try AgentCLITests.setup(interval: "100ms", batch: 50, flush: "500ms")
        let scenario = """
            { "vlogger-scenario": 1, "steps": [
              { "at": "4s", "do": "leave", "uid": "E007800000007777" },
              { "at": "8s", "do": "arrive", "uid": "E007800000007777" } ] }
            """
        try scenario.write(to: s.dir.appendingPathComponent("field/scenario.json"), atomically: true, encoding: .utf8)
        if let queueLimit {
            var text = try String(contentsOfFile: s.config, encoding: .utf8)
            text = text.replacingOccurrences(of: "queue-limit = 100000", with: "queue-limit = \(queueLimit)")
            try text.write(toFile: s.config, atomically: true, encoding: .utf8)
        }
        return s
    }

    /// Starts `vlogger run` for `seconds`, runs `during` while it polls, and returns its exit code and output.
    static func run(config: String, store: String, seconds: Int, during: () throws -> Void) throws -> (
        code: Int32, out: String, err: String
    ) {
        let p = Process()
        p.executableURL = try CLITests.binary()
        p.arguments = ["run", "--config", config, "--store", store, "--duration", "\(seconds)s", "--log-level", "info"]
        p.currentDirectoryURL = CLITests.root
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        // Read both pipes while it runs (a full pipe would block the agent's logging).
        nonisolated(unsafe) var o = Data(), e = Data()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { o = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { e = err.fileHandleForReading.readDataToEndOfFile() }
        try during()
        p.waitUntilExit()
        group.wait()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// "140 cycles: 1234 readings, 9 arrivals, 1 departures, …" → (cycles, readings, arrivals, departures).
    static func summary(_ out: String) -> (cycles: Int, readings: Int, arrivals: Int, departures: Int)? {
        let words = out.split(whereSeparator: { $0 == " " || $0 == "," || $0 == ":" || $0 == "\n" }).map(String.init)
        func before(_ w: String) -> Int? { words.firstIndex(of: w).flatMap { $0 > 0 ? Int(words[$0 - 1]) : nil } }
        guard let c = before("cycles"), let r = before("readings"), let a = before("arrivals"),
            let d = before("departures")
        else { return nil }
        return (c, r, a, d)
    }

    @Test func anotherProcessHoldingTheWriteLockFor10sDoesNotStopPolling() throws {
        let s = try Self.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let r = try Self.run(config: s.config, store: s.store, seconds: 16) {
            // The lock starts once the gateway has committed its first batch (on a loaded machine the gateway may
            // take seconds to start: a fixed delay could lock a store it has not opened yet).
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline {
                if let db = try? Store(path: s.store, readOnly: true) {
                    let n = (try? db.count("readings")) ?? 0
                    db.close()
                    if n > 0 { break }
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            // BEGIN IMMEDIATE from Python's own sqlite3 module, held 10 s.
            let lock = Process()
            lock.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            lock.arguments = [
                "python3", "-c",
                """
                import sqlite3, sys, time
                c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
                c.execute('BEGIN IMMEDIATE'); print('locked', flush=True)
                time.sleep(10)
                c.execute('COMMIT')
                """, s.store,
            ]
            try lock.run()
            lock.waitUntilExit()
            #expect(lock.terminationStatus == 0)
        }
        #expect(r.code == 0, "\(r.err)")
        let sum = try #require(Self.summary(r.out), "\(r.out)")
        print("store locked 10 s of 16 s:\n\(r.out)")
        // 16 s at 100 ms: 160 cycles expected; at least 90 % must run although no commit could for 10 s.
        #expect(sum.cycles >= 144, "\(r.out)")
        #expect(r.err.contains("store commit failed") && r.err.contains("store commits again"), "\(r.err)")
        let store = try Store(path: s.store, readOnly: true)
        defer { store.close() }
        // The departure (not seen for 3 cycles after 4 s) and the arrival at 8 s, during the lock (from the first commit, about 2 s, for 10 s).
        let events = try store.events()
        let tool = try UID(parsing: "E007800000007777")
        #expect(events.contains { $0.kind == .departure && $0.uid == tool })
        #expect(events.filter { $0.kind == .arrival && $0.uid == tool }.count == 2)
        #expect(sum.arrivals == 9 && sum.departures == 1)
        // No reading lost: every reading the agent took is in the store.
        #expect(try store.count("readings") == sum.readings)
        #expect(!events.contains { $0.name == "readings-dropped" })
    }

    @Test func aFullDiskSlowsNothingDropsOnlyPastTheLimitAndResumes() throws {
        guard getuid() == 0 else {
            #expect(
                ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_SERVICE_TOOLS"] != "1",
                "needs root to mount a tmpfs")
            return
        }
        // queue-limit 300: at about 50 readings a second, 6 s without commits overflows it.
        let s = try Self.setup(queueLimit: 300)
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let mount = s.dir.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
        #expect(system("mount -t tmpfs -o size=4m tmpfs '\(mount.path)'") == 0)
        defer { _ = system("umount '\(mount.path)'") }
        let store = mount.appendingPathComponent("v.db").path, filler = mount.appendingPathComponent("filler").path
        let r = try Self.run(config: s.config, store: store, seconds: 14) {
            Thread.sleep(forTimeInterval: 2)
            // Fill what is left of the file system, hold it full 6 s, then give the space back.
            _ = system("dd if=/dev/zero of='\(filler)' bs=4k 2>/dev/null")
            Thread.sleep(forTimeInterval: 6)
            _ = system("rm -f '\(filler)'")
        }
        #expect(r.code == 0, "\(r.err)")
        let sum = try #require(Self.summary(r.out), "\(r.out)")
        print("store's file system full 6 s of 14 s (queue limit 300):\n\(r.out)")
        #expect(sum.cycles >= 126, "\(r.out)")
        #expect(r.err.contains("store commit failed") && r.err.contains("full"), "\(r.err)")
        let dropped = try #require(
            r.out.range(of: #"(\d+) readings dropped"#, options: .regularExpression).flatMap {
                Int(r.out[$0].split(separator: " ")[0])
            }, "\(r.out)")
        let db = try Store(path: store, readOnly: true)
        defer { db.close() }
        #expect(try db.integrityCheck() == "ok")
        // Every reading is either committed or counted as dropped, and the drop is an event.
        #expect(try db.count("readings") + dropped == sum.readings)
        let events = try db.events()
        #expect(
            events.contains { $0.name == "readings-dropped" && $0.detail.hasPrefix("\(dropped) readings") },
            "\(events.map(\.name))")
        #expect(events.contains { $0.kind == .departure } && events.filter { $0.kind == .arrival }.count == 9)
    }

    @Test func twoProcessesCreatingTheSameNewStoreOneRunsTheOtherSaysWhy() throws {
        // Ten rounds: two `vlogger run --cycles 1` started together on a store that does not exist yet. Both create
        // and migrate it without a fault; then one holds the store's run lock and the other, if the first is still
        // running, is refused with the holder's PID (two runs on one store would store every reading twice).
        let s = try AgentCLITests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        for round in 0..<10 {
            let store = s.dir.appendingPathComponent("new-\(round).db").path
            let procs = try (0..<2).map { _ -> (Process, Pipe) in
                let p = Process()
                p.executableURL = try CLITests.binary()
                p.arguments = ["run", "--config", s.config, "--store", store, "--cycles", "1", "--fast-clock"]
                p.currentDirectoryURL = s.dir
                let err = Pipe()
                p.standardError = err
                p.standardOutput = FileHandle.nullDevice
                try p.run()
                return (p, err)
            }
            var ran = 0
            for (p, err) in procs {
                let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                p.waitUntilExit()
                if p.terminationStatus == 0 { ran += 1; continue }
                #expect(
                    p.terminationStatus == 1 && text.contains("another vlogger run (pid ")
                        && text.contains("uses the store"), "round \(round): \(text)")
            }
            #expect(ran >= 1, "round \(round)")
            let db = try Store(path: store, readOnly: true)
            #expect(try db.count("events") >= 2 * ran)  // start and stop of each run that ran
            db.close()
        }
    }
}
