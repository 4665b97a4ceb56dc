import Foundation
import ISO15693
import VLoggerModel
import VLoggerStore

/// One tag's page: its asset, alarms, values now, a chart per numeric field with the rules' limits over a chosen
/// range, where it was read, its events and the audits that name it.
struct TagView {
    struct Value {
        let name, value: String
    }
    struct Chart {
        let title, svg: String
    }
    struct Place {
        let reader, location, first, last, count: String
    }
    struct Audit {
        let link, started, location, status: String
        let id: Int
        let bad: Bool
    }

    let live = true
    let gateway: String
    let head: HeaderView
    let asset, uid, chip, registered, lastSeen, firstSeen: String
    let alarm: Bool
    let hasAlarms: Bool
    let alarms: [StatusView.Alarm]
    let hasValues: Bool
    let values: [Value]
    let valuesTime: String
    let ranges: [Choice]
    let charts: [Chart]
    let hasPlaces: Bool
    let places: [Place]
    let hasEvents: Bool
    let events: [StatusView.EventRow]
    let hasAudits: Bool
    let audits: [Audit]
    let api: String
}

extension Pages {
    static func tag(
        _ uid: UID, metrics: ServiceMetrics, store: Store, context c: PageContext, range: String?,
        now: Millis = Millis.now()
    ) -> TagView {
        let t = c.time
        let names = AssetNames(store: store)
        let r = range.flatMap(ChartRange.init(rawValue:)) ?? .hour
        let since = now - r.ms
        let stored = try? store.storedTag(uid)
        let registered = names.rows[uid.description]
        let all = metrics.activeViolations
        let mine = all.filter { $0.uid == uid }
        let alarms = mine.map { v in
            StatusView.Alarm(
                severity: v.severity.rawValue, rule: v.rule, asset: names.name(uid), link: "/tags/\(uid)",
                place: place(v.reader, v.location), since: t.dateTime(v.since),
                age: "for " + PageContext.age(now - v.since), detail: v.detail, latest: c.summary(v.latest),
                acked: acknowledgement(v.acknowledged, c))
        }
        let latest = (try? store.latestValues([uid], since: since))?[uid]
        let values = c.readable(latest?.fields ?? []).map {
            TagView.Value(name: $0.name, value: c.text($0.name, $0.value))
        }
        var charts: [TagView.Chart] = []
        for f in c.numericFields {
            guard let points = (try? store.series(field: f, since: since, uids: [uid]))?[uid], !points.isEmpty else {
                continue
            }
            charts.append(
                TagView.Chart(
                    title: "\(f)\(c.units[f].map { " (\($0))" } ?? "") — \(r.label)",
                    svg: Charts.lines(
                        [(label: names.name(uid), points: points)], from: since, to: now, unit: c.units[f],
                        limits: c.limits[f] ?? [], time: t, field: f)))
        }
        let places = ((try? store.places(uid, since: since)) ?? []).map {
            TagView.Place(
                reader: $0.reader ?? "", location: $0.location ?? "", first: t.dateTime($0.first),
                last: t.dateTime($0.last), count: String($0.readings))
        }
        let events = ((try? store.recentEvents(limit: 50, uid: uid)) ?? []).map { e in
            StatusView.EventRow(
                time: t.dateTime(e.time), what: e.name.isEmpty ? e.kind : "\(e.kind) \(e.name)", asset: "",
                place: place(e.reader, e.location), detail: e.detail, link: nil,
                alarm: e.kind == Event.Kind.violation.rawValue)
        }
        let audits = ((try? store.auditMentions(uid)) ?? []).map {
            TagView.Audit(
                link: "/audits/\($0.audit)", started: t.dateTime($0.started), location: $0.location, status: $0.status,
                id: Int($0.audit), bad: $0.status != AuditResult.Status.present.rawValue)
        }
        // The model names its maker (Fujitsu MB89R118); without one, the manufacturer of the UID.
        let chip = stored?.model ?? stored?.manufacturer ?? uid.manufacturer.description
        return TagView(
            gateway: c.gateway,
            head: header(metrics: metrics, context: c, alarms: all.count, missing: 0, now: now),
            asset: names.name(uid), uid: uid.description, chip: chip,
            registered: registered.map { $0.location ?? "no location" } ?? "not in the register",
            lastSeen: stored.map { t.dateTime($0.lastSeen) + ($0.lastReader.map { " by " + $0 } ?? "") } ?? "never",
            firstSeen: stored.map { t.dateTime($0.firstSeen) } ?? "never", alarm: !mine.isEmpty,
            hasAlarms: !alarms.isEmpty, alarms: alarms, hasValues: !values.isEmpty, values: values,
            valuesTime: latest.map { t.dateTime($0.time) + " by " + place($0.reader, $0.location) } ?? "",
            ranges: ChartRange.choices(r), charts: charts, hasPlaces: !places.isEmpty, places: places,
            hasEvents: !events.isEmpty, events: events, hasAudits: !audits.isEmpty, audits: audits,
            api: "/api/v1/readings?uid=\(uid)")
    }
}
