import Foundation
import VLoggerStore
import VLoggerModel
import Testing
import VLoggerCore
import ISO15693

/// `vlogger run` / `export` / `config check` as processes: signals, SIGKILL during ingest, CSV read back.
@Suite(.serialized) struct AgentCLITests {
    /// A scratch folder with a copy of the demo field and a config whose store is in it.
    static func setup(interval: String = "1s", batch: Int = 500, flush: String = "2s") throws -> (
        dir: URL, config: String, store: String
    ) {
        let field = try CLITests.field()
        let dir = try CLITests.scratch("run", copying: ["rules.toml", "assets.csv"])
        try FileManager.default.moveItem(at: field, to: dir.appendingPathComponent("field"))
        var text = try CLITests.oneReaderConfig()
        text = text.replacingOccurrences(of: "field = \"demo-field\"", with: "field = \"field\"")
            .replacingOccurrences(of: "interval = \"1s\"", with: "interval = \"\(interval)\"")
            .replacingOccurrences(of: "batch-size = 500", with: "batch-size = \(batch)")
            .replacingOccurrences(of: "flush-interval = \"2s\"", with: "flush-interval = \"\(flush)\"")
        let config = dir.appendingPathComponent("vlogger.toml").path
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        return (dir, config, dir.appendingPathComponent("vlogger.db").path)
    }

