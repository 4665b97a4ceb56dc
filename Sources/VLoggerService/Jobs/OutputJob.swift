import Foundation
import Logging
import ServiceLifecycle
import VLoggerModel
import VLoggerStore
import VLoggerOutbox

/// One output of the gateway (a consumer of the store's outbox: the fleet sync, …), run as a service: every
/// `intervalMs`, one round of the outbox pump ships what its destination has not acknowledged. A round that
/// fails (link down, server restarting, authentication, a destination refusing writes) is logged when its kind
/// changes, counted by kind, and the next round waits longer (`Backoff`: twice the interval at first, doubling
/// to `maxBackoffMs`, spread by jitter so that gateways which lost the same server do not come back in
/// lock-step); polling and the local store go on meanwhile, and the backlog is in /metrics and /healthz. The
/// first round after the destination is back catches up by itself. The same code runs every output.
package struct OutputJob: Service {
    let pump: OutboxPump
    let metrics: ServiceMetrics
    let logger: Logger
    let intervalMs: Millis
    var maxBackoffMs: Millis = 30_000
    /// Signalled by the store writer after each commit (nil: rounds every `intervalMs`).
    var wakeup: Wakeup?
    /// How long the last round at shutdown may take.
    var finalRoundMs: Millis = 5000

    init(
        pump: OutboxPump, metrics: ServiceMetrics, logger: Logger, intervalMs: Millis, maxBackoffMs: Millis = 30_000,
        wakeup: Wakeup? = nil, finalRoundMs: Millis = 5000
    ) {
        self.pump = pump
        self.metrics = metrics
        self.logger = logger
        self.intervalMs = intervalMs
        self.maxBackoffMs = maxBackoffMs
        self.wakeup = wakeup
        self.finalRoundMs = finalRoundMs
    }

    /// The job as the service runs it for an output without a commit wakeup (the fleet sync): the benchmarks'
    /// way in.
    package init(pump: OutboxPump, metrics: ServiceMetrics, logger: Logger, intervalMs: Millis) {
        self.init(pump: pump, metrics: metrics, logger: logger, intervalMs: intervalMs, wakeup: nil)
    }

    /// Sleeps between a round's batches so that a backlog goes at `rowsPerSecond` at most (`ReplayPace`).
    static func pace(_ rowsPerSecond: Int?) -> (@Sendable (Int) async throws -> Void)? {
        guard let rowsPerSecond else { return nil }
        let pace = ReplayPace(rowsPerSecond: rowsPerSecond)
        let started = ContinuousClock.now
        return { rows in
            let wait = pace.wait(afterRows: rows, elapsed: ContinuousClock.now - started)
            if wait > .zero { try await Task.sleep(for: wait) }
        }
    }

    /// The back-off after failed rounds: from twice the interval (at least 2 s), capped at `maxBackoffMs` (30 s by
    /// default: a destination back after an outage is reached within 30 s), or at twice a longer interval (a
    /// metered link synced hourly is not tried every 30 s).
    static func backoff(intervalMs: Millis, maxBackoffMs: Millis = 30_000) -> Backoff {
        let base = 2 * max(intervalMs, 1000)
        return Backoff(baseMs: base, capMs: max(maxBackoffMs, base))
    }

    /// One round; once the service is asked to stop, the round in hand has `graceMs` more to finish, and is then
    /// cancelled (a destination that stopped answering would otherwise hold the stop until its own time limit,
    /// past systemd's `TimeoutStopSec`). What it had not delivered stays in the store.
    static func round(
        _ pump: OutboxPump, pace: (@Sendable (Int) async throws -> Void)?, graceMs: Millis
    ) async throws -> OutboxRound {
        try await withThrowingTaskGroup(of: OutboxRound?.self) { group in
            group.addTask { try await pump.round(pace: pace) }
            group.addTask {
                // Without a service around it (a benchmark, a test), this waits until the round ends.
                try await gracefulShutdown()
                try await Task.sleep(for: .milliseconds(graceMs))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let r = first else { throw CancellationError() }
            return r
        }
    }

    package func run() async {
        let consumer = pump.consumer
        metrics.enableOutput(
            name: consumer.name, title: consumer.title, legacyName: consumer.legacyName, tables: consumer.tables)
        var backoff = Self.backoff(intervalMs: intervalMs, maxBackoffMs: maxBackoffMs)
        var lastKind: String?
        var lastFailed = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let seen = wakeup?.current ?? 0
            var sent: [SyncTable: Int] = [:]
            var failure: OutboxFailure?
            do {
                let r = try await Self.round(pump, pace: Self.pace(consumer.replayRowsPerSecond), graceMs: finalRoundMs)
                sent = r.sent
                if backoff.failures > 0 {
                    logger.notice(
                        "output \(consumer.name) (\(consumer.title)) works again after \(backoff.failures) failed round(s); \(r.sent.values.reduce(0, +)) rows caught up"
                    )
                }
                backoff.succeeded()
                lastKind = nil
            } catch {
                let f = consumer.describe(error)
                failure = f
                if lastKind != f.kind {
                    logger.warning(
                        "output \(consumer.name) (\(consumer.title)) failed (\(f.kind)): \(f.message); rows stay in the local store, retrying with back-off"
                    )
                }
                lastKind = f.kind
            }
            lastFailed = failure != nil
            metrics.outputUpdated(
                consumer.name, backlog: pump.backlog(), sent: sent, error: failure, connected: consumer.isConnected,
                refused: consumer.refusedRows)
            if failure == nil, let wakeup {
                // The next commit (or the interval): a reading leaves a commit after it was taken.
                await cancelWhenGracefulShutdown { await wakeup.wait(after: seen, timeoutMs: intervalMs) }
                continue
            }
            let wait = failure == nil ? intervalMs : backoff.failed()
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(wait)) } } catch {
                break
            }
        }
        // The service stops after the store writer's last commit: one more round (if the destination answered the
        // last one), bounded by `finalRoundMs`, sends that too; what it cannot send stays in the store.
        if !lastFailed && !Task.isCancelled {
            let pump = self.pump
            let limit = finalRoundMs
            _ = try? await Deadline.race(.milliseconds(limit)) { _ = try await pump.round() }
            metrics.outputUpdated(consumer.name, backlog: pump.backlog(), sent: [:], error: nil)
        }
        await consumer.shutdown()
    }
}
