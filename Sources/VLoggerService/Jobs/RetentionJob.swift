import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import VLoggerModel
import VLoggerStore

/// `[store] keep`: a minute after start and then every hour, deletes the rows older than `keep`, a few
/// thousand per transaction; never one that an enabled output (fleet sync, …) has not had acknowledged (those
/// are counted and logged, and go at a later round once every output has them), nor one an output with a safety
/// window (the fleet sync's `safety-window`) had acknowledged less than that window ago.
struct RetentionJob: Service {
    let store: Store
    let logger: Logger
    let keepMs: Millis
    /// The names of the enabled outputs (asked at each pass: a reload may change them).
    let keepFor: @Sendable () -> [String]
    /// Their safety windows, where they have one (the fleet sync: rows stay that long after the central has them).
    var safetyWindows: @Sendable () -> [String: Millis] = { [:] }

    func run() async {
        var first = true
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let wait: Duration = first ? .seconds(60) : .seconds(3600)
            first = false
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) } } catch { return }
            let cutoff = Millis.now() - keepMs
            let (store, keepFor, windows) = (self.store, self.keepFor(), self.safetyWindows())
            let result: Result<PruneReport, StoreError> = await Blocking.run {
                do throws(StoreError) {
                    return .success(try store.prune(before: cutoff, keepFor: keepFor, safetyWindows: windows))
                } catch { return .failure(error) }
            }
            switch result {
            case .success(let r):
                let held =
                    r.totalHeld > 0
                    ? "; \(r.totalHeld) older rows kept until every output (\(keepFor.joined(separator: ", "))) has them\(windows.isEmpty ? "" : " (and, for \(windows.keys.sorted().joined(separator: ", ")), for its safety window after)")"
                    : ""
                if r.totalDeleted > 0 || r.totalHeld > 0 {
                    let parts = SyncTable.allCases.compactMap { t in
                        r.deleted[t].flatMap { $0 > 0 ? "\($0) \(t.rawValue)" : nil }
                    }.joined(separator: ", ")
                    logger.notice(
                        "retention: deleted \(r.totalDeleted) rows from before \(TimeSpec.format(cutoff)) (\(parts))\(held)"
                    )
                }
            case .failure(let e):
                logger.warning("retention: \(e); nothing more deleted this round")
            }
        }
    }
}
