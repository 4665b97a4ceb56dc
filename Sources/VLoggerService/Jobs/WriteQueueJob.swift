import Dispatch
import Foundation
import ServiceLifecycle
import VLoggerCore
import VLoggerStore

/// Copies the store's queued writes for the polling jobs as soon as the write API queued one (`queued` is signalled:
/// the write is tried in the reader's next cycle), and every 2 s anyway (a write queued by another process, `vlogger
/// write --when-seen`, is made within about 2 s of its tag being in a field; expired writes are marked).
struct WriteQueueJob: Service {
    let store: Store
    let pending: PendingWrites
    let queued: Wakeup

    func run() async {
        let (store, pending, queued) = (self.store, self.pending, self.queued)
        var seen = queued.current
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let last = seen
            await cancelWhenGracefulShutdown { await queued.wait(after: last, timeoutMs: 2000) }
            if Task.isShuttingDownGracefully || Task.isCancelled { return }
            seen = queued.current
            await Blocking.run {
                _ = try? store.expireWrites()
                try? pending.refresh(from: store)
            }
        }
    }
}
