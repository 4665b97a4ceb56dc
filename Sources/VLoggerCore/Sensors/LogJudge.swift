import Foundation
import ISO15693
import VLoggerModel

/// Judges every record of a sensor tag's log against the rules that watch its values (`range`, `equals` on a
/// field): a run of records that break a rule — an excursion, a cold chain above its limit on the truck — becomes
/// one violation event at the time of its first record, saying when it began and ended on the tag and for how long,
/// and a `violation_ended` at the record that came back within. An excursion still open when a visit ends is
/// reported then (its start, and the last record read); its end follows when a later visit reads it. The open
/// excursions are committed with the records (`sensor_sessions.excursions`), so none is reported twice or lost
/// across visits and restarts.
struct LogJudge {
    struct Open: Codable, Equatable {
        /// The first and the last breaking record: their times on the tag and their numbers.
        var start: Int64
        var last: Int64
        var firstRecord: Int
        var records: Int
        /// What the rule said of the first record.
        var detail: String
        /// Whether the violation event was written (at the end of a visit, the excursion still open).
        var reported: Bool
    }

    let uid: UID
    let rules: [Rule]
    let register: AssetRegister?
    let base: Event
    private(set) var open: [String: Open]

    /// `state`: the session's open excursions as committed (JSON; "{}" for none).
    init(uid: UID, rules: [Rule], register: AssetRegister?, base: Event, state: String) {
        self.uid = uid
        self.rules = rules.filter { $0.check.watchedField != nil }
        self.register = register
        self.base = base
        open = (try? JSONDecoder().decode([String: Open].self, from: Data(state.utf8))) ?? [:]
    }

    var isActive: Bool { !rules.isEmpty }

    /// The open excursions as the store keeps them.
    var state: String {
        let e = JSONEncoder()
        e.outputFormatting = .sortedKeys
        return (try? e.encode(open)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    func event(_ kind: Event.Kind, time: Millis, rule: Rule, severity: Event.Severity, detail: String) -> Event {
        var e = base
        e.time = time
        e.kind = kind
        e.name = rule.name
        e.severity = severity
        e.detail = detail
        return e
    }

    static func span(_ o: Open, to end: Int64) -> String {
        "from \(TimeSpec.format(o.start)) to \(TimeSpec.format(end)) on the tag (\(DurationText.format(end - o.start)), \(o.records) record\(o.records == 1 ? "" : "s") from record \(o.firstRecord))"
    }

    /// The events the records make, oldest first.
    mutating func judge(_ records: [SensorRecord], readAt: Millis) -> [Event] {
        var out: [Event] = []
        for r in records {
            let time = r.time ?? readAt
            var facts = TagFacts(uid: uid, model: nil, blockSize: 0)
            for v in r.values { facts.fields[v.name] = .number(v.value) }
            for rule in rules {
                guard let field = rule.check.watchedField?.name, facts.fields[field] != nil else { continue }
                switch rule.check.evaluate(facts, register: register) {
                case .violation(let why):
                    if var o = open[rule.name] {
                        o.last = time
                        o.records += 1
                        open[rule.name] = o
                    } else {
                        open[rule.name] = Open(
                            start: time, last: time, firstRecord: r.index, records: 1, detail: why, reported: false)
                    }
                case .pass:
                    guard let o = open.removeValue(forKey: rule.name) else { continue }
                    let span = Self.span(o, to: time)
                    if !o.reported {
                        out.append(
                            event(
                                .violation, time: o.start, rule: rule, severity: rule.severity,
                                detail: "logged on the tag: \(o.detail) \(span)"))
                    }
                    out.append(
                        event(
                            .violationEnded, time: time, rule: rule, severity: .info,
                            detail: "logged on the tag: back within at record \(r.index); the excursion ran \(span)"))
                default:
                    continue
                }
            }
        }
        return out
    }

    /// At the end of a visit: the open excursions not yet reported become violation events (their end not known).
    mutating func endOfVisit() -> [Event] {
        var out: [Event] = []
        for rule in rules {
            guard var o = open[rule.name], !o.reported else { continue }
            o.reported = true
            open[rule.name] = o
            out.append(
                event(
                    .violation, time: o.start, rule: rule, severity: rule.severity,
                    detail:
                        "logged on the tag: \(o.detail) from \(TimeSpec.format(o.start)) on, still at the last record read (\(TimeSpec.format(o.last)), \(o.records) record\(o.records == 1 ? "" : "s"))"
                ))
        }
        return out
    }
}
