import Foundation

/// A daily window of local time, `06:00-14:00`, on some days of the week (the day the window starts; a
/// window whose end is not after its start runs past midnight, `22:00-06:00`). Used two ways by audit
/// schedules: `shifts` fire at each window's start or end (a shift change), `during` keeps a cron schedule's
/// firings inside the windows.
public struct ShiftWindow: Sendable, Equatable, CustomStringConvertible {
    public struct Invalid: Error, CustomStringConvertible, Sendable { public let description: String }

    /// Minutes after local midnight; `end` 0 (`24:00` or `00:00`) is the next midnight.
    public let start: Int, end: Int
    /// `00:00-24:00`: the whole day.
    public let fullDay: Bool
    /// Days of the week the window starts on, 0 = Sunday … 6 = Saturday.
    public let days: Set<Int>
    public let timeZone: TimeZone

    /// `text` is `HH:MM-HH:MM`; `days` a cron day-of-week field (`*`, `1-5`, `0,6`).
    public init(_ text: String, days: String = "*", timeZone name: String = "UTC") throws(Invalid) {
        let tz: TimeZone
        do { tz = try CronSchedule.zone(name) } catch { throw Invalid(description: error.description) }
        let ends = text.split(separator: "-", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        func minute(_ s: String, allow24: Bool) throws(Invalid) -> Int {
            let hm = s.split(separator: ":", omittingEmptySubsequences: false)
            guard hm.count == 2, hm[0].count <= 2, hm[1].count == 2, let h = CronSchedule.number(hm[0]),
                let m = CronSchedule.number(hm[1]), (0...59).contains(m),
                (0...23).contains(h) || (allow24 && h == 24 && m == 0)
            else {
                throw Invalid(
                    description: "'\(text)': expected HH:MM-HH:MM in local time, e.g. 06:00-14:00 or 22:00-06:00")
            }
            return (h * 60 + m) % 1440
        }
        guard ends.count == 2 else {
            throw Invalid(description: "'\(text)': expected HH:MM-HH:MM in local time, e.g. 06:00-14:00 or 22:00-06:00")
        }
        start = try minute(ends[0], allow24: false)
        end = try minute(ends[1], allow24: true)
        fullDay = start == end && ends[1].hasPrefix("24")
        guard start != end || fullDay else {
            throw Invalid(
                description: "'\(text)': the window has no length (its start is its end); a whole day is 00:00-24:00")
        }
        let weekdays: CronSchedule
        do { weekdays = try CronSchedule("0 0 * * \(days)") } catch {
            throw Invalid(
                description: "days '\(days)': \(error.description.replacingOccurrences(of: "day of week ", with: ""))")
        }
        self.days = weekdays.weekdays
        timeZone = tz
    }

    public var spansMidnight: Bool { end <= start }

    public var description: String {
        func hm(_ m: Int) -> String { String(format: "%02d:%02d", m / 60, m % 60) }
        return "\(hm(start))-\(end == 0 ? "24:00" : hm(end))"
    }

    /// Whether `date` falls inside the window (local time; start included, end excluded).
    public func contains(_ date: Date) -> Bool {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = timeZone
        let c = cal.dateComponents([.hour, .minute, .weekday], from: date)
        guard let h = c.hour, let m = c.minute, let wd = c.weekday else { return false }
        return contains(weekday: wd - 1, minute: h * 60 + m)
    }

    /// Whether a local time (weekday 0 = Sunday, minute of the day) falls inside the window.
    public func contains(weekday day: Int, minute: Int) -> Bool {
        if fullDay { return days.contains(day) }
        if !spansMidnight { return days.contains(day) && minute >= start && minute < end }
        return (minute >= start && days.contains(day)) || (minute < end && days.contains((day + 6) % 7))
    }

    /// Cron schedules that fire at the window's start and/or end (an end past midnight falls on the next day),
    /// so that daylight-saving changes are handled as for any cron schedule.
    public func boundaries(start atStart: Bool, end atEnd: Bool) -> [CronSchedule] {
        func list(_ d: Set<Int>) -> String { d.count == 7 ? "*" : d.sorted().map(String.init).joined(separator: ",") }
        var out: [CronSchedule] = []
        if atStart,
            let c = try? CronSchedule("\(start % 60) \(start / 60) * * \(list(days))", timeZone: timeZone.identifier)
        {
            out.append(c)
        }
        let endDays = spansMidnight ? Set(days.map { ($0 + 1) % 7 }) : days
        if atEnd,
            let c = try? CronSchedule("\(end % 60) \(end / 60) * * \(list(endDays))", timeZone: timeZone.identifier)
        {
            out.append(c)
        }
        return out
    }
}
