import Foundation

/// Wakes the outputs when the store writer has committed: an output's job waits for the next commit (or its
/// interval, whichever comes first) instead of polling on a fixed period, so a reading leaves the gateway a
/// commit after it was taken. A commit during a round is not missed: a waiter names the last commit it saw.
final class Wakeup: @unchecked Sendable {
    private let lock = NSLock()
    private var generation: UInt64 = 0
    private var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]

    /// The number of commits signalled so far.
    var current: UInt64 { lock.withLock { generation } }

    func signal() {
        let woken = lock.withLock {
            generation &+= 1
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for w in woken { w.resume() }
    }

    /// Returns once a commit after `seen` was signalled, after `timeoutMs`, or when the task is cancelled.
    func wait(after seen: UInt64, timeoutMs: Int64) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.commit(after: seen) }
            group.addTask { try? await Task.sleep(for: .milliseconds(max(0, timeoutMs))) }
            await group.next()
            group.cancelAll()
        }
    }

    private func commit(after seen: UInt64) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = lock.withLock { () -> Bool in
                    if generation != seen || Task.isCancelled { return true }
                    waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            let c = self.lock.withLock { self.waiters.removeValue(forKey: id) }
            c?.resume()
        }
    }
}
