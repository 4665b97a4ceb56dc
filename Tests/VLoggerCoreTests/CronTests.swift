import Foundation
import Testing
import VLoggerStore
@testable import VLoggerCore

/// Cron expressions as POSIX crontab(5) defines the fields; time-zone facts from the IANA tz database:
/// Europe/Berlin moves from CET (UTC+1) to CEST (UTC+2) at 01:00 UTC on the last Sunday of March
/// (2026-03-29) and back at 01:00 UTC on the last Sunday of October (2026-10-25).
@Suite struct CronTests {
    func date(_ iso: String) -> Date { ISO8601DateFormatter().date(from: iso) ?? Date.distantPast }
    func iso(_ d: Date?) -> String { d.map { ISO8601DateFormatter().string(from: $0) } ?? "nil" }

    @Test func everyFifteenMinutesOnWorkingDayHours() throws {
        let c = try CronSchedule("*/15 6-22 * * 1-5")
        // Friday 2026-11-20 22:50 UTC: the next is Monday 06:00.
        #expect(iso(c.next(after: date("2026-11-20T22:50:00Z"))) == "2026-11-23T06:00:00Z")
        #expect(iso(c.next(after: date("2026-11-23T06:00:00Z"))) == "2026-11-23T06:15:00Z")
        #expect(iso(c.next(after: date("2026-11-23T22:45:00Z"))) == "2026-11-24T06:00:00Z")
    }

    @Test func nightlyAcrossDaylightSavingInBerlin() throws {
        let c = try CronSchedule("0 2 * * *", timeZone: "Europe/Berlin")
        #expect(iso(c.next(after: date("2026-03-27T12:00:00Z"))) == "2026-03-28T01:00:00Z")   // 02:00 CET
        // 2026-03-29 02:00 does not exist (clocks jump to 03:00 CEST = 01:00 UTC): it runs then, once.
        #expect(iso(c.next(after: date("2026-03-28T01:00:00Z"))) == "2026-03-29T01:00:00Z")
        #expect(iso(c.next(after: date("2026-03-29T01:00:00Z"))) == "2026-03-30T00:00:00Z")   // 02:00 CEST
        // 2026-10-25 02:30 happens twice (CEST, then CET): once, the first time.
        let half = try CronSchedule("30 2 * * *", timeZone: "Europe/Berlin")
        #expect(iso(half.next(after: date("2026-10-24T12:00:00Z"))) == "2026-10-25T00:30:00Z")
        #expect(iso(half.next(after: date("2026-10-25T00:30:00Z"))) == "2026-10-26T01:30:00Z")
    }

    @Test func dayOfMonthOrDayOfWeekAndImpossibleDates() throws {
        // Both restricted: either matches (the 1st, or any Monday).
        let c = try CronSchedule("0 0 1 * 1")
        #expect(iso(c.next(after: date("2026-11-24T00:00:00Z"))) == "2026-11-30T00:00:00Z")   // a Monday
        #expect(iso(c.next(after: date("2026-11-30T00:00:00Z"))) == "2026-12-01T00:00:00Z")   // the 1st
        #expect(try CronSchedule("0 0 31 2 *").next(after: date("2026-01-01T00:00:00Z")) == nil)
        #expect(iso(try CronSchedule("0 12 * * 7").next(after: date("2026-11-22T12:00:00Z"))) == "2026-11-29T12:00:00Z")   // 7 = Sunday
    }

    @Test func badExpressionsAreErrors() {
        for bad in ["", "* * * *", "60 * * * *", "* 24 * * *", "*/0 * * * *", "5-1 * * * *", "a * * * *", "* * * * 8", "1,,2 * * * *"] {
            #expect(throws: CronSchedule.Invalid.self, "\(bad)") { try CronSchedule(bad) }
        }
        #expect(throws: CronSchedule.Invalid.self) { try CronSchedule("0 2 * * *", timeZone: "Mars/Olympus") }
    }
}

@Suite struct AuditScheduleTests {
    @Test func oneCatchUpHoweverManySlotsWereMissed() throws {
        let s = AuditSchedule(name: "nightly", cron: try CronSchedule("0 2 * * *"))
        let day: Millis = 86_400_000
        let lastRun: Millis = 1_763_776_800_000                  // 2025-11-22T02:00:00Z
        #expect(!s.missed(lastRun: lastRun, now: lastRun + day - 1))   // the next night has not come yet
        #expect(s.missed(lastRun: lastRun, now: lastRun + day))
        #expect(s.missed(lastRun: lastRun, now: lastRun + 3 * day))    // three nights: still one "missed" answer
        #expect(!s.missed(lastRun: nil, now: lastRun))                 // never run: nothing was missed
    }
}
