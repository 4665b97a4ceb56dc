import Foundation
import VLoggerStore
import VLoggerModel

/// HTML text helpers shared by the status page and the audit report.
public enum HTML {
    public static func escape(_ s: String) -> String {
        var o = ""
        for ch in s {
            switch ch {
            case "&": o += "&amp;"
            case "<": o += "&lt;"
            case ">": o += "&gt;"
            case "\"": o += "&quot;"
            case "'": o += "&#39;"
            default: o.append(ch)
            }
        }
        return o
    }
}

/// One self-contained page for an audit that a person can read and print: the counts, the missing,
/// wrong-location and unexpected lists, the failed checks, and present vs missing over the last audits of
/// the location (inline SVG, no scripts, no external files).
public enum AuditReport {
    public static func html(_ a: AuditRecord, history: [AuditRecord]) -> String {
        let e = HTML.escape
        func rows(_ status: AuditResult.Status, _ head: [String], _ cells: (AuditResult) -> [String]) -> String {
            let list = a.results.filter { $0.status == status }
            if list.isEmpty { return "<p class=\"none\">None.</p>" }
            return "<table><tr>" + head.map { "<th>\(e($0))</th>" }.joined() + "</tr>"
                + list.map { r in "<tr>" + cells(r).map { "<td>\(e($0))</td>" }.joined() + "</tr>" }.joined()
                + "</table>"
        }
        let t = { (m: Millis?) in m.map(TimeSpec.format) ?? "—" }
        let checks = a.results.filter { !$0.failedChecks.isEmpty }
        var body = """
            <h1>Audit \(a.id): \(e(a.location))</h1>
            <p>\(e(TimeSpec.format(a.started))) to \(e(TimeSpec.format(a.finished))) · gateway \(e(a.gateway)) · readers \(e(a.readers.joined(separator: ", "))) · \(a.rounds) inventory rounds · \(e(a.trigger))</p>
            <table class="counts"><tr><th>present</th><th>missing</th><th>wrong location</th><th>unexpected</th><th>failed checks</th></tr>
            <tr><td>\(a.count(.present))</td><td class="\(a.count(.missing) > 0 ? "bad" : "")">\(a.count(.missing))</td><td class="\(a.count(.wrongLocation) > 0 ? "bad" : "")">\(a.count(.wrongLocation))</td><td>\(a.count(.unexpected))</td><td class="\(a.failedChecks > 0 ? "bad" : "")">\(a.failedChecks)</td></tr></table>
            <h2>Missing</h2>
            """
        body += rows(.missing, ["UID", "asset", "last seen"]) {
            [$0.uid.description, $0.assetID ?? "", t($0.lastSeen)]
        }
        body +=
            "<h2>Wrong location</h2>"
            + rows(.wrongLocation, ["UID", "asset", "registered at", "seen at", "by", "last seen"]) {
                [
                    $0.uid.description, $0.assetID ?? "", $0.registeredLocation ?? "", $0.seenLocation ?? "",
                    $0.seenBy ?? "", t($0.lastSeen),
                ]
            }
        body +=
            "<h2>Unexpected (not in the register)</h2>"
            + rows(.unexpected, ["UID", "manufacturer", "rounds", "by"]) {
                [
                    $0.uid.description, $0.uid.manufacturer.description, "\($0.seenRounds) of \(a.rounds)",
                    $0.seenBy ?? "",
                ]
            }
        body += "<h2>Failed checks</h2>"
        body +=
            checks.isEmpty
            ? "<p class=\"none\">None.</p>"
            : "<table><tr><th>UID</th><th>asset</th><th>check</th></tr>"
                + checks.flatMap { r in
                    r.failedChecks.map {
                        "<tr><td>\(e(r.uid.description))</td><td>\(e(r.assetID ?? ""))</td><td>\(e($0))</td></tr>"
                    }
                }.joined() + "</table>"
        body +=
            "<h2>Present</h2>"
            + rows(.present, ["UID", "asset", "rounds", "by", "first seen", "last seen"]) {
                [
                    $0.uid.description, $0.assetID ?? "", "\($0.seenRounds) of \(a.rounds)", $0.seenBy ?? "",
                    t($0.firstSeen), t($0.lastSeen),
                ]
            }
        body +=
            "<h2>Present and missing over the last audits of \(e(a.location))</h2>"
            + chart(history.sorted { $0.started < $1.started }, current: a.id)
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Audit \(a.id) — \(e(a.location))</title>
            <style>body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;max-width:60em}table{border-collapse:collapse;margin-bottom:1em}
            td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:12px}th{background:#f0f0f0}
            .counts td{font-size:20px;text-align:center}.bad{color:#b00020;font-weight:bold}.none{color:#666}
            @media print{body{margin:0}h2{page-break-after:avoid}}</style></head><body>
            \(body)</body></html>
            """
    }

    /// Bars of present (green) and missing (red) per audit, oldest on the left; the current one outlined.
    static func chart(_ audits: [AuditRecord], current: Int64) -> String {
        guard !audits.isEmpty else { return "<p class=\"none\">No audits.</p>" }
        let list = Array(audits.suffix(30))
        let top = max(1, list.map { $0.count(.present) + $0.count(.missing) }.max() ?? 1)
        let w = 40.0, h = 160.0, gap = 24.0, left = 30.0
        var svg =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(left + Double(list.count) * (w + gap)))\" height=\"\(Int(h + 40))\" role=\"img\" aria-label=\"present and missing per audit\">"
        svg +=
            "<text x=\"0\" y=\"12\" font-size=\"11\">\(top)</text><text x=\"0\" y=\"\(Int(h))\" font-size=\"11\">0</text>"
        for (i, a) in list.enumerated() {
            let x = left + Double(i) * (w + gap)
            let p = Double(a.count(.present)) / Double(top) * (h - 10),
                m = Double(a.count(.missing)) / Double(top) * (h - 10)
            svg +=
                "<rect x=\"\(x)\" y=\"\(h - p)\" width=\"\(w / 2)\" height=\"\(p)\" fill=\"#2a7d2a\"><title>present \(a.count(.present))</title></rect>"
            svg +=
                "<rect x=\"\(x + w / 2)\" y=\"\(h - m)\" width=\"\(w / 2)\" height=\"\(m)\" fill=\"#b00020\"><title>missing \(a.count(.missing))</title></rect>"
            if a.id == current {
                svg +=
                    "<rect x=\"\(x - 2)\" y=\"2\" width=\"\(w + 4)\" height=\"\(h - 2)\" fill=\"none\" stroke=\"#333\" stroke-dasharray=\"3\"/>"
            }
            svg += "<text x=\"\(x + w / 2)\" y=\"\(h + 14)\" font-size=\"10\" text-anchor=\"middle\">#\(a.id)</text>"
            svg +=
                "<text x=\"\(x + w / 2)\" y=\"\(h + 28)\" font-size=\"9\" text-anchor=\"middle\">\(HTML.escape(String(TimeSpec.format(a.started).prefix(10))))</text>"
        }
        svg +=
            "</svg><p><span style=\"color:#2a7d2a\">■</span> present <span style=\"color:#b00020\">■</span> missing</p>"
        return svg
    }
}
