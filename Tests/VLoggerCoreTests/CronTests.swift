import Foundation
import TestDrivers
import Testing
import VLoggerModel
@testable import VLoggerCore

/// Cron expressions as POSIX crontab(5) defines the fields; time-zone facts from the IANA tz database:
/// Europe/Berlin moves from CET (UTC+1) to CEST (UTC+2) at 01:00 UTC on the last Sunday of March
/// (2026-03-29) and back at 01:00 UTC on the last Sunday of October (2026-10-25).
@Suite(.drivers) struct CronTests {
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
        #expect(iso(c.next(after: date("2026-03-27T12:00:00Z"))) == "2026-03-28T01:00:00Z")  // 02:00 CET
        // 2026-03-29 02:00 does not exist (clocks jump to 03:00 CEST = 01:00 UTC): it runs then, once.
        #expect(iso(c.next(after: date("2026-03-28T01:00:00Z"))) == "2026-03-29T01:00:00Z")
        #expect(iso(c.next(after: date("2026-03-29T01:00:00Z"))) == "2026-03-30T00:00:00Z")  // 02:00 CEST
        // 02:30 that night does not exist either: it too runs at the jump (not an hour later at 03:30 CEST).
        #expect(
            iso(try CronSchedule("30 2 * * *", timeZone: "Europe/Berlin").next(after: date("2026-03-28T12:00:00Z")))
                == "2026-03-29T01:00:00Z")
        // 2026-10-25 02:30 happens twice (CEST, then CET): once, the first time.
        let half = try CronSchedule("30 2 * * *", timeZone: "Europe/Berlin")
        #expect(iso(half.next(after: date("2026-10-24T12:00:00Z"))) == "2026-10-25T00:30:00Z")
        #expect(iso(half.next(after: date("2026-10-25T00:30:00Z"))) == "2026-10-26T01:30:00Z")
    }

    @Test func dayOfMonthOrDayOfWeekAndImpossibleDates() throws {
        // Both restricted: either matches (the 1st, or any Monday).
        let c = try CronSchedule("0 0 1 * 1")
        #expect(iso(c.next(after: date("2026-11-24T00:00:00Z"))) == "2026-11-30T00:00:00Z")  // a Monday
        #expect(iso(c.next(after: date("2026-11-30T00:00:00Z"))) == "2026-12-01T00:00:00Z")  // the 1st
        #expect(try CronSchedule("0 0 31 2 *").next(after: date("2026-01-01T00:00:00Z")) == nil)
        // 7 = Sunday
        #expect(iso(try CronSchedule("0 12 * * 7").next(after: date("2026-11-22T12:00:00Z"))) == "2026-11-29T12:00:00Z")
    }

    @Test func badExpressionsAreErrors() {
        for bad in [
            "", "* * * *", "60 * * * *", "* 24 * * *", "*/0 * * * *", "5-1 * * * *", "a * * * *", "* * * * 8",
            "1,,2 * * * *",
        ] {
            #expect(throws: CronSchedule.Invalid.self, "\(bad)") { try CronSchedule(bad) }
        }
        #expect(throws: CronSchedule.Invalid.self) { try CronSchedule("0 2 * * *", timeZone: "Mars/Olympus") }
    }
}

@Suite(.drivers) struct AuditScheduleTests {
    @Test func oneCatchUpHoweverManySlotsWereMissed() throws {
        let s = AuditSchedule(name: "nightly", cron: try CronSchedule("0 2 * * *"))
        let day: Millis = 86_400_000
        let lastRun: Millis = 1_763_776_800_000  // 2025-11-22T02:00:00Z
        #expect(!s.missed(lastRun: lastRun, now: lastRun + day - 1))  // the next night has not come yet
        #expect(s.missed(lastRun: lastRun, now: lastRun + day))
        #expect(s.missed(lastRun: lastRun, now: lastRun + 3 * day))  // three nights: still one "missed" answer
        #expect(!s.missed(lastRun: nil, now: lastRun))  // never run: nothing was missed
    }
}

/// Shift windows. Calendar facts: 2026-11-20 is a Friday, 2026-11-21 a Saturday, 2026-11-23 a Monday;
/// Europe/Berlin is on CET (UTC+1) in November and moves to CEST at 01:00 UTC on 2026-03-29 (IANA tz).
@Suite(.drivers) struct ShiftWindowTests {
    func date(_ iso: String) -> Date { ISO8601DateFormatter().date(from: iso) ?? Date.distantPast }
    func iso(_ d: Date?) -> String { d.map { ISO8601DateFormatter().string(from: $0) } ?? "nil" }

