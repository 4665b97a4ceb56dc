import Foundation
import VLoggerModel
import VLoggerStore
import FieldState

/// The status page: the plant's state (alarms, missing assets, readers down) apart from the software's, the
/// alarms first, then readers, the tags in each field with their values, outputs, a chart of a chosen value over a
/// chosen range with the rules' limits, the latest audits and the recent events. Local time throughout.
struct StatusView {
    struct Alarm {
        let severity, rule, asset, link, place, since, age, detail, latest: String
        /// Who acknowledged it, when, and their comment (an OPC UA client's Acknowledge); nil: not yet.
        var acked: String? = nil
    }
    struct ReaderRow {
        let id, location, driver, state, tags, lastPoll: String
        let up: Bool
    }
    struct TagRow {
        let asset, link, uid, values, time, age: String
        /// When the values were read (ms), for the age the page's script keeps counting.
        let ms: Millis
        let hasTime: Bool
        let alarm: Bool
    }
    struct FieldGroup {
        let reader: String
        let location: String?
        let count: Int
        let hasTags: Bool
        let tags: [TagRow]
    }
    struct OutputRow {
        let name, state, backlog, lastSuccess: String
        let ok: Bool
    }
    struct ChartView {
        let title: String
        let choices: [Choice]
        let ranges: [Choice]
        let svg: String
    }
    struct AuditRow {
        let location, link, started: String
        let id, present, missing, wrong, unexpected: Int
        let bad: Bool
    }
    struct EventRow {
        let time, what, asset, place, detail: String
        let link: String?
        let alarm: Bool
    }

    let live = true
    let gateway: String
    let head: HeaderView
    let alarmCount: Int
    let hasAlarms: Bool
    let alarms: [Alarm]
    let missing: [String]
    let readers: [ReaderRow]
    let fields: [FieldGroup]
    let hasOutputs: Bool
    let outputs: [OutputRow]
    let chart: ChartView?
    let hasAudits: Bool
    let audits: [AuditRow]
    let events: [EventRow]
}

extension Pages {
    /// An alarm's acknowledgement as its row says it: `acknowledged 12:01:02 by opcua:urn:plc (op): comment`.
    static func acknowledgement(_ a: FieldState.Acknowledgement?, _ c: PageContext) -> String? {
        guard let a else { return nil }
        return "acknowledged \(c.time.dateTime(a.time)) by \(a.by)" + (a.comment.isEmpty ? "" : ": \(a.comment)")
    }

