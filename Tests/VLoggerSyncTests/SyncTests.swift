import Foundation
import ISO15693
import Logging
import PostgresNIO
import Testing
import VLoggerCore
import VLoggerStore
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
        var s = SyncSettings(host: env["VLOGGER_TEST_PG_HOST"] ?? "127.0.0.1", port: Int(env["VLOGGER_TEST_PG_PORT"] ?? "") ?? 5432,
                             user: env["VLOGGER_TEST_PG_USER"] ?? "vlogger", database: database)
        s.sslMode = .disable   // loopback, a throw-away cluster
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
        let conn = try await PostgresConnection.connect(configuration: .init(host: s.host, port: s.port, username: s.user, password: try s.password(),
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
        batch.readings.append(Reading(time: t, gateway: gateway, reader: "dock-\(i % 3)", location: "Dock \(i % 3)",
                                      uid: try UID(parsing: String(format: "E0040108%08X", i % 7)), first: 0xF8, count: 1,
                                      data: [UInt8(i & 0xFF), 1, 2, 3], security: i % 2 == 0 ? [1] : nil,
                                      decoded: [("temperature", .number(20 + Double(i) / 10))]))
    }
    for i in 0..<events {
        batch.events.append(Event(time: start + Millis(i) * 1000, gateway: gateway, reader: "dock-1", location: "Dock 1",
                                  uid: nil, kind: .arrival, name: "arrival", severity: .info, detail: "event \(i)"))
    }
    _ = try store.write(batch)
    return store
}

@Suite(.serialized, .enabled(if: TestServer.available || TestServer.required, "no PostgreSQL test server (eval \"$(sudo bash bench/postgres/pg.sh start)\")"))
struct CentralSyncTests {
    @Test func schemaIsCreatedOnceAndANewerOneIsRefused() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 1, events: 0)
        let syncer = try Syncer(settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: "Hall 1")
        // Before the schema exists, a sync says how to create it.
        await #expect { try await syncer.syncOnce() } throws: { "\($0)".contains("--init-schema") }
        #expect(try await syncer.initSchema() == (0, 1))
        #expect(try await syncer.initSchema() == (1, 1))
        try await TestServer.admin("INSERT INTO vlogger_schema(version) VALUES (99)", database: db)
        await #expect { try await syncer.initSchema() } throws: { "\($0)".contains("newer than this vlogger") }
        await #expect { try await syncer.syncOnce() } throws: { "\($0)".contains("upgrade vlogger") }
    }

    @Test func everyRowArrivesOnceAndAResentBatchChangesNothing() async throws {
        let db = try await TestServer.database()
        let store = try localStore(gateway: "gw-a", readings: 250, events: 40)
        let syncer = try Syncer(settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: "Hall 1")
        _ = try await syncer.initSchema()
        let first = try await syncer.syncOnce()
        #expect(first.sent[.readings] == 250 && first.inserted[.readings] == 250 && first.sent[.events] == 40 && first.batches == 4)
        #expect(try await syncer.serverCounts() == [.readings: 250, .events: 40])
        // Nothing new: nothing sent.
        let again = try await syncer.syncOnce()
        #expect(again.batches == 0 && (again.sent[.readings] ?? 0) == 0)
        // A crash after the server's commit and before the cursor moved: the next round resends that batch, and
        // the server keeps one copy of each row.
        var batch = Batch()
        for i in 0..<30 {
            batch.readings.append(Reading(time: 1_763_900_000_000 + Millis(i), gateway: "gw-a", reader: "dock-1", location: "Dock 1",
                                          uid: try UID(parsing: "E004010800000001"), first: 0, count: 1, data: [9, 9, 9, UInt8(i)]))
        }
        _ = try store.write(batch)
        struct Crash: Error {}
        syncer.afterServerCommit = { _, _ in throw Crash() }
        await #expect(throws: (any Error).self) { try await syncer.syncOnce() }
        #expect(try store.syncCursor(.readings) == 250)
        #expect(try await syncer.serverCounts()[.readings] == 280)
        syncer.afterServerCommit = nil
        let resent = try await syncer.syncOnce()
        #expect(resent.sent[.readings] == 30 && resent.inserted[.readings] == 0)
        #expect(try await syncer.serverCounts()[.readings] == 280 && store.syncCursor(.readings) == 280)
        // The central rows are the local rows, column for column.
        let central = try await TestServer.query("""
            SELECT local_id::text, ((extract(epoch FROM time) * 1000)::bigint)::text, uid, block::text, count::text, encode(data, 'hex'),
                   encode(security, 'hex'), decoded::text, reader, location
            FROM readings WHERE gateway = 'gw-a' ORDER BY readings.local_id
            """, database: db)
        let local = try store.outbox(.readings, after: 0, limit: 10_000)
        #expect(central.count == local.count)
        for (c, l) in zip(central, local) {
            let expected: [String?] = [String(l.id), String(l.time), l.uid, String(l.block), String(l.count),
                                       l.data.map { String(format: "%02x", $0) }.joined(), l.security.map { $0.map { String(format: "%02x", $0) }.joined() },
                                       nil, l.reader, l.location]
            var got = c
            got[7] = nil
            #expect(got == expected, "\(c) vs \(expected)")
            // jsonb keeps the JSON's meaning and prints it with a space after each ':' and ','; the values here have none.
            #expect(c[7]?.replacingOccurrences(of: " ", with: "") == l.decoded, "\(c[7] ?? "nil") vs \(l.decoded ?? "nil")")
        }
        #expect(local.filter { $0.decoded != nil }.count == 250)
        // Two months of readings: two partitions, plus the current and next month's made ahead.
        let parts = try await TestServer.query("SELECT count(*)::text FROM pg_inherits WHERE inhparent = 'readings'::regclass", database: db)
        #expect((Int(parts.first?[0] ?? "") ?? 0) >= 3)
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
        let rows = try await TestServer.query("SELECT gateway, count(*)::text FROM readings GROUP BY gateway ORDER BY gateway", database: db)
        #expect(rows == [["gw-a", "50"], ["gw-b", "60"], ["gw-c", "70"]])
        let gateways = try await TestServer.query("SELECT count(*)::text FROM gateways", database: db)
        #expect(gateways == [["3"]] && total == 180)
    }

    @Test func aWrongPasswordIsAnAuthenticationErrorThatDoesNotShowIt() async throws {
        let db = try await TestServer.database()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-sync-pw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let wrong = "not-the-Password-0451"
        try wrong.write(to: dir.appendingPathComponent("pw"), atomically: true, encoding: .utf8)
        var s = TestServer.settings(database: db)
        s.passwordFile = dir.appendingPathComponent("pw").path
        let syncer = try Syncer(settings: s, store: try localStore(gateway: "gw-a", readings: 1, events: 0), gateway: "gw-a", site: nil)
        do {
            _ = try await syncer.initSchema()
            Issue.record("a wrong password was accepted")
        } catch let e as SyncError {
            #expect(e.kind == .authentication && !e.message.contains(wrong), "\(e)")
        }
    }
}