    @Test func aNightShiftBelongsToTheDayItStarts() throws {
        let night = try ShiftWindow("22:00-06:00", days: "1-5")
        #expect(night.spansMidnight && night.description == "22:00-06:00")
        #expect(night.contains(date("2026-11-21T02:00:00Z")))  // Saturday 02:00: Friday's night shift
        #expect(!night.contains(date("2026-11-23T02:00:00Z")))  // Monday 02:00: Sunday night, no shift
        #expect(night.contains(date("2026-11-23T22:00:00Z")))  // start included
        #expect(!night.contains(date("2026-11-24T06:00:00Z")))  // end excluded
        let whole = try ShiftWindow("00:00-24:00", days: "1-5")
        #expect(
            whole.fullDay && whole.contains(date("2026-11-23T00:00:00Z"))
                && whole.contains(date("2026-11-23T23:59:00Z")) && !whole.contains(date("2026-11-22T12:00:00Z")))
        let day = try ShiftWindow("06:00-24:00")
        #expect(
            day.end == 0 && day.contains(date("2026-11-22T23:59:00Z")) && !day.contains(date("2026-11-22T05:59:00Z")))
    }

    @Test func shiftChangesInBerlinOnWorkingDays() throws {
        let windows = try ["06:00-14:00", "14:00-22:00", "22:00-06:00"].map {
            try ShiftWindow($0, days: "1-5", timeZone: "Europe/Berlin")
        }
        let s = AuditSchedule.shifts(name: "shift change", windows, atStart: false, atEnd: true)
        // Friday 21:00 CET: the late shift ends at 22:00 CET; the night shift that starts Friday ends Saturday
        // 06:00; then nothing until Monday's early shift ends at 14:00 CET.
        #expect(iso(s.next(after: date("2026-11-20T20:00:00Z"))) == "2026-11-20T21:00:00Z")
        #expect(iso(s.next(after: date("2026-11-20T21:00:00Z"))) == "2026-11-21T05:00:00Z")
        #expect(iso(s.next(after: date("2026-11-21T05:00:00Z"))) == "2026-11-23T13:00:00Z")
        // At the start instead: Monday's early shift at 06:00 CET follows Friday's night shift start.
        let starts = AuditSchedule.shifts(name: "start", windows, atStart: true, atEnd: false)
        #expect(iso(starts.next(after: date("2026-11-20T21:00:00Z"))) == "2026-11-23T05:00:00Z")
        // A shift starting at 02:30 on the night clocks go forward (02:30 CET does not exist): at the jump.
        let early = try ShiftWindow("02:30-10:00", timeZone: "Europe/Berlin")
        let spring = AuditSchedule.shifts(name: "spring", [early], atStart: true, atEnd: false)
        #expect(iso(spring.next(after: date("2026-03-28T12:00:00Z"))) == "2026-03-29T01:00:00Z")
        #expect(s.missed(lastRun: 1_763_672_400_000, now: 1_763_701_200_000))  // ran Fri 21:00Z; Sat 05:00Z passed
    }

    @Test func cronFiringsKeptInsideWindows() throws {
        let s = AuditSchedule(
            name: "morning", cron: try CronSchedule("*/15 * * * *"), during: [try ShiftWindow("06:30-07:00")])
        #expect(iso(s.next(after: date("2026-11-23T06:00:00Z"))) == "2026-11-23T06:30:00Z")
        #expect(iso(s.next(after: date("2026-11-23T06:45:00Z"))) == "2026-11-24T06:30:00Z")
        // A window no firing falls into: never.
        let none = AuditSchedule(
            name: "never", cron: try CronSchedule("0 * * * *"), during: [try ShiftWindow("06:10-06:20")])
        #expect(none.next(after: date("2026-11-23T06:00:00Z")) == nil)
    }

    @Test func badWindowsAreErrors() {
        for bad in [
            "6-14", "06:00", "25:00-01:00", "06:00-06:00", "00:00-00:00", "06:60-07:00", "06:00-24:30", "-",
            "06:00-14:00-22:00",
        ] {
            #expect(throws: ShiftWindow.Invalid.self, "\(bad)") { try ShiftWindow(bad) }
        }
        #expect(throws: ShiftWindow.Invalid.self) { try ShiftWindow("06:00-14:00", days: "mon") }
        #expect(throws: ShiftWindow.Invalid.self) { try ShiftWindow("06:00-14:00", timeZone: "Europe/Atlantis") }
    }

    @Test func scheduleTablesInTheConfiguration() throws {
        let base = """
            [[reader]]
            id = "dock-3"
            field = "f"
            location = "Dock door 3"

            """
        let c = try AgentConfig.parse(
            base + """
                [[audit.schedule]]
                name = "shift change"
                shifts = ["06:00-14:00", "14:00-22:00", "22:00-06:00"]
                days = "1-5"
                time-zone = "Europe/Berlin"

                [[audit.schedule]]
                name = "morning"
                cron = "*/15 * * * *"
                during = "06:30-07:00"
                location = "Dock door 3"
                """, file: "t.toml")
        #expect(c.audit.schedules.map(\.name) == ["shift change", "morning"])
        #expect(
            c.audit.schedules[0].fires.count == 3
                && c.audit.schedules[0].summary.hasPrefix("at the end of shifts 06:00-14:00"))
        #expect(c.audit.schedules[1].during.count == 1)
        for (bad, says) in [
            ("cron = \"0 2 * * *\"\nshifts = [\"06:00-14:00\"]", "not both"),
            ("location = \"Dock door 3\"", "not neither"),
            ("shifts = [\"06:00-14:00\"]\nat = \"middle\"", "expected start, end or both"),
            ("cron = \"0 2 * * *\"\nat = \"end\"", "only with shifts"), ("shifts = []", "the list is empty"),
            ("shifts = [\"06:00-14:00\"]\nduring = [\"06:00-07:00\"]", "only with cron"),
            ("shifts = [\"6h-14h\"]", "expected HH:MM-HH:MM"),
        ] {
            do {
                _ = try AgentConfig.parse(base + "[[audit.schedule]]\nname = \"x\"\n" + bad, file: "t.toml")
                Issue.record("accepted: \(bad)")
            } catch {
                #expect("\(error)".contains(says), "\(bad): \(error)")
            }
        }
    }
}
