import Foundation
import ISO15693
import Logging
import PostgresNIO
import Synchronization
import Testing
import VLoggerCore
import VLoggerStore
import VLoggerModel
@testable import VLoggerSync

/// A real PostgreSQL: the throw-away cluster of `bench/postgres/pg.sh` (`.ci/run` starts it and sets
/// VLOGGER_TEST_PG_*; VLOGGER_REQUIRE_POSTGRES=1 there makes a missing server fail instead of skip). Each test
/// gets a database of its own.
enum TestServer {
    static let env = ProcessInfo.processInfo.environment
    static var available: Bool { env["VLOGGER_TEST_PG_PORT"] != nil }
    static var required: Bool { env["VLOGGER_REQUIRE_POSTGRES"] == "1" }
    static let logger = Logger(label: "vlogger.sync.test")

    static func settings(database: String) -> SyncSettings {
        var s = SyncSettings(
            host: env["VLOGGER_TEST_PG_HOST"] ?? "127.0.0.1", port: Int(env["VLOGGER_TEST_PG_PORT"] ?? "") ?? 5432,
            user: env["VLOGGER_TEST_PG_USER"] ?? "vlogger", database: database)
        s.sslMode = .disable  // loopback, a throw-away cluster
        s.passwordFile = env["VLOGGER_TEST_PG_PASSWORD_FILE"]
        s.batchSize = 100
        return s
    }

    /// A new, empty database for one test.
    static func database() async throws -> String {
        let name = "vlogger_test_\(UInt32.random(in: 0...UInt32.max))"
        try await admin("CREATE DATABASE \(name)")
        return name
    }

    /// Runs one statement on the maintenance database.
    static func admin(_ sql: String, database: String = "postgres") async throws {
        _ = try await query(sql, database: database)
    }

    /// Runs a query and returns its rows as text (the query casts its columns to text: results come in
    /// PostgreSQL's binary format).
    static func query(_ sql: String, database: String) async throws -> [[String?]] {
        let s = settings(database: database)
        let conn = try await PostgresConnection.connect(
            configuration: .init(
                host: s.host, port: s.port, username: s.user, password: try s.password(),
                database: database, tls: .disable), id: 1, logger: logger)
        do {
            var out: [[String?]] = []
            let rows = try await conn.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            for try await row in rows {
                out.append(row.map { cell in cell.bytes.map { String(buffer: $0) } })
            }
            try? await conn.close()
            return out
        } catch {
            try? await conn.close()
            throw error
        }
    }
}

/// A local store with readings and events as the agent writes them.
func localStore(gateway: String, readings: Int, events: Int, start: Millis = 1_763_800_000_000) throws -> Store {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-sync-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let store = try Store(path: dir.appendingPathComponent("local.db").path)
    var batch = Batch()
    for i in 0..<readings {
        // Spread over two months, so two partitions are needed.
        let t = start + Millis(i) * 3_600_000 * 6
        batch.readings.append(
            Reading(
                time: t, gateway: gateway, reader: "dock-\(i % 3)", location: "Dock \(i % 3)",
                uid: try UID(parsing: String(format: "E0040108%08X", i % 7)), first: 0xF8, count: 1,
                data: [UInt8(i & 0xFF), 1, 2, 3], security: i % 2 == 0 ? [1] : nil,
                decoded: [("temperature", .number(20 + Double(i) / 10))]))
    }
    for i in 0..<events {
        batch.events.append(
            Event(
                time: start + Millis(i) * 1000, gateway: gateway, reader: "dock-1", location: "Dock 1",
                uid: nil, kind: .arrival, name: "arrival", severity: .info, detail: "event \(i)"))
    }
    _ = try store.write(batch)
    return store
}

@Suite(
    .serialized,
    .enabled(
        if: TestServer.available || TestServer.required,
        "no PostgreSQL test server (eval \"$(sudo bash bench/postgres/pg.sh start)\")"))
