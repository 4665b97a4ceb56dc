import Foundation

/// A cron expression (minute hour day-of-month month day-of-week; `*`, `a-b`, `*/n`, `a-b/n`, lists) in
/// an IANA time zone. Day of month and day of week, when both are restricted, match either (as Vixie cron
/// and POSIX crontab do). Across daylight-saving changes a local time that does not exist runs at the
/// moment the clocks jump to, and a local time that happens twice runs once, the first time.
public struct CronSchedule: Sendable, Equatable, CustomStringConvertible {
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public let text: String
    public let timeZone: TimeZone
    let minutes: [Int], hours: [Int], days: Set<Int>, months: Set<Int>, weekdays: Set<Int>
    let daysRestricted: Bool, weekdaysRestricted: Bool

    public init(_ text: String, timeZone name: String = "UTC") throws(Invalid) {
        let tz: TimeZone
        do { tz = try Self.zone(name) } catch { throw Invalid(description: error.description) }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard parts.count == 5 else {
            throw Invalid(
                description:
                    "'\(text)': a cron expression has 5 fields (minute hour day-of-month month day-of-week), e.g. 0 2 * * *"
            )
        }
        func field(_ s: String, _ range: ClosedRange<Int>, _ name: String) throws(Invalid) -> Set<Int> {
            var out = Set<Int>()
            for item in s.split(separator: ",", omittingEmptySubsequences: false) {
                let stepParts = item.split(separator: "/", omittingEmptySubsequences: false)
                guard stepParts.count <= 2 else { throw Invalid(description: "\(name) '\(item)': one '/' at most") }
                var step = 1
                if stepParts.count == 2 {
                    guard let n = CronSchedule.number(stepParts[1]), (1...range.upperBound).contains(n) else {
                        throw Invalid(description: "\(name) '\(item)': the step must be 1…\(range.upperBound)")
                    }
                    step = n
                }
                let base = stepParts[0]
                var lo = range.lowerBound, hi = range.upperBound
                if base != "*" {
                    let ends = base.split(separator: "-", omittingEmptySubsequences: false)
                    guard (1...2).contains(ends.count), let a = CronSchedule.number(ends[0]),
                        let b = CronSchedule.number(ends.last ?? ""), range.contains(a), range.contains(b), a <= b
                    else {
                        throw Invalid(
                            description:
                                "\(name) '\(item)': expected *, a number or a range in \(range.lowerBound)…\(range.upperBound)"
                        )
                    }
                    (lo, hi) = (a, ends.count == 2 || stepParts.count == 2 ? b : a)
                    if ends.count == 1 && stepParts.count == 2 { hi = range.upperBound }
                }
                out.formUnion(stride(from: lo, through: hi, by: step))
            }
            return out
        }
        self.text = text
        timeZone = tz
        minutes = try field(parts[0], 0...59, "minute").sorted()
        hours = try field(parts[1], 0...23, "hour").sorted()
        days = try field(parts[2], 1...31, "day of month")
        months = try field(parts[3], 1...12, "month")
        weekdays = Set(try field(parts[4], 0...7, "day of week").map { $0 % 7 })
        daysRestricted = parts[2] != "*"
        weekdaysRestricted = parts[4] != "*"
    }

    public var description: String { "\(text) (\(timeZone.identifier))" }

