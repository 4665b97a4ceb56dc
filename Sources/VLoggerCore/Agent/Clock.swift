import Dispatch
import Foundation
import VLoggerModel

/// A request to stop, set from a signal handler and seen by the agent between exchanges and cycles.
public final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var requested = false
    private var nudged = false
    private let wake = DispatchSemaphore(value: 0)

    public init() {}

    public func request() {
        lock.lock()
        let first = !requested
        requested = true
        lock.unlock()
        if first { wake.signal() }
    }

    /// Cuts the current (or next) wait short without asking to stop: work that needs the reader between two
    /// cycles (an audit's round) runs now rather than after the interval.
    public func nudge() {
        lock.withLock { nudged = true }
        wake.signal()
    }

    /// Whether a nudge came since the last wait, and clears it.
    func takeNudge() -> Bool {
        lock.withLock {
            defer { nudged = false }
            return nudged
        }
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
        // A stop stays signalled for every later wait; a nudge is used up by the wait it ends.
        if wake.wait(timeout: .now() + .milliseconds(Int(ms))) == .success, isRequested { wake.signal() }
    }
}

/// The agent's time: real (wall clock for timestamps, sleeping between cycles) or simulated (tests and
/// fast demos: sleeping only moves the clock on).
public protocol AgentClock: AnyObject {
    func now() -> Millis
    /// Sleeps until `ms` (or until a stop is requested).
    func sleep(untilMs ms: Millis, stop: StopSignal)
    /// The real milliseconds until this clock reads `ms` (0 when it has passed, or for a clock that only moves
    /// when slept on).
    func realMs(until ms: Millis) -> Millis
}

public final class SystemClock: AgentClock, Sendable {
    public init() {}
    public func now() -> Millis { Millis.now() }
    public func realMs(until ms: Millis) -> Millis { max(0, ms - now()) }
    public func sleep(untilMs ms: Millis, stop: StopSignal) { stop.wait(ms: realMs(until: ms)) }
}

/// A clock that starts at `start` and moves only when slept on (or advanced): no real waiting.
public final class SimulatedClock: AgentClock {
    public private(set) var current: Millis
    public init(start: Millis = Millis.now()) { current = start }
    public func now() -> Millis { current }
    public func realMs(until ms: Millis) -> Millis { 0 }
    public func sleep(untilMs ms: Millis, stop: StopSignal) { current = max(current, ms) }
    public func advance(by ms: Millis) { current += ms }
}

/// Wall-clock time run `rate` times faster from `start` (simulator demos and tests of schedules: at rate 60 a
/// virtual minute takes a real second). Shared by every job of a run, so readers, the audit scheduler and a
/// scenario see one time; sleeping waits the real share of the virtual wait.
public final class ScaledClock: AgentClock, Sendable {
    public let start: Millis
    public let rate: Double
    private let origin = DispatchTime.now().uptimeNanoseconds

    public init(start: Millis = Millis.now(), rate: Double) {
        self.start = start
        self.rate = max(rate, 1e-6)
    }

    public func now() -> Millis {
        let real = Double(DispatchTime.now().uptimeNanoseconds &- origin) / 1_000_000
        return start + Millis(real * rate)
    }

    public func realMs(until ms: Millis) -> Millis {
        let left = ms - now()
        return left <= 0 ? 0 : Millis((Double(left) / rate).rounded(.up))
    }

    public func sleep(untilMs ms: Millis, stop: StopSignal) { stop.wait(ms: realMs(until: ms)) }
}
