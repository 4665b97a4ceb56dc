import Foundation
import Testing
import VLoggerModel

/// Local times against Foundation's own formatter (an implementation not written here), in zones with and without
/// summer time.
@Suite struct LocalTimeTests {
    /// Every 37 minutes and 11 seconds across two years, in Berlin, New York, Kolkata (+05:30) and UTC: the same text
    /// as `DateFormatter` with the pattern `yyyy-MM-dd HH:mm:ss xxx`.
    @Test func matchesFoundationsFormatter() throws {
        for name in ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"] {
            let t = try LocalTime(identifier: name)
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.calendar = Calendar(identifier: .gregorian)
            f.timeZone = TimeZone(identifier: name)
            f.dateFormat = "yyyy-MM-dd HH:mm:ss xxx"
            var ms: Int64 = 1_735_689_600_000  // 2025-01-01T00:00:00Z
            while ms < 1_798_761_600_000 {  // 2027-01-01
                let expected = f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
                #expect(t.dateTime(ms) == expected, "\(name) \(ms)")
                ms += 2_231_000
            }
        }
    }

    /// EU summer time begins on the last Sunday of March at 01:00 UTC (Directive 2000/84/EC, art. 2): 2026-03-29.
    /// In Berlin the clocks go from 01:59:59 +01:00 to 03:00:00 +02:00.
    @Test func theSwitchToSummerTimeInBerlin() throws {
        let t = try LocalTime(identifier: "Europe/Berlin")
        let switchover: Int64 = 1_774_746_000_000  // 2026-03-29T01:00:00Z
        #expect(t.dateTime(switchover - 1000) == "2026-03-29 01:59:59 +01:00")
        #expect(t.dateTime(switchover) == "2026-03-29 03:00:00 +02:00")
    }

    @Test func aNameThatIsNotAPlaceIsRefused() {
        for bad in ["CET", "GMT+1", "Mars/Olympus", "", "+01:00"] {
            #expect(throws: LocalTime.UnknownZone.self) { try LocalTime(identifier: bad) }
        }
    }
}
