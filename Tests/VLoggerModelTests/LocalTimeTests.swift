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

/// Issue 47, item 5: `export --since 2026-11-27` meant the UTC day although the gateway is in Berlin and every
/// screen shows Berlin time. A date or time without an offset is now the gateway's local one. Facts: Berlin is
/// +01:00 in winter and +02:00 in summer; EU summer time runs from the last Sunday of March to the last Sunday of
/// October, switching at 01:00 UTC (Directive 2000/84/EC, arts. 1–2): 2026-03-29 and 2026-10-25.
@Suite struct LocalDatesTests {
    static func utc(_ text: String) throws -> Int64 { try TimeSpec.parse(text, now: 0).millis }

    @Test func aDateWithoutAnOffsetIsTheGatewaysDay() throws {
        let berlin = try LocalTime(identifier: "Europe/Berlin")
        let day = try TimeSpec.parse("2026-11-27", now: 0, zone: berlin)
        #expect(day.millis == (try Self.utc("2026-11-26T23:00:00Z")))
        #expect(day.note?.contains("Europe/Berlin's time, 2026-11-27 00:00:00 +01:00") == true, "\(day.note ?? "")")
        #expect(
            (try TimeSpec.parse("2026-07-01 12:00", now: 0, zone: berlin)).millis == (try Self.utc("2026-07-01T10:00Z"))
        )
        let chicago = try LocalTime(identifier: "America/Chicago")  // -06:00 in winter
        #expect(
            (try TimeSpec.parse("2026-11-27T08:00", now: 0, zone: chicago)).millis
                == (try Self.utc("2026-11-27T14:00Z")))
        // An offset or Z given is kept; ages are ages; without a zone UTC is assumed and said.
        #expect(
            (try TimeSpec.parse("2026-11-27T08:00+00:00", now: 0, zone: berlin)).millis
                == (try Self.utc("2026-11-27T08:00Z")))
        #expect((try TimeSpec.parse("2026-11-27T08:00Z", now: 0, zone: berlin)).note == nil)
        #expect((try TimeSpec.parse("1h", now: 7_200_000, zone: berlin)).millis == 3_600_000)
        #expect((try TimeSpec.parse("2026-11-27", now: 0)).note?.contains("UTC assumed") == true)
    }

    @Test func theHoursTheClocksSkipOrRepeat() throws {
        let berlin = try LocalTime(identifier: "Europe/Berlin")
        // 02:30 on 2026-03-29 does not happen (01:59:59 +01:00 is followed by 03:00:00 +02:00): taken as 03:30 +02:00.
        let skipped = try TimeSpec.parse("2026-03-29 02:30", now: 0, zone: berlin)
        #expect(skipped.millis == (try Self.utc("2026-03-29T01:30Z")))
        #expect(skipped.note?.contains("does not happen in Europe/Berlin") == true, "\(skipped.note ?? "")")
        // 02:30 on 2026-10-25 happens twice (+02:00, then +01:00): the first.
        let twice = try TimeSpec.parse("2026-10-25 02:30", now: 0, zone: berlin)
        #expect(twice.millis == (try Self.utc("2026-10-25T00:30Z")))
        #expect(twice.note?.contains("happens twice") == true, "\(twice.note ?? "")")
        // The hours around them are unambiguous.
        #expect(
            (try TimeSpec.parse("2026-03-29 03:00", now: 0, zone: berlin)).millis == (try Self.utc("2026-03-29T01:00Z"))
        )
        #expect(
            (try TimeSpec.parse("2026-10-25 03:00", now: 0, zone: berlin)).millis == (try Self.utc("2026-10-25T02:00Z"))
        )
    }

    /// `--local-time`: ISO 8601 with the offset that applied at that instant, so summer and winter rows both read back
    /// as the same instants (RFC 3339 §5.6 `time-numoffset`).
    @Test func localTimesCarryTheirOffset() throws {
        let berlin = try LocalTime(identifier: "Europe/Berlin")
        func text(_ ms: Int64, _ zone: LocalTime) -> String {
            var out: [UInt8] = []
            ValueText.appendTime(ms, in: zone, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(text(try Self.utc("2026-11-27T08:30:00.250Z"), berlin) == "2026-11-27T09:30:00.250+01:00")
        #expect(text(try Self.utc("2026-07-01T08:30:00Z"), berlin) == "2026-07-01T10:30:00.000+02:00")
        #expect(
            text(try Self.utc("2026-11-27T02:00:00Z"), try LocalTime(identifier: "America/Chicago"))
                == "2026-11-26T20:00:00.000-06:00")
        #expect(
            text(try Self.utc("2026-11-27T08:00:00Z"), try LocalTime(identifier: "Asia/Kolkata"))
                == "2026-11-27T13:30:00.000+05:30")
        // Read back by the parser, each is the instant it was.
        for ms in [Int64(1_764_232_200_250), 1_782_894_600_000] {
            #expect((try TimeSpec.parse(text(ms, berlin), now: 0)).millis == ms)
        }
    }
}
