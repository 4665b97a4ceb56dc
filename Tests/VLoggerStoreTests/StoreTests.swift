import Foundation
import ISO15693
import Testing
@testable import VLoggerStore
import VLoggerModel

func scratchPath(_ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent(name).path
}

func reading(_ i: Int, uid: String = "E008010000004212", gateway: String = "gw") -> Reading {
    Reading(
        time: 1_763_800_000_000 + Millis(i), gateway: gateway,
        uid: (try? UID(parsing: uid)) ?? UID(manufacturer: .nxp, serial: 1),
        first: 0xF8, count: 1, data: [0x66, 0x08, 0xC2, 0x01, 0x42, 0x37, 0x00, UInt8(i & 0xFF)], security: [0],
        decoded: [("temperature", .number(21.5)), ("cage", .text("B7"))])
}

@Suite struct StoreTests {
    @Test func migrationsWALAndReopen() throws {
        let path = scratchPath("s.db")
        do {
            let s = try Store(path: path)
            #expect(try s.appliedMigrations() == Store.migrations.map(\.name))
            #expect(try s.scalar("PRAGMA journal_mode") == .text("wal"))
            // synchronous=FULL is 2 (sqlite.org/pragma.html#pragma_synchronous).
            #expect(try s.scalar("PRAGMA synchronous") == .integer(2))
            s.close()
        }
        // A second open applies nothing and keeps the data; read-only opens check the schema.
        let s2 = try Store(path: path)
        try s2.write(
            {
                var b = Batch(); b.readings = [reading(1)]; return b
            }())
        s2.close()
        let ro = try Store(path: path, readOnly: true)
        #expect(try ro.count("readings") == 1)
        #expect(throws: StoreError.self) { try Store(path: scratchPath("none.db"), readOnly: true) }
    }

    @Test func aStoreFromANewerVloggerIsRefused() throws {
        let path = scratchPath("n.db")
        let s = try Store(path: path)
        try s.sql("INSERT INTO schema_migrations VALUES('999-from-the-future', 0)")
        s.close()
        do { _ = try Store(path: path); Issue.record("opened") } catch {
            #expect(error.message.contains("newer vlogger"))
        }
    }

    /// A manual clock for the writer's batching (records carry their own times).
    final class ManualClock: @unchecked Sendable {
        var ms: Millis = 0
        var read: @Sendable () -> Millis { { [self] in ms } }
    }

    /// The migrations end at the shape the table descriptions give (the description is the one list of a table's
    /// columns; a migration is how a store gets there).
    @Test func theMigratedTablesHaveTheDescribedColumns() throws {
        let s = try Store(path: scratchPath("shape.db"))
        #expect(TableDescription.all.count == 7 && TableDescription.internalTables.count == 2)
        // The exported tables and the store's own that the batch writes (sensor sessions, reader buffers).
        for d in TableDescription.all + TableDescription.internalTables {
            let shape = try s.withReader { db throws(StoreError) in
                let q = try db.prepare(
                    "SELECT name, type, \"notnull\" FROM pragma_table_info('\(d.name)') ORDER BY name")
                var out: [String] = []
                while try q.step() { out.append("\(q.text(0) ?? "") \(q.text(1) ?? "") \(q.int64(2) == 0)") }
                return out
            }
            let described =
                ((d.hasRowID ? ["id INTEGER true"] : []) + d.columns.map { "\($0.name) \($0.sqlite) \($0.nullable)" })
                .sorted()
            #expect(shape == described, "\(d.name)")
        }
    }

    /// A store from before outputs were consumers (migrations 001–012): the fleet sync's cursors in sync_cursor
    /// become the cursors of the consumer "postgres", so an upgraded gateway sends nothing twice.
    @Test func theFleetSyncCursorsBecomeThePostgresConsumers() throws {
        let path = scratchPath("before-outputs.db")
        let old = try SQLiteConnection(path: path)
        try old.execute("PRAGMA journal_mode=WAL")
        try old.execute(
            "CREATE TABLE schema_migrations(name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL) WITHOUT ROWID")
        let upTo = try #require(Store.migrations.firstIndex { $0.name == "012-write-queue-idempotency-key" })
        for m in Store.migrations.prefix(upTo + 1) {
            try old.execute(m.sql)
            try old.execute("INSERT INTO schema_migrations VALUES('\(m.name)', 0)")
        }
        try old.execute(
            "INSERT INTO sync_cursor VALUES('readings', 4242, 1763800000000), ('events', 17, 1763800000000)")
        old.close()
        let store = try Store(path: path)
        #expect(try store.appliedMigrations() == Store.migrations.map(\.name))
        #expect(try store.outboxCursors() == ["postgres": [.readings: 4242, .events: 17]])
        #expect(try store.outboxCursor("postgres", .readings) == 4242 && store.outboxCursor("mqtt", .readings) == 0)
        try store.advanceOutboxCursor("postgres", .readings, to: 100)
        #expect(try store.outboxCursor("postgres", .readings) == 4242)  // a cursor never moves back
    }

