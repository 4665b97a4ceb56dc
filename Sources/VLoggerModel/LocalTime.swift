import Foundation

/// Times as a person on site reads them: in the gateway's time zone (`[gateway] time-zone`, an IANA name; the
/// system's by default), with the offset that applied at that instant, so that a time just before and one just
/// after a change to or from summer time are told apart. Pages, reports and the commands' human output use it;
/// JSON and exports stay ISO 8601 UTC.
public struct LocalTime: Sendable, Equatable {
    public let zone: TimeZone

    public init(zone: TimeZone) { self.zone = zone }

    public struct UnknownZone: Error, CustomStringConvertible, Sendable {
        public let name: String
        public var description: String {
            "'\(name.prefix(60))' is not an IANA time zone (write it as Europe/Berlin, America/Chicago or UTC)"
        }
    }

    /// The zone named `identifier` (an IANA name such as Europe/Berlin), or the system's when nil.
    public init(identifier: String?) throws(UnknownZone) {
        guard let identifier else {
            self.init(zone: TimeZone.current)
            return
        }
        // Foundation also takes abbreviations and offsets ("CET", "GMT+1"); the configuration asks for a
        // place's name, whose rules follow the place.
        guard identifier == "UTC" || identifier.contains("/"), let z = TimeZone(identifier: identifier) else {
            throw UnknownZone(name: identifier)
        }
        self.init(zone: z)
    }

    public static let utc = LocalTime(zone: TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0)!)

    /// The zone's name (Europe/Berlin).
    public var name: String { zone.identifier }

    /// Seconds east of UTC at `ms`.
    public func offsetSeconds(_ ms: Millis) -> Int {
        zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// `+01:00` (`+00:00` for UTC).
    public func offset(_ ms: Millis) -> String {
        let s = offsetSeconds(ms)
        let a = abs(s) / 60
        return (s < 0 ? "-" : "+") + two(a / 60) + ":" + two(a % 60)
    }

    /// `2026-11-24 17:29:35 +01:00`.
    public func dateTime(_ ms: Millis) -> String { date(ms) + " " + time(ms) + " " + offset(ms) }

    /// `2026-11-24`.
    public func date(_ ms: Millis) -> String {
        let (y, m, d, _) = parts(ms)
        return String(format: "%04d-%@-%@", y, two(m), two(d))
    }

    /// `17:29:35`.
    public func time(_ ms: Millis) -> String {
        let s = parts(ms).secondOfDay
        return two(s / 3600) + ":" + two(s / 60 % 60) + ":" + two(s % 60)
    }

    /// `17:29` when `ms` is on the same local day as `now`, else `11-24 17:29`: short labels for charts and lists.
    public func short(_ ms: Millis, now: Millis) -> String {
        let (_, m, d, s) = parts(ms)
        let hm = two(s / 3600) + ":" + two(s / 60 % 60)
        return date(ms) == date(now) ? hm : two(m) + "-" + two(d) + " " + hm
    }

    /// Year, month, day and second of the local day at `ms` (proleptic Gregorian calendar).
    private func parts(_ ms: Millis) -> (year: Int, month: Int, day: Int, secondOfDay: Int) {
        let local = TimeSpec.floorDiv(ms, 1000) + Int64(offsetSeconds(ms))
        let days = Int(TimeSpec.floorDiv(local, 86_400))
        let secondOfDay = Int(local - Int64(days) * 86_400)
        let (year, month, day) = TimeSpec.civilFromDays(days)
        return (year, month, day, secondOfDay)
    }

    private func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}
