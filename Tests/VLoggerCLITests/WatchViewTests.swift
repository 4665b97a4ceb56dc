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

    @Test func ratesValuesAndATagThatLeftTheWindow() {
        var view = WatchView(window: 4, assets: [Self.cage: "CAGE-12 Cold cage"], units: ["temperature": "°C"])
        let reading = Reading(
            time: 1000, gateway: "gw", uid: Self.cage, first: BlockNumber(0xF8), count: 1, data: [0, 0, 0, 0],
            decoded: [("temperature", .number(4.5))])
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
}