    @Test func aStoreFromBeforeReadersMigratesInPlace() throws {
        // A store as the previous release left it: migrations 001 and 002, one reading without reader columns.
        let path = scratchPath("old.db")
        let old = try SQLiteConnection(path: path)
        try old.execute("PRAGMA journal_mode=WAL")
        try old.execute(
            "CREATE TABLE schema_migrations(name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL) WITHOUT ROWID")
        for m in Store.migrations.prefix(2) {
            try old.execute(m.sql)
            try old.execute("INSERT INTO schema_migrations VALUES('\(m.name)', 0)")
        }
        try old.execute(
            "INSERT INTO readings(time, gateway, uid, block, count, data) VALUES(1763800000000, 'gw', 'E008010000004212', 248, 1, x'6608C20142370001')"
        )
        old.close()
        let store = try Store(path: path)
        #expect(try store.appliedMigrations() == Store.migrations.map(\.name))
        var r = reading(2)
        (r.reader, r.location) = ("dock-2", "Dock door 2")
        var b = Batch()
        b.readings = [r]
        try store.write(b)
        let got = try store.withReader { db throws(StoreError) in
            let rows = try db.prepare("SELECT coalesce(reader, '-'), coalesce(location, '-') FROM readings ORDER BY id")
            var got: [String] = []
            while try rows.step() { got.append("\(rows.text(0) ?? "") \(rows.text(1) ?? "")") }
            return got
        }
        #expect(got == ["- -", "dock-2 Dock door 2"])  // the old row kept, without a reader; the new one with its own
    }

    @Test func aFailedBatchIsKeptWholeAndRetried() throws {
        let store = try Store(path: scratchPath("f.db"))
        let w = StoreWriter(store: store, batchSize: 4, flushIntervalMs: 1000)
        // A trigger that fails the third row of the batch: the whole transaction must roll back.
        try store.sql(
            "CREATE TRIGGER fail_third BEFORE INSERT ON readings WHEN NEW.data = x'6608C20142370003' BEGIN SELECT RAISE(ABORT, 'disk trouble'); END"
        )
        for i in 1...4 { w.add(reading(i)) }
        #expect(w.isDue(now: 0))
        #expect(w.commitNow() == false)
        #expect(w.lastError?.message.contains("disk trouble") == true)
        #expect(try store.count("readings") == 0)  // nothing half-written
        #expect(w.pendingCount == 4)  // nothing dropped
        try store.sql("DROP TRIGGER fail_third")
        #expect(w.commitNow())
        #expect(try store.count("readings") == 4 && w.stats.committedReadings == 4 && w.pendingCount == 0)
    }

    @Test func batchesCommitBySizeOrTime() throws {
        let store = try Store(path: scratchPath("b.db"))
        let clock = ManualClock()
        let w = StoreWriter(store: store, batchSize: 3, flushIntervalMs: 2000, clock: clock.read)
        clock.ms = 1000
        w.add(reading(1))
        #expect(!w.isDue(now: 2999))
        #expect(w.isDue(now: 3000))  // the oldest waited 2 s
        w.add(reading(2))
        w.add(reading(3))
        #expect(w.isDue(now: 1600))  // 3 readings = batch size
        w.commitNow()
        #expect(try store.count("readings") == 3 && w.stats.commits == 1)
    }

