import Foundation
import Testing

@testable import VLoggerService

/// Issue 46, item 8: pages are made at most two at a time, however many distinct pages are asked for at once (on
/// 6b52d4c 200 distinct query strings were each rendered in full, side by side, and held /healthz for 10.8 s).
@Suite struct PageCacheTests {
    actor Gauge {
        var now = 0, most = 0, made = 0
        func enter() {
            now += 1
            made += 1
            most = max(most, now)
        }
        func leave() { now -= 1 }
    }

    @Test func atMostTwoPagesAreMadeAtOnce() async {
        let cache = PageCache()
        let gauge = Gauge()
        let pages = await withTaskGroup(of: String.self) { group in
            for i in 0..<40 {
                group.addTask {
                    await cache.page("/tags/\(i)") {
                        await gauge.enter()
                        try? await Task.sleep(for: .milliseconds(20))
                        await gauge.leave()
                        return "page \(i)"
                    }
                }
            }
            var out: [String] = []
            for await p in group { out.append(p) }
            return out
        }
        #expect(Set(pages).count == 40)
        let (most, made) = (await gauge.most, await gauge.made)
        #expect(most <= 2 && made == 40, "at most \(most) at once, \(made) made")
    }

    /// The same page asked again right after it was made is not made again (a burst costs one page).
    @Test func aPageAskedAgainAtOnceIsNotMadeAgain() async {
        let cache = PageCache()
        let gauge = Gauge()
        for _ in 0..<3 {
            _ = await cache.page("/") {
                await gauge.enter()
                await gauge.leave()
                return "status"
            }
        }
        #expect(await gauge.made == 1)
    }
}
