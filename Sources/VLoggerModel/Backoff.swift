/// How long to wait before trying again after failures: exponential, capped, with jitter. The one back-off of
/// the gateway: a failing reader, the store writer, fleet sync and every other consumer of the outbox use it.
///
/// After the n-th failure in a row the ceiling is `min(cap, base × 2^(n−1))`; the wait is drawn uniformly
/// between `base` and that ceiling ("full jitter" over the exponential range, as in Marc Brooker's "Exponential
/// Backoff And Jitter", AWS Architecture Blog, 2015, with the floor at `base` rather than 0 so that a failing
/// reader or server is never retried in a tight loop). Without jitter the wait is the ceiling itself. Many
/// gateways that lost the same server at the same moment therefore come back spread over the window, not in
/// lock-step.
public struct Backoff: Sendable, Equatable {
    /// The first wait and the floor of every wait, in milliseconds (at least 1).
    public let baseMs: Millis
    /// The largest wait, in milliseconds (at least `baseMs`).
    public let capMs: Millis
    /// Whether waits are drawn between `baseMs` and the ceiling (true) or are the ceiling (false).
    public var jitter: Bool
    /// Failures in a row since the last success.
    public private(set) var failures = 0

    public init(baseMs: Millis, capMs: Millis, jitter: Bool = true) {
        self.baseMs = max(1, baseMs)
        self.capMs = max(self.baseMs, capMs)
        self.jitter = jitter
    }

    /// The ceiling of the wait after `failures` failures in a row (0 for none): `min(cap, base × 2^(failures−1))`,
    /// without overflow for any count.
    public func ceiling(after failures: Int) -> Millis {
        guard failures > 0 else { return 0 }
        let shift = failures - 1
        // base × 2^shift ≥ cap as soon as 2^shift ≥ cap / base: no need to compute the product then.
        if shift >= 62 || (capMs >> shift) < baseMs { return capMs }
        return min(capMs, baseMs << shift)
    }

    /// Counts a failure and returns the wait before the next try, drawn with `random`.
    public mutating func failed<R: RandomNumberGenerator>(using random: inout R) -> Millis {
        failures = failures == Int.max ? failures : failures + 1
        let top = ceiling(after: failures)
        guard jitter, top > baseMs else { return top }
        return Millis.random(in: baseMs...top, using: &random)
    }

    /// Counts a failure and returns the wait before the next try (the system's random numbers).
    public mutating func failed() -> Millis {
        var g = SystemRandomNumberGenerator()
        return failed(using: &g)
    }

    /// A success: the next failure starts again from `baseMs`.
    public mutating func succeeded() { failures = 0 }
}
