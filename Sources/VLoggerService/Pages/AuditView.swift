import Foundation
import ISO15693
import VLoggerModel
import VLoggerStore
import VLoggerConfig

/// An audit report to read and print (A4): the counts, the missing, wrong-location, unexpected, failed-check and
/// present lists with the register's names, local times and the schedule that ran it, the location's trend, and a
/// sign-off line.
struct AuditView {
    struct Cell {
        let label, text: String
        let link: String?
        let mono: Bool
    }
    struct Row {
        let cells: [Cell]
    }
    struct Section {
        let title: String
        let head: [String]
        let hasRows: Bool
        let rows: [Row]
    }

    let live = false
    let id: Int
    let location, gateway, zone, started, finishedTime, readers, trigger: String
    let site: String?
    let rounds: Int
    let present, missingCount, wrongCount, unexpectedCount, checksCount: Int
    let missingBad, wrongBad, checksBad: Bool
    let sections: [Section]
    let history: String
}

extension Pages {
    /// The report of `a`; `history`: the location's recent audits (for the trend); `links`: whether tags link to
    /// their pages (the service's report; a file written by `vlogger audit report` has no server behind it).
    public static func auditReport(
        _ a: AuditRecord, history: [AuditRecord], assets: [AssetRow], context c: PageContext, links: Bool,
        templates: PageTemplates
    ) -> String {
        let t = c.time
        let names = AssetNames(assets)
        func time(_ m: Millis?) -> String { m.map(t.dateTime) ?? "—" }
        func asset(_ r: AuditResult) -> Cell {
            let text = names.name(assetID: r.assetID, uid: r.uid)
            return Cell(label: "asset", text: text, link: links ? "/tags/\(r.uid)" : nil, mono: false)
        }
        func uid(_ r: AuditResult) -> Cell { Cell(label: "UID", text: r.uid.description, link: nil, mono: true) }
        func cell(_ label: String, _ text: String) -> Cell { Cell(label: label, text: text, link: nil, mono: false) }
        typealias Cell = AuditView.Cell
        func section(_ title: String, _ head: [String], _ rows: [[Cell]]) -> AuditView.Section {
            AuditView.Section(
                title: title, head: head, hasRows: !rows.isEmpty, rows: rows.map { AuditView.Row(cells: $0) })
        }
        let of = { (s: AuditResult.Status) in a.results.filter { $0.status == s } }
        let sections = [
            section(
                "Missing", ["asset", "UID", "registered at", "last seen"],
                of(.missing).map {
                    [
                        asset($0), uid($0), cell("registered at", $0.registeredLocation ?? ""),
                        cell("last seen", time($0.lastSeen)),
                    ]
                }),
            section(
                "Wrong location", ["asset", "UID", "registered at", "seen at", "by", "last seen"],
                of(.wrongLocation).map {
                    [
                        asset($0), uid($0), cell("registered at", $0.registeredLocation ?? ""),
                        cell("seen at", $0.seenLocation ?? ""), cell("by", $0.seenBy ?? ""),
                        cell("last seen", time($0.lastSeen)),
                    ]
                }),
            section(
                "Unexpected (not in the register)", ["UID", "chip", "rounds", "by"],
                of(.unexpected).map {
                    [
                        uid($0), cell("chip", $0.uid.manufacturer.description),
                        cell("rounds", "\($0.seenRounds) of \(a.rounds)"), cell("by", $0.seenBy ?? ""),
                    ]
                }),
            section(
                "Failed checks", ["asset", "UID", "check"],
                a.results.flatMap { r in r.failedChecks.map { [asset(r), uid(r), cell("check", $0)] } }),
            section(
                "Present", ["asset", "UID", "rounds", "by", "first seen", "last seen"],
                of(.present).map {
                    [
                        asset($0), uid($0), cell("rounds", "\($0.seenRounds) of \(a.rounds)"),
                        cell("by", $0.seenBy ?? ""),
                        cell("first seen", time($0.firstSeen)), cell("last seen", time($0.lastSeen)),
                    ]
                }),
        ]
        let trigger = c.schedules[a.trigger] ?? a.trigger
        let view = AuditView(
            id: Int(a.id), location: a.location, gateway: a.gateway, zone: t.name, started: t.dateTime(a.started),
            finishedTime: t.time(a.finished), readers: a.readers.joined(separator: ", "), trigger: trigger,
            site: c.site,
            rounds: a.rounds, present: a.count(.present), missingCount: a.count(.missing),
            wrongCount: a.count(.wrongLocation), unexpectedCount: a.count(.unexpected), checksCount: a.failedChecks,
            missingBad: a.count(.missing) > 0, wrongBad: a.count(.wrongLocation) > 0, checksBad: a.failedChecks > 0,
            sections: sections,
            history: Charts.auditHistory(history.sorted { $0.started < $1.started }, current: a.id, time: t))
        return templates.render(view, "audit")
    }
}
