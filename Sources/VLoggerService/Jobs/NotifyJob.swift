import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import VLoggerModel

/// sd_notify: READY=1 once everything is up (after the listener is bound when there is one), WATCHDOG=1
/// while every polling job makes progress, STOPPING=1 when the shutdown begins.
struct NotifyJob: Service {
    /// READY=1 comes from the listener once it is bound, not from here.
    let waitsForListener: Bool
    let logger: Logger
    /// Sends READY=1 with the readers' names.
    let ready: @Sendable () -> Void
    /// Whether every polling job finished a cycle within the milliseconds given.
    let polledWithin: @Sendable (Millis) -> Bool

    func run() async {
        if !waitsForListener { ready() }
        if let w = SystemdNotify.watchdogMs {
            // A reader in back-off cycles every 30 s at most: that counts as progress too.
            let window = max(w * 2 / 3, 35_000)
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(max(1, w / 3))) }
                if polledWithin(window) { SystemdNotify.send("WATCHDOG=1") }
            }
        } else {
            try? await gracefulShutdown()
        }
        logger.notice("stopping: each reader finishes its cycle, then the last batch is committed")
        SystemdNotify.send("STOPPING=1")
    }
}
