import Foundation
import ISO15693
import VLoggerCore
import VLoggerModel
import VLoggerStore

/// What the pages are made from: the configuration's names, units, rules and time zone, the store, and (for the
/// service's pages) the live state the metrics keep. The views below are plain values the templates render.
public struct PageContext: Sendable {
    public var gateway: String
    public var site: String?
    public var time: LocalTime
    /// Units by field name, and the numeric fields in the configuration's order (what can be charted).
    public var units: [String: String]
    public var numericFields: [String]
    /// The rules' limits per field (range rules), drawn on charts.
    public var limits: [String: [(rule: String, min: Double?, max: Double?)]]
    public var chartField: String?
    /// Audit schedules by trigger (their zone is shown on reports).
    public var schedules: [String: String]

    public init(config: AgentConfig, rules: RuleSet) {
        gateway = config.gatewayID
        site = config.site
        time = config.localTime
        var units: [String: String] = [:]
        for f in config.fieldInfos { if let u = f.unit { units[f.name] = u } }
        self.units = units
        var numeric: [String] = []
        for p in config.plans {
            for f in p.fields where f.type.isNumeric && !numeric.contains(f.name) { numeric.append(f.name) }
        }
        numericFields = numeric
        var limits: [String: [(rule: String, min: Double?, max: Double?)]] = [:]
        for r in rules.rules {
            if let w = r.check.watchedField, w.min != nil || w.max != nil {
                limits[w.name, default: []].append((r.name, w.min, w.max))
            }
        }
        self.limits = limits
        chartField = config.chartField
        schedules = Dictionary(
            config.audit.schedules.map { ($0.trigger, "schedule \($0.name): \($0.summary)") },
            uniquingKeysWith: { a, _ in a })
    }

    /// A value with its unit, as a person reads it: `21.5 °C`, `AS-00042`.
    public func text(_ name: String, _ value: FieldValue) -> String {
        let v: String
        switch value {
        case let .integer(n): v = String(n)
        case let .number(d): v = Self.number(d)
        case let .text(t): v = t
        case let .json(j): v = j
        }
        if let u = units[name], !u.isEmpty { return v + " " + u }
        return v
    }

    /// The fields a person reads: NDEF's text and URI, not its records' JSON.
    public func readable(_ fields: [(name: String, value: FieldValue)]) -> [(name: String, value: FieldValue)] {
        fields.filter { $0.name != NDEFFields.records }
    }

    /// `name 21.5 °C · other 3` for a list.
    public func summary(_ fields: [(name: String, value: FieldValue)]) -> String {
        readable(fields).map { "\($0.name) \(text($0.name, $0.value))" }.joined(separator: " · ")
    }

    /// A number without trailing zeros, at most 3 decimals: 21.5, 60.07, 1200.
    static func number(_ d: Double) -> String {
        guard d.isFinite else { return "–" }
        var s = String(format: "%.3f", d)
        while s.hasSuffix("0") { s.removeLast() }
        if s.hasSuffix(".") { s.removeLast() }
        return s == "-0" ? "0" : s
    }

    /// `12 min`, `3 h 5 min`, `2 d 4 h`: how long something has lasted.
    static func age(_ ms: Millis) -> String {
        let m = max(0, ms) / 60_000
        if m < 1 { return "\(max(0, ms) / 1000) s" }
        if m < 60 { return "\(m) min" }
        if m < 1440 { return "\(m / 60) h" + (m % 60 > 0 ? " \(m % 60) min" : "") }
        return "\(m / 1440) d" + (m % 1440 / 60 > 0 ? " \(m % 1440 / 60) h" : "")
    }
}

/// The asset register, as the pages name tags: `AS-00042 — Press line 7 controller`, else the UID.
struct AssetNames {
    let rows: [String: AssetRow]
    init(_ rows: [AssetRow]) {
        self.rows = Dictionary(rows.map { ($0.uid.description, $0) }, uniquingKeysWith: { a, _ in a })
    }
    init(store: Store) { self.init((try? store.assets()) ?? []) }

    func name(_ uid: UID) -> String { rows[uid.description]?.label() ?? uid.description }
    func name(assetID: String?, uid: UID) -> String { rows[uid.description]?.label() ?? assetID ?? uid.description }
}

/// A choice in a page's form.
struct Choice {
    let value: String
    let label: String
    let selected: Bool
}

/// The chart ranges a page offers.
enum ChartRange: String, CaseIterable {
    case hour = "1h", day = "24h", week = "7d"
    var ms: Millis {
        switch self {
        case .hour: return 3_600_000
        case .day: return 86_400_000
        case .week: return 604_800_000
        }
    }
    var label: String {
        switch self {
        case .hour: return "last hour"
        case .day: return "last 24 hours"
        case .week: return "last 7 days"
        }
    }
    static func choices(_ selected: ChartRange) -> [Choice] {
        allCases.map { Choice(value: $0.rawValue, label: $0.label, selected: $0 == selected) }
    }
}

/// The header every page of the service shows: the plant's state apart from the software's.
struct HeaderView {
    let gateway: String
    let site: String?
    let now: String
    let zone: String
    let plantOK: Bool
    let plant: String
    let softwareOK: Bool
    let software: String
    /// The badges' classes: `ok`, `bad` (plant) or `warn`; `warn` too when the data behind a badge is older than
    /// its readers' intervals allow.
    let plantState: String
    let softwareState: String
    /// The page's time (ms since 1970) and the zone's offset then (minutes): the script's "no contact since" and the
    /// values' ages that keep counting.
    let nowMs: Millis
    let offsetMinutes: Int
}