    @Test func pastTheQueueLimitTheOldestReadingsAreDroppedCountedAndReported() throws {
        let path = scratchPath("limit.db")
        let store = try Store(path: path, busyTimeoutMs: 10)
        let other = try SQLiteConnection(path: path, busyTimeoutMs: 10)
        try other.execute("BEGIN IMMEDIATE")  // the store is locked: nothing commits
        let w = StoreWriter(store: store, gateway: "gw", batchSize: 10, queueLimit: 800)
        for i in 1...1000 { w.add(reading(i)) }
        #expect(w.commitNow() == false)
        // 1000 > 800: the oldest went, an eighth of the limit (100) at a time: 1000 - 2 × 100 = 800 left.
        #expect(w.stats.queuedReadings == 800 && w.stats.droppedReadings == 200)
        try other.execute("COMMIT")
        #expect(w.commitNow())
        #expect(try store.count("readings") == 800)
        let e = try store.events()
        #expect(e.count == 1 && e[0].name == "readings-dropped" && e[0].detail.hasPrefix("200 readings and 0 events"))
        // The survivors are the newest: reading(201) … reading(1000).
        #expect(try store.readings().first?.time == reading(201).time)
    }

    @Test func busyFromAnotherConnectionIsWaitedOut() throws {
        let path = scratchPath("busy.db")
        let store = try Store(path: path, busyTimeoutMs: 50)
        let other = try SQLiteConnection(path: path, busyTimeoutMs: 50)
        try other.execute("BEGIN IMMEDIATE")  // another writer holds the lock
        let w = StoreWriter(store: store, batchSize: 1)
        w.add(reading(1))
        #expect(w.commitNow() == false)
        #expect(w.lastError?.isBusy == true)
        #expect(w.pendingCount == 1)
        try other.execute("COMMIT")
        #expect(w.commitNow())
        #expect(try store.count("readings") == 1)
        // A reader in WAL mode (an export) does not block the writer at all.
        try other.execute("BEGIN")
        _ = try other.scalar("SELECT count(*) FROM readings")
        w.add(reading(2))
        #expect(w.commitNow())
        try other.execute("COMMIT")
    }
}

@Suite struct ExportTests {
    func exportText(_ store: Store, _ r: ExportRequest) throws -> String {
        let path = scratchPath("out.csv")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try Exporter.export(r, store: store, to: fd)
        close(fd)
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    @Test func csvQuotingNeutralisationAndColumns() throws {
        let store = try Store(path: scratchPath("e.db"))
        try store.registerFields([FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "cage", unit: nil)])
        var b = Batch()
        var r1 = reading(1, gateway: "=HYPERLINK(\"x\")")
        r1.decoded = [("temperature", .number(-3.25)), ("cage", .text("-B7, \"north\""))]
        var r2 = reading(2)
        (r2.reader, r2.location) = ("dock-1", "Dock door 1")
        b.readings = [r1, r2]
        try store.write(b)
        var req = ExportRequest(since: 0)
        req.table = .readings
        let text = try exportText(store, req)
        let lines = text.components(separatedBy: "\r\n")
        // asset_id: the register's, empty here (no register).
        #expect(lines[0] == "time,gateway,reader,location,uid,asset_id,block,count,data,security,temperature,cage")
        // RFC 4180: a cell with a comma or quote is quoted and quotes are doubled. OWASP: = + - @ get a '. Bytes
        // after `\x` (PostgreSQL's bytea hex form), so data tools read them as text.
        // The number -3.25 is left alone.
        #expect(
            lines[1]
                == "2025-11-22T08:26:40.001Z,\"'=HYPERLINK(\"\"x\"\")\",,,E008010000004212,,0xF8,1,\\x6608C20142370001,\\x00,-3.25,\"'-B7, \"\"north\"\"\""
        )
        #expect(
            lines[2]
                == "2025-11-22T08:26:40.002Z,gw,dock-1,Dock door 1,E008010000004212,,0xF8,1,\\x6608C20142370002,\\x00,21.5,B7"
        )
        #expect(lines.count == 4 && lines[3] == "")
        // Python's csv module reads it back row for row.
        let py = Process()
        py.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let path = scratchPath("py.csv")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        py.arguments = [
            "python3", "-c",
            "import csv,sys; rows=list(csv.reader(open(sys.argv[1], newline=''))); print(len(rows)); print(rows[1][11]); print(rows[1][1])",
            path,
        ]
        let out = Pipe()
        py.standardOutput = out
        try py.run()
        py.waitUntilExit()
        let got = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(got == "3\n'-B7, \"north\"\n'=HYPERLINK(\"x\")\n")
    }

    @Test func filtersAndJSONLines() throws {
        let store = try Store(path: scratchPath("j.db"))
        var b = Batch()
        b.readings = (1...10).map { reading($0, uid: $0 % 2 == 0 ? "E008010000004212" : "E004010812345601") }
        b.events = [
            Event(
                time: 1_763_800_000_005, gateway: "gw", uid: nil, kind: .start, name: "start", severity: .info,
                detail: "a\nb")
        ]
        try store.write(b)
        var req = ExportRequest(since: 1_763_800_000_003)
        req.until = 1_763_800_000_009
        req.uid = try UID(parsing: "E008010000004212")
        req.format = .jsonl
        let lines = try exportText(store, req).split(separator: "\n")
        #expect(lines.count == 3)  // readings 4, 6, 8
        let obj = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        #expect(
            obj?["time"] as? String == "2025-11-22T08:26:40.004Z" && obj?["block"] as? String == "0xF8"
                && obj?["count"] as? Int == 1)
        var ev = ExportRequest(since: 0)
        ev.table = .events
        ev.format = .jsonl
        let e = try exportText(store, ev)
        #expect(e.contains("\"detail\":\"a\\nb\""))
    }
}

