import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import VLoggerModel
import VLoggerStore

/// Starts the store writer's thread; at shutdown (it is the last service to stop) commits what is left.
struct WriterJob: Service {
    let writer: StoreWriter
    /// How long the last commit may keep failing at shutdown.
    let finalCommitTimeoutMs: Millis
    let logger: Logger
    /// Told whether everything was committed at the end.
    let finished: @Sendable (Bool) -> Void

    func run() async {
        writer.start()
        try? await gracefulShutdown()
        let (writer, timeout) = (self.writer, finalCommitTimeoutMs)
        let ok = await Blocking.run { writer.finish(timeoutMs: timeout) }
        if !ok {
            logger.error(
                "the last \(writer.pendingCount) records could not be committed: \(writer.lastError?.description ?? "?")"
            )
        }
        finished(ok)
    }
}
