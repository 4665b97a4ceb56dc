import Dispatch
import Foundation
import VLoggerStore

/// A request to stop, set from a signal handler and seen by the agent between exchanges and cycles.
public final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var requested = false
    private let wake = DispatchSemaphore(value: 0)

    public init() {}

    public func request() {
        lock.lock()
        let first = !requested
        requested = true
        lock.unlock()
        if first { wake.signal() }
    }

    /// Clears a request (for signals used more than once, like SIGHUP).
    public func reset() {
        lock.lock()
        requested = false
        lock.unlock()
        while wake.wait(timeout: .now()) == .success {}
    }

    public var isRequested: Bool {
        lock.lock()
        defer { lock.unlock() }
        return requested
    }

    /// Waits up to `ms` or until a stop is requested.
    func wait(ms: Millis) {
        guard ms > 0, !isRequested else { return }
        if wake.wait(timeout: .now() + .milliseconds(Int(ms))) == .success { wake.signal() }
    }
}

/// The agent's time: real (wall clock for timestamps, sleeping between cycles) or simulated (tests and
/// fast demos: sleeping only moves the clock on).
public protocol AgentClock: AnyObject {
    func now() -> Millis
    /// Sleeps until `ms` (or until a stop is requested).
    func sleep(untilMs ms: Millis, stop: StopSignal)
}

public final class SystemClock: AgentClock {
    public init() {}
    public func now() -> Millis { Millis.now() }
    public func sleep(untilMs ms: Millis, stop: StopSignal) { stop.wait(ms: ms - now()) }
}

/// A clock that starts at `start` and moves only when slept on (or advanced): no real waiting.
public final class SimulatedClock: AgentClock {
    public private(set) var current: Millis
    public init(start: Millis = Millis.now()) { current = start }
    public func now() -> Millis { current }
    public func sleep(untilMs ms: Millis, stop: StopSignal) { current = max(current, ms) }
    public func advance(by ms: Millis) { current += ms }
}