    /// The status page for `field` and `range` (from the query; defaults: the configured chart field, the last hour).
    static func status(
        metrics: ServiceMetrics, store: Store, context c: PageContext, field: String?, range: String?,
        now: Millis = Millis.now()
    ) -> StatusView {
        let names = AssetNames(store: store)
        let t = c.time
        let active = metrics.activeViolations
        let alarmed = Set(active.map(\.uid))
        // One value per tag on the page: the alarm rows and the field tables from the same snapshot of the values
        // the readers took (the store may lag: a locked store commits later).
        let taken = metrics.latestValues
        let alarms = active.map { v in
            let current = taken[v.uid]?.fields ?? v.latest
            let latest = c.readable(current).filter { f in c.limits[f.name] != nil || v.detail.contains(f.name) }
            return StatusView.Alarm(
                severity: v.severity.rawValue, rule: v.rule, asset: names.name(assetID: v.asset, uid: v.uid),
                link: "/tags/\(v.uid)", place: place(v.reader, v.location), since: t.dateTime(v.since),
                age: "for " + PageContext.age(now - v.since), detail: v.detail,
                latest: (latest.isEmpty ? c.readable(current) : latest).map {
                    "\($0.name) \(c.text($0.name, $0.value))"
                }
                .joined(separator: " · "), acked: acknowledgement(v.acknowledged, c))
        }
        let readerStatus = metrics.readerStatus
        let readers = readerStatus.map { r in
            StatusView.ReaderRow(
                id: r.id, location: r.location ?? "", driver: r.name, state: r.up ? "answering" : "failing",
                tags: String(r.tags.count), lastPoll: r.lastGoodPollMs.map { t.short($0, now: now) } ?? "not yet",
                up: r.up)
        }
        let inField = readerStatus.flatMap(\.tags)
        // The store for a tag the readers have no values of in memory (a tag read before a restart).
        let stored = (try? store.latestValues(inField.filter { taken[$0] == nil }, since: now - 3_600_000)) ?? [:]
        let fields = readerStatus.map { r in
            let rows = r.tags.map { uid in
                let v: (time: Millis, fields: [(name: String, value: FieldValue)])? =
                    taken[uid].map { ($0.time, $0.fields) } ?? stored[uid].map { ($0.time, $0.fields) }
                return StatusView.TagRow(
                    asset: names.name(uid), link: "/tags/\(uid)", uid: uid.description,
                    values: v.map { c.summary($0.fields) } ?? "", time: v.map { t.time($0.time) } ?? "",
                    age: v.map { PageContext.age(now - $0.time) } ?? "", ms: v?.time ?? 0, hasTime: v != nil,
                    alarm: alarmed.contains(uid))
            }
            return StatusView.FieldGroup(
                reader: r.id, location: r.location, count: rows.count, hasTags: !rows.isEmpty, tags: rows)
        }
        let outputs = metrics.outputStatus.map { o in
            let rows = o.backlog.values.reduce(0) { $0 + $1.rows }
            let starting = o.lastSuccessMs == nil && o.lastError == nil
            return StatusView.OutputRow(
                name: o.title, state: starting ? "starting" : o.up ? "up" : "failing: \(o.lastError ?? "?")",
                backlog: "\(rows) row\(rows == 1 ? "" : "s")",
                lastSuccess: o.lastSuccessMs.map(t.dateTime) ?? "none yet",
                ok: o.up || starting)
        }
        let latestAudits = ((try? store.audits(limit: 200)) ?? []).reduce(into: [String: AuditRecord]()) { m, a in
            if m[a.location] == nil { m[a.location] = a }
        }
        let audits = latestAudits.keys.sorted().compactMap { l in
            latestAudits[l].map { a in
                StatusView.AuditRow(
                    location: l, link: "/audits/\(a.id)", started: t.short(a.started, now: now), id: Int(a.id),
                    present: a.count(.present), missing: a.count(.missing), wrong: a.count(.wrongLocation),
                    unexpected: a.count(.unexpected), bad: a.count(.missing) + a.count(.wrongLocation) > 0)
            }
        }
        let missing = audits.filter { $0.missing > 0 }.map {
            "\($0.missing) asset\($0.missing == 1 ? "" : "s") missing at \($0.location) (audit #\($0.id), \($0.started))"
        }
        let events = ((try? store.recentEvents(limit: 25)) ?? []).map { e in
            StatusView.EventRow(
                time: t.short(e.time, now: now) + ":" + String(t.time(e.time).suffix(2)),
                what: e.name.isEmpty ? e.kind : "\(e.kind) \(e.name)", asset: e.uid.map(names.name) ?? "",
                place: place(e.reader, e.location), detail: e.detail, link: e.uid.map { "/tags/\($0)" },
                alarm: e.kind == Event.Kind.violation.rawValue || e.kind == Event.Kind.readerDown.rawValue)
        }
        // The chart: the field asked for (a numeric one of the configuration), over the range asked for.
        var chart: StatusView.ChartView?
        let chosen = field.flatMap { c.numericFields.contains($0) ? $0 : nil } ?? c.chartField ?? c.numericFields.first
        if let f = chosen {
            let r = range.flatMap(ChartRange.init(rawValue:)) ?? .hour
            // The tags seen in the range (at most 12: a legend a person can read), each through its own index range.
            let seen = (try? store.tagsSeen(since: now - r.ms, limit: 12)) ?? []
            let series = (try? store.series(field: f, since: now - r.ms, uids: seen)) ?? [:]
            let lines = series.keys.sorted { $0.description < $1.description }.map { uid in
                (label: names.name(uid), points: series[uid] ?? [])
            }
            chart = StatusView.ChartView(
                title: "\(f)\(c.units[f].map { " (\($0))" } ?? "") — \(r.label)",
                choices: c.numericFields.map {
                    Choice(value: $0, label: $0 + (c.units[$0].map { " (\($0))" } ?? ""), selected: $0 == f)
                }, ranges: ChartRange.choices(r),
                svg: Charts.lines(
                    lines, from: now - r.ms, to: now, unit: c.units[f], limits: c.limits[f] ?? [], time: t, field: f))
        }
        return StatusView(
            gateway: c.gateway,
            head: header(
                metrics: metrics, context: c, alarms: alarms.count, missing: audits.reduce(0) { $0 + $1.missing },
                now: now),
            alarmCount: alarms.count, hasAlarms: !alarms.isEmpty, alarms: alarms, missing: missing, readers: readers,
            fields: fields, hasOutputs: !outputs.isEmpty, outputs: outputs, chart: chart, hasAudits: !audits.isEmpty,
            audits: audits, events: events)
    }