struct CentralSyncTests {
    @Test func schemaIsCreatedOnceAndANewerOneIsRefused() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 1, events: 0)
        let syncer = try Syncer(
            settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: "Hall 1")
        // Before the schema exists, a sync says how to create it.
        await #expect { try await syncer.syncOnce() } throws: { "\($0)".contains("--init-schema") }
        // Version 4: the origin of writes and events (CentralSchema's fourth migration).
        #expect(try await syncer.initSchema() == (0, 4))
        #expect(try await syncer.initSchema() == (4, 4))
        try await TestServer.admin("INSERT INTO vlogger_schema(version) VALUES (99)", database: db)
        await #expect { try await syncer.initSchema() } throws: { "\($0)".contains("newer than this vlogger") }
        await #expect { try await syncer.syncOnce() } throws: { "\($0)".contains("upgrade vlogger") }
    }

    /// The central migrations end at the shape the table descriptions give: (gateway, local_id) and every
    /// described column with its PostgreSQL type and nullability; and a registered tag's asset id arrives.
    @Test func theCentralTablesHaveTheDescribedColumnsAndTheAssetID() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 14, events: 3)
        let syncer = try Syncer(
            settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: "Hall 1")
        _ = try await syncer.initSchema()
        for d in TableDescription.all where d.name != "assets" {
            let central = try await TestServer.query(
                """
                SELECT column_name::text, format_type(atttypid, atttypmod), (NOT attnotnull)::text
                FROM information_schema.columns c JOIN pg_attribute a
                    ON a.attrelid = '\(d.name)'::regclass AND a.attname = c.column_name
                WHERE c.table_schema = 'public' AND c.table_name = '\(d.name)' ORDER BY 1
                """, database: db)
            var described: [[String?]] = d.hasRowID ? [["local_id", "bigint", "false"]] : []
            for c in d.centralColumns {
                let type = try await TestServer.query("SELECT '\(c.postgres)'::regtype::text", database: db)
                described.append([c.name, type.first?.first ?? nil, c.nullable ? "true" : "false"])
            }
            #expect(
                central.map { $0.map { $0 ?? "" } } == described.map { $0.map { $0 ?? "" } }.sorted { $0[0] < $1[0] },
                "\(d.name)")
        }
        // The register lists one of the seven tags (E004010800000003) and is imported after the first rows:
        // readings stored from then on carry its asset id, earlier ones and other tags' none.
        _ = try store.importAssets(
            [AssetRow(uid: try UID(parsing: "E004010800000003"), assetID: "PAL-3")], source: "assets.csv")
        var batch = Batch()
        for i in 0..<7 {
            batch.readings.append(
                Reading(
                    time: 1_763_900_000_000 + Millis(i), gateway: "gw-a", reader: "dock-1", location: "Dock 1",
                    uid: try UID(parsing: String(format: "E0040108%08X", i)), first: 0, count: 1, data: [1, 2, 3, 4]))
        }
        _ = try store.write(batch)
        _ = try await syncer.syncOnce()
        let ids = try await TestServer.query(
            "SELECT uid, coalesce(asset_id, '-') FROM readings WHERE gateway = 'gw-a' AND local_id > 14 ORDER BY local_id",
            database: db)
        #expect(
            ids.map { $0.compactMap { $0 } }
                == (0..<7).map { [String(format: "E0040108%08X", $0), $0 == 3 ? "PAL-3" : "-"] })
        let before = try await TestServer.query(
            "SELECT count(*)::text FROM readings WHERE gateway = 'gw-a' AND local_id <= 14 AND asset_id IS NULL",
            database: db)
        #expect(before.first?.first == "14")
    }

    /// Every primary key and unique index of the central tables of rows includes `gateway`, the column a
    /// distributed PostgreSQL (Citus) distributes a table by: the schema can be spread over nodes by gateway as it
    /// is (issue "Fleet sync at PostgreSQL's own speed", item 5). `gateways` is keyed by the gateway itself (id).
    @Test func everyUniqueKeyOfTheCentralTablesIncludesTheGateway() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 1, events: 0)
        let syncer = try Syncer(
            settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: "Hall 1")
        _ = try await syncer.initSchema()
        let keys = try await TestServer.query(
            """
            SELECT c.relname::text, i.relname::text,
                   (SELECT string_agg(a.attname, ',' ORDER BY a.attnum) FROM pg_attribute a
                    WHERE a.attrelid = c.oid AND a.attnum = ANY(x.indkey))
            FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND (x.indisunique OR x.indisprimary) AND c.relkind IN ('r', 'p')
              AND c.relname NOT LIKE 'readings\\_y%'
            ORDER BY 1, 2
            """, database: db)
        let tables = Set(keys.compactMap { $0[0] })
        #expect(tables.isSuperset(of: ["readings", "events", "writes", "audits", "audit_results", "tags"]), "\(keys)")
        for k in keys where k[0] != "gateways" {
            let columns = (k[2] ?? "").split(separator: ",").map(String.init)
            #expect(columns.contains("gateway"), "\(k[0] ?? "") \(k[1] ?? ""): (\(columns.joined(separator: ", ")))")
        }
    }

    @Test func everyRowArrivesOnceAndAResentBatchChangesNothing() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 250, events: 40)
        let syncer = try Syncer(
            settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: "Hall 1")
        _ = try await syncer.initSchema()
        let first = try await syncer.syncOnce()
        #expect(
            first.sent[.readings] == 250 && first.inserted[.readings] == 250 && first.sent[.events] == 40
                && first.batches == 4)
        #expect(
            try await syncer.serverCounts() == [
                .readings: 250, .events: 40, .writes: 0, .audits: 0, .auditResults: 0, .tags: 0,
            ])
        // Nothing new: nothing sent.
        let again = try await syncer.syncOnce()
        #expect(again.batches == 0 && (again.sent[.readings] ?? 0) == 0)
        // A crash after the server's commit and before the cursor moved: the next round resends that batch, and
        // the server keeps one copy of each row.
        var batch = Batch()
        for i in 0..<30 {
            batch.readings.append(
                Reading(
                    time: 1_763_900_000_000 + Millis(i), gateway: "gw-a", reader: "dock-1", location: "Dock 1",
                    uid: try UID(parsing: "E004010800000001"), first: 0, count: 1, data: [9, 9, 9, UInt8(i)]))
        }
        _ = try store.write(batch)
        struct Crash: Error {}
        syncer.afterServerCommit = { _, _ in throw Crash() }
        await #expect(throws: (any Error).self) { try await syncer.syncOnce() }
        #expect(try store.outboxCursor("postgres", .readings) == 250)
        #expect(try await syncer.serverCounts()[.readings] == 280)
        syncer.afterServerCommit = nil
        let resent = try await syncer.syncOnce()
        #expect(resent.sent[.readings] == 30 && resent.inserted[.readings] == 0)
        #expect(try await syncer.serverCounts()[.readings] == 280 && store.outboxCursor("postgres", .readings) == 280)
        // The central rows are the local rows, column for column.
        let central = try await TestServer.query(
            """
            SELECT local_id::text, ((extract(epoch FROM time) * 1000)::bigint)::text, uid, block::text, count::text, encode(data, 'hex'),
                   encode(security, 'hex'), decoded::text, reader, location
            FROM readings WHERE gateway = 'gw-a' ORDER BY readings.local_id
            """, database: db)
        let local = try store.outbox(.readings, after: 0, limit: 10_000)
        #expect(central.count == local.count)
        for (c, l) in zip(central, local) {
            func v(_ name: String) -> OutboxValue { l.value(name, in: .readings) }
            func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
            let expected: [String?] = [
                String(l.id), String(l.time), v("uid").text, v("block").integer.map { String($0) },
                v("count").integer.map { String($0) },
                v("data").blob.map(hex), v("security").blob.map(hex), nil, v("reader").text, v("location").text,
            ]
            var got = c
            got[7] = nil
            #expect(got == expected, "\(c) vs \(expected)")
            // The decoded fields are json: the gateway's text, byte for byte.
            #expect(c[7] == v("decoded").text, "\(c[7] ?? "nil") vs \(v("decoded"))")
        }
        #expect(local.filter { $0.value("decoded", in: .readings) != .null }.count == 250)
        // Two months of readings: two partitions, plus the current and next month's made ahead.
        let parts = try await TestServer.query(
            "SELECT count(*)::text FROM pg_inherits WHERE inhparent = 'readings'::regclass", database: db)
        #expect((Int(parts.first?[0] ?? "") ?? 0) >= 3)
    }

    /// A batch of which the server already has some rows (sent before a crash, with another batch size): COPY
    /// straight into the table is refused whole (unique_violation), and the staging path inserts the new rows
    /// only. Source of the behaviour: PostgreSQL's COPY is one statement, all rows or none.
    /// A central that loses acknowledged rows while the gateway's session stays open (PgBouncer keeps the client
    /// connection while the server behind it fails over; docs/reference/fleet-engines.md §1 and §3): here the loss
    /// is made by hand after the first batch's commit (its rows deleted, its mark set back). The next batch's mark
    /// must not cover the lost rows: it is refused, the round ends, and the next round sends them again.
    @Test func rowsLostUnderAnOpenSessionAreNotCoveredByTheNextMark() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-m", readings: 300, events: 0)
        defer { store.close() }
        let syncer = try Syncer(settings: TestServer.settings(database: db), store: store, gateway: "gw-m", site: nil)
        _ = try await syncer.initSchema()
        let env = TestServer.env
        let lose = Mutex(false)
        syncer.afterServerCommit = { table, last in
            let first =
                table == .readings && last == 100
                && lose.withLock { was in
                    defer { was = true }
                    return !was
                }
            if first {
                // psql, a process of its own: this hook is synchronous.
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
                p.arguments = [
                    "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", env["VLOGGER_TEST_PG_HOST"] ?? "127.0.0.1", "-p",
                    env["VLOGGER_TEST_PG_PORT"] ?? "5432", "-U", env["VLOGGER_TEST_PG_USER"] ?? "vlogger", "-d", db,
                    "-c",
                    "DELETE FROM readings WHERE gateway = 'gw-m' AND local_id <= 100; UPDATE gateway_marks SET last_id = 0 WHERE gateway = 'gw-m' AND tbl = 'readings'",
                ]
                var penv = ProcessInfo.processInfo.environment
                penv["PGPASSWORD"] = try String(
                    contentsOfFile: env["VLOGGER_TEST_PG_PASSWORD_FILE"] ?? "", encoding: .utf8
                ).trimmingCharacters(in: .whitespacesAndNewlines)
                p.environment = penv
                try p.run()
                p.waitUntilExit()
                if p.terminationStatus != 0 { throw SyncError(.server, "psql failed") }
            }
        }
        // The round: the live pass (201…300), then 1…100 (lost behind its back), then 101…200, whose mark would
        // cover 1…100: refused.
        await #expect(throws: SyncError.self) { try await syncer.syncOnce() }
        #expect(lose.withLock { $0 })
        #expect(try store.outboxCursor("postgres", .readings) == 100)
        // The next round's connection sees the mark (0) below the cursor, and sends everything again.
        syncer.afterServerCommit = nil
        _ = try await syncer.syncOnce()
        #expect(try await syncer.serverCounts()[.readings] == 300)
        #expect(try store.latestEvent(named: "central-rewound")?.detail.contains("up to local id 0 only") == true)
        let marks = try await TestServer.query(
            "SELECT last_id::text FROM gateway_marks WHERE gateway = 'gw-m' AND tbl = 'readings'", database: db)
        #expect(marks == [["300"]])
    }

    @Test func aBatchPartlyOnTheServerInsertsOnlyItsNewRows() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 40, events: 0)
        var settings = TestServer.settings(database: db)
        settings.batchSize = 40
        let syncer = try Syncer(settings: settings, store: store, gateway: "gw-a", site: nil)
        _ = try await syncer.initSchema()
        struct Crash: Error {}
        syncer.afterServerCommit = { _, _ in throw Crash() }
        await #expect(throws: (any Error).self) { try await syncer.syncOnce() }
        #expect(try store.outboxCursor("postgres", .readings) == 0)
        #expect(try await syncer.serverCounts()[.readings] == 40)
        // 20 more readings, and a larger batch: the first batch is now ids 1–60, 40 of them on the server.
        var more = Batch()
        for i in 0..<20 {
            more.readings.append(
                Reading(
                    time: 1_763_900_000_000 + Millis(i), gateway: "gw-a", reader: "dock-1", location: nil,
                    uid: try UID(parsing: "E004010800000001"), first: 0, count: 1, data: [1, 1, 1, UInt8(i)]))
        }
        _ = try store.write(more)
        settings.batchSize = 100
        let again = try Syncer(settings: settings, store: store, gateway: "gw-a", site: nil)
        let report = try await again.syncOnce()
        #expect(report.sent[.readings] == 60 && report.inserted[.readings] == 20)
        let central = try await TestServer.query(
            "SELECT count(*)::text, count(DISTINCT local_id)::text, min(local_id)::text, max(local_id)::text FROM readings",
            database: db)
        #expect(central.first == ["60", "60", "1", "60"])
    }

    /// Text that COPY's text format must escape (tab, newline, carriage return, backslash; PostgreSQL, COPY,
    /// "Text Format") and JSON with escapes arrive as they were stored.
    @Test func textThatCopyMustEscapeArrivesUnchanged() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 0, events: 0)
        let awkward = "tab\there\nnew line\r\\back\\slash \\N é ✓"
        var b = Batch()
        b.readings = [
            Reading(
                time: 1_763_900_000_000, gateway: "gw-a", reader: awkward, location: "\\N",
                uid: try UID(parsing: "E004010800000001"), first: 0, count: 1, data: [0x5C, 0x09, 0x0A, 0],
                decoded: [("note", .text("a \"quoted\" \\ value\twith tab"))])
        ]
        b.events = [
            Event(
                time: 1_763_900_000_001, gateway: "gw-a", reader: "dock-1", location: "Dock 1", uid: nil,
                kind: .error, name: "", severity: .warning, detail: awkward)
        ]
        _ = try store.write(b)
        let syncer = try Syncer(
            settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: nil)
        _ = try await syncer.initSchema()
        _ = try await syncer.syncOnce()
        let r = try await TestServer.query(
            "SELECT reader, location, encode(data, 'hex'), decoded::text FROM readings", database: db)
        let local = try store.outbox(.readings, after: 0, limit: 10)
        #expect(r.first == [awkward, "\\N", "5c090a00", local.first?.value("decoded", in: .readings).text])
        let e = try await TestServer.query("SELECT detail FROM events", database: db)
        #expect(e.first == [awkward])
    }

    @Test func writesAuditsAndTagsArriveColumnForColumnAndATagSeenAgainIsUpdated() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 0, events: 0)
        let t: Millis = 1_763_900_000_000
        let uid = try UID(parsing: "E004010800000001")
        var b = Batch()
        b.writes = [
            WriteRecord(
                time: t, gateway: "gw-a", uid: uid, first: 5, data: [1, 2, 3, 4], flags: [.highDataRate, .option],
                result: "ok",
                verified: true, exchanges: 3, origin: "queue"),
            WriteRecord(
                time: t + 1, gateway: "gw-a", uid: uid, first: 0xF8, data: [9, 9, 9, 9], flags: nil,
                result: "no answer",
                verified: false, exchanges: 1),
        ]
        b.tags = [
            TagRecord(
                uid: uid, seen: t, manufacturer: "NXP Semiconductors", model: "ICODE SLIX2", blockCount: 80,
                blockSize: 4,
                memorySource: "system information", reader: "dock-1", location: "Dock 1")
        ]
        _ = try store.write(b)
        let audit = try store.saveAudit(
            AuditRecord(
                started: t - 3000, finished: t, gateway: "gw-a", location: "Dock 1", readers: ["dock-1", "dock-2"],
                rounds: 3, trigger: "manual",
                results: [
                    AuditResult(
                        uid: uid, assetID: "A-1", status: .present, registeredLocation: "Dock 1",
                        seenLocation: "Dock 1", seenBy: "dock-1",
                        seenRounds: 3, firstSeen: t - 2900, lastSeen: t - 100, failedChecks: ["block 0xF8: temperature"]
                    ),
                    AuditResult(
                        uid: try UID(parsing: "E004010800000002"), assetID: "A-2", status: .missing,
                        registeredLocation: "Dock 1", seenLocation: nil,
                        seenBy: nil, seenRounds: 0, firstSeen: nil, lastSeen: nil),
                ]))
        let syncer = try Syncer(settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: nil)
        _ = try await syncer.initSchema()
        let r = try await syncer.syncOnce()
        #expect(
            r.sent[.writes] == 2 && r.sent[.audits] == 1 && r.sent[.auditResults] == 2 && r.sent[.tags] == 1, "\(r)")
        func ms(_ c: String) -> String { "((extract(epoch FROM \(c)) * 1000)::bigint)::text" }
        let writes = try await TestServer.query(
            """
            SELECT local_id::text, \(ms("time")), uid, block::text, encode(data, 'hex'), flags::text, result, verified::text, exchanges::text, origin
            FROM writes ORDER BY local_id
            """, database: db)
        // flags: High data rate 0x02 | Option 0x40 (ISO/IEC 15693-3 Table 3/5) = 66.
        #expect(
            writes == [
                ["1", "\(t)", "E004010800000001", "5", "01020304", "66", "ok", "true", "3", "queue"],
                ["2", "\(t + 1)", "E004010800000001", "248", "09090909", nil, "no answer", "false", "1", nil],
            ], "\(writes)")
        let audits = try await TestServer.query(
            """
            SELECT local_id::text, \(ms("time")), \(ms("started")), location, readers, rounds::text, trigger, present::text, missing::text,
                   wrong_location::text, unexpected::text, failed_checks::text FROM audits
            """, database: db)
        #expect(
            audits == [
                ["\(audit)", "\(t)", "\(t - 3000)", "Dock 1", "dock-1,dock-2", "3", "manual", "1", "1", "0", "0", "1"]
            ], "\(audits)")
        let results = try await TestServer.query(
            """
            SELECT audit::text, \(ms("time")), uid, asset_id, status, seen_by, seen_rounds::text, \(ms("first_seen")), \(ms("last_seen")), failed_checks::text
            FROM audit_results ORDER BY local_id
            """, database: db)
        #expect(
            results == [
                [
                    "\(audit)", "\(t)", "E004010800000001", "A-1", "present", "dock-1", "3", "\(t - 2900)",
                    "\(t - 100)", "[\"block 0xF8: temperature\"]",
                ],
                ["\(audit)", "\(t)", "E004010800000002", "A-2", "missing", nil, "0", nil, nil, nil],
            ], "\(results)")
        let tagQuery = """
            SELECT uid, \(ms("first_seen")), \(ms("last_seen")), manufacturer, model, block_count::text, block_size::text, memory_source, last_reader, last_location
            FROM tags WHERE gateway = 'gw-a'
            """
        #expect(
            try await TestServer.query(tagQuery, database: db)
                == [
                    [
                        "E004010800000001", "\(t)", "\(t)", "NXP Semiconductors", "ICODE SLIX2", "80", "4",
                        "system information", "dock-1", "Dock 1",
                    ]
                ])
        // Seen again, later, by another reader: the one central row follows.
        var again = Batch()
        again.tags = [
            TagRecord(
                uid: uid, seen: t + 60_000, manufacturer: "NXP Semiconductors", reader: "dock-2", location: "Dock 2")
        ]
        _ = try store.write(again)
        let second = try await syncer.syncOnce()
        #expect(second.sent[.tags] == 1 && second.inserted[.tags] == 1 && (second.sent[.writes] ?? 0) == 0)
        #expect(
            try await TestServer.query(tagQuery, database: db)
                == [
                    [
                        "E004010800000001", "\(t)", "\(t + 60_000)", "NXP Semiconductors", "ICODE SLIX2", "80", "4",
                        "system information", "dock-2", "Dock 2",
                    ]
                ])
        // Nothing changed: nothing sent.
        let third = try await syncer.syncOnce()
        #expect(third.batches == 0)
    }

    /// A server that refuses writes (default_transaction_read_only, as on a hot standby or during maintenance):
    /// a typed read-only error, nothing acknowledged, and once it takes writes again everything arrives.
    @Test func aReadOnlyServerKeepsTheRowsLocalUntilItTakesWritesAgain() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-ro", readings: 120, events: 3)
        let syncer = try Syncer(settings: TestServer.settings(database: db), store: store, gateway: "gw-ro", site: nil)
        _ = try await syncer.initSchema()
        try await TestServer.admin("ALTER DATABASE \(db) SET default_transaction_read_only = on")
        do {
            _ = try await syncer.syncOnce()
            Issue.record("a read-only server took the rows")
        } catch let e as SyncError {
            #expect(e.kind == .readOnly && e.message.contains("refuses writes"), "\(e)")
        }
        #expect(
            try store.outboxCursor("postgres", .readings) == 0 && store.outboxBacklog("postgres", .readings).rows == 120
        )
        try await TestServer.admin("ALTER DATABASE \(db) SET default_transaction_read_only = off")
        let r = try await syncer.syncOnce()
        #expect(
            try r.sent[.readings] == 120 && r.inserted[.readings] == 120
                && store.outboxBacklog("postgres", .readings).rows == 0)
    }

    /// A TCP socket bound to a free port of 127.0.0.1, and that port.
    static func loopbackSocket() -> (Int32, Int) {
        let sock = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, len) }
        }
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sock, $0, &len) }
        }
        return (sock, Int(UInt16(bigEndian: addr.sin_port)))
    }

    /// A server nobody listens on (the link or the server is down): a connect error within the connect timeout.
    @Test func noServerIsAConnectError() async throws {
        var s = TestServer.settings(database: "postgres")
        // A port that was free a moment ago: nothing listens there.
        let (sock, port) = Self.loopbackSocket()
        close(sock)
        s.port = port
        let syncer = try Syncer(
            settings: s, store: try localStore(gateway: "gw-x", readings: 1, events: 0), gateway: "gw-x", site: nil)
        let started = Date()
        do {
            _ = try await syncer.syncOnce()
            Issue.record("synced to nothing")
        } catch let e as SyncError {
            #expect(e.kind == .connect && e.message.contains("cannot talk to the server"), "\(e)")
        }
        #expect(Date().timeIntervalSince(started) < 10)
    }

    /// A server that takes the TCP connection and never answers the startup (a process that hangs, a proxy whose
    /// backend does). PostgresNIO 1.33.2's connect timeout (5 s here) covers the startup too; vlogger's own limit
    /// (30 s, or `answer-timeout` when shorter) is there for a library that lost a continuation before. With
    /// `answer-timeout` at 1 s, vlogger's limit comes first: the round ends with the kind `timeout`, naming the host.
    @Test func aServerThatNeverAnswersTheStartupIsATimeout() async throws {
        var s = TestServer.settings(database: "postgres")
        // Listening, never accepting: the kernel completes the handshake (the backlog) and nothing ever answers.
        let (sock, port) = Self.loopbackSocket()
        defer { close(sock) }
        #expect(listen(sock, 8) == 0)
        s.port = port
        s.answerTimeoutMs = 1000
        let store = try localStore(gateway: "gw-mute", readings: 3, events: 0)
        let syncer = try Syncer(settings: s, store: store, gateway: "gw-mute", site: nil)
        do {
            _ = try await syncer.syncOnce()
            Issue.record("synced to a server that never answered")
        } catch let e as SyncError {
            #expect(
                e.kind == .timeout && e.message.contains("connecting to 127.0.0.1:\(s.port)")
                    && e.message.contains("no answer within 1s"), "\(e)")
        }
        #expect(try store.outboxCursor("postgres", .readings) == 0)
    }

    /// A statement the central does not answer (here: the readings table locked by another session, as a commit
    /// waiting for a synchronous standby that is gone would be): past `answer-timeout` the round gives up with the
    /// kind `timeout`, closes its connection and leaves its cursor. Once the lock is gone the next round sends the
    /// rows again, and the central holds each once (whatever the blocked statement did when the lock went: its
    /// client was gone, so its transaction could not commit, and a row it did commit is keyed).
    @Test func aStatementTheCentralNeverAnswersIsGivenUpAndTheRowsGoNextRound() async throws {
        let db = try await TestServer.database()
        var s = TestServer.settings(database: db)
        s.answerTimeoutMs = 1500
        let store = try localStore(gateway: "gw-stuck", readings: 40, events: 2)
        let syncer = try Syncer(settings: s, store: store, gateway: "gw-stuck", site: nil)
        _ = try await syncer.initSchema()
        _ = try await syncer.syncOnce()
        #expect(try store.outboxCursor("postgres", .readings) == 40)
        var more = Batch()
        for i in 0..<25 {
            more.readings.append(
                Reading(
                    time: 1_763_800_000_000 + Millis(i), gateway: "gw-stuck", reader: "dock-0", location: "Dock 0",
                    uid: try UID(parsing: "E004010800000001"), first: 0xF8, count: 1, data: [UInt8(i), 0, 0, 0]))
        }
        _ = try store.write(more)
        // Another session holds the table: the gateway's insert waits on its lock, and the server never answers.
        let locker = try await PostgresConnection.connect(
            configuration: .init(
                host: s.host, port: s.port, username: s.user, password: try s.password(), database: db, tls: .disable),
            id: 2, logger: TestServer.logger)
        try await locker.query("BEGIN", logger: TestServer.logger)
        try await locker.query("LOCK TABLE readings IN ACCESS EXCLUSIVE MODE", logger: TestServer.logger)
        do {
            _ = try await syncer.syncOnce()
            Issue.record("a round went through a locked table")
        } catch let e as SyncError {
            #expect(e.kind == .timeout && e.message.contains("answer-timeout"), "\(e)")
        }
        #expect(try store.outboxCursor("postgres", .readings) == 40)
        #expect(syncer.describe(Syncer.noAnswer(.milliseconds(1500))).kind == "timeout")
        try await locker.query("ROLLBACK", logger: TestServer.logger)
        try await locker.close()
        let r = try await syncer.syncOnce()
        #expect(r.sent[.readings] == 25)
        #expect(try store.outboxCursor("postgres", .readings) == 65)
        let rows = try await TestServer.query(
            "SELECT count(*)::text, count(DISTINCT local_id)::text FROM readings WHERE gateway = 'gw-stuck'",
            database: db)
        #expect(rows == [["65", "65"]])
    }

    /// TLS: the server's certificate comes from the throw-away CA of pg.sh, and the role vlogger_tls may connect
    /// over TLS only (pg_hba.conf). verify-full checks the chain against ca-file and the name; require encrypts
    /// without checking; a CA the certificate does not chain to is refused before any password is sent.
    @Test func tlsVerifiesTheServerAgainstTheCAFile() async throws {
        let env = TestServer.env
        guard let ca = env["VLOGGER_TEST_PG_CA"], let other = env["VLOGGER_TEST_PG_OTHER_CA"],
            let user = env["VLOGGER_TEST_PG_TLS_USER"]
        else {
            if TestServer.required { Issue.record("pg.sh start exports VLOGGER_TEST_PG_CA, _OTHER_CA and _TLS_USER") }
            return
        }
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-tls", readings: 10, events: 1)
        func syncer(_ mode: SyncSettings.SSLMode, ca file: String?, host: String) throws -> Syncer {
            var s = TestServer.settings(database: db)
            s.user = user
            s.host = host
            s.sslMode = mode
            s.caFile = file
            return try Syncer(settings: s, store: store, gateway: "gw-tls", site: nil)
        }
        // Without TLS the server turns this role away.
        do {
            _ = try await syncer(.disable, ca: nil, host: "127.0.0.1").initSchema()
            Issue.record("the TLS-only role connected without TLS")
        } catch let e as SyncError {
            #expect(e.kind == .authentication, "\(e)")
        }
        // verify-full against the right CA, by name and by address (the certificate names both).
        for host in ["localhost", "127.0.0.1"] {
            #expect(
                try await syncer(.verifyFull, ca: ca, host: host).initSchema().to == CentralSchema.version, "\(host)")
        }
        let sent = try await syncer(.verifyFull, ca: ca, host: "localhost").syncOnce()
        #expect(sent.sent[.readings] == 10)
        // A CA the server's certificate does not chain to: refused, as TLS.
        do {
            _ = try await syncer(.verifyFull, ca: other, host: "localhost").syncOnce()
            Issue.record("verify-full accepted a certificate from another CA")
        } catch let e as SyncError {
            #expect(e.kind == .connect && e.message.contains("TLS"), "\(e)")
            // The remedy is the CA file or the name, never turning TLS off (issue 27, item 12).
            #expect(e.message.contains("ca-file") && !e.message.contains("disable"), "\(e)")
        }
        // require: encrypted, not verified (libpq's meaning): the other CA does not matter.
        #expect(try await syncer(.require, ca: nil, host: "127.0.0.1").serverCounts()[.readings] == 10)
        // libpq, an implementation not ours, agrees on both CA files.
        let psql = { (root: String) -> Int32 in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = [
                "psql", "-X", "-q", "-c", "SELECT 1",
                "host=localhost port=\(env["VLOGGER_TEST_PG_PORT"] ?? "") user=\(user) dbname=\(db) sslmode=verify-full sslrootcert=\(root)",
            ]
            p.environment = [
                "PGPASSWORD": (try? TestServer.settings(database: db).password()) ?? "",
                "PATH": env["PATH"] ?? "/usr/bin",
            ]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try? p.run()
            p.waitUntilExit()
            return p.terminationStatus
        }
        #expect(psql(ca) == 0 && psql(other) != 0)
    }

    @Test func threeGatewaysMeetInOneDatabase() async throws {
        let db = try await TestServer.database()
        var total = 0
        for (i, gw) in ["gw-a", "gw-b", "gw-c"].enumerated() {
            let store = try localStore(gateway: gw, readings: 50 + i * 10, events: 5)
            let syncer = try Syncer(settings: TestServer.settings(database: db), store: store, gateway: gw, site: nil)
            _ = try await syncer.initSchema()
            _ = try await syncer.syncOnce()
            total += 50 + i * 10
        }
        let rows = try await TestServer.query(
            "SELECT gateway, count(*)::text FROM readings GROUP BY gateway ORDER BY gateway", database: db)
        #expect(rows == [["gw-a", "50"], ["gw-b", "60"], ["gw-c", "70"]])
        let gateways = try await TestServer.query("SELECT count(*)::text FROM gateways", database: db)
        #expect(gateways == [["3"]] && total == 180)
    }

    /// Two stores configured with the same gateway id (issue 46, item 15): their rows share keys (gateway, local
    /// id), so the central would drop the second store's rows as already there. Before the fix both synced "fine"
    /// and 40 of the second store's readings were silently lost. Now the second is refused with a conflict that
    /// names the first store, its rows stay local, and one `gateway-id-conflict` event says so however many rounds
    /// are refused; the first store goes on.
    @Test func aSecondStoreUnderTheSameGatewayIDIsRefusedAndReported() async throws {
        let db = try await TestServer.database()
        let first = try localStore(gateway: "gw-twin", readings: 40, events: 2)
        let second = try localStore(gateway: "gw-twin", readings: 40, events: 2)
        #expect(try first.instance() != second.instance())
        #expect(try first.instance().count == 32)
        let a = try Syncer(settings: TestServer.settings(database: db), store: first, gateway: "gw-twin", site: nil)
        let b = try Syncer(settings: TestServer.settings(database: db), store: second, gateway: "gw-twin", site: nil)
        _ = try await a.initSchema()
        #expect(try await a.syncOnce().sent[.readings] == 40)
        for _ in 0..<3 {
            await #expect {
                try await b.syncOnce()
            } throws: { e in
                let s = e as? SyncError
                return s?.kind == .conflict && s?.message.contains(try! first.instance()) == true
                    && s?.message.contains("gateway 'gw-twin'") == true
            }
        }
        let events = try second.outbox(.events, after: 0, limit: 100).filter {
            $0.value("name", in: .events).text == "gateway-id-conflict"
        }
        #expect(events.count == 1)
        #expect(try second.outboxCursor("postgres", .readings) == 0)
        // The first store goes on: its next readings arrive.
        var more = Batch()
        more.readings.append(
            Reading(
                time: 1_763_900_000_000, gateway: "gw-twin", reader: "dock-0", location: "Dock 0",
                uid: try UID(parsing: "E004010800000001"), first: 0xF8, count: 1, data: [1, 2, 3, 4], security: nil,
                decoded: []))
        _ = try first.write(more)
        #expect(try await a.syncOnce().sent[.readings] == 1)
        let central = try await TestServer.query(
            "SELECT count(*)::text FROM readings WHERE gateway = 'gw-twin'", database: db)
        #expect(central == [["41"]])
        // A probe (`outputs status`) writes nothing: not even a claim.
        let third = try localStore(gateway: "gw-probe", readings: 1, events: 0)
        try await Syncer(settings: TestServer.settings(database: db), store: third, gateway: "gw-probe", site: nil)
            .probe()
        let claims = try await TestServer.query(
            "SELECT count(*)::text FROM gateway_instances WHERE gateway = 'gw-probe'", database: db)
        #expect(claims == [["0"]])
    }

    @Test func aWrongPasswordIsAnAuthenticationErrorThatDoesNotShowIt() async throws {
        let db = try await TestServer.database()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-sync-pw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let wrong = "not-the-Password-0451"
        try wrong.write(to: dir.appendingPathComponent("pw"), atomically: true, encoding: .utf8)
        var s = TestServer.settings(database: db)
        s.passwordFile = dir.appendingPathComponent("pw").path
        let syncer = try Syncer(
            settings: s, store: try localStore(gateway: "gw-a", readings: 1, events: 0), gateway: "gw-a", site: nil)
        do {
            _ = try await syncer.initSchema()
            Issue.record("a wrong password was accepted")
        } catch let e as SyncError {
            #expect(e.kind == .authentication && !e.message.contains(wrong), "\(e)")
        }
    }
}