extension Store {
    /// Test helpers: a statement or a value on the writer connection.
    func sql(_ text: String) throws {
        try withWriter { db throws(StoreError) in try db.execute(text) }
    }
    func scalar(_ text: String) throws -> SQLValue? {
        try withWriter { db throws(StoreError) in try db.scalar(text) }
    }
}

@Suite struct DamagedStoreTests {
    @Test func aDamagedStoreIsRefusedForWritingWithAWayOut() throws {
        let path = scratchPath("damaged.db")
        let store = try Store(path: path)
        var b = Batch()
        b.readings = (1...2000).map { reading($0) }
        try store.write(b)
        try store.sql("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()
        // Overwrite the start of every page past the schema's: b-tree pages no longer parse (SQLite code 11).
        var data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let pageSize = Int(data[16]) << 8 | Int(data[17])
        for page in stride(from: 4 * pageSize, to: data.count, by: pageSize) {
            for k in 0..<8 { data[page + k] = 0xFF }
        }
        try Data(data).write(to: URL(fileURLWithPath: path))
        #expect { try Store(path: path) } throws: { e in
            let m = "\(e)"
            return m.contains("is damaged") && m.contains("nothing is written into it")
                && m.contains("vlogger export --store")
        }
    }
}

@Suite struct AssetRegisterStoreTests {
    @Test func reimportUpdatesNeverDuplicatesAndADryRunWritesNothing() throws {
        let store = try Store(path: scratchPath("assets.db"))
        let cage = try UID(parsing: "E008010000004212"), pallet = try UID(parsing: "E004010812345601")
        let first = [
            AssetRow(uid: cage, assetID: "CAGE-12", name: "Cold cage 12", location: "Cold room B7"),
            AssetRow(uid: pallet, assetID: "PAL-0001", location: "Dock A"),
        ]
        let r1 = try store.importAssets(first, source: "a.csv", now: 1000)
        #expect(r1.added == [cage, pallet] && r1.changed.isEmpty && r1.unchanged == 0)
        // The pallet moves to dock 3; the cage is left out of the second file (kept).
        var moved = first[1]
        moved.location = "Dock 3"
        moved.extra = ["block_0xf8": "6608C2"]
        let dry = try store.importAssets([moved], source: "b.csv", dryRun: true, now: 2000)
        #expect(dry.changed == [pallet] && dry.notInFile == [cage])
        #expect(try store.assets().first { $0.uid == pallet }?.location == "Dock A")  // nothing written
        let r2 = try store.importAssets([moved], source: "b.csv", now: 2000)
        #expect(r2.changed == [pallet] && r2.added.isEmpty && r2.notInFile == [cage])
        let rows = try store.assets()
        #expect(rows.count == 2 && rows.first { $0.uid == pallet } == moved)
        #expect(try store.assets(location: "Dock 3").map(\.uid) == [pallet])
        #expect(try store.importAssets([moved], source: "b.csv", now: 3000).unchanged == 1)
    }
}

