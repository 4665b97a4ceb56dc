import Foundation
import VLoggerModel
import VLoggerStore

/// The pages' charts, drawn here as SVG (scaled to the page's width by its viewBox; no scripts, no files).
enum Charts {
    static let colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"]

    /// A line per series over `from…to` (local time labels), with the rules' limits as dashed lines.
    static func lines(
        _ series: [(label: String, points: [(Millis, Double)])], from: Millis, to: Millis, unit: String?,
        limits: [(rule: String, min: Double?, max: Double?)], time: LocalTime, field: String
    ) -> String {
        let values = series.flatMap { $0.points.map(\.1) }
        guard !values.isEmpty else {
            return "<p class=\"none\">No \(HTML.escape(field)) values in this range.</p>"
        }
        let marks = limits.flatMap { [$0.min, $0.max].compactMap { $0 } }
        var v0 = (values + marks).min() ?? 0, v1 = (values + marks).max() ?? 1
        if v1 - v0 < 1e-9 {
            v0 -= 1
            v1 += 1
        }
        let pad = (v1 - v0) * 0.06
        v0 -= pad
        v1 += pad
        let w = 640.0, h = 250.0, left = 84.0, right = 10.0, top = 12.0, bottom = 40.0
        let span = Double(max(1, to - from))
        func x(_ t: Millis) -> Double { left + Double(t - from) / span * (w - left - right) }
        func y(_ v: Double) -> Double { top + (1 - (v - v0) / (v1 - v0)) * (h - top - bottom) }
        let u = unit.map { " " + HTML.escape($0) } ?? ""
        var svg =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(Int(w)) \(Int(h + 18.0 * Double((series.count + 1) / 2)))\" role=\"img\" aria-label=\"\(HTML.escape(field)) from \(HTML.escape(time.dateTime(from))) to \(HTML.escape(time.dateTime(to)))\" font-family=\"system-ui,sans-serif\" font-size=\"14\">"
        svg +=
            "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(w - left - right)\" height=\"\(h - top - bottom)\" fill=\"#fafbfc\" stroke=\"#ccd\"/>"
        // Five value lines and five time labels.
        // Axis labels with as many decimals as the span needs (a 40-unit span: none; a 4-unit span: one).
        let decimals = max(0, min(3, 2 - Int(floor(log10(max(1e-9, v1 - v0))))))
        func axis(_ v: Double) -> String { String(format: "%.\(decimals)f", v) }
        for i in 0...4 {
            let v = v0 + (v1 - v0) * Double(i) / 4
            svg += "<line x1=\"\(left)\" x2=\"\(w - right)\" y1=\"\(f(y(v)))\" y2=\"\(f(y(v)))\" stroke=\"#e6e8eb\"/>"
            svg += "<text x=\"\(left - 6)\" y=\"\(f(y(v) + 4))\" text-anchor=\"end\">\(axis(v))\(u)</text>"
            let t = from + Millis(Double(to - from) * Double(i) / 4)
            let anchor = i == 0 ? "start" : i == 4 ? "end" : "middle"
            svg +=
                "<text x=\"\(f(x(t)))\" y=\"\(f(h - bottom + 18))\" text-anchor=\"\(anchor)\">\(HTML.escape(time.short(t, now: to)))</text>"
        }
        for l in limits {
            for (v, what) in [(l.min, "min"), (l.max, "max")] {
                guard let v else { continue }
                svg +=
                    "<line x1=\"\(left)\" x2=\"\(w - right)\" y1=\"\(f(y(v)))\" y2=\"\(f(y(v)))\" stroke=\"#b00020\" stroke-dasharray=\"6 4\"/>"
                svg +=
                    "<text x=\"\(w - right - 4)\" y=\"\(f(y(v) - 4))\" text-anchor=\"end\" fill=\"#b00020\">\(HTML.escape(l.rule)) \(what) \(PageContext.number(v))\(u)</text>"
            }
        }
        for (i, s) in series.enumerated() {
            let c = colours[i % colours.count]
            let pts = s.points.sorted { $0.0 < $1.0 }.map { "\(f(x($0.0))),\(f(y($0.1)))" }.joined(separator: " ")
            if s.points.count == 1, let p = s.points.first {
                svg += "<circle cx=\"\(f(x(p.0)))\" cy=\"\(f(y(p.1)))\" r=\"3\" fill=\"\(c)\"/>"
            } else {
                svg += "<polyline fill=\"none\" stroke=\"\(c)\" stroke-width=\"2\" points=\"\(pts)\"/>"
            }
            // The legend under the chart, two to a line.
            let lx = left + Double(i % 2) * ((w - left) / 2), ly = h + 4 + Double(i / 2) * 18
            svg += "<rect x=\"\(f(lx))\" y=\"\(f(ly - 10))\" width=\"12\" height=\"4\" fill=\"\(c)\"/>"
            svg += "<text x=\"\(f(lx + 16))\" y=\"\(f(ly - 4))\">\(HTML.escape(String(s.label.prefix(32))))</text>"
        }
        return svg + "</svg>"
    }

