import Foundation
import ISO15693
import Readers
import TagImages
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import TagSimulator
@testable import VLoggerCore
import DriverSim

/// A plan can ask for a sensor kind's values (`sensor-values = "1m"`; issue "Sensor and data-logger tags", item 3):
/// an FM13's one-shot temperature (C0 06 00, the SDK's 400 ms, C0 84 00) as a reading at most once a minute per tag,
/// judged by the rules like any field; a kind whose measurement writes to the tag (the RF430) is not measured by a
/// poll, and says so once.
@Suite(.serialized, .drivers) struct SensorValuesTests {
    static func agent(_ tag: SimulatedTag, plan: String, rules: String = "") throws -> (Agent, Store) {
        let dir = URL(fileURLWithPath: scratchPath("sensor-values"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let field = SimulatedField()
        field.add(tag)
        let config = try AgentConfig.parse(
            """
            [gateway]
            id = "gw-test"
            [polling]
            interval = "10s"
            [[plan]]
            name = "loggers"
            \(plan)
            """, file: dir.appendingPathComponent("test.toml").path)
        let store = try Store(path: dir.appendingPathComponent("v.db").path)
        let agent = Agent(
            config: config, rules: try RuleSet.parse(rules, file: dir.appendingPathComponent("rules.toml").path),
            register: nil, session: ReaderSession(reader: SimulatorReader.switchedOn(field)),
            writer: StoreWriter(store: store, batchSize: 50, flushIntervalMs: 2000),
            clock: SimulatedClock(start: 1_764_000_000_000))
        return (agent, store)
    }

    @Test func anFM13sTemperatureOnceAMinute() throws {
        let image = try TagImage(
            uid: UID(parsing: "E01D7000AABBCC0A"), blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 256),
            profileID: "fm13ht160")
        let tag = SimulatedTag(image: image, profile: .fm13ht160)
        let logger = FM13Logger(startSeconds: 1_764_000_000, intervalSeconds: 60)
        logger.currentCelsius = 23.5
        tag.attach(logger)
        let (agent, store) = try Self.agent(
            tag, plan: "match.uid = \"E01D70*\"\nsensor-values = \"1m\"",
            rules: """
                [[rule]]
                name = "warm"
                kind = "range"
                field = "temperature"
                max = 20
                """)
        agent.run(cycles: 8, stop: StopSignal())  // 10 s apart: 0 s … 70 s, and the 400 ms waits
        agent.writer.commitNow()
        let got = try store.readings()
        // Two measurements: at the first cycle and a minute later.
        #expect(got.count == 2 && got.allSatisfy { $0.decoded?.contains("\"temperature\":23.5") == true }, "\(got)")
        #expect(try store.events(kind: .violation).first?.detail == "temperature = 23.5 is above 20")
    }

    @Test func anRF430IsNotMeasuredByAPoll() throws {
        let image = try TagImage(
            uid: UID(parsing: "E007A20000001003"), blockSize: 8,
            blocks: Array(repeating: Array(repeating: 0, count: 8), count: 243),
            profileID: "rf430frl152h")
        let tag = SimulatedTag(image: image, profile: .rf430frl152h)
        let (agent, store) = try Self.agent(tag, plan: "match.model = \"RF430FRL15xH\"\nsensor-values = \"1m\"")
        agent.run(cycles: 3, stop: StopSignal())
        agent.writer.commitNow()
        #expect(try store.readings().isEmpty)
        let e = try store.events(kind: .error)
        #expect(
            e.count == 1 && e.first?.name == "sensor-values" && e.first?.detail.contains("writes to the tag") == true)
        #expect(tag.image.blocks[0] == Array(repeating: 0, count: 8))
    }
}
