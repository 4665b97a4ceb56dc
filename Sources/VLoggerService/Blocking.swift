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
