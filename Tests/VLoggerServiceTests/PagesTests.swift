import Foundation
import ISO15693
import TestDrivers
import Testing
import VLoggerCore
import VLoggerModel
import VLoggerStore

@testable import VLoggerService

/// The operator's pages without a server: the templates (escaping, an integrator's folder), the alarm state the
/// metrics keep, and the status page's view of a store.
@Suite(.drivers) struct PageRenderingTests {
    static let config = """
        [gateway]
        id = "gw-pages"
        site = "Hall 2"
        time-zone = "Europe/Berlin"
        [[reader]]
        id = "cage-room"
        location = "Cold room"
        [[plan]]
        name = "cage"
        match.model = "MB89R118"
          [[plan.read]]
          first = 0xF8
          [[plan.field]]
          name = "temperature"
          block = 0xF8
          type = "i16le"
          scale = 0.01
          unit = "°C"
        """
    static let rules = """
        [[rule]]
        name = "too warm"
        kind = "range"
        field = "temperature"
        max = 24.0
        severity = "critical"
        """
    static let t0: Millis = 1_763_800_000_000  // 2025-11-22T08:26:40Z

    func setup() throws -> (Store, ServiceMetrics, PageContext, UID) {
        let c = try AgentConfig.parse(Self.config, file: "pages.toml")
        let rules = try RuleSet.parse(Self.rules, file: "rules.toml")
        let store = try Store(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("pages-\(UUID().uuidString).db").path)
        let uid = try UID(parsing: "E008010000004212")
        _ = try store.importAssets(
            [AssetRow(uid: uid, assetID: "CAGE-12", name: "Cold <cage> 12", location: "Cold room")], source: "test")
        let m = ServiceMetrics(readers: c.readers, intervalMs: { _ in 1000 }, startedMs: Self.t0)
        return (store, m, PageContext(config: c, rules: rules), uid)
    }

    /// A violation is a state: it starts with the event (its since time, its detail and the tag's values then),
    /// follows the tag's later values, and ends with violation_ended.
    @Test func aViolationIsAStateWithAStartAnEndAndTheLatestValue() throws {
        let (_, m, _, uid) = try setup()
        let reading = { (v: Double) in
            Reading(
                time: Self.t0, gateway: "gw", reader: "cage-room", location: "Cold room", uid: uid, first: 0xF8,
                count: 1,
                data: [0, 0, 0, 0, 0, 0, 0, 0], decoded: [("temperature", .number(v))])
        }
        let event = { (kind: Event.Kind, time: Millis) in
            Event(
                time: time, gateway: "gw", reader: "cage-room", location: "Cold room", uid: uid, kind: kind,
                name: "too warm", severity: kind == .violation ? .critical : .info,
                detail: "temperature = 24.5 is above 24")
        }
        m.readingTaken(reading(24.5), asset: "CAGE-12", units: ["temperature": "°C"])
        m.eventRecorded(event(.violation, Self.t0 + 1000), asset: "CAGE-12")
        var active = m.activeViolations
        #expect(active.count == 1 && active[0].since == Self.t0 + 1000 && active[0].asset == "CAGE-12")
        #expect(active[0].latest.first.map { $0.name == "temperature" && $0.value == .number(24.5) } == true)
        m.readingTaken(reading(26.25), asset: "CAGE-12", units: ["temperature": "°C"])
        active = m.activeViolations
        #expect(active.first?.latest.first?.value == .number(26.25))
        m.eventRecorded(event(.violationEnded, Self.t0 + 9000), asset: "CAGE-12")
        #expect(m.activeViolations.isEmpty)
    }

    /// The status page: the alarm first, red, named by the register's asset (escaped: the name has `<cage>`), its
    /// since time in the gateway's zone with its offset, the latest value with its unit; the header says the plant
    /// has an alarm while the software is fine.
    @Test func theStatusPageListsTheAlarmFirstInLocalTime() throws {
        let (store, m, context, uid) = try setup()
        m.readingTaken(
            Reading(
                time: Self.t0, gateway: "gw", reader: "cage-room", location: "Cold room", uid: uid, first: 0xF8,
                count: 1, data: [0, 0, 0, 0, 0, 0, 0, 0], decoded: [("temperature", .number(25.5))]), asset: "CAGE-12",
            units: [:])
        m.eventRecorded(
            Event(
                time: Self.t0, gateway: "gw", reader: "cage-room", location: "Cold room", uid: uid, kind: .violation,
                name: "too warm", severity: .critical, detail: "temperature = 25.5 is above 24"), asset: "CAGE-12")
        let templates = try PageTemplates()
        let html = templates.render(
            Pages.status(metrics: m, store: store, context: context, field: nil, range: nil, now: Self.t0 + 300_000),
            "status")
        // 2025-11-22T08:26:40Z is 09:26:40 in Berlin (CET, +01:00).
        #expect(
            html.contains(
                "<tr class=\"alarm\"><td data-label=\"severity\">critical</td><td data-label=\"rule\">too warm</td><td data-label=\"asset\"><a href=\"/tags/E008010000004212\">CAGE-12 — Cold &lt;cage&gt; 12</a></td>"
            ), "\(html)")
        #expect(html.contains("2025-11-22 09:26:40 +01:00 (for 5 min)") && html.contains("temperature 25.5 °C"))
        #expect(html.contains("plant: 1 alarm") && html.contains("software: store committing"))
        #expect(html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"))
        #expect(!html.contains("<cage>"))
        #expect(html.range(of: "Alarms (1)")!.lowerBound < html.range(of: "<h2>Readers</h2>")!.lowerBound)
    }

    /// An integrator's folder replaces a shipped template by name; a file named after no template, or one that does
    /// not parse, is an error that names the file.
    @Test func aFolderOfTemplatesReplacesTheShippedOnes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tpl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "<p>{{gateway}} has {{alarmCount}} alarms</p>".write(
            to: dir.appendingPathComponent("status.mustache"), atomically: true, encoding: .utf8)
        let (store, m, context, _) = try setup()
        let html = try PageTemplates(folder: dir.path).render(
            Pages.status(metrics: m, store: store, context: context, field: nil, range: nil, now: Self.t0), "status")
        #expect(html == "<p>gw-pages has 0 alarms</p>")
        try "x".write(to: dir.appendingPathComponent("statuz.mustache"), atomically: true, encoding: .utf8)
        #expect {
            _ = try PageTemplates(folder: dir.path)
        } throws: { "\($0)".contains("statuz.mustache: no page uses a template named statuz") }
        try FileManager.default.removeItem(at: dir.appendingPathComponent("statuz.mustache"))
        try "{{#open}}never closed".write(
            to: dir.appendingPathComponent("tag.mustache"), atomically: true, encoding: .utf8)
        #expect {
            _ = try PageTemplates(folder: dir.path)
        } throws: { "\($0)".contains("tag.mustache:1:") && "\($0)".contains(": not a Mustache template: ") }
    }

    /// A reading's decoded JSON as the pages show it: members in the written order, numbers as numbers, escapes
    /// decoded, NDEF records left as JSON.
    @Test func decodedFieldsInTheirOrder() {
        let f = PageData.fields(#"{"temperature":21.5,"label":"A\"B","ndef":[{"tnf":1}],"n":-3}"#)
        #expect(f?.map(\.name) == ["temperature", "label", "ndef", "n"])
        #expect(f?[0].value == .number(21.5) && f?[1].value == .text("A\"B") && f?[3].value == .number(-3))
        #expect(f?[2].value == .json(#"[{"tnf":1}]"#))
        #expect(PageData.fields("[1,2]") == nil && PageData.fields("{\"a\":") == nil)
        #expect(
            PageContext.number(21.5) == "21.5" && PageContext.number(1200) == "1200"
                && PageContext.number(-0.0001) == "0")
    }
}

