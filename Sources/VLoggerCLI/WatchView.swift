import FieldState
import Foundation
import ISO15693
import VLoggerCore
import VLoggerModel

/// What `vlogger watch` shows, kept from cycle to cycle and drawn as lines of text: the tags in the field,
/// how many of the last `window` cycles saw each, their latest decoded values with units and the alarms going on
/// (both from the field's live state, `FieldState`, as the pages and the API have them), the errors as they come,
/// and the air time per cycle. State and text: the terminal handling, and feeding the field state, are the
/// command's.
public struct WatchView {
    public let window: Int
    public private(set) var cycles = 0
    private var seen: [UID: [Bool]] = [:]
    private var order: [UID] = []
    /// The bytes of a tag's last reading without decoded values (the field state keeps only decoded ones).
    private var raw: [UID: String] = [:]
    private var models: [UID: String] = [:]
    private var errors: [(time: Millis, text: String)] = []
    private var lastAir = AirTime.zero, lastBound = AirTime.zero, lastExchanges = 0
    private var airHistory: [AirTime] = []
    /// The field's live state (values with units, alarms), the register's names of tags (`CAGE-12 Cold cage
    /// 12`), and the zone times are shown in.
    public let field: FieldState
    private let assets: [UID: String]
    private let time: LocalTime

    public init(window: Int, field: FieldState, assets: [UID: String] = [:], time: LocalTime = .utc) {
        self.window = max(1, window)
        self.field = field
        self.assets = assets
        self.time = time
    }

    /// The asset names of a register file (`asset_id`, then its `name` or `description`), by UID; none when there
    /// is no file or it has no asset ids.
    public static func assetNames(registerFile: String?) -> [UID: String] {
        guard let file = registerFile, let text = try? String(contentsOfFile: file, encoding: .utf8),
            let rows = try? AssetRegister.assetRows(text, file: file)
        else { return [:] }
        return Dictionary(rows.map { ($0.uid, $0.label(separator: " ")) }, uniquingKeysWith: { a, _ in a })
    }

    /// One cycle's report, with the readings and events it produced and the model of each tag seen.
    public mutating func record(
        _ report: CycleReport, readings: [Reading], events: [Event], models newModels: [UID: String]
    ) {
        cycles += 1
        let now = Set(report.tags)
        for uid in report.tags where seen[uid] == nil {
            seen[uid] = []
            order.append(uid)
        }
        for uid in order {
            var h = seen[uid] ?? []
            h.append(now.contains(uid))
            if h.count > window { h.removeFirst(h.count - window) }
            seen[uid] = h
        }
        // A tag not seen in the whole window leaves the table.
        order.removeAll { uid in
            guard let h = seen[uid], h.count == window, !h.contains(true) else { return false }
            seen[uid] = nil
            raw[uid] = nil
            return true
        }
        for (uid, m) in newModels { models[uid] = m }
        for r in readings where r.decoded.isEmpty && raw[r.uid] == nil {
            raw[r.uid] = "\(r.first): " + Hex.format(r.data)
        }
        for e in events where e.kind == .error || e.kind == .violation {
            errors.append(
                (
                    e.time,
                    "\(e.uid.map { "\(assets[$0] ?? $0.description) " } ?? "")\(e.kind == .violation ? "violation " : "")\(e.name): \(e.detail)"
                ))
        }
        if errors.count > 50 { errors.removeFirst(errors.count - 50) }
        lastAir = report.airTime
        lastBound = report.lowerBound
        lastExchanges = report.exchanges
        airHistory.append(report.airTime)
        if airHistory.count > window { airHistory.removeFirst(airHistory.count - window) }
    }

    static func text(_ v: FieldValue) -> String {
        switch v {
        case let .integer(n): return String(n)
        case let .number(x): return String(format: "%g", x)
        case let .text(t): return t
        case let .json(j): return j
        }
    }

    /// How many of the cycles in the window saw `uid`, and how many cycles the window holds for it.
    public func rate(_ uid: UID) -> (seen: Int, of: Int) {
        let h = seen[uid] ?? []
        return (h.filter { $0 }.count, h.count)
    }

    public var tags: [UID] { order }

    /// A tag's latest values as the field state has them (`name=value unit`, the NDEF records left out), or the
    /// bytes of its last reading when no plan decodes it.
    func values(_ uid: UID, _ latest: [UID: FieldState.Values]) -> String {
        guard let v = latest[uid] else { return raw[uid] ?? "" }
        return v.values.filter { $0.name != "ndef" }.map {
            "\($0.name)=\(Self.text($0.value))" + ($0.unit.map { " " + $0 } ?? "")
        }.joined(separator: " ")
    }

    /// The screen: `title` first, each line cut to `width`, at most `height` lines.
    public func render(title: String, width: Int, height: Int, now: Millis) -> [String] {
        func cut(_ s: String) -> String { s.count <= width ? s : String(s.prefix(max(0, width - 1))) + "…" }
        func pad(_ s: String, _ n: Int) -> String {
            s.count >= n ? String(s.prefix(n)) : s + String(repeating: " ", count: n - s.count)
        }
        let sortedAir = airHistory.sorted()
        let median = sortedAir.isEmpty ? AirTime.zero : sortedAir[sortedAir.count / 2]
        var lines: [String] = [
            title,
            "cycle \(cycles) · \(order.count) tag\(order.count == 1 ? "" : "s") · air time \(String(format: "%.2f", lastAir.milliseconds)) ms"
                + " (its reads' bound \(String(format: "%.2f", lastBound.milliseconds)) ms, \(lastExchanges) exchanges; median of the window \(String(format: "%.2f", median.milliseconds)) ms)"
                + " · q: quit",
            "",
            pad("UID", 17) + " " + pad("ASSET", 22) + " " + pad("MODEL", 18) + " " + pad("SEEN", 7) + " "
                + pad("RATE", 6)
                + " LAST VALUES",
        ]
        let state = field.snapshot()
        let errorLines = min(errors.count, 8)
        let alarmLines = min(state.alarms.count, 5)
        let room = max(1, height - lines.count - 3 - errorLines - (alarmLines > 0 ? alarmLines + 2 : 0))
        for uid in order.prefix(room) {
            let r = rate(uid)
            let pct = r.of == 0 ? 0 : (100 * r.seen) / r.of
            lines.append(
                pad(uid.description, 17) + " " + pad(assets[uid] ?? "-", 22) + " "
                    + pad(models[uid] ?? uid.manufacturer.description, 18) + " "
                    + pad("\(r.seen)/\(r.of)", 7) + " " + pad("\(pct) %", 6) + " " + values(uid, state.values))
        }
        if order.count > room { lines.append("… and \(order.count - room) more (a taller terminal shows them)") }
        if order.isEmpty { lines.append("no tag in the field") }
        if alarmLines > 0 {
            // The violations going on now, critical first (the field state's order), as the status page has them.
            lines.append("")
            lines.append("alarms now (\(state.alarms.count)):")
            for a in state.alarms.prefix(alarmLines) {
                lines.append(
                    "  \(a.severity.rawValue) \(a.rule): \(a.asset ?? a.uid.description) since \(time.time(a.since)) — \(a.detail)"
                )
            }
        }
        lines.append("")
        lines.append(errors.isEmpty ? "no errors" : "errors and violations, latest first:")
        for e in errors.suffix(errorLines).reversed() {
            lines.append("  " + time.time(e.time) + "  " + e.text)
        }
        return lines.prefix(max(1, height)).map(cut)
    }
}
