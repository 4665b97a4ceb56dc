import Dispatch
import Foundation

/// A value handed to another thread whose owner guarantees one user at a time (a reader session between
/// two cycles of its polling job).
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Blocking work (SQLite, reader I/O) off the concurrency pool's threads.
enum Blocking {
    static let queue = DispatchQueue(label: "vlogger.blocking", attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in queue.async { c.resume(returning: body()) } }
    }

    /// On a thread of its own, for work that lasts the whole run (a polling loop).
    static func thread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in
            let t = Thread { c.resume(returning: body()) }
            t.name = name
            t.start()
        }
    }
}

/// Work raced against a time limit.
enum Deadline {
    /// Runs `body` for at most `limit`: true when it finished in time; false when the limit came first (`body` is
    /// then cancelled). Throws what `body` threw, or CancellationError when the caller is cancelled.
    static func race(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return true
            }
            group.addTask {
                try await Task.sleep(for: limit)
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
    }
}
