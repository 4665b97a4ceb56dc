import Dispatch
import Foundation
import Hummingbird
import HummingbirdCore
import ISO15693
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
import UnixSignals
import VLoggerCore
import VLoggerModel
import VLoggerStore

/// Copies the store's queued writes for the polling jobs every 2 s (a write queued by `vlogger write
/// --when-seen` while the service runs is made within about 2 s of its tag being in a field).
struct WriteQueueJob: Service {
    let store: Store
    let pending: PendingWrites

    func run() async {
        let (store, pending) = (self.store, self.pending)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(2)) } } catch { return }
            await Blocking.run {
                _ = try? store.expireWrites()
                try? pending.refresh(from: store)
            }
        }
    }
}
