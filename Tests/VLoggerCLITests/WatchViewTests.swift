import FieldState
import ISO15693
import Testing
import VLoggerCLI
import VLoggerCore
import VLoggerModel

/// `vlogger watch`'s screen as a value (docs/commands.md, "watch"): a tag's seen rate over the last `window`
/// cycles, its latest decoded values with their units, the register's name for it, and a tag that no cycle of the
/// window saw leaves the table.
@Suite struct WatchViewTests {
    static let cage = try! UID(parsing: "E008010000004212")
    static let shelf = try! UID(parsing: "E004010812345601")

    static func report(_ tags: [UID]) -> CycleReport {
        var r = CycleReport()
        r.tags = tags
        r.airTime = AirTime.microseconds(20_000)
        r.exchanges = tags.count + 1
        return r
    }

    static func field() -> FieldState {
        FieldState(
            readers: [FieldState.Reader(id: "dock-1", location: "Dock 1", intervalMs: 1000)],
            units: ["temperature": "°C"])
    }

    @Test func ratesValuesAndATagThatLeftTheWindow() {
        let field = Self.field()
        var view = WatchView(window: 4, field: field, assets: [Self.cage: "CAGE-12 Cold cage"])
        let reading = Reading(
            time: 1000, gateway: "gw", uid: Self.cage, first: BlockNumber(0xF8), count: 1, data: [0, 0, 0, 0],
            decoded: [("temperature", .number(4.5))])
        // The command feeds the field state as the service's polling jobs do; the view reads it.
        field.readingTaken(reading, asset: "CAGE-12")
        view.record(Self.report([Self.cage, Self.shelf]), readings: [reading], events: [], models: [:])
        view.record(Self.report([Self.cage]), readings: [], events: [], models: [:])
        #expect(view.rate(Self.cage) == (2, 2))
        #expect(view.rate(Self.shelf) == (1, 2))
        let lines = view.render(title: "watch", width: 200, height: 40, now: 2000)
        let cageLine = lines.first { $0.hasPrefix("E008010000004212") } ?? ""
        #expect(cageLine.contains("CAGE-12 Cold cage") && cageLine.contains("temperature=4.5 °C"), "\(lines)")
        #expect(cageLine.contains("2/2") && cageLine.contains("100 %"), "\(cageLine)")
        // Three more cycles without the shelf tag: the window of 4 no longer holds a sighting of it.
        for _ in 0..<3 { view.record(Self.report([Self.cage]), readings: [], events: [], models: [:]) }
        #expect(view.tags == [Self.cage])
        #expect(view.cycles == 5)
    }

    /// The alarms going on now, critical first, from the field state (as the status page lists them); an alarm
    /// that ended is gone; a tag without decoded values shows its bytes.
    @Test func alarmsNowAndRawBytes() throws {
        let field = Self.field()
        var view = WatchView(window: 4, field: field)
        func violation(_ rule: String, _ severity: Event.Severity, ended: Bool = false) -> Event {
            Event(
                time: 1000, gateway: "gw", reader: "dock-1", location: "Dock 1", uid: Self.cage,
                kind: ended ? .violationEnded : .violation, name: rule, severity: severity, detail: "\(rule) detail")
        }
        field.eventRecorded(violation("warm", .warning), asset: "CAGE-12")
        field.eventRecorded(violation("too warm", .critical), asset: "CAGE-12")
        field.eventRecorded(violation("locked", .warning), asset: "CAGE-12")
        field.eventRecorded(violation("locked", .warning, ended: true), asset: "CAGE-12")
        let raw = Reading(
            time: 1000, gateway: "gw", uid: Self.shelf, first: BlockNumber(4), count: 1, data: [0xDE, 0xAD, 0xBE, 0xEF])
        view.record(Self.report([Self.cage, Self.shelf]), readings: [raw], events: [], models: [:])
        let lines = view.render(title: "watch", width: 200, height: 40, now: 2000)
        let at = try #require(lines.firstIndex(of: "alarms now (2):"), "\(lines)")
        #expect(lines[at + 1].hasPrefix("  critical too warm: CAGE-12 since "), "\(lines)")
        #expect(lines[at + 2].hasPrefix("  warning warm: CAGE-12 since "), "\(lines)")
        #expect(!lines.contains { $0.contains("locked") }, "\(lines)")
        let shelfLine = lines.first { $0.hasPrefix("E004010812345601") } ?? ""
        #expect(shelfLine.hasSuffix("0x04: DE AD BE EF"), "\(shelfLine)")
    }
}