/// Issue 47, item 2: with the store locked, one page showed 72.1 °C in the alarm row and 65.32 °C for the same tag
/// in the field table (the alarm from the readers' values, the table from the store's last commit), and the "read"
/// column gave HH:MM only. Now both come from one snapshot of the values the readers took, each with its time to
/// the second and its age; a reader whose last poll is older than three of its intervals turns the badges amber.
@Suite(.drivers) struct OneValuePerTagTests {
    static let config =
        ServiceMetricsTests.config + """

              [[plan.field]]
              name = "temperature"
              block = 0xF8
              type = "i16le"
              scale = 0.01
              unit = "°C"
            """

    @Test func theAlarmAndTheFieldTableShowTheSameValueWithItsAge() throws {
        let c = try AgentConfig.parse(Self.config, file: "pages.toml")
        let t0 = PageRenderingTests.t0
        let m = ServiceMetrics(readers: c.readers, intervalMs: { c.specialized(for: $0).intervalMs }, startedMs: t0)
        let a = try ServiceMetricsTests().agent(c, 0)
        m.cycleDone(a, a.cycle())
        let uid = try UID(parsing: "E008010000004212")
        let polled = t0 + 1000
        // The store's last commit: 65.32 °C, 30 s before the value the reader has taken since (not committed yet).
        let store = try Store(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("one-\(UUID().uuidString).db").path)
        var b = Batch()
        b.readings = [
            Reading(
                time: polled - 30_000, gateway: "gw", reader: "dock-1", location: nil, uid: uid, first: 0xF8,
                count: 1, data: [0x84, 0x19, 0, 0, 0, 0, 0, 0], decoded: [("temperature", .number(65.32))])
        ]
        try store.write(b)
        m.readingTaken(
            Reading(
                time: polled, gateway: "gw", reader: "dock-1", location: nil, uid: uid, first: 0xF8, count: 1,
                data: [0x2A, 0x1C, 0, 0, 0, 0, 0, 0], decoded: [("temperature", .number(72.1))]), asset: nil,
            units: ["temperature": "°C"])
        m.eventRecorded(
            Event(
                time: polled, gateway: "gw", reader: "dock-1", uid: uid, kind: .violation, name: "too warm",
                severity: .critical, detail: "temperature = 72.1 is above 24"), asset: nil)
        let rules = try RuleSet.parse(PageRenderingTests.rules, file: "rules.toml")
        let context = PageContext(config: c, rules: rules)
        let templates = try PageTemplates()
        var html = templates.render(
            Pages.status(metrics: m, store: store, context: context, field: nil, range: nil, now: polled + 2000),
            "status")
        #expect(!html.contains("65.32"), "\(html)")
        #expect(html.components(separatedBy: "temperature 72.1 °C").count == 3, "the alarm row and the field table")
        // The read time to the second, and its age, which the page's script keeps counting.
        let local = context.time.time(polled)
        #expect(
            html.contains("\(local) · <span class=\"age\" data-ms=\"\(polled)\">2 s</span> ago"), "\(html)")
        #expect(html.contains("data-now=\"\(polled + 2000)\""))
        #expect(html.contains("class=\"badge ok\">software:"))
        // A minute after the start with no good poll reported: the software badge is amber and says which reader.
        html = templates.render(
            Pages.status(metrics: m, store: store, context: context, field: nil, range: nil, now: polled + 60_000),
            "status")
        #expect(html.contains("class=\"badge warn\">software:"), "\(html)")
        #expect(html.contains("dock-1: no poll yet") && html.contains("class=\"badge bad\">plant: 1 alarm"), "\(html)")
    }
}
