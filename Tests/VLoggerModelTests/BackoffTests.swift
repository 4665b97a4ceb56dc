import ISO15693Fuzzing
import Testing
import VLoggerModel

/// The one back-off (issue "One description per table, and outputs as consumers of the store's outbox", item 5):
/// exponential, capped, with full jitter above the base (Marc Brooker, "Exponential Backoff And Jitter", AWS
/// Architecture Blog, 2015: sleep = random_between(0, min(cap, base × 2^attempt)); here the floor is the base).
@Suite struct BackoffTests {
    /// SplitMix64, seeded (the fuzzers' generator), so a failing draw can be repeated.
    typealias SplitMix = DecoderFuzzer.Random

    @Test func withoutJitterTheWaitsDoubleFromTheBaseUpToTheCap() {
        var b = Backoff(baseMs: 250, capMs: 30_000, jitter: false)
        let waits = (0..<10).map { _ in b.failed() }
        #expect(waits == [250, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000])
        #expect(b.failures == 10)
        b.succeeded()
        #expect(b.failures == 0 && b.failed() == 250)
    }

    @Test func theCeilingNeverOverflows() {
        let b = Backoff(baseMs: 3, capMs: Millis.max)
        #expect(b.ceiling(after: 0) == 0)
        #expect(b.ceiling(after: 1) == 3)
        #expect(b.ceiling(after: 61) == 3 << 60)
        // 3 × 2^61 still fits in 63 bits; 3 × 2^62 does not, so from there on the wait is the cap.
        #expect(b.ceiling(after: 62) == 3 << 61)
        for n in [63, 64, 1000, Int.max] { #expect(b.ceiling(after: n) == Millis.max, "\(n)") }
        // Nonsense settings are made sane, never a trap: a base of 0 or less is 1 ms, a cap below the base is the base.
        var odd = Backoff(baseMs: -5, capMs: -10, jitter: false)
        #expect(odd.baseMs == 1 && odd.capMs == 1 && odd.failed() == 1)
    }

    @Test func withJitterEveryWaitLiesBetweenTheBaseAndTheCeiling() {
        var g = SplitMix(seed: 27)
        var b = Backoff(baseMs: 2000, capMs: 300_000)
        for n in 1...40 {
            let w = b.failed(using: &g)
            #expect((2000...b.ceiling(after: n)).contains(w), "failure \(n): \(w)")
        }
    }

    /// 1,000 gateways lose the same server at the same moment: after their fifth failure (ceiling 32 s) their
    /// retries spread over the window. Without jitter all 1,000 would arrive in the same millisecond; with it no
    /// tenth of the window holds more than 15 % of them (uniform: 10 %).
    @Test func gatewaysThatFailedTogetherDoNotComeBackTogether() {
        var g = SplitMix(seed: 15693)
        var buckets = [Int](repeating: 0, count: 10)
        var distinct = Set<Millis>()
        for _ in 0..<1000 {
            var b = Backoff(baseMs: 2000, capMs: 300_000)
            var w: Millis = 0
            for _ in 0..<5 { w = b.failed(using: &g) }
            distinct.insert(w)
            let top = b.ceiling(after: 5)
            #expect(top == 32_000)
            buckets[min(9, Int((w - 2000) * 10 / (top - 2000 + 1)))] += 1
        }
        #expect(buckets.allSatisfy { $0 <= 150 }, "\(buckets)")
        #expect(distinct.count > 900, "\(distinct.count) distinct waits")
    }
}
