import Foundation
import ISO15693
import Synchronization
import Testing
import VLoggerCore
import VLoggerModel
import VLoggerStore

@testable import VLoggerSync
import VLoggerOutbox

/// A consumer of the outbox written for this test: it takes readings and events and acknowledges every other
/// batch late (the first delivery of every second batch fails, as a destination that times out would; the
/// batch is sent again in the next round). What it has is counted by local id, to check that nothing is lost
/// and nothing it still needs is pruned.
final class LateConsumer: OutboxConsumer, @unchecked Sendable {
    let name = "late"
    let title = "A test output that acknowledges every other batch late"
    let tables: [SyncTable] = [.readings, .events]
    let batchSize = 100
    let calls = Mutex(0)
    let received = Mutex<[SyncTable: Set<Int64>]>([:])

    struct Late: Error {}

    struct Session: OutboxSession {
        let owner: LateConsumer
        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            let n = owner.calls.withLock { c -> Int in
                c += 1
                return c
            }
            if n % 2 == 0 { throw Late() }
            return owner.received.withLock { r in
                rows.filter { r[table, default: []].insert($0.id).inserted }.count
            }
        }
    }

    func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
        try await body(Session(owner: self))
    }

    func describe(_ error: any Error) -> OutboxFailure {
        OutboxFailure(kind: error is Late ? "timeout" : "other", message: "\(error)")
    }
}

/// Two consumers of one store's outbox: the real fleet sync to PostgreSQL and `LateConsumer` (issue "One
/// description per table, and outputs as consumers of the store's outbox", item 4): each has its own cursor,
/// retention deletes nothing either still needs, and a consumer that fails keeps its own backlog without
/// holding back the other.
@Suite(
    .serialized,
    .enabled(
        if: TestServer.available || TestServer.required,
        "no PostgreSQL test server (eval \"$(sudo bash bench/postgres/pg.sh start)\")"))
struct OutboxConsumerTests {
    @Test func twoConsumersEachKeepTheirOwnCursorAndRetentionWaitsForBoth() async throws {
        let db = try await TestServer.database()
        // 500 readings and 40 events, all older than the cutoff below.
        let store = try localStore(gateway: "gw-a", readings: 500, events: 40)
        let syncer = try Syncer(
            settings: TestServer.settings(database: db), store: store, gateway: "gw-a", site: "Hall 1")
        _ = try await syncer.initSchema()
        let late = LateConsumer()
        let postgres = OutboxPump(store: store, consumer: syncer)
        let test = OutboxPump(store: store, consumer: late)
        let cutoff: Millis = 1_900_000_000_000
        let names = [syncer.name, late.name]

        // The sync takes everything in one round.
        let sent = try await postgres.round()
        #expect(sent.sent[.readings] == 500 && sent.sent[.events] == 40)
        // The late consumer: batch 1 is acknowledged, batch 2 fails, and the round ends there.
        await #expect(throws: LateConsumer.Late.self) { try await test.round() }
        #expect(try store.outboxCursor("late", .readings) == 100)
        #expect(try store.outboxCursor("postgres", .readings) == 500)
        // Retention: only what both have goes (readings ≤ 100; no event, which the late one has not had).
        let first = try store.prune(before: cutoff, keepFor: names)
        #expect(first.deleted[.readings] == 100 && first.deleted[.events] == 0, "\(first)")
        #expect(first.heldForConsumers[.readings] == 400 && first.heldForConsumers[.events] == 40)
        #expect(try store.outboxBacklog("late", .readings).rows == 400)

        // New rows while the late consumer lags: the sync is not held back by it.
        var batch = Batch()
        for i in 0..<50 {
            batch.readings.append(
                Reading(
                    time: 1_763_900_000_000 + Millis(i), gateway: "gw-a", reader: "dock-1", location: "Dock 1",
                    uid: try UID(parsing: "E004010800000001"), first: 0, count: 1, data: [9, 9, 9, UInt8(i)]))
        }
        _ = try store.write(batch)
        let second = try await postgres.round()
        #expect(second.sent[.readings] == 50 && second.inserted[.readings] == 50)
        #expect(try await syncer.serverCounts()[.readings] == 550)
        #expect(try store.outboxBacklog("postgres", .readings).rows == 0)
        #expect(try store.outboxBacklog("late", .readings).rows == 450)

        // The late consumer catches up over its rounds (each fails once on a late batch and goes on next time).
        var rounds = 0
        while try store.outboxBacklog("late", .readings).rows + store.outboxBacklog("late", .events).rows > 0 {
            rounds += 1
            try #require(rounds < 20, "the late consumer does not catch up")
            _ = try? await test.round()
        }
        // It has every row exactly once by id (resent batches are new to it only once).
        let got = late.received.withLock { $0 }
        #expect(got[.readings]?.count == 550 && got[.events]?.count == 40)
        // Now both have everything: retention deletes the rest of what is older than the cutoff, but each table's
        // newest row, which new rows take their ids after (docs/reference/fleet-engines.md §5).
        let last = try store.prune(before: cutoff, keepFor: names)
        #expect(
            last.deleted[.readings] == 449 && last.deleted[.events] == 39
                && last.heldForConsumers[.readings] == 1 && last.heldForConsumers[.events] == 1, "\(last)")
    }
}