    /// `GET /api/v1/stream` (Server-Sent Events) read by a client written to the WHATWG parsing rules
    /// (Support/sse_client.py): one client reads from the start (`Last-Event-ID: 0-0`) for 3 s and goes; a
    /// second comes back 2 s later with the last id the first got and reads for 3 s; together they got every
    /// reading and event of the store up to the last id the second saw, each once. A bad parameter is a 400
    /// naming it.
    @Test func theStreamResumesFromLastEventIDWithNothingLostOrTwice() throws {
        let s = try Self.setup(interval: "200ms", batch: 20, flush: "200ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let log = s.dir.appendingPathComponent("gw.log")
        let gateway = try SyncFaultTests.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --listen 127.0.0.1:0 --duration 10s"#,
            [s.dir.path, try CLITests.binary().path, s.config], stdout: "/dev/null", stderr: log.path)
        let port = ServiceTests.listenPort(log)
        let p = try #require(port)
        let script = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Support/sse_client.py").path
        let first = s.dir.appendingPathComponent("first.jsonl").path
        let second = s.dir.appendingPathComponent("second.jsonl").path
        let a = try SyncFaultTests.shell(
            #"python3 "$1" "$2" /api/v1/stream 3 "$3" 0-0"#, [script, String(p), first])
        #expect(a.code == 0, "\(a.err)")
        func events(_ path: String) -> [[String: Any]] {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        let got = events(first)
        let lastID = try #require(got.last?["id"] as? String, "the first client got no event")
        Thread.sleep(forTimeInterval: 2)
        let b = try SyncFaultTests.shell(
            #"python3 "$1" "$2" /api/v1/stream 3 "$3" "$4""#, [script, String(p), second, lastID])
        #expect(b.code == 0, "\(b.err)")
        let bad = try ServiceTests.get(p, "/api/v1/stream?uid=E0zz")
        #expect(bad.status == 400 && bad.body.contains(#""parameter":"uid""#), "\(bad)")
        #expect(SyncFaultTests.wait(gateway) == 0)
        let later = events(second)
        let endID = try #require((later.last ?? got.last)?["id"] as? String)
        let ids = endID.split(separator: "-").compactMap { Int64($0) }
        #expect(ids.count == 2)
        let keys = (got + later).compactMap { $0["key"] as? String }
        let store = try Store(path: s.store, readOnly: true)
        defer { store.close() }
        var expected = Set<String>()
        for r in try store.outbox(.readings, after: 0, limit: 1_000_000) where r.id <= ids.first ?? 0 {
            expected.insert("gw-demo-01/readings/\(r.id)")
        }
        for e in try store.outbox(.events, after: 0, limit: 1_000_000) where e.id <= ids.last ?? 0 {
            expected.insert("gw-demo-01/events/\(e.id)")
        }
        #expect(later.count > 0 && expected.count > got.count)
        let missing = expected.subtracting(keys)
        #expect(missing.isEmpty, "missing: \(missing.sorted().prefix(5))")
        #expect(
            Set(keys).subtracting(expected).isEmpty,
            "beyond the last id: \(Set(keys).subtracting(expected).sorted().prefix(5))")
        #expect(keys.count == Set(keys).count, "\(keys.count - Set(keys).count) rows twice")
        print(
            "SSE resume: \(got.count) events before the disconnect (last id \(lastID)), \(later.count) after it up to \(endID), \(expected.count) rows stored up to there, none missing or twice"
        )
    }

    /// `run --emit jsonl`: every reading and event the run commits is on stdout once, as the store has it (the
    /// keys equal the store's rows); the closing summary goes to stderr. `run --once --print jsonl`: one cycle of
    /// each reader with the plans and rules, the same reads as a stored one-cycle run (tag, block and count of
    /// each reading), with the register's asset ids, no key (its scratch ids are not the gateway's), and no store
    /// file left.
    @Test func emitAndOncePrintJSONLines() throws {
        let s = try Self.setup(interval: "200ms", batch: 20, flush: "200ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let once = try CLITests.run(["run", "--config", s.config, "--once", "--print", "jsonl"])
        #expect(once.code == 0, "\(once.err)")
        #expect(!FileManager.default.fileExists(atPath: s.store), "--once left a store")
        func objects(_ text: String) -> [[String: Any]] {
            text.split(separator: "\n").compactMap { MQTTTests.object(String($0)) }
        }
        let printed = objects(once.out)
        #expect(printed.count == once.out.split(separator: "\n").count && !printed.isEmpty)
        // Nothing was stored: no row has a key (the member is left out, docs/json.md).
        #expect(printed.allSatisfy { $0["key"] == nil })
        #expect(printed.contains { $0["asset_id"] as? String == "CAGE-12" }, "the register's asset id")
        func reads(_ rows: [[String: Any]]) -> [String] {
            rows.filter { $0["table"] as? String == "readings" || $0["block"] != nil && $0["kind"] == nil }
                .map { "\($0["uid"] ?? "")@\($0["block"] ?? "")+\($0["count"] ?? "")" }.sorted()
        }
        let stored = try CLITests.run(["run", "--config", s.config, "--cycles", "1"])
        #expect(stored.code == 0, "\(stored.err)")
        let export = try CLITests.run(["export", "--config", s.config, "--since", "1h", "--format", "jsonl"])
        #expect(reads(printed) == reads(objects(export.out)), "once: \(reads(printed))")
        try FileManager.default.removeItem(atPath: s.store)

        let emit = try CLITests.run(["run", "--config", s.config, "--duration", "3s", "--emit", "jsonl"])
        #expect(emit.code == 0, "\(emit.err)")
        #expect(emit.err.contains("readings and") && emit.err.contains("events committed"), "summary on stderr")
        let keys = objects(emit.out).compactMap { $0["key"] as? String }
        let all = try MQTTTests.storedKeys(s.store, gateway: "gw-demo-01")
        #expect(keys.count == Set(keys).count && Set(keys) == all, "emitted \(keys.count), stored \(all.count)")
        let bad = try CLITests.run(["run", "--config", s.config, "--once"])
        #expect(bad.code != 0 && bad.err.contains("--once needs --print jsonl"), "\(bad.err)")
    }

    /// `export --after-id` as a program that polls uses it: 20 calls while the gateway runs, each starting at the
    /// `last-id` the one before printed; together they hold every stored reading exactly once (compared line by
    /// line with one export of the finished store), in id order; a table without ids and a negative id are usage
    /// errors.
    @Test func exportAfterIDPollsWithoutLosingOrRepeating() throws {
        let s = try Self.setup(interval: "200ms", batch: 20, flush: "200ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let gateway = try SyncFaultTests.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --duration 8s"#,
            [s.dir.path, try CLITests.binary().path, s.config],
            stdout: "/dev/null", stderr: s.dir.appendingPathComponent("gw.log").path)
        var last: Int64 = 0
        var polled: [String] = []
        var calls = 0
        for _ in 0..<20 {
            Thread.sleep(forTimeInterval: 0.35)
            let r = try CLITests.run([
                "export", "--config", s.config, "--after-id", String(last), "--format", "jsonl",
            ])
            #expect(r.code == 0, "\(r.err)")
            let line = r.err.split(separator: "\n").first { $0.hasPrefix("last-id ") }
            let next = try #require(line.flatMap { Int64($0.dropFirst("last-id ".count)) }, "\(r.err)")
            #expect(next >= last)
            polled += r.out.split(separator: "\n").map(String.init)
            last = next
            calls += 1
        }
        #expect(SyncFaultTests.wait(gateway) == 0)
        // Everything up to the last id seen, exported once from the finished store.
        let all = try CLITests.run(["export", "--config", s.config, "--after-id", "0", "--format", "jsonl"])
        let lines = all.out.split(separator: "\n").map(String.init)
        let upTo = Int(last)
        #expect(upTo > 20 && polled.count == upTo, "\(polled.count) polled rows, last id \(upTo)")
        #expect(polled == Array(lines.prefix(upTo)), "the polled rows are the store's first \(upTo), in id order")
        #expect(Set(polled).count == polled.count, "a row twice")
        print("export --after-id: \(calls) calls during the run, \(polled.count) rows, none missing or twice")
        let tags = try CLITests.run(["export", "--config", s.config, "--after-id", "0", "--table", "tags"])
        #expect(tags.code != 0 && tags.err.contains("not exported by id"), "\(tags.err)")
        let negative = try CLITests.run(["export", "--config", s.config, "--after-id=-1"])
        #expect(negative.code != 0 && negative.err.contains("not a row id"), "\(negative.err)")
        let none = try CLITests.run(["export", "--config", s.config])
        #expect(none.code != 0 && none.err.contains("--since is needed"), "\(none.err)")
    }

    @Test func twoReadersEachWithItsIdAndLocationInTheStoreAndTheExport() throws {
        // The example configuration as shipped: reader cage-room on demo-field (1 s), dock-3 on demo-field-dock (2 s).
        let dir = try CLITests.scratch(
            "two", copying: ["vlogger.toml", "rules.toml", "assets.csv", "demo-field", "demo-field-dock"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("vlogger.toml").path
        let run = try CLITests.run(["run", "--config", config, "--duration", "14s", "--fast-clock"])
        #expect(run.code == 0, "\(run.err)")
        // 14 cycles of cage-room and 7 of dock-3; the total line first, then one per reader.
        #expect(
            run.out.hasPrefix("21 cycles:") && run.out.contains("reader cage-room: 14 cycles:")
                && run.out.contains("reader dock-3: 7 cycles:"), "\(run.out)")
        let csv = try CLITests.run(["export", "--config", config, "--since", "7d", "--reader", "dock-3"])
        let rows = csv.out.split(separator: "\r\n").map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        #expect(rows.first?.prefix(5) == ["time", "gateway", "reader", "location", "uid"], "\(csv.out)")
        // Every dock-3 row names dock-3 and its location, and only the dock's two tags.
        #expect(rows.count > 1 && rows.dropFirst().allSatisfy { $0[2] == "dock-3" && $0[3] == "Dock door 3" })
        #expect(Set(rows.dropFirst().map { $0[4] }) == ["E004010812345602", "E007C00000000506"])
        let store = try Store(path: dir.appendingPathComponent("vlogger.db").path, readOnly: true)
        defer { store.close() }
        let events = try store.events()
        // The dock's scenario: the pallet leaves at 3 s (departure after 3 missed cycles of 2 s) and comes back at 11 s.
        let pallet = events.filter { $0.uid?.description == "E004010812345602" }
        #expect(
            pallet.map(\.kind) == [.arrival, .departure, .arrival]
                && pallet.allSatisfy { $0.reader == "dock-3" && $0.location == "Dock door 3" })
        // The cage room's rows carry its own id and location.
        let cage = events.filter { $0.uid?.description == "E008010000004212" }
        #expect(!cage.isEmpty && cage.allSatisfy { $0.reader == "cage-room" && $0.location == "Cold room, cage 12" })
        let tags = try CLITests.run([
            "export", "--config", config, "--since", "7d", "--table", "tags", "--reader", "dock-3",
        ])
        #expect(tags.out.split(separator: "\r\n").count == 3, "\(tags.out)")
    }

    @Test func auditOfEachDemoLocationAgainstTheRegister() throws {
        // Config/assets.csv registers two assets in the cage room (both there), PAL-0001 at the dock (it is in
        // the cage room), PAL-0002 at the dock (there) and PAL-0099 at the dock (nowhere).
        let dir = try CLITests.scratch(
            "audit", copying: ["vlogger.toml", "rules.toml", "assets.csv", "demo-field", "demo-field-dock"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("vlogger.toml").path
        let run = try CLITests.run(["audit", "run", "--config", config, "--fast-clock"])
        #expect(run.code == 0, "\(run.err)")
        #expect(
            run.out.contains(
                "Cold room, cage 12  2 present, 0 missing, 1 wrong location, 5 unexpected, 0 failed checks (3 rounds, reader cage-room, manual)"
            ), "\(run.out)")
        #expect(
            run.out.contains("Dock door 3  1 present, 1 missing, 1 wrong location, 1 unexpected, 0 failed checks"),
            "\(run.out)")
        let show = try CLITests.run(["audit", "show", "--config", config, "2"])
        #expect(show.out.contains("missing        E00401000000BEEF  PAL-0099 Pallet 99  never seen"), "\(show.out)")
        #expect(
            show.out.contains(
                "wrong-location E004010812345601  PAL-0001 Pallet 1  registered at Dock door 3, seen at Cold room, cage 12 by cage-room"
            ), "\(show.out)")
        let json = try CLITests.run(["audit", "show", "--config", config, "1", "--json"])
        // The audit's row (its counts per status) and its results' rows, as the export and the read API write them.
        let object = try #require(MQTTTests.object(json.out), "\(json.out)")
        #expect((object["audit"] as? [String: Any])?["wrong_location"] as? Int == 1, "\(json.out)")
        let seen = (object["results"] as? [[String: Any]])?.compactMap { $0["seen_rounds"] as? Int } ?? []
        #expect(seen.contains(3) && !json.out.contains("seenRounds"), "\(json.out)")
        #expect(try CLITests.run(["audit", "list", "--config", config]).out.split(separator: "\n").count == 2)
        let audits = try CLITests.run(["export", "--config", config, "--since", "1h", "--table", "audits"])
        #expect(
            audits.out.contains(",\"Cold room, cage 12\",cage-room,3,manual,2,0,1,5,0\r\n")
                && audits.out.contains(",Dock door 3,dock-3,3,manual,1,1,1,1,0\r\n"), "\(audits.out)")
        let results = try CLITests.run([
            "export", "--config", config, "--since", "1h", "--table", "audit_results", "--uid", "E00401000000BEEF",
        ])
        let lines = results.out.split(separator: "\r\n")
        #expect(
            lines.count == 2 && lines[1].contains(",Dock door 3,E00401000000BEEF,PAL-0099,missing,Dock door 3,,,0,,,"),
            "\(results.out)")
        let html = dir.appendingPathComponent("report.html")
        let report = try CLITests.run(["audit", "report", "--config", config, "2", "--html", html.path])
        let page = (try? String(contentsOf: html, encoding: .utf8)) ?? ""
        #expect(
            report.code == 0 && page.contains("<h1>Audit 2: Dock door 3</h1>")
                && page.contains(">PAL-0099 — Pallet 99</td><td data-label=\"UID\" class=\"uid\">E00401000000BEEF</td>")
                && page.contains("<svg") && !page.contains("<script") && page.contains("Checked by"),
            "\(report.err)\(page)")
        let none = try CLITests.run(["audit", "run", "--config", config, "--location", "Roof", "--fast-clock"])
        #expect(none.code == 1 && none.err.contains("no reader at location 'Roof'"), "\(none.err)")
        let missing = try CLITests.run(["audit", "show", "--config", config, "99"])
        #expect(missing.code == 1 && missing.err.contains("no audit 99"))
    }

    @Test func aScheduleMissedWhileTheServiceWasDownRunsOnceAtStart() throws {
        let dir = try CLITests.scratch(
            "sched", copying: ["vlogger.toml", "rules.toml", "assets.csv", "demo-field", "demo-field-dock"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("vlogger.toml").path,
            store = dir.appendingPathComponent("vlogger.db").path
        // The dock's pallet stays put (its scenario takes it away at 3 s, which a slow machine's audit may pass).
        try FileManager.default.removeItem(at: dir.appendingPathComponent("demo-field-dock/scenario.json"))
        var text = try String(contentsOfFile: config, encoding: .utf8)
        text =
            text.replacingOccurrences(of: "spacing = \"1s\"", with: "spacing = \"200ms\"")
            + "\n[[audit.schedule]]\nname = \"nightly\"\ncron = \"0 2 * * *\"\ntime-zone = \"Europe/Berlin\"\n"
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        #expect(try CLITests.run(["config", "check", "--config", config]).code == 0)
        // The store with a nightly audit three days ago: three nights were missed while "the service was down".
        #expect(
            try CLITests.run(["assets", "import", "--config", config, dir.appendingPathComponent("assets.csv").path])
                .code == 0)
        let seed = try ServiceTests.shell(
            """
            python3 -c 'import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1]); t=int(time.time()*1000)-3*86400000
            c.execute("INSERT INTO audits(started,finished,gateway,location,readers,rounds,trigger,present,missing,wrong_location,unexpected,failed_checks) VALUES(?,?,?,?,?,?,?,0,0,0,0,0)", (t,t,"gw-demo-01","Dock door 3","dock-3",3,"schedule:nightly")); c.commit()' "$1"
            """, [store])
        #expect(seed.code == 0, "\(seed.err)")
        // 16 s of the service's time on a clock run 10 times faster.
        let run = try CLITests.run([
            "run", "--config", config, "--duration", "16s", "--clock-rate", "10", "--log-level", "notice",
        ])
        #expect(
            run.code == 0 && run.err.contains("audit schedule 'nightly' (0 2 * * * (Europe/Berlin)) missed its time"),
            "\(run.err)")
        let db = try Store(path: store, readOnly: true)
        defer { db.close() }
        // Once per location, not once per missed night: the seeded one and one new for each of the two locations.
        let audits = try db.audits().filter { $0.trigger == "schedule:nightly" }
        #expect(audits.count == 3, "\(audits.map { "\($0.location) \($0.started)" })")
        let dock = try #require(
            audits.first {
                $0.location == "Dock door 3" && $0.rounds == 3 && $0.count(.present) + $0.count(.missing) > 0
            })
        let cage = try #require(audits.first { $0.location == "Cold room, cage 12" })
        // PAL-0001 (registered at the dock, polled in the cage room) is missing or at the wrong location, by
        // whether the cage room's sightings were committed before the dock's audit began; PAL-0099 is missing.
        #expect(
            dock.count(.present) == 1 && dock.count(.missing) + dock.count(.wrongLocation) == 2
                && dock.count(.unexpected) == 1, "\(dock.counts)")
        let detail = try #require(try db.audit(dock.id))
        #expect(detail.results.first { $0.assetID == "PAL-0099" }?.status == .missing)
        #expect(
            cage.count(.present) == 2 && cage.count(.wrongLocation) == 1 && cage.count(.unexpected) == 5,
            "\(cage.counts)")
        // Polling went on meanwhile: the cage room's 1 s cycles over 8 s, less only what the audit's rounds took.
        #expect(run.out.contains("reader cage-room: "), "\(run.out)")
    }

    @Test func scheduledAuditsOnAFastClockFindWhatTheScenarioImplies() throws {
        // The demo's two fields and register, a fast clock (20×) starting at 05:59:55 UTC, and two schedules: the
        // end of the night shift (06:00) and a cron firing every minute kept inside 06:01-06:02 (06:01 only).
        let dir = try CLITests.scratch(
            "fast", copying: ["vlogger.toml", "rules.toml", "assets.csv", "demo-field", "demo-field-dock"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("vlogger.toml").path,
            store = dir.appendingPathComponent("vlogger.db").path
        // The dock's scenario: pallet 0002 is taken away at 3 s (05:59:58) and brought back at 40 s (06:00:35).
        try """
        {"vlogger-scenario": 1, "steps": [{"at": "3s", "do": "leave", "uid": "E004010812345602"}, {"at": "40s", "do": "arrive", "uid": "E004010812345602"}]}
        """.write(to: dir.appendingPathComponent("demo-field-dock/scenario.json"), atomically: true, encoding: .utf8)
        var text = try String(contentsOfFile: config, encoding: .utf8)
        text += """

            [[audit.schedule]]
            name = "night shift end"
            shifts = ["22:00-06:00", "06:00-14:00"]

            [[audit.schedule]]
            name = "early"
            cron = "* * * * *"
            during = "06:01-06:02"
            location = "Dock door 3"

            """
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let run = try CLITests.run([
            "run", "--config", config, "--clock-rate", "20", "--clock-start", "2026-11-23T05:59:55Z", "--duration",
            "135s",
        ])
        #expect(run.code == 0, "\(run.err)")
        let db = try Store(path: store, readOnly: true)
        defer { db.close() }
        let audits = try db.audits().sorted { $0.id < $1.id }
        // 06:00: both locations (the schedule names none); 06:01: the dock; 06:02 is outside the window: nothing.
        #expect(
            audits.map(\.trigger).sorted() == [
                "schedule:early", "schedule:night shift end", "schedule:night shift end",
            ], "\(audits.map(\.trigger))")
        func statuses(_ a: AuditRecord?) -> [String: String] {
            let full = a.flatMap { try? db.audit($0.id) }
            return Dictionary(
                (full?.results ?? []).map { ($0.assetID ?? $0.uid.description, $0.status.rawValue) },
                uniquingKeysWith: { a, _ in a })
        }
        let six: Millis = 1_795_413_600_000  // 2026-11-23T06:00:00Z
        let cage = audits.first { $0.location == "Cold room, cage 12" },
            dock = audits.filter { $0.location == "Dock door 3" }
        #expect(
            cage.map { $0.started >= six && $0.started < six + 1000 } == true, "\(String(describing: cage?.started))")
        // The cage room: its two assets present, PAL-0001 (registered at the dock) there, five unregistered tags.
        #expect(
            statuses(cage) == [
                "AS-00042": "present", "CAGE-12": "present", "PAL-0001": "wrong-location",
                "E007800000007777": "unexpected", "E0022C0000002121": "unexpected", "E007A20000001003": "unexpected",
                "E004011000000A03": "unexpected", "E007C00000000505": "unexpected",
            ], "\(statuses(cage))")
        // The dock at 06:00: pallet 0002 is away, PAL-0099 never appears, PAL-0001 is in the cage room, bin 6 unregistered.
        #expect(
            statuses(dock.first) == [
                "PAL-0002": "missing", "PAL-0099": "missing", "PAL-0001": "wrong-location",
                "E007C00000000506": "unexpected",
            ], "\(statuses(dock.first))")
        // The dock at 06:01: pallet 0002 is back.
        #expect(dock.count == 2 && dock.last.map { $0.started >= six + 60_000 && $0.started < six + 61_000 } == true)
        #expect(
            statuses(dock.last) == [
                "PAL-0002": "present", "PAL-0099": "missing", "PAL-0001": "wrong-location",
                "E007C00000000506": "unexpected",
            ], "\(statuses(dock.last))")
        let diff = try CLITests.run(["audit", "diff", "--config", config, "\(dock[0].id)", "\(dock[1].id)"])
        #expect(
            diff.out.contains("E004010812345602  PAL-0002  missing -> present") && diff.out.contains("1 change\n"),
            "\(diff.out)")
    }

    @Test func queuedLocksAndBlockFilesOnlyWithYesAndNeverTwice() throws {
        let dir = try CLITests.scratch(
            "locks", copying: ["vlogger.toml", "rules.toml", "assets.csv", "demo-field", "demo-field-dock"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("vlogger.toml").path,
            field = dir.appendingPathComponent("demo-field").path
        let slix = "E004011000000A03"  // Config/demo-field/slix-shelf-a3.nfc: 28 blocks of 4 bytes, none locked
        func cli(_ args: [String]) throws -> (code: Int32, out: String, err: String) {
            try CLITests.run(args + ["--config", config])
        }
        let file = dir.appendingPathComponent("label.txt")
        try "# shelf label\n0x10  41 53 2D 30\n0x11: 30303432   # second half\n\n20,DEADBEEF\n".write(
            to: file, atomically: true, encoding: .utf8)
        // Locks are irreversible: refused without --yes, and nothing is queued.
        let noYes = try cli(["write", "--when-seen", "--uid", slix, "--blocks-from", file.path, "--lock"])
        #expect(noYes.code == 1 && noYes.err.contains("irreversible") && noYes.err.contains("--yes"), "\(noYes.err)")
        #expect(
            try cli(["lock", "--when-seen", "--uid", slix, "--block", "0x15"]).err.contains(
                "run again with --yes to queue the lock"))
        // nothing was queued: not even a store was made
        #expect(try cli(["writes", "list"]).err.contains("no store at"))
        // The file: blocks 0x10-0x11 are one write, block 20 (0x14) another; both written, then locked.
        let queued = try cli(["write", "--when-seen", "--uid", slix, "--blocks-from", file.path, "--lock", "--yes"])
        #expect(
            queued.code == 0 && queued.out.contains("queued write 1: 8 bytes from 0x10 of \(slix), then locked")
                && queued.out.contains("queued write 2: 4 bytes from 0x14 of \(slix), then locked"),
            "\(queued.out) \(queued.err)")
        #expect(
            try cli(["lock", "--when-seen", "--uid", slix, "--block", "0x15", "--yes"]).out.contains(
                "queued lock 3: block 0x15 of \(slix)"))
        // Block 0x16 was locked before a crash cut off the record of its queued lock: the read-back decides.
        #expect(try cli(["lock", "--when-seen", "--uid", slix, "--block", "0x16", "--yes"]).code == 0)
        #expect(
            try CLITests.run(["lock", "--field", field, "--uid", slix, "--block", "0x16", "--yes"]).out.contains(
                "is locked"))
        // A bad file names its line; nothing is queued from it.
        try "0x10 41532D30\n0x11 3030\n".write(to: file, atomically: true, encoding: .utf8)
        let bad = try cli(["write", "--when-seen", "--uid", slix, "--blocks-from", file.path])
        #expect(bad.code == 1 && bad.err.contains("line 2: 2 bytes, but line 1 has 4"), "\(bad.err)")
        let run = try CLITests.run(["run", "--config", config, "--cycles", "2", "--fast-clock"])
        #expect(run.code == 0, "\(run.err)")
        let list = try cli(["writes", "list"]).out
        #expect(
            list.contains("1  done      \(slix)  0x10  41532D3030303432 +lock")
                && list.contains("written and read back in"), "\(list)")
        #expect(
            list.contains("2 block(s) locked and read back locked")
                && list.contains("2  done      \(slix)  0x14  DEADBEEF +lock"), "\(list)")
        #expect(
            list.contains("3  done      \(slix)  0x15  lock")
                && list.contains("block 0x15 locked and read back locked"), "\(list)")
        #expect(
            list.contains("4  done      \(slix)  0x16  lock")
                && list.contains("block 0x16 already locked (read back); not locked again"), "\(list)")
        #expect(list.contains("4 writes"), "\(list)")
        let tag = try CLITests.run([
            "read", "--field", field, "--uid", slix, "--block", "0x10", "--count", "7", "--security",
        ]).out
        for (block, bytes) in [("0x10", "41 53 2D 30"), ("0x11", "30 30 34 32"), ("0x14", "DE AD BE EF")] {
            #expect(
                tag.contains("\(block)   \(bytes)")
                    && tag.split(separator: "\n").first { $0.hasPrefix(block) }?.hasSuffix(" locked") == true, "\(tag)")
        }
        #expect(
            tag.split(separator: "\n").filter { $0.hasSuffix(" locked") && !$0.hasSuffix("unlocked") }.count == 5,
            "\(tag)")
    }

    @Test func queuedWritesAreMadeWhenTheTagIsSeenAndNeverTwice() throws {
        let dir = try CLITests.scratch(
            "queue", copying: ["vlogger.toml", "rules.toml", "assets.csv", "demo-field", "demo-field-dock"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("vlogger.toml").path,
            field = dir.appendingPathComponent("demo-field").path
        func q(_ args: [String]) throws -> (code: Int32, out: String, err: String) {
            try CLITests.run(["write", "--when-seen", "--config", config] + args)
        }
        #expect(
            try q(["--uid", "E008010000004212", "--block", "0xF9", "--data", "0102030405060708"]).out.hasPrefix(
                "queued write 1:"))
        // block 0x00 is locked
        #expect(try q(["--uid", "E004010812345602", "--block", "0x00", "--data", "00000000"]).code == 0)
        #expect(
            // never seen
            try q(["--uid", "E00401000000BEEF", "--block", "1", "--data", "11223344", "--expires", "1ms"]).code == 0)
        #expect(try q(["--uid", "E007C00000000505", "--block", "0", "--data", "42494E39"]).code == 0)
        #expect(try q(["--uid", "E008010000004212", "--block", "0xF9", "--data", "01"]).code == 0)
        #expect(try CLITests.run(["writes", "cancel", "--config", config, "5"]).out.contains("write 5 cancelled"))
        #expect(try CLITests.run(["writes", "cancel", "--config", config, "5"]).code == 1)
        #expect(try q(["--block", "0", "--data", "00"]).err.contains("--when-seen needs --uid"))
        // Write 4 reached the tag before a crash cut off its record: the service is killed between the write and
        // its result. Here the write is made by hand: the read-back must find it and not write again.
        #expect(
            try CLITests.run([
                "write", "--field", field, "--uid", "E007C00000000505", "--block", "0", "--data", "42494E39",
            ]).code == 0)
        Thread.sleep(forTimeInterval: 0.01)
        let run = try CLITests.run(["run", "--config", config, "--cycles", "2", "--fast-clock"])
        #expect(run.code == 0, "\(run.err)")
        let list = try CLITests.run(["writes", "list", "--config", config]).out
        #expect(
            list.contains("1  done      E008010000004212  0xF9  0102030405060708")
                && list.contains("written and read back"), "\(list)")
        #expect(
            list.contains("2  failed    E004010812345602  0x00  00000000") && list.contains("block 0x00 is locked"),
            "\(list)")
        #expect(list.contains("3  expired   E00401000000BEEF"), "\(list)")
        #expect(
            list.contains("4  done      E007C00000000505")
                && list.contains("already on the tag (read back); not written again"), "\(list)")
        #expect(list.contains("5  cancelled"), "\(list)")
        // The tag holds the data; the writes table has the one write the service made (write 1), not write 4.
        #expect(
            try CLITests.run(["read", "--field", field, "--uid", "E008010000004212", "--block", "0xF9"]).out.contains(
                "01 02 03 04 05 06 07 08"))
        let writes = try CLITests.run(["export", "--config", config, "--since", "1h", "--table", "writes"]).out.split(
            separator: "\r\n")
        #expect(
            writes.count == 2 && writes[1].contains("E008010000004212,0xF9,\\x0102030405060708")
                && writes[1].contains("ok (queued write 1)"), "\(writes)")
        // A second run makes nothing again.
        #expect(
            try CLITests.run(["run", "--config", config, "--cycles", "1", "--fast-clock"]).err.contains("queued write")
                == false)
        // Now that the store knows the cage tag (256 blocks of 8 bytes), a write past its end or not in whole
        // blocks is refused when it is queued.
        let past = try q(["--uid", "E008010000004212", "--block", "0xFF", "--data", "01020304050607080102030405060708"])
        #expect(
            past.code == 1
                && past.err.contains("2 block(s) from 0xFF run past the end of E008010000004212 (256 blocks)"),
            "\(past.err)")
        #expect(
            try q(["--uid", "E008010000004212", "--block", "0xF9", "--data", "010203"]).err.contains(
                "8-byte blocks; 3 bytes"))
    }

    @Test func runThenExportCSVThatPythonReadsRowForRow() throws {
        let s = try Self.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let run = try CLITests.run(["run", "--config", s.config, "--duration", "20s", "--fast-clock"])
        #expect(run.code == 0, "\(run.err)")
        #expect(run.out.contains("20 cycles:") && run.out.contains("violations"), "\(run.out)")
        let csvPath = s.dir.appendingPathComponent("readings.csv").path
        let export = try CLITests.run(["export", "--config", s.config, "--since", "2000-01-01", "--output", csvPath])
        // A date without an offset is the gateway's local day (Config/vlogger.toml: Europe/Berlin), said on stderr.
        #expect(export.code == 0 && export.err.contains("Europe/Berlin's time"), "\(export.err)")
        let store = try Store(path: s.store, readOnly: true)
        let count = try store.count("readings")
        #expect(count > 100)
        // Python's csv module: header + one row per reading, every row as wide as the header.
        let py = Process()
        py.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        py.arguments = [
            "python3", "-c",
            """
            import csv, sys
            rows = list(csv.reader(open(sys.argv[1], newline='')))
            assert all(len(r) == len(rows[0]) for r in rows), 'ragged'
            h = rows[0]
            t = [float(r[h.index('temperature')]) for r in rows[1:] if r[h.index('temperature')]]
            print(len(rows) - 1, len(h), min(t), max(t))
            """, csvPath,
        ]
        let out = Pipe()
        py.standardOutput = out
        try py.run()
        py.waitUntilExit()
        let fields = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(
            separator: " ")
        #expect(py.terminationStatus == 0 && fields.count == 4)
        #expect(Int(fields[0]) == count)
        // The scenario's drift: 21.5 °C at the start, rising past the 24 °C rule within 20 s.
        #expect(
            (Double(fields[2]) ?? 0) >= 20.9
                && (Double(fields[3].trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 24)
        let events = try CLITests.run(["export", "--config", s.config, "--since", "7d", "--table", "events"])
        #expect(events.out.contains(",violation,cold room temperature,critical,"), "\(events.out)")
        // A departure's name is empty: its kind says it all (docs/json.md).
        #expect(events.out.contains(",departure,,info,"))
        let tags = try CLITests.run([
            "export", "--config", s.config, "--since", "7d", "--table", "tags", "--format", "jsonl",
        ])
        #expect(
            tags.out.split(separator: "\n").count == 8 && tags.out.contains("\"model\":\"Fujitsu MB89R118\""),
            "\(tags.out)")
    }

    @Test func badInputGivesFileLineAndNonZeroExit() throws {
        let s = try Self.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try "[store]\npath = \"x.db\"\nbatch_size = 5\n".write(toFile: s.config, atomically: true, encoding: .utf8)
        let check = try CLITests.run(["config", "check", s.config])
        #expect(
            check.code != 0 && check.err.contains("\(s.config):3: unknown key 'batch_size' in [store]"), "\(check.err)")
        let run = try CLITests.run(["run", "--config", s.config, "--cycles", "1"])
        #expect(run.code != 0 && run.err.contains(":3:"))
        let since = try CLITests.run(["export", "--store", s.store, "--since", "last tuesday"])
        #expect(since.code != 0 && since.err.contains("is not a time"))
        let missing = try CLITests.run(["export", "--store", s.store, "--since", "1h"])
        #expect(missing.code != 0 && missing.err.contains("no store at"))
        let ok = try CLITests.run(["config", "check", CLITests.root.appendingPathComponent("Config/vlogger.toml").path])
        #expect(ok.code == 0 && ok.out.contains("ok"), "\(ok.err)")
    }

    @Test func writesAreRecordedWithTheirFlags() throws {
        let s = try Self.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let field = s.dir.appendingPathComponent("field").path
        // Tag-it HF-I Plus writes need the Option flag: flags 0x62 = option | address | high data rate.
        let w = try CLITests.run([
            "write", "--field", field, "--uid", "E007800000007777", "--block", "3", "--data", "01020304", "--store",
            s.store,
        ])
        #expect(w.code == 0, "\(w.err)")
        let bad = try CLITests.run([
            "write", "--field", field, "--uid", "E004010812345601", "--block", "0", "--data", "01020304", "--store",
            s.store,
        ])
        #expect(bad.code != 0 && bad.err.contains("0x12"))
        let e = try CLITests.run(["export", "--store", s.store, "--since", "1h", "--table", "writes"])
        let rows = e.out.components(separatedBy: "\r\n")
        #expect(rows[0] == "time,gateway,uid,block,data,flags,result,verified,exchanges,origin")
        #expect(rows[1].contains(",cli,E007800000007777,0x03,\\x01020304,0x62,ok,1,"), "\(e.out)")
        // Who asked: `vlogger write` itself (docs/json.md, origin).
        #expect(rows[1].hasSuffix(",cli") && rows[2].hasSuffix(",cli"), "\(e.out)")
        #expect(
            rows[2].contains(
                ",cli,E004010812345601,0x00,\\x01020304,0x22,failed: Write Single Block: the tag answered error 0x12: specified block is locked"
            ), "\(e.out)")
    }

    /// Reads stderr lines of a running agent until `done` says stop (or the stream ends).
    static func follow(_ pipe: Pipe, _ done: (String) -> Bool) {
        var buffer = ""
        while true {
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { return }
            buffer += String(decoding: data, as: UTF8.self)
            while let nl = buffer.firstIndex(of: "\n") {
                let line = String(buffer[..<nl])
                buffer.removeSubrange(...nl)
                if done(line) { return }
            }
        }
    }

    static func start(_ args: [String]) throws -> (Process, Pipe, Pipe) {
        let p = Process()
        p.executableURL = try CLITests.binary()
        p.arguments = args
        p.currentDirectoryURL = CLITests.root
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        return (p, out, err)
    }

    @Test func sigtermStopsFlushesAndExitsZero() throws {
        let s = try Self.setup(interval: "100ms", batch: 10_000, flush: "1h")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let (p, out, err) = try Self.start(["run", "--config", s.config, "--log-level", "debug"])
        var cycles = 0
        Self.follow(err) { line in
            if line.contains("cycle ") { cycles += 1 }
            return cycles >= 3
        }
        // Nothing has been committed yet (batch size and interval are far off): SIGTERM must flush it.
        kill(p.processIdentifier, SIGTERM)
        var rest = ""
        Self.follow(err) {
            rest += $0 + "\n"; return false
        }
        p.waitUntilExit()
        #expect(p.terminationStatus == 0 && p.terminationReason == .exit, "\(rest)")
        #expect(rest.contains("SIGTERM"))
        let summary = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let store = try Store(path: s.store, readOnly: true)
        let n = try store.count("readings")
        #expect(n >= 3 * 7 && summary.contains("\(n) readings and"), "\(summary)")
        #expect(try store.events(kind: .stop).count == 1)
    }

    /// SIGKILL during ingest, many times in a row: every reading the store had reported committed is there,
    /// and `PRAGMA integrity_check` is ok after each kill.
    @Test func sigkillNeverLosesACommittedBatch() throws {
        let s = try Self.setup(interval: "0s", batch: 20, flush: "50ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        var committed = 0
        var lastID: Int64 = 0
        var kills = 0
        for round in 0..<10 {
            let (p, _, err) = try Self.start(["run", "--config", s.config, "--log-level", "debug"])
            var commitsThisRound = 0
            Self.follow(err) { line in
                // "committed 20 readings, 1 events through reading id 840 in 3.1 ms"
                guard let r = line.range(of: "committed "), let idr = line.range(of: "through reading id ") else {
                    return false
                }
                let n = Int(line[r.upperBound...].prefix { $0.isNumber }) ?? 0
                let id = Int64(line[idr.upperBound...].prefix { $0.isNumber }) ?? 0
                committed += n
                if n > 0 { lastID = id }
                commitsThisRound += 1
                return commitsThisRound >= 3 + round % 4
            }
            // Kill in the middle of the next batches (the agent keeps polling and committing).
            usleep(useconds_t(1000 * (round % 3) * 7))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            #expect(p.terminationReason == .uncaughtSignal)
            kills += 1
            // Commits reported after our last read of stderr may also be there: at least what we saw.
            let store = try Store(path: s.store)
            #expect(try store.integrityCheck() == "ok")
            #expect(try store.readingCount(upToID: lastID) >= committed, "round \(round)")
            let total = try store.count("readings")
            committed = total  // later rounds build on what is there now
            lastID = Int64(try store.readingCount(upToID: Int64.max))
            store.close()
        }
        #expect(kills == 10 && committed > 200)
    }
}

