import Foundation
import ISO15693
import Logging
import ServiceLifecycleTestKit
import Synchronization
import Testing
import VLoggerModel
import VLoggerStore

@testable import VLoggerService
import VLoggerOutbox

/// A consumer whose destination never answers: a delivery waits until it is cancelled (as the fleet sync's step
/// does once its connection is closed under it).
final class SilentConsumer: OutboxConsumer, @unchecked Sendable {
    let name = "silent"
    let title = "A test output whose destination never answers"
    let tables: [SyncTable] = [.readings]
    let batchSize = 100
    let started = Mutex(0)
    let cancelled = Mutex(0)

    struct Session: OutboxSession {
        let owner: SilentConsumer
        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            owner.started.withLock { $0 += 1 }
            do { try await Task.sleep(for: .seconds(3600)) } catch {
                owner.cancelled.withLock { $0 += 1 }
                throw error
            }
            return rows.count
        }
    }

    func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
        try await body(Session(owner: self))
    }

    func describe(_ error: any Error) -> OutboxFailure {
        OutboxFailure(kind: error is CancellationError ? "cancelled" : "other", message: "\(error)")
    }
}

/// The service's stop with an output whose destination stopped answering in the middle of a round: the round in
/// hand has the job's `finalRoundMs` to end, then is cancelled, so the job ends (systemd's `TimeoutStopSec` is
/// 30 s in deploy/vlogger.service; a destination's own time limit may be minutes). Nothing undelivered leaves the
/// store: the output's cursor stays where it was.
@Suite struct OutputJobStopTests {
    /// Polls `condition` every 10 ms for at most `seconds`.
    static func eventually(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    @Test func aRoundTheDestinationNeverAnswersEndsWithinItsGraceAtTheStop() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stop-\(UUID().uuidString).db").path
        let store = try Store(path: path)
        defer {
            store.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        var batch = Batch()
        for i in 0..<10 {
            batch.readings.append(
                Reading(
                    time: 1_763_800_000_000 + Millis(i), gateway: "gw", reader: "r", location: nil,
                    uid: try UID(parsing: "E004010800000001"), first: 0xF8, count: 1, data: [UInt8(i)]))
        }
        _ = try store.write(batch)
        let consumer = SilentConsumer()
        let job = OutputJob(
            pump: OutboxPump(store: store, consumer: consumer),
            metrics: ServiceMetrics(readers: [], intervalMs: { _ in 1000 }),
            logger: Logger(label: "vlogger.test.stop"), intervalMs: 100, finalRoundMs: 200)
        final class Ended: @unchecked Sendable {
            let value = Mutex(false)
        }
        let ended = Ended()
        await testGracefulShutdown { trigger in
            let run = Task {
                await job.run()
                ended.value.withLock { $0 = true }
            }
            // The bounds only keep a regression from hanging the lane: the unit lane's other tests may hold both
            // threads of the pool for seconds (a CI run took more than 10 s to get here).
            #expect(await Self.eventually(120) { consumer.started.withLock { $0 } >= 1 })
            trigger.triggerGracefulShutdown()
            // Within the grace (200 ms), and whatever the pool makes it wait.
            let stopped = await Self.eventually(120) { ended.value.withLock { $0 } }
            #expect(stopped, "the job did not end after the stop")
            if !stopped { run.cancel() }
            await run.value
        }
        #expect(consumer.cancelled.withLock { $0 } == 1)
        #expect(try store.outboxCursor("silent", .readings) == 0)
    }
}
