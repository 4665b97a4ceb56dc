import Foundation
import Synchronization
import TestDrivers
import Testing

@testable import VLoggerService

/// The write API's refusals are logged at most once a minute with a count, and a burst is never left
/// unreported (issue 27, item 14): the clock is injected, nothing sleeps.
@Suite(.drivers) struct RefusalLogTests {
    final class Clock: Sendable {
        let ms = Atomic<Int64>(1_000_000)
        func advance(_ d: Int64) { ms.add(d, ordering: .relaxed) }
    }

    @Test func aBurstIsOneLineAndTheRestIsSaidByTheDrain() {
        let clock = Clock()
        let log = RefusalLog(intervalMs: 60_000, now: { clock.ms.load(ordering: .relaxed) })
        // 500 wrong tokens in one second: the first is said at once, the other 499 are counted.
        var lines: [Int] = []
        for i in 0..<500 {
            if let n = log.record("POST /api/writes #\(i)") { lines.append(n) }
            if i % 100 == 0 { clock.advance(2) }
        }
        #expect(lines == [1])
        // The minute's drain (RefusalLogJob) says the 499 with the last request, once.
        let drained = log.drain()
        #expect(drained?.count == 499)
        #expect(drained?.last == "POST /api/writes #499")
        #expect(log.drain() == nil)
        #expect(RefusalLog.line(499, "x").contains("refused 499 requests"))
        #expect(RefusalLog.line(1, "x").contains("refused 1 request "))
    }

    @Test func aRefusalAMinuteAfterTheLastLineIsSaidWithItsCount() {
        let clock = Clock()
        let log = RefusalLog(intervalMs: 60_000, now: { clock.ms.load(ordering: .relaxed) })
        #expect(log.record("a") == 1)
        #expect(log.record("b") == nil)
        #expect(log.record("c") == nil)
        clock.advance(59_999)
        #expect(log.record("d") == nil)
        clock.advance(1)
        // b, c, d and e: four refusals since the last line.
        #expect(log.record("e") == 4)
        #expect(log.drain() == nil)
    }
}
