import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// SIGHUP reloads the configuration; SIGTERM and SIGINT shut the group down gracefully (said in the log,
/// with the signal's name, before anything stops).
struct SignalJob: Service {
    let logger: Logger
    /// SIGHUP's work: reads the files again (blocking; run off the async threads).
    let reload: @Sendable () -> Void
    /// SIGTERM and SIGINT: the group's graceful shutdown.
    let shutdown: @Sendable () async -> Void

    func run() async {
        for await signal in await UnixSignalsSequence(trapping: .sighup, .sigterm, .sigint).cancelOnGracefulShutdown() {
            if signal == .sighup {
                // Reading the files, planning schedules and importing the register block: off the async threads.
                await Blocking.run(reload)
            } else {
                logger.notice(
                    "signal \(signal == .sigterm ? "SIGTERM" : "SIGINT"): stopping after the current cycle of each reader"
                )
                await shutdown()
            }
        }
    }
}