/// `[store] keep`: old rows go, in chunks; with fleet sync on, a row past its table's sync cursor stays however
/// old, and an audit stays while one of its results does.
@Suite struct RetentionTests {
    @Test func oldRowsGoButNothingUnsynced() throws {
        let s = try Store(path: scratchPath("keep.db"))
        defer { s.close() }
        let day: Millis = 86_400_000
        let now: Millis = 1_763_800_000_000 + 40 * day
        var b = Batch()
        // 100 readings a day for 40 days (ids 1…4000 oldest first), 40 events, 40 writes.
        for d in 0..<40 {
            for k in 0..<100 {
                var r = reading(k)
                r.time = 1_763_800_000_000 + Millis(d) * day + Millis(k)
                b.readings.append(r)
            }
            b.events.append(
                Event(
                    time: 1_763_800_000_000 + Millis(d) * day, gateway: "gw", uid: nil, kind: .arrival, name: "arrival",
                    severity: .info, detail: "day \(d)"))
            b.writes.append(
                WriteRecord(
                    time: 1_763_800_000_000 + Millis(d) * day, gateway: "gw", uid: try UID(parsing: "E008010000004212"),
                    first: 0, data: [1, 2, 3, 4], flags: nil, result: "ok", verified: true, exchanges: 2))
        }
        try s.write(b)
        for d in 0..<40 {
            let t = 1_763_800_000_000 + Millis(d) * day
            _ = try s.saveAudit(
                AuditRecord(
                    started: t, finished: t + 1000, gateway: "gw", location: "Dock", readers: ["dock"], rounds: 1,
                    trigger: "manual",
                    results: [
                        AuditResult(
                            uid: try UID(parsing: "E008010000004212"), assetID: "A", status: .present,
                            registeredLocation: "Dock", seenLocation: "Dock", seenBy: "dock", seenRounds: 1,
                            firstSeen: t, lastSeen: t)
                    ]))
        }
        let cutoff = now - 30 * day  // keep = 30d: days 0…9 are older
        // Sync has acknowledged readings up to day 5 (ids ≤ 600), events to day 20, no writes, audits 1…3 with
        // results 1…2 (so audit 3 still has an unsynced result). A second output, "late", has the same but
        // readings only up to day 2 (ids ≤ 300).
        for c in ["postgres", "late"] {
            try s.advanceOutboxCursor(c, .readings, to: c == "late" ? 300 : 600)
            try s.advanceOutboxCursor(c, .events, to: 21)
            try s.advanceOutboxCursor(c, .audits, to: 3)
            try s.advanceOutboxCursor(c, .auditResults, to: 2)
        }
        // Both outputs enabled: a row goes only when both have it (the lower cursor decides).
        let both = try s.prune(before: cutoff, keepFor: ["postgres", "late"], chunk: 250)
        #expect(both.deleted == [.readings: 300, .events: 10, .writes: 0, .audits: 2, .auditResults: 2], "\(both)")
        #expect(both.heldForConsumers[.readings] == 700, "\(both)")
        // "late" disabled: its cursor stays in the store but no longer holds rows back.
        let held = try s.prune(before: cutoff, keepFor: ["postgres"], chunk: 250)
        #expect(held.deleted == [.readings: 300, .events: 0, .writes: 0, .audits: 0, .auditResults: 0], "\(held)")
        #expect(
            held.heldForConsumers[.readings] == 400 && held.heldForConsumers[.writes] == 10
                // Each saved audit stored its audit_finished event (ids 41…80): days 0…9's are past the cursor.
                && held.heldForConsumers[.events] == 10 && held.heldForConsumers[.audits] == 8)
        #expect(try s.outboxCursors()["late"]?[.readings] == 300)
        #expect(
            try s.count("readings") == 3400 && s.count("events") == 70 && s.count("writes") == 40
                && s.count("audits") == 38 && s.count("audit_results") == 38)
        // Nothing unsynced went: the rows after each cursor are all there.
        #expect(
            try s.outboxBacklog("postgres", .readings).rows == 3400 && s.outboxBacklog("postgres", .writes).rows == 40)
        // Without sync, everything older goes.
        let all = try s.prune(before: cutoff, keepFor: [], chunk: 250)
        #expect(
            all.deleted[.readings] == 400 && all.deleted[.writes] == 10 && all.deleted[.audits] == 8
                && all.totalHeld == 0, "\(all)")
        #expect(try s.count("readings") == 3000 && s.count("audits") == 30 && s.count("audit_results") == 30)
        // The rest is untouched: the oldest reading left is day 10's first.
        #expect(try s.scalar("SELECT min(time) FROM readings") == .integer(1_763_800_000_000 + 10 * day))
    }
}