    /// The header: the plant (alarms, missing assets of the latest audits, readers down) apart from the software
    /// (the store, the readers answering, the outputs).
    static func header(metrics: ServiceMetrics, context c: PageContext, alarms: Int, missing: Int, now: Millis)
        -> HeaderView
    {
        let readers = metrics.readerStatus
        let down = readers.filter { !$0.up }.count
        // A reader that answers but has not completed a poll for three of its intervals (at least 10 s): what the
        // page shows of it is older than it should be.
        let late = readers.filter { r in
            r.up && now - (r.lastGoodPollMs ?? metrics.startedMs) > max(3 * r.intervalMs, 10_000)
        }
        var plant: [String] = []
        if alarms > 0 { plant.append("\(alarms) alarm\(alarms == 1 ? "" : "s")") }
        if missing > 0 { plant.append("\(missing) asset\(missing == 1 ? "" : "s") missing") }
        if down > 0 { plant.append("\(down) reader\(down == 1 ? "" : "s") down") }
        let store = metrics.storeState
        let outputs = metrics.outputStatus
        let failing = outputs.filter { !$0.up && !($0.lastSuccessMs == nil && $0.lastError == nil) }
        var software = [
            store.problem == nil ? "store committing" : "store failing (\(store.queued) waiting)",
            "\(readers.count - down) of \(readers.count) reader\(readers.count == 1 ? "" : "s") answering",
        ]
        for r in late {
            software.append(
                "\(r.id): " + (r.lastGoodPollMs.map { "last poll \(PageContext.age(now - $0)) ago" } ?? "no poll yet"))
        }
        if !outputs.isEmpty {
            software.append(
                failing.isEmpty
                    ? "outputs up"
                    : "output\(failing.count == 1 ? "" : "s") failing: "
                        + failing.map(\.name).joined(separator: ", "))
        }
        let softwareOK = store.problem == nil && down == 0 && failing.isEmpty
        var plantText = plant.isEmpty ? "normal" : plant.joined(separator: " · ")
        if plant.isEmpty && !late.isEmpty {
            plantText += " (as of the last poll of \(late.map(\.id).joined(separator: ", ")))"
        }
        return HeaderView(
            gateway: c.gateway, site: c.site, now: c.time.dateTime(now), zone: c.time.name, plantOK: plant.isEmpty,
            plant: plantText, softwareOK: softwareOK, software: software.joined(separator: " · "),
            plantState: !plant.isEmpty ? "bad" : late.isEmpty ? "ok" : "warn",
            softwareState: softwareOK && late.isEmpty ? "ok" : "warn", nowMs: now,
            offsetMinutes: c.time.offsetSeconds(now) / 60)
    }

    static func place(_ reader: String?, _ location: String?) -> String {
        [reader, location].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " — ")
    }
}

/// The operator's pages, rendered from the views with the templates.
public enum Pages {}
