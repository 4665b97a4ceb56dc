import Foundation
import VLoggerStore
import VLoggerModel
import ISO15693
import VLoggerCore

/// The status page: tags in the field now, the latest reading of each tag, recent events, and a chart of one
/// decoded value over the last hour. Plain HTML with an inline SVG (no scripts), read from the store through
/// the store's reader connections (never waiting for the writer); nothing on it changes state.
public enum StatusPage {
    static func esc(_ s: String) -> String { HTML.escape(s) }

    /// An SVG line chart of each tag's series (time on x, value on y).
    static func chart(_ series: [String: [(Millis, Double)]], field: String, unit: String?) -> String {
        let points = series.values.flatMap { $0 }
        guard let t0 = points.map(\.0).min(), let t1 = points.map(\.0).max(),
            let v0 = points.map(\.1).min(), let v1 = points.map(\.1).max()
        else {
            return "<p>No <code>\(esc(field))</code> values in the last hour.</p>"
        }
        let w = 720.0, h = 220.0, left = 60.0, bottom = 30.0, top = 10.0, right = 10.0
        let span = max(1, Double(t1 - t0)), vspan = v1 - v0 == 0 ? 1 : v1 - v0
        func x(_ t: Millis) -> Double { left + (Double(t - t0) / span) * (w - left - right) }
        func y(_ v: Double) -> Double { top + (1 - (v - v0) / vspan) * (h - top - bottom) }
        let colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]
        var svg =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" role=\"img\" aria-label=\"\(esc(field)) over the last hour\">"
        svg +=
            "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(w - left - right)\" height=\"\(h - top - bottom)\" fill=\"#fafafa\" stroke=\"#ccc\"/>"
        let u = unit.map { " " + esc($0) } ?? ""
        svg += "<text x=\"4\" y=\"\(top + 10)\" font-size=\"11\">\(String(format: "%.2f", v1))\(u)</text>"
        svg += "<text x=\"4\" y=\"\(h - bottom)\" font-size=\"11\">\(String(format: "%.2f", v0))\(u)</text>"
        svg += "<text x=\"\(left)\" y=\"\(h - 8)\" font-size=\"11\">\(esc(TimeSpec.format(t0)))</text>"
        svg +=
            "<text x=\"\(w - right)\" y=\"\(h - 8)\" font-size=\"11\" text-anchor=\"end\">\(esc(TimeSpec.format(t1)))</text>"
        for (i, key) in series.keys.sorted().enumerated() {
            let pts = (series[key] ?? []).sorted { $0.0 < $1.0 }.map { String(format: "%.1f,%.1f", x($0.0), y($0.1)) }
                .joined(separator: " ")
            let c = colours[i % colours.count]
            svg += "<polyline fill=\"none\" stroke=\"\(c)\" stroke-width=\"2\" points=\"\(pts)\"/>"
            svg +=
                "<text x=\"\(left + 8)\" y=\"\(top + 16 + Double(i) * 14)\" font-size=\"11\" fill=\"\(c)\">\(esc(key))</text>"
        }
        return svg + "</svg>"
    }

    static func table(_ head: [String], _ rows: [StatusData.Row], class name: String) -> String {
        var s = "<table class=\"\(name)\"><tr>" + head.map { "<th>\(esc($0))</th>" }.joined() + "</tr>"
        for r in rows { s += "<tr>" + r.cells.map { "<td>\(esc($0))</td>" }.joined() + "</tr>" }
        return s + "</table>"
    }

    /// An output's state: up or failing (and why), the backlog and the age of its oldest row, the last success.
    static func outputLine(_ sync: ServiceMetrics.OutputStatus, now: Millis) -> String {
        let rows = sync.backlog.values.reduce(0) { $0 + $1.rows }
        let oldest = sync.backlog.values.compactMap(\.oldest).min()
        let state =
            sync.lastSuccessMs == nil && sync.lastError == nil
            ? "<span>starting</span>"
            : sync.up ? "<span class=\"ok\">up</span>" : "<span class=\"bad\">failing</span>"
        var s = "<p class=\"sync\">\(state) — \(rows) rows not yet acknowledged"
        if let oldest { s += ", the oldest \(esc(DurationText.format(max(0, now - oldest)))) old" }
        s += "; last success: \(sync.lastSuccessMs.map { esc(TimeSpec.format($0)) } ?? "none yet")"
        if let e = sync.lastError { s += "<br><span class=\"bad\">\(esc(e))</span>" }
        return s + "</p>"
    }

    public static func render(
        metrics: ServiceMetrics, store: Store, gateway: String, chartField: String?, unit: String?,
        now: Millis = Millis.now()
    ) -> String {
        let (healthy, _) = metrics.health(now: now)
        var body = ""
        let readers = metrics.readerStatus
        body +=
            "<h2>Readers</h2>"
            + table(
                ["reader", "location", "driver", "state", "cycles", "tags in field"],
                readers.map { r in
                    StatusData.Row(cells: [
                        r.id, r.location ?? "", r.name, r.up ? "answering" : "failing", String(r.counters.cycles),
                        String(r.tags.count),
                    ])
                }, class: "readers")
        for r in readers {
            body +=
                "<h2>Tags in the field of \(esc(r.id))\(r.location.map { " — " + esc($0) } ?? "") (\(r.tags.count))</h2>"
            body +=
                r.tags.isEmpty
                ? "<p>None.</p>"
                : "<ul>"
                    + r.tags.map {
                        "<li><code>\(esc($0.description))</code> — \(esc($0.manufacturer.description))</li>"
                    }.joined() + "</ul>"
        }
        for output in metrics.outputStatus {
            body += "<h2>\(esc(output.title))</h2>" + outputLine(output, now: now)
        }
        do {
            let d = try store.statusData(since: now - 3_600_000, chartField: chartField)
            body +=
                "<h2>Latest readings (last hour)</h2>"
                + table(["UID", "time (UTC)", "block", "data", "decoded", "reader"], d.latest, class: "latest")
            if let f = chartField {
                body += "<h2>\(esc(f)) over the last hour</h2>" + chart(d.series, field: f, unit: unit)
            }
            let latest = try store.audits(limit: 200).reduce(into: [String: AuditRecord]()) { m, a in
                if m[a.location] == nil { m[a.location] = a }
            }
            if !latest.isEmpty {
                body +=
                    "<h2>Latest audit of each location</h2><ul>"
                    + latest.keys.sorted().compactMap { l in
                        latest[l].map { a in
                            "<li><a href=\"/audits/\(a.id)\">\(esc(l)): audit \(a.id), \(esc(TimeSpec.format(a.started)))</a> — \(a.count(.present)) present, \(a.count(.missing)) missing, \(a.count(.wrongLocation)) wrong location, \(a.count(.unexpected)) unexpected</li>"
                        }
                    }.joined() + "</ul>"
            }
            body +=
                "<h2>Recent events</h2>"
                + table(
                    ["time (UTC)", "reader", "UID", "kind", "name", "severity", "detail"], d.events, class: "events")
        } catch {
            body += "<p class=\"bad\">The store cannot be read: \(esc(error.description))</p>"
        }
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
            <title>vlogger \(esc(gateway))</title>
            <style>body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin-bottom:1em}
            td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;font-size:12px}th{background:#f0f0f0}
            code,.latest td:nth-child(1),.latest td:nth-child(4),.events td:nth-child(3){font-family:monospace}
            .latest td:nth-child(4),.latest td:nth-child(5){max-width:300px;word-break:break-all}
            .ok{color:#2a7d2a}.bad{color:#b00020}</style></head><body>
            <h1>vlogger — \(esc(gateway)) <span class="\(healthy ? "ok" : "bad")">\(healthy ? "healthy" : "unhealthy")</span></h1>
            <p>Read-only status, refreshed every 5 s. <a href="/metrics">/metrics</a> · <a href="/healthz">/healthz</a></p>
            \(body)</body></html>
            """
    }
}