    /// An IANA time zone by name. Foundation also takes `GMT+5` as UTC+5, where IANA's `Etc/GMT+5` is UTC−5:
    /// such names are refused with the IANA spelling of what was probably meant.
    public static func zone(_ name: String) throws(Invalid) -> TimeZone {
        let offset = name.range(of: #"^(GMT|UTC)[+-][0-9]{1,2}(:?[0-9]{2})?$"#, options: .regularExpression) != nil
        if offset {
            let sign = name.dropFirst(3).first == "+" ? "-" : "+"
            let hours = name.dropFirst(4).prefix { $0.isNumber }
            throw Invalid(
                description:
                    "time zone '\(name)': give an IANA name (e.g. Europe/Berlin); for a fixed offset IANA writes Etc/GMT\(sign)\(hours), whose sign is the reverse of the offset's"
            )
        }
        guard let tz = TimeZone(identifier: name) else {
            throw Invalid(description: "time zone '\(name)' is not an IANA name (e.g. Europe/Berlin, UTC)")
        }
        return tz
    }

    /// A cron number: ASCII digits only (no sign, no spaces), at most 4 of them.
    static func number(_ s: Substring) -> Int? {
        guard !s.isEmpty, s.count <= 4, s.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(s)
    }

    /// How far ahead `next` looks: 8 years of calendar time (every cron schedule that fires at all fires
    /// within that: 29 February comes back within 8 years, across a century year that is not a leap year).
    public static let horizonDays = 366 * 8

    /// The first time after `date` this schedule fires, or nil if none within 8 years (e.g. 31 February).
    public func next(after date: Date) -> Date? { next(after: date, localFilter: nil, accept: nil) }

    /// The first firing after `date` that `localFilter` (weekday 0 = Sunday, minute of the local day; cheap,
    /// asked before any date is built) and `accept` (the firing's time) both take, or nil if none within the
    /// horizon. The search is bounded by calendar time, not by a count of firings: every day of the horizon
    /// is looked at once, each (hour, minute) of a matching day once.
    public func next(
        after date: Date, localFilter: ((_ weekday: Int, _ minute: Int) -> Bool)?, accept: ((Date) -> Bool)?
    ) -> Date? {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = timeZone
        var day = cal.startOfDay(for: date)
        for _ in 0..<Self.horizonDays {
            let c = cal.dateComponents([.year, .month, .day, .weekday], from: day)
            guard let y = c.year, let m = c.month, let d = c.day, let wd = c.weekday else { return nil }
            let dayOK: Bool
            switch (daysRestricted, weekdaysRestricted) {
            case (true, true): dayOK = days.contains(d) || weekdays.contains(wd - 1)
            case (true, false): dayOK = days.contains(d)
            case (false, true): dayOK = weekdays.contains(wd - 1)
            case (false, false): dayOK = true
            }
            // The day's firings in (hour, minute) order are in time order too: a local time in a daylight-saving
            // gap runs at the jump, a repeated one the first time, so the first one after `date` is the answer.
            if months.contains(m) && dayOK {
                // On a day the clocks change, a nominal local time may run at another (a time in the gap runs at
                // the jump): the cheap filter on nominal times is left out there, `accept` judges the real time.
                let dayEnd = cal.date(byAdding: .day, value: 1, to: day) ?? day.addingTimeInterval(86_400)
                let shifts =
                    timeZone.nextDaylightSavingTimeTransition(after: day.addingTimeInterval(-1)).map { $0 < dayEnd }
                    ?? false
                let filter = shifts ? nil : localFilter
                for h in hours {
                    for min in minutes {
                        if let filter, !filter(wd - 1, h * 60 + min) { continue }
                        guard var t = cal.date(from: DateComponents(year: y, month: m, day: d, hour: h, minute: min))
                        else { continue }
                        // In a gap Foundation moves the time on by the jump (02:30 → 03:30); cron runs it at the jump.
                        let got = cal.dateComponents([.hour, .minute], from: t)
                        if got.hour != h || got.minute != min,
                            let jump = timeZone.nextDaylightSavingTimeTransition(
                                after: t.addingTimeInterval(-4 * 3600)), jump <= t
                        {
                            t = jump
                        }
                        guard t > date else { continue }
                        if let accept, !accept(t) { continue }
                        return t
                    }
                }
            }
            guard let nextDay = cal.date(byAdding: .day, value: 1, to: day) else { return nil }
            day = cal.startOfDay(for: nextDay)
        }
        return nil
    }
}
