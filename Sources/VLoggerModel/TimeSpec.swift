import Foundation

/// Times on the command line: ISO 8601 (`2026-11-22`, `2026-11-22T08:30`, `2026-11-22 08:30:15.250+01:00`,
/// `…Z`), `now`, or an age before now (`24h`, `7d`, `90m`). A time without a zone is the gateway's local time when
/// a zone is given (the export's `--since 2026-11-27` is that day in the plant), UTC otherwise; `note` says which.
public struct TimeSpec: Sendable, Equatable {
    public let millis: Millis
    public let note: String?

    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public let text: String
        public let reason: String
        public var description: String {
            "'\(text)' is not a time: \(reason). Use ISO 8601 (2026-11-22T08:30:00Z, 2026-11-22 08:30, 2026-11-22), 'now', or an age such as 24h, 7d, 90m"
        }
    }

    /// `zone`: the zone of a time written without one (nil: UTC).
    public static func parse(_ text: String, now: Millis, zone: LocalTime? = nil) throws(Invalid) -> TimeSpec {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.lowercased() == "now" { return TimeSpec(millis: now, note: nil) }
        if let first = t.first, first.isNumber, let last = t.last, last.isLetter, !t.contains("-"), !t.contains(":") {
            do { return TimeSpec(millis: now - (try DurationText.parse(t)), note: nil) } catch {
                throw Invalid(text: text, reason: "an age needs a unit: ms, s, m, h, d or w")
            }
        }
        return try iso8601(t, original: text, zone: zone)
    }

    /// The instant whose wall-clock time in `zone` is `wall` (milliseconds of a local date and time counted as if
    /// it were UTC). A time the clocks skip (the hour of the change to summer time) is taken with the offset
    /// before the change, which puts it after the skip, as the clocks would show it; a time that happens twice
    /// (the hour of the change back) is the first of the two. Says which when it was either.
    package static func instant(ofWall wall: Millis, in zone: LocalTime) -> (millis: Millis, remark: String?) {
        let before = zone.offsetSeconds(wall - 86_400_000), after = zone.offsetSeconds(wall + 86_400_000)
        // Each candidate offset of the day around it; a candidate fits when the zone has that offset at that instant.
        var fits: [Millis] = []
        for offset in Set([before, after, zone.offsetSeconds(wall)]).sorted(by: >) {
            let t = wall - Millis(offset) * 1000
            if zone.offsetSeconds(t) == offset { fits.append(t) }
        }
        if let first = fits.min() {
            return (
                first, fits.count > 1 ? "happens twice in \(zone.name) (the clocks go back); the first is meant" : nil
            )
        }
        return (
            wall - Millis(before) * 1000,
            "does not happen in \(zone.name) (the clocks skip it); taken as \(zone.dateTime(wall - Millis(before) * 1000))"
        )
    }

    package static func iso8601(_ t: String, original: String, zone: LocalTime? = nil) throws(Invalid) -> TimeSpec {
        let c = Array(t.utf8)
        var i = 0
        func digits(_ n: Int, _ what: String) throws(Invalid) -> Int {
            guard i + n <= c.count else { throw Invalid(text: original, reason: "expected \(n) digits of \(what)") }
            var v = 0
            for k in 0..<n {
                let d = c[i + k]
                guard d >= 0x30 && d <= 0x39 else {
                    throw Invalid(text: original, reason: "expected \(n) digits of \(what)")
                }
                v = v * 10 + Int(d - 0x30)
            }
            i += n
            return v
        }
        func expect(_ ch: Character, _ what: String) throws(Invalid) {
            guard i < c.count, c[i] == ch.asciiValue else {
                throw Invalid(text: original, reason: "expected '\(ch)' \(what)")
            }
            i += 1
        }
        let year = try digits(4, "the year")
        try expect("-", "after the year")
        let month = try digits(2, "the month")
        try expect("-", "after the month")
        let day = try digits(2, "the day")
        guard (1...12).contains(month) else { throw Invalid(text: original, reason: "month \(month) is not 01…12") }
        guard (1...daysIn(month, year)).contains(day) else {
            throw Invalid(text: original, reason: "day \(day) is not in \(year)-\(String(format: "%02d", month))")
        }
        var hour = 0, minute = 0, second = 0, ms = 0
        var offsetMin: Int? = nil
        var hasTime = false
        if i < c.count, c[i] == UInt8(ascii: "T") || c[i] == UInt8(ascii: "t") || c[i] == UInt8(ascii: " ") {
            i += 1
            hasTime = true
            hour = try digits(2, "the hour")
            try expect(":", "after the hour")
            minute = try digits(2, "the minutes")
            if i < c.count, c[i] == UInt8(ascii: ":") {
                i += 1
                second = try digits(2, "the seconds")
                if i < c.count, c[i] == UInt8(ascii: ".") || c[i] == UInt8(ascii: ",") {
                    i += 1
                    let start = i
                    var frac = 0, n = 0
                    while i < c.count, c[i] >= 0x30, c[i] <= 0x39 {
                        if n < 3 { frac = frac * 10 + Int(c[i] - 0x30); n += 1 }
                        i += 1
                    }
                    guard i > start else {
                        throw Invalid(text: original, reason: "expected digits after the decimal point")
                    }
                    while n < 3 { frac *= 10; n += 1 }
                    ms = frac
                }
            }
            // Second 60 is a leap second (RFC 3339 §5.6 allows it at the end of a minute); Unix time has none, so
            // it is taken as the last millisecond of second 59, which keeps the order of times.
            if second == 60 {
                second = 59
                ms = 999
            }
            guard hour < 24, minute < 60, second < 60 else {
                throw Invalid(text: original, reason: "time of day out of range")
            }
        }
        if i < c.count {
            if c[i] == UInt8(ascii: "Z") || c[i] == UInt8(ascii: "z") {
                i += 1
                offsetMin = 0
            } else if c[i] == UInt8(ascii: "+") || c[i] == UInt8(ascii: "-") {
                guard hasTime else { throw Invalid(text: original, reason: "a zone offset needs a time of day") }
                let sign = c[i] == UInt8(ascii: "+") ? 1 : -1
                i += 1
                let h = try digits(2, "the zone hours")
                if i < c.count, c[i] == UInt8(ascii: ":") { i += 1 }
                let m = try digits(2, "the zone minutes")
                guard h <= 23, m < 60 else { throw Invalid(text: original, reason: "zone offset out of range") }
                offsetMin = sign * (h * 60 + m)
            }
        }
        guard i == c.count else {
            throw Invalid(text: original, reason: "unexpected '\(String(decoding: c[i...], as: UTF8.self))' at the end")
        }
        let days = daysFromCivil(year, month, day)
        var total = Int64(days) * 86_400_000 + Int64(hour * 3_600_000 + minute * 60_000 + second * 1000 + ms)
        if let offsetMin {
            total -= Int64(offsetMin * 60_000)
            return TimeSpec(millis: total, note: nil)
        }
        // Linux's Foundation names the UTC zone "GMT".
        guard let zone, !["UTC", "GMT", "Etc/UTC", "Etc/GMT"].contains(zone.name) else {
            return TimeSpec(millis: total, note: "'\(original)' has no time zone; UTC assumed")
        }
        let (instant, remark) = instant(ofWall: total, in: zone)
        return TimeSpec(
            millis: instant,
            note: "'\(original)' has no time zone: \(zone.name)'s time, \(zone.dateTime(instant))"
                + (remark.map { "; it \($0)" } ?? ""))
    }

    package static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }
    package static func daysIn(_ m: Int, _ y: Int) -> Int {
        [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    package static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (H. Hinnant's civil_from_days).
    package static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// ISO 8601 UTC with milliseconds: `2026-11-22T08:30:00.250Z` (the export's format, and the logs').
    public static func format(_ ms: Millis) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        ValueText.appendTime(ms, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// ⌊a / b⌋ for b > 0, total over every Int64 (`-a` of Int64.min would overflow; `(a + 1) / b - 1` does not).
    package static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : (a + 1) / b - 1 }
}

/// Durations and ages written with a unit: `500ms`, `30s`, `5m`, `24h`, `7d`, `2w`.
public enum DurationText {
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public let text: String
        public var description: String {
            "'\(text)' is not a duration; write a number and a unit: 500ms, 30s, 5m, 24h, 7d or 2w"
        }
    }

    public static func parse(_ text: String) throws(Invalid) -> Millis {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Double)] = [
            ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 604_800_000),
        ]
        for (suffix, factor) in units where t.hasSuffix(suffix) {
            let number = String(t.dropLast(suffix.count)).trimmingCharacters(in: .whitespaces)
            // "ms" must not be read as "m" + "s": the longer suffix is tried first. Decimal digits with at most
            // one point: Swift's Double also reads "0x10" (16), "1e14" and "inf".
            let decimal =
                !number.isEmpty && number.count <= 24 && number.filter { $0 == "." }.count <= 1
                && number.allSatisfy { $0 == "." || ($0.isASCII && $0.isNumber) } && number.contains(where: \.isNumber)
            guard decimal, let v = Double(number), v.isFinite, v >= 0, v * factor < 1e15 else {
                throw Invalid(text: text)
            }
            return Millis((v * factor).rounded())
        }
        throw Invalid(text: text)
    }

    /// "1.5s", "250ms", "3m 20s" style for messages.
    public static func format(_ ms: Millis) -> String {
        if ms < 1000 { return "\(ms)ms" }
        if ms < 60_000 { return ms % 1000 == 0 ? "\(ms / 1000)s" : String(format: "%.1fs", Double(ms) / 1000) }
        if ms < 3_600_000 { return "\(ms / 60_000)m" + (ms % 60_000 >= 1000 ? " \(ms % 60_000 / 1000)s" : "") }
        return "\(ms / 3_600_000)h" + (ms % 3_600_000 >= 60_000 ? " \(ms % 3_600_000 / 60_000)m" : "")
    }
}
