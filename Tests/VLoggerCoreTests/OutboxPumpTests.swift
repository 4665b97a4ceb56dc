import Foundation
import ISO15693
import Synchronization
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import VLoggerCore

/// How a round walks a consumer's tables and paces a backlog (issue "Readings and events pushed to the plant",
/// item 2: a backlog replayed in order at a bounded rate that does not starve live data).
@Suite(.drivers) struct OutboxPumpTests {
    /// Records each batch it is given, in order.
    final class Recorder: OutboxConsumer, @unchecked Sendable {
        let name = "recorder"
        let title = "A test output that records its batches"
        let tables: [SyncTable] = [.readings, .events]
        let batchSize = 100
        let tablesIndependent: Bool
        let batches = Mutex<[(SyncTable, Int)]>([])
        init(independent: Bool) { tablesIndependent = independent }

        struct Session: OutboxSession {
            let owner: Recorder
            func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
                owner.batches.withLock { $0.append((table, rows.count)) }
                return rows.count
            }
        }
        func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
            try await body(Session(owner: self))
        }
        func describe(_ error: any Error) -> OutboxFailure { OutboxFailure(kind: "other", message: "\(error)") }
    }

    /// 350 readings and 30 events in a store of the test's own.
    static func store() throws -> Store {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "vlogger-pump-\(UUID().uuidString).db"
        ).path
        let store = try Store(path: path)
        var b = Batch()
        let uid = try UID(parsing: "E004010800000001")
        for i in 0..<350 {
            b.readings.append(
                Reading(
                    time: 1_763_900_000_000 + Millis(i), gateway: "gw-a", reader: "dock-1", location: nil, uid: uid,
                    first: 0, count: 1, data: [1, 2, 3, UInt8(i % 256)]))
        }
        for i in 0..<30 {
            b.events.append(
                Event(
                    time: 1_763_900_000_000 + Millis(i), gateway: "gw-a", uid: uid, kind: .arrival, name: "arrival",
                    severity: .info, detail: "arrived"))
        }
        _ = try store.write(b)
        return store
    }

    /// A consumer whose tables stand alone gets one batch of each in turn: the events go after the first batch of
    /// readings, not after all of them. The pace is asked after each batch with the rows sent so far.
    @Test func independentTablesTakeTurns() async throws {
        let store = try Self.store()
        defer { store.close() }
        let r = Recorder(independent: true)
        let paced = Mutex<[Int]>([])
        let round = try await OutboxPump(store: store, consumer: r).round(pace: { n in paced.withLock { $0.append(n) } }
        )
        #expect(round.sent[.readings] == 350 && round.sent[.events] == 30)
        let order = r.batches.withLock { $0 }.map { "\($0.0.rawValue):\($0.1)" }
        #expect(order == ["readings:100", "events:30", "readings:100", "readings:100", "readings:50"], "\(order)")
        #expect(paced.withLock { $0 } == [100, 130, 230, 330, 380])
    }

    /// Tables that depend on each other (the fleet sync's audits and their results) go each to its end, in order.
    @Test func dependentTablesGoInOrder() async throws {
        let store = try Self.store()
        defer { store.close() }
        let r = Recorder(independent: false)
        _ = try await OutboxPump(store: store, consumer: r).round()
        let order = r.batches.withLock { $0 }.map { "\($0.0.rawValue):\($0.1)" }
        #expect(order == ["readings:100", "readings:100", "readings:100", "readings:50", "events:30"], "\(order)")
    }

    /// The replay bound: the first second's worth goes at once; after that, N rows are due N / rate seconds
    /// after the round began (less that first second), and only what has not yet passed is waited.
    @Test func replayPace() {
        let p = ReplayPace(rowsPerSecond: 1000)
        #expect(p.wait(afterRows: 1000, elapsed: .zero) == .zero)
        #expect(p.wait(afterRows: 3000, elapsed: .milliseconds(500)) == .milliseconds(1500))
        #expect(p.wait(afterRows: 3000, elapsed: .seconds(3)) == .zero)
        #expect(ReplayPace(rowsPerSecond: 0).rowsPerSecond == 1)
    }
}