    /// Bars of present (green) and missing (red) per audit, oldest on the left; the current one outlined.
    static func auditHistory(_ audits: [AuditRecord], current: Int64, time: LocalTime) -> String {
        guard !audits.isEmpty else { return "<p class=\"none\">No audits.</p>" }
        let list = Array(audits.suffix(20))
        let top = max(1, list.map { $0.count(.present) + $0.count(.missing) }.max() ?? 1)
        let w = 30.0, gap = 14.0, left = 34.0, h = 160.0
        let width = left + Double(list.count) * (w + gap)
        var svg =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(Int(max(width, 300))) \(Int(h + 44))\" style=\"max-width:\(Int(max(width, 300)))px\" role=\"img\" aria-label=\"present and missing per audit\" font-family=\"system-ui,sans-serif\" font-size=\"11\">"
        svg += "<text x=\"0\" y=\"12\">\(top)</text><text x=\"0\" y=\"\(Int(h))\">0</text>"
        for (i, a) in list.enumerated() {
            let x = left + Double(i) * (w + gap)
            let p = Double(a.count(.present)) / Double(top) * (h - 10)
            let m = Double(a.count(.missing)) / Double(top) * (h - 10)
            svg +=
                "<rect x=\"\(f(x))\" y=\"\(f(h - p))\" width=\"\(f(w / 2))\" height=\"\(f(p))\" fill=\"#2a7d2a\"><title>present \(a.count(.present))</title></rect>"
            svg +=
                "<rect x=\"\(f(x + w / 2))\" y=\"\(f(h - m))\" width=\"\(f(w / 2))\" height=\"\(f(m))\" fill=\"#b00020\"><title>missing \(a.count(.missing))</title></rect>"
            if a.id == current {
                svg +=
                    "<rect x=\"\(f(x - 2))\" y=\"2\" width=\"\(f(w + 4))\" height=\"\(f(h - 2))\" fill=\"none\" stroke=\"#333\" stroke-dasharray=\"3\"/>"
            }
            svg += "<text x=\"\(f(x + w / 2))\" y=\"\(f(h + 14))\" text-anchor=\"middle\">#\(a.id)</text>"
            svg +=
                "<text x=\"\(f(x + w / 2))\" y=\"\(f(h + 28))\" text-anchor=\"middle\" font-size=\"9\">\(HTML.escape(String(time.date(a.started).dropFirst(5))))</text>"
        }
        return svg
            + "</svg><p class=\"sub\"><span style=\"color:#2a7d2a\">■</span> present <span style=\"color:#b00020\">■</span> missing</p>"
    }

    private static func f(_ d: Double) -> String { String(format: "%.1f", d) }
}

/// HTML text for what the service writes itself (the charts' labels); the templates escape by themselves.
enum HTML {
    static func escape(_ s: String) -> String {
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
