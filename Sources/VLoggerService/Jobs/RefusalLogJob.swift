import Foundation
import Logging
import ServiceLifecycle

/// Says what each `RefusalLog` counted but has not logged yet (write API refusals, dropped stream clients), each
/// with its own line: once a minute, and at shutdown.
struct RefusalLogJob: Service {
    let logs: [(RefusalLog, @Sendable (Int, String) -> String)]
    let logger: Logger

    func run() async {
        let interval = logs.map(\.0.intervalMs).min() ?? 60_000
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown {
                try await Task.sleep(for: .milliseconds(interval))
            }
            for (log, line) in logs {
                if let (n, what) = log.drain() { logger.warning("\(line(n, what))") }
            }
        }
    }
}
