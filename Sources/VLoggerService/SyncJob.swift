import Foundation
import Logging
import ServiceLifecycle
import VLoggerCore
import VLoggerStore
import VLoggerModel
import VLoggerSync

/// The service's fleet sync: every `[sync] interval`, ships what the central server has not acknowledged
/// (`Syncer.syncOnce`). A round that fails (link down, server restarting, authentication, a server refusing
/// writes) is logged when the state changes, counted by kind, and the next round waits longer (interval × 2ⁿ,
/// at most 5 minutes); polling and the local store go on meanwhile, and the backlog is in /metrics and
/// /healthz. The first round after the server is back catches up by itself.
struct SyncJob: Service {
    let syncer: Syncer
    let store: Store
    let metrics: ServiceMetrics
    let logger: Logger
    let intervalMs: Millis

    static let maxBackoffMs: Millis = 300_000

    func run() async {
        metrics.enableSync()
        // The first wait after a failure twice the interval (at least 2 s), then doubling to 5 min, spread by
        // jitter so that gateways which lost the same server do not come back in lock-step.
        var backoff = Backoff(baseMs: 2 * max(intervalMs, 1000), capMs: Self.maxBackoffMs)
        var lastKind: String?
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            var sent: [SyncTable: Int] = [:]
            var failure: SyncFailure?
            do {
                let r = try await syncer.syncOnce()
                sent = r.sent
                if backoff.failures > 0 {
                    logger.notice(
                        "fleet sync works again after \(backoff.failures) failed round(s); \(r.sent.values.reduce(0, +)) rows caught up"
                    )
                }
                backoff.succeeded()
                lastKind = nil
            } catch {
                let e = SyncError.from(error, url: syncer.settings.url)
                failure = SyncFailure(kind: e.kind.rawValue, message: e.message)
                if lastKind != e.kind.rawValue {
                    logger.warning(
                        "fleet sync failed (\(e.kind.rawValue)): \(e.message); rows stay in the local store, retrying with back-off"
                    )
                }
                lastKind = e.kind.rawValue
            }
            var backlog: [SyncTable: (rows: Int, oldest: Millis?)] = [:]
            for t in SyncTable.allCases { backlog[t] = (try? store.syncBacklog(t)) ?? (0, nil) }
            metrics.syncUpdated(backlog: backlog, sent: sent, error: failure)
            let wait = failure == nil ? intervalMs : backoff.failed()
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(wait)) } } catch {
                return
            }
        }
    }
}