/// Issue 47, item 8: the README's first `run` promised HTTP on 127.0.0.1:9715, but the demo configuration has no
/// listener and the log did not say so. Now the log says when nothing is served, and how to serve it.
@Suite(.serialized) struct ListenerNoticeTests {
    @Test func aRunWithoutAListenerSaysSo() throws {
        let s = try AgentCLITests.setup(interval: "200ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let quiet = try CLITests.run(["run", "--config", s.config, "--cycles", "1"])
        #expect(quiet.code == 0, "\(quiet.err)")
        #expect(quiet.err.contains("no HTTP listener") && quiet.err.contains("--listen 127.0.0.1:9715"), "\(quiet.err)")
        let served = try CLITests.run(["run", "--config", s.config, "--cycles", "1", "--listen", "127.0.0.1:0"])
        #expect(served.code == 0 && !served.err.contains("no HTTP listener"), "\(served.err)")
        #expect(served.err.contains("serving /healthz"), "\(served.err)")
    }
}

/// Issue 47, item 5: `export --since 2026-11-27` was the UTC day although the gateway's zone was Europe/Berlin and
/// every screen showed Berlin time. Now dates without an offset are the gateway's ([gateway] time-zone, else the
/// system's: here TZ), and `--local-time` writes times in that zone with their offset. Berlin is +01:00 in
/// November, Chicago -06:00 (IANA tz database; EU Directive 2000/84/EC for the summer-time dates).
@Suite struct LocalDateExportTests {
    @Test func sinceAndUntilAreTheGatewaysLocalDays() throws {
        let dir = try CLITests.scratch("localdates", copying: [])
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v.db").path
        let store = try Store(path: path)
        var b = Batch()
        // 23:30 on the 26th, 00:30 and 23:30 on the 27th, 00:30 on the 28th, Berlin time.
        for (i, utc) in [
            "2026-11-26T22:30:00Z", "2026-11-26T23:30:00Z", "2026-11-27T22:30:00Z", "2026-11-27T23:30:00Z",
        ]
        .enumerated() {
            b.readings.append(
                Reading(
                    time: try TimeSpec.parse(utc, now: 0).millis, gateway: "gw", reader: "r", location: nil,
                    uid: try UID(parsing: "E00401501234567\(i)"), first: 0xF8, count: 1, data: [UInt8(i)]))
        }
        try store.write(b)
        store.close()
        func rows(_ args: [String], _ env: [String: String]) throws -> (lines: [String], err: String) {
            let r = try CLITests.run(["export", "--store", path] + args, environment: env)
            #expect(r.code == 0, "\(r.err)")
            return (r.out.split(separator: "\r\n").dropFirst().map(String.init), r.err)
        }
        let berlin = ["TZ": "Europe/Berlin"]
        let day = try rows(["--since", "2026-11-27", "--until", "2026-11-28"], berlin)
        #expect(day.lines.map { String($0.prefix(24)) } == ["2026-11-26T23:30:00.000Z", "2026-11-27T22:30:00.000Z"])
        #expect(day.err.contains("Europe/Berlin's time, 2026-11-27 00:00:00 +01:00"), "\(day.err)")
        // With --local-time the same rows read as the day asked for.
        let local = try rows(["--since", "2026-11-27", "--until", "2026-11-28", "--local-time"], berlin)
        #expect(
            local.lines.map { String($0.prefix(29)) } == [
                "2026-11-27T00:30:00.000+01:00", "2026-11-27T23:30:00.000+01:00",
            ], "\(local.lines)")
        // An offset given is kept, whatever the zone: the UTC day.
        let utcDay = try rows(["--since", "2026-11-27T00:00Z", "--until", "2026-11-28T00:00Z"], berlin)
        #expect(utcDay.lines.count == 2 && utcDay.lines[0].hasPrefix("2026-11-27T22:30"), "\(utcDay.lines)")
        // [gateway] time-zone of the configuration wins over the system's: Chicago's 27th is 06:00Z to 06:00Z.
        let config = dir.appendingPathComponent("v.toml")
        try "[gateway]\ntime-zone = \"America/Chicago\"\n[store]\npath = \"v.db\"\n".write(
            to: config, atomically: true, encoding: .utf8)
        let chicago = try CLITests.run(
            ["export", "--config", config.path, "--since", "2026-11-27", "--until", "2026-11-28"], environment: berlin)
        #expect(chicago.code == 0, "\(chicago.err)")
        let chicagoRows = chicago.out.split(separator: "\r\n").dropFirst()
        #expect(chicagoRows.count == 2 && chicagoRows.first?.hasPrefix("2026-11-27T22:30") == true, "\(chicago.out)")
        // --plain-hex is CSV's: with JSON lines it is an error, not ignored.
        let bad = try CLITests.run(["export", "--store", path, "--since", "1d", "--format", "jsonl", "--plain-hex"])
        #expect(bad.code != 0 && bad.err.contains("--plain-hex"), "\(bad.err)")
    }
}