/// The fleet sync's safety window (`[sync] safety-window`): a central cluster with asynchronous replication can
/// lose commits it acknowledged in a failover (Patroni's documentation, "Replication modes"; docs/reference/
/// fleet-engines.md §1), so delivered rows stay in the store that long after the acknowledgement, whatever `keep`
/// says, and a rewound cursor takes its samples with it.
@Suite struct SafetyWindowTests {
    @Test func deliveredRowsStayForTheWindow() throws {
        let s = try Store(path: scratchPath("window.db"))
        defer { s.close() }
        let hour: Millis = 3_600_000
        let t0: Millis = 1_763_800_000_000
        var b = Batch()
        for k in 0..<1000 {
            var r = reading(k)
            r.time = t0 + Millis(k)
            b.readings.append(r)
        }
        try s.write(b)
        // Acknowledged: ids ≤ 400 at t0 + 1 h, ≤ 700 at t0 + 2 h (two samples), ≤ 1000 at t0 + 2 h 1 min (within
        // five minutes of the last sample: not sampled).
        try s.advanceOutboxCursor("postgres", .readings, to: 400, now: t0 + hour)
        try s.advanceOutboxCursor("postgres", .readings, to: 700, now: t0 + 2 * hour)
        try s.advanceOutboxCursor("postgres", .readings, to: 1000, now: t0 + 2 * hour + 60_000)
        #expect(try s.outboxCursor("postgres", .readings) == 1000)
        #expect(try s.outboxCursor("postgres", .readings, asOf: t0 + hour) == 400)
        #expect(try s.outboxCursor("postgres", .readings, asOf: t0 + 2 * hour + 120_000) == 700)
        #expect(try s.outboxCursor("postgres", .readings, asOf: t0) == 0)
        // keep = 0 (every reading is older than the cutoff), a 24 h window, 25 h after t0: only what was
        // acknowledged by t0 + 1 h (ids ≤ 400) may go.
        let first = try s.prune(
            before: t0 + 100 * hour, keepFor: ["postgres"], safetyWindows: ["postgres": 24 * hour],
            now: t0 + 25 * hour + 30 * 60_000)
        #expect(first.deleted[.readings] == 400 && first.heldForConsumers[.readings] == 600, "\(first)")
        // Without a window, the cursor alone decides (the newest row stays, for the ids to go on from it).
        let second = try s.prune(before: t0 + 100 * hour, keepFor: ["postgres"], now: t0 + 25 * hour)
        #expect(second.deleted[.readings] == 599 && second.heldForConsumers[.readings] == 1, "\(second)")
    }

    @Test func aRewindTakesTheSamplesBack() throws {
        let s = try Store(path: scratchPath("rewind.db"))
        defer { s.close() }
        let t0: Millis = 1_763_800_000_000
        var b = Batch()
        for k in 0..<100 { b.readings.append(reading(k)) }
        try s.write(b)
        try s.advanceOutboxCursor("postgres", .readings, to: 90, now: t0)
        // The central lost 61…90: the cursor goes back, and no sample says 90 any longer.
        try s.rewindOutboxCursor("postgres", .readings, to: 60, now: t0 + 1000)
        #expect(try s.outboxCursor("postgres", .readings) == 60)
        #expect(try s.outboxCursor("postgres", .readings, asOf: t0 + 1000) == 60)
        #expect(try s.outboxBacklog("postgres", .readings).rows == 40)
        // A rewind never moves a cursor forward.
        try s.rewindOutboxCursor("postgres", .readings, to: 80)
        #expect(try s.outboxCursor("postgres", .readings) == 60)
        // Retention takes every old row but the newest (id 100): new rows go on from 101, after every cursor. (SQLite
        // gives the first row of an empty table id 1, sqlite.org "ROWIDs and the INTEGER PRIMARY KEY": a table
        // emptied by retention would put new rows behind the cursors.)
        let pruned = try s.prune(before: Millis.max, keepFor: [], chunk: 5)
        #expect(pruned.deleted[.readings] == 99)
        #expect(try s.heldRows(.readings, after: 0, through: 99) == (0, nil))
        var c = Batch()
        for k in 0..<10 { c.readings.append(reading(k)) }
        try s.write(c)
        let held = try s.heldRows(.readings, after: 50, through: 200)
        #expect(held.count == 11 && held.lowest == 100)
        #expect(try s.newestID(.readings) == 110)
    }
}
