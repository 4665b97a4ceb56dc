import Foundation
import ISO15693
import Synchronization
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import VLoggerCore
import VLoggerOutbox

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

    /// A consumer that takes rows out of order (the fleet sync's `liveEvery`), whose every delivery takes 400 ms of
    /// a test clock while the gateway commits 7 more readings: the rows committed during the catch-up reach it
    /// within the live interval plus one delivery, not after the backlog, and every row arrives exactly once
    /// (issue "Fleet sync at PostgreSQL's own speed", item 3).
    final class LiveRecorder: OutboxConsumer, @unchecked Sendable {
        let name = "live"
        let title = "A test output that takes live rows first"
        let tables: [SyncTable] = [.readings, .events]
        let batchSize = 40
        var liveEvery: Duration? { .seconds(1) }
        let store: Store
        let clock = Mutex<Duration>(.zero)
        /// Readings by id: when each was committed and when it was delivered (test clock).
        let committed = Mutex<[Int64: Duration]>([:])
        let delivered = Mutex<[(id: Int64, at: Duration)]>([])
        let batches = Mutex<[[Int64]]>([])
        let stopAt: Int64
        init(store: Store, stopAt: Int64) {
            self.store = store
            self.stopAt = stopAt
        }

        struct Session: OutboxSession {
            let owner: LiveRecorder
            func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
                let at = owner.clock.withLock { c in
                    c += .milliseconds(400)
                    return c
                }
                if table == .readings {
                    owner.delivered.withLock { d in d.append(contentsOf: rows.map { ($0.id, at) }) }
                    owner.batches.withLock { $0.append(rows.map(\.id)) }
                }
                // The agent goes on: 7 readings a delivery, until the test has enough.
                if try owner.store.newestID(.readings) < owner.stopAt {
                    var b = Batch()
                    let uid = try UID(parsing: "E004010800000002")
                    for i in 0..<7 {
                        b.readings.append(
                            Reading(
                                time: 1_763_990_000_000 + Millis(i), gateway: "gw-a", reader: "dock-1", location: nil,
                                uid: uid, first: 0, count: 1, data: [9, 9, 9, UInt8(i)]))
                    }
                    _ = try owner.store.write(b)
                    let newest = try owner.store.newestID(.readings)
                    owner.committed.withLock { c in
                        for id in (newest - 6)...newest { c[id] = at }
                    }
                }
                return rows.count
            }
        }
        func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
            try await body(Session(owner: self))
        }
        func describe(_ error: any Error) -> OutboxFailure { OutboxFailure(kind: "other", message: "\(error)") }
    }

    @Test func liveRowsGoFirstDuringACatchUpAndEveryRowArrivesOnce() async throws {
        let store = try Self.store()
        defer { store.close() }
        let consumer = LiveRecorder(store: store, stopAt: 350 + 7 * 30)
        var pump = OutboxPump(store: store, consumer: consumer)
        let base = ContinuousClock.now
        pump.now = { base.advanced(by: consumer.clock.withLock { $0 }) }
        let round = try await pump.round()
        // What the gateway committed while the round was on its last table waits for the next round.
        var later = OutboxRound()
        while true {
            let r = try await pump.round()
            if r.batches == 0 { break }
            later.batches += r.batches
        }
        let newest = try store.newestID(.readings)
        #expect(newest >= 560)
        let delivered = consumer.delivered.withLock { $0 }
        // Every reading exactly once, and the cursor at the newest.
        #expect(delivered.map(\.id).sorted() == Array(1...newest), "\(consumer.batches.withLock { $0 })")
        #expect(try store.outboxCursor("live", .readings) == newest)
        #expect(round.sent[.events] == 30 && (round.sent[.readings] ?? 0) > 350)
        // The newest batch when the round began (ids 311–350) goes first, at once; the backlog is ids 1–310, and
        // rows committed during the round went out before its last row.
        #expect(consumer.batches.withLock { $0.first } == Array(311...350))
        let backlogDone = try #require(delivered.firstIndex { $0.id == 310 })
        let firstLive = try #require(delivered.firstIndex { $0.id > 350 })
        #expect(firstLive < backlogDone)
        // Each live row committed during the backlog reached the consumer within 1 s (the live interval) and two
        // deliveries (400 ms each: the backlog batch under way when the interval ends, and the live batch).
        let committed = consumer.committed.withLock { $0 }
        let backlogEnd = delivered[backlogDone].at
        var worst = Duration.zero
        for (id, at) in delivered where id > 350 {
            guard let c = committed[id], c < backlogEnd else { continue }
            worst = max(worst, at - c)
        }
        #expect(worst > .zero && worst <= .milliseconds(1800), "worst delay \(worst)")
    }
}
