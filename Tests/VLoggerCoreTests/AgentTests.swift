import TagImages
import Foundation
import VLoggerStore
import VLoggerModel
import ISO15693
import Readers
import TagSimulator
import TestDrivers
import Testing
import Type5NDEF
@testable import VLoggerCore
import DriverSim

/// The agent against simulated fields, with a simulated clock (no real sleeping).
@Suite(.drivers) struct AgentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static let config = """
        [gateway]
        id = "gw-test"
        [polling]
        interval = "1s"
        slots = "adaptive"
        departure-cycles = 2
        [store]
        batch-size = 50
        flush-interval = "2s"
        [[plan]]
        name = "cage"
        match.model = "MB89R118"
          [[plan.read]]
          first = 0xF8
          security = true
          [[plan.field]]
          name = "temperature"
          block = 0xF8
          type = "i16le"
          scale = 0.01
          unit = "°C"
        [[plan]]
        name = "asset"
        match.model = "ST25DV64K"
          [[plan.read]]
          first = 0x00
          [[plan.field]]
          name = "asset_id"
          block = 0x100
          type = "ascii"
          length = 8
        """

    static let rules = """
        [[rule]]
        name = "warm"
        kind = "range"
        field = "temperature"
        max = 20.0
        severity = "critical"
        [[rule]]
        name = "slix2 cc locked"
        kind = "lock"
        block = 0x00
        locked = true
        match.uid = "E00401*"
        """

    struct Rig {
        let agent: Agent
        let store: Store
        let field: SimulatedField
        let clock: SimulatedClock
    }

    /// An agent over a field of the demo tags that `pick` chooses.
    func rig(config text: String = Self.config, rules: String = Self.rules, _ pick: (TagImage) -> Bool = { _ in true })
        throws -> Rig
    {
        let folder = try FieldFolder(url: Self.root.appendingPathComponent("Config/demo-field"))
        let field = SimulatedField()
        for t in folder.field.tags where pick(t.image) { field.add(SimulatedTag(image: t.image)) }
        let session = ReaderSession(reader: SimulatorReader.switchedOn(field))
        let config = try AgentConfig.parse(text, file: "test.toml")
        let store = try Store(path: scratchPath("agent.db"))
        try store.registerFields(config.fieldInfos)
        let clock = SimulatedClock(start: 1_763_800_000_000)
        let agent = Agent(
            config: config, rules: try RuleSet.parse(rules, file: "rules.toml"), register: nil,
            session: session, writer: StoreWriter(store: store, batchSize: 50, flushIntervalMs: 2000), clock: clock)
        return Rig(agent: agent, store: store, field: field, clock: clock)
    }

    @Test func demoFieldCyclesStoreReadingsEventsAndViolations() throws {
        let r = try rig()
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        let c = r.agent.counters
        #expect(c.cycles == 3 && c.arrivals == 8 && c.errorTotal == 0)
        // 2 plan tags × 3 cycles (the other six match no plan; the SLIX2s get the lock rule's block 0x00).
        #expect(try r.store.readings(uid: UID(parsing: "E008010000004212")).count == 3)
        let cage = try r.store.readings(uid: UID(parsing: "E008010000004212"))[0]
        #expect(
            cage.data == [0x66, 0x08, 0xC2, 0x01, 0x42, 0x37, 0x00, 0x01] && cage.decoded == "{\"temperature\":21.5}")
        #expect(
            try r.store.readings(uid: UID(parsing: "E002260000C0FFEE")).first { $0.block == 0x100 }?.decoded
                == "{\"asset_id\":\"AS-00042\"}")
        // 21.5 °C > 20: one violation event when it starts, not one per cycle.
        let violations = try r.store.events(kind: .violation)
        #expect(Set(violations.map(\.name)) == ["warm", "slix2 cc locked"])
        #expect(violations.first { $0.name == "warm" }?.severity == .critical)
        // The demo SLIX2 has block 0x00 locked (pass); the SLIX (E00401100…) does not (violation).
        #expect(c.violations == 2)
        #expect(
            try r.store.events(kind: .arrival).count == 8 && r.store.events(kind: .start).count == 1
                && r.store.events(kind: .stop).count == 1)
        #expect(try r.store.integrityCheck() == "ok")
    }

    @Test func eachPlanReadIsOneExchangeOnceTheLayoutIsKnown() throws {
        // One MB89R118 alone, adaptive slots: cycle 1 = inventory + Get System Information + read + Stay Quiet;
        // later cycles = one Read Single Block with security (the layout is cached; the read is the quiet
        // tag's presence check) + a one-slot inventory in which no newcomer answers.
        let r = try rig { $0.uid.description == "E008010000004212" }
        r.agent.cycle()
        let first = r.agent.counters.exchanges
        let more = r.agent.cycle()
        #expect(more.exchanges == 2)
        #expect(first > more.exchanges)
        // The air time of that cycle against its lower bound (same reads, no retries): equal here.
        #expect(abs(more.airTime.microseconds - more.lowerBound.microseconds) < 1)
    }

    /// Issue 47, item 10: an NDEF plan that also reads blocks gave two readings per tag and cycle (the plan's
    /// blocks, then the NDEF message from the same blocks). Now one: the NDEF fields go with the plan's reading of
    /// block 0 when it holds the message. A tag that is not NDEF-formatted is said at info severity and is not a
    /// read error.
    @Test func anNDEFPlanThatReadsBlocksGivesOneReadingPerCycle() throws {
        let config = """
            [[plan]]
            name = "nxp"
            match.manufacturer = "NXP"
            ndef = true
              [[plan.read]]
              first = 0x00
              count = 8
              security = true
            """
        let r = try rig(config: config) { $0.uid.manufacturer == .nxp }
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        let readings = try r.store.readings(uid: UID(parsing: "E004010812345601"))
        #expect(readings.count == 3, "\(readings.map(\.decoded))")
        // The plan's 8 blocks, with the NDEF fields in the same reading.
        #expect(
            readings.allSatisfy {
                $0.block == 0 && $0.data.count == 32 && ($0.decoded ?? "").contains("\"ndef_text\":\"vlogger demo\"")
            }, "\(readings.map(\.decoded))")
        let notFormatted = try r.store.events(kind: .error).filter { $0.name == "ndef-not-formatted" }
        #expect(notFormatted.count == 1 && notFormatted.first?.severity == .info)
        #expect(r.agent.counters.errors["ndef-not-formatted"] == nil)
    }

    @Test func plansWithNDEFStoreTheRecordsWithTheReadings() throws {
        // The demo SLIX2 holds a Text record "vlogger demo" (en); the demo SLIX has no CC (not formatted).
        let config = """
            [[plan]]
            name = "nxp"
            match.manufacturer = "NXP"
            ndef = true
            """
        let rules = """
            [[rule]]
            name = "pallet label"
            kind = "equals"
            field = "ndef_text"
            value = "vlogger demo"
            match.uid = "E004010812345601"
            """
        let r = try rig(config: config, rules: rules) { $0.uid.manufacturer == .nxp }
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        let readings = try r.store.readings(uid: UID(parsing: "E004010812345601"))
        #expect(readings.count == 3 && readings[0].block == 0)
        let decoded = try #require(readings[0].decoded)
        #expect(
            decoded.contains("\"ndef_text\":\"vlogger demo\"") && decoded.contains("\"lang\":\"en\"")
                && decoded.contains("\"kind\":\"text\""))
        #expect(try r.store.readings(uid: UID(parsing: "E004011000000A03")).isEmpty)
        // Not formatted: one event when it is first seen, not one per cycle; the rule on ndef_text passes.
        #expect(try r.store.events(kind: .error).map(\.name) == ["ndef-not-formatted"])
        #expect(r.agent.counters.violations == 0)
        #expect(try r.store.fields().map(\.name) == ["ndef", "ndef_text", "ndef_uri"])
        // The decoded fields are kept while the message bytes stay the same; a new message decodes anew.
        let pallet = try UID(parsing: "E004010812345601")
        _ = try r.agent.session.client.writeNDEF(pallet, message: NDEFMessage.encode([NDEFRecord.text("pallet moved")]))
        r.agent.cycle()
        r.agent.writer.commitNow()
        let last = try #require(try r.store.readings(uid: pallet).last?.decoded)
        #expect(last.contains("\"ndef_text\":\"pallet moved\"") && !last.contains("vlogger demo"), "\(last)")
    }

    /// A reader that is "unplugged" for its first `downFor` exchanges (a device error, as a PC/SC reader
    /// whose pcscd went away reports), then works.
    final class UnpluggedReader: TagReader {
        let inner: SimulatorReader
        var downFor: Int
        init(_ inner: SimulatorReader, downFor: Int) { self.inner = inner; self.downFor = downFor }
        var name: String { "unplugged-then-back" }
        var limits: ReaderLimits { inner.limits }
        var airTime: AirTime { inner.airTime }
        var trace: ((TraceEvent) -> Void)? {
            get { inner.trace }
            set { inner.trace = newValue }
        }
        func fieldOn() throws(ReaderError) { try inner.fieldOn() }
        func fieldOff() throws(ReaderError) { try inner.fieldOff() }
        func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
            if downFor > 0 { downFor -= 1; throw .device("reader unplugged") }
            return try inner.transceive(frame, wait: wait)
        }
        func nextSlot() throws(ReaderError) -> [UInt8] { try inner.nextSlot() }
    }

    @Test func aFailingReaderBacksOffReportsUnhealthyAndResumes() throws {
        let folder = try FieldFolder(url: Self.root.appendingPathComponent("Config/demo-field"))
        let field = SimulatedField()
        for t in folder.field.tags where t.uid.description == "E008010000004212" {
            field.add(SimulatedTag(image: t.image))
        }
        let reader = UnpluggedReader(SimulatorReader(field: field), downFor: 3)
        try reader.fieldOn()
        let session = ReaderSession(reader: reader)
        let config = try AgentConfig.parse(Self.config, file: "test.toml")
        let store = try Store(path: scratchPath("backoff.db"))
        let clock = SimulatedClock(start: 1_763_800_000_000)
        let agent = Agent(
            config: config, rules: try RuleSet.parse("", file: "rules.toml"), register: nil, session: session,
            writer: StoreWriter(store: store), clock: clock)
        // The ceilings themselves (Backoff's own tests cover the jitter).
        agent.backoffJitter = false
        var health: [Bool] = []
        var times: [Millis] = []
        agent.onCycle = { report in
            health.append(!report.readerFailed); times.append(clock.now())
        }
        agent.run(cycles: 5, stop: StopSignal())
        agent.writer.commitNow()
        // Three cycles fail on the reader; the waits after them double from the 1 s interval (2, 4, 8 s);
        // then the reader answers and the interval is 1 s again.
        #expect(health == [false, false, false, true, true])
        #expect(zip(times.dropFirst(), times).map { $0 - $1 } == [2000, 4000, 8000, 1000])
        #expect(agent.readerHealthy && agent.readerFailures == 0 && agent.lastGoodPollMs != nil)
        #expect(agent.counters.errors["inventory-reader"] == 3 && agent.counters.readings == 2)
    }

    @Test func wantedReadsMergeIntoContiguousRanges() {
        // Overlapping and adjacent reads become one range; lock status is read for the whole range if any part needs it.
        let merged = PollCost.merge([
            PlanRead(first: 0xF8, count: 1, security: true), PlanRead(first: 0xF9, count: 1),
            PlanRead(first: 0x01, count: 2), PlanRead(first: 0x00, count: 2), PlanRead(first: 0x10, count: 1),
        ])
        #expect(
            merged == [
                PlanRead(first: 0x00, count: 3), PlanRead(first: 0x10, count: 1),
                PlanRead(first: 0xF8, count: 2, security: true),
            ])
    }

    @Test func aTagLeavingMidReadLeavesNoPartialReading() throws {
        let r = try rig { $0.uid.description == "E002260000C0FFEE" }
        // The plan reads block 0x00, then 0x100–0x101 (the asset field) as one range. Cycle 1 learns the
        // layout and sends the tag Stay Quiet; in cycle 2 the quiet tag answers the first read, then is gone.
        r.agent.cycle()
        r.field.inject(.leaveAfter(uid: try UID(parsing: "E002260000C0FFEE"), exchanges: 1))
        let report = r.agent.cycle()
        #expect(report.readings == 0)
        #expect(r.agent.counters.errors["read-timeout"] == 1)
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        #expect(r.agent.counters.departures == 1)
        let rows = try r.store.readings()
        // Cycle 1's two readings only: nothing of cycle 2, not even its good first read.
        #expect(rows.count == 2 && rows[1].data == Array("AS-00042".utf8))
        let errors = try r.store.events(kind: .error)
        #expect(errors.count == 1 && errors[0].detail.contains("no reading stored"))
    }

    @Test func aCorruptAnswerIsRetriedAndTheReadingIsRight() throws {
        let r = try rig { $0.uid.description == "E008010000004212" }
        r.agent.cycle()
        r.field.inject(.corruptCRC(uid: try UID(parsing: "E008010000004212"), count: 1))
        r.agent.cycle()
        r.agent.writer.commitNow()
        #expect(r.agent.counters.errorTotal == 0)
        let rows = try r.store.readings()
        #expect(rows.count == 2 && rows.allSatisfy { $0.data == [0x66, 0x08, 0xC2, 0x01, 0x42, 0x37, 0x00, 0x01] })
    }

    @Test func persistentFaultsBecomeTypedErrorEvents() throws {
        let r = try rig { $0.uid.description == "E008010000004212" }
        r.agent.cycle()
        // The tag back in Ready (as a newcomer is): the inventory finds it, then its reads fail.
        r.agent.wakeQuietTags()
        // More lost answers than the client's retries (2) × the agent's read attempts (2), from the first
        // read on (armed once the tag's inventory answer, 12 bytes, has been heard).
        let uid = try UID(parsing: "E008010000004212")
        var armed = true
        r.agent.session.reader.trace = { e in
            if armed, e.direction == .tagToReader, e.bytes.count == 12 {
                armed = false
                r.field.inject(.noResponse(uid: uid, count: 6))
            }
        }
        let report = r.agent.cycle()
        #expect(report.readings == 0)
        #expect(r.agent.counters.errors == ["read-timeout": 1])
    }

    /// The steady cycle with Stay Quiet (ISO/IEC 15693-3 §7.3: a quiet tag answers addressed requests only;
    /// it returns to Ready on Reset to Ready, Select or power loss).
    /// Every demo tag read once a cycle (block 0x00), no rules: each cycle's exchanges can be counted.
    static let everyTagConfig = """
        [polling]
        interval = "1s"
        departure-cycles = 2
        [[plan]]
        name = "every tag"
        match.uid = "E0*"
          [[plan.read]]
          first = 0x00
        """

    @Test func quietTagsAreReadByAddressAndTheInventoryLooksOnlyForNewcomers() throws {
        let r = try rig(config: Self.everyTagConfig, rules: "")
        let first = r.agent.cycle()
        let steady = r.agent.cycle()
        // Every tag found in both cycles, with the same readings.
        #expect(
            Set(first.tags) == Set(steady.tags) && first.tags.count == 8 && steady.readings == 8 && first.readings == 8)
        // The steady cycle: eight addressed reads, then one one-slot inventory in which nobody answers.
        #expect(steady.exchanges == 9, "\(steady.exchanges) exchanges")
        #expect(
            steady.airTime == steady.lowerBound && steady.airTime < first.airTime,
            "\(steady.airTime) vs bound \(steady.lowerBound)")
        // A tag that leaves is a departure after departure-cycles (2) cycles; its reads' silence is no error.
        let cage = try UID(parsing: "E008010000004212")
        let tag = try #require(r.field.remove(cage))
        r.agent.cycle()
        #expect(r.agent.counters.departures == 0 && r.agent.counters.errorTotal == 0)
        r.agent.cycle()
        #expect(r.agent.counters.departures == 1 && r.agent.counters.errorTotal == 0)
        // Back in the field it powers up in Ready: the inventory finds it, an arrival, and it is read again.
        r.field.add(tag)
        let back = r.agent.cycle()
        #expect(back.tags.contains(cage) && r.agent.counters.arrivals == 9)
        r.agent.writer.commitNow()
        #expect(try r.store.readings(uid: cage).count == 3)
    }

    @Test func aQuietTagThatLosesPowerBrieflyIsFoundAgainWithoutADeparture() throws {
        let r = try rig { $0.uid.description == "E008010000004212" }
        let cage = try UID(parsing: "E008010000004212")
        r.agent.cycle()
        #expect(r.field.tag(cage)?.state == .quiet)
        // Out and back in between two cycles: Ready again, so the read finds it and so does the inventory.
        let tag = try #require(r.field.remove(cage))
        r.field.add(tag)
        r.field.powerOn()
        let c = r.agent.cycle()
        #expect(
            c.tags == [cage] && c.readings == 1 && r.agent.counters.departures == 0 && r.agent.counters.arrivals == 1)
        #expect(r.field.tag(cage)?.state == .quiet && r.agent.quietHolds)
    }

    @Test func aQuietTagNotHeardUntilItsDepartureIsToldToBeReadyAndFoundAgain() throws {
        // Still powered (at the edge of the field) but its answers lost for two cycles (departure-cycles = 2;
        // 2 read attempts × 3 tries each per cycle = 12 lost answers): it departs, and without a Reset to Ready
        // it would stay quiet, and so invisible to every inventory, until it lost power.
        let r = try rig(config: Self.everyTagConfig, rules: "") { $0.uid.description == "E008010000004212" }
        let cage = try UID(parsing: "E008010000004212")
        r.agent.cycle()
        r.field.inject(.noResponse(uid: cage, count: 12))
        r.agent.cycle()
        r.agent.cycle()
        #expect(r.agent.counters.departures == 1 && r.agent.counters.errorTotal == 0)
        #expect(r.field.tag(cage)?.state == .ready)
        let back = r.agent.cycle()
        #expect(back.tags == [cage] && r.agent.counters.arrivals == 2 && r.field.tag(cage)?.state == .quiet)
    }

    @Test func aReaderThatResetsTheFieldBetweenCommandsGetsAnInventoryEveryCycle() throws {
        // A PC/SC-style reader that switches its field off and on around every command: tags never stay quiet.
        let r = try rig(config: Self.everyTagConfig, rules: "")
        let resetting = FieldResettingReader(r.agent.session.reader, field: r.field)
        let session = ReaderSession(reader: resetting)
        let clock = SimulatedClock(start: 1_763_800_000_000)
        let config = try AgentConfig.parse(Self.everyTagConfig, file: "test.toml")
        let agent = Agent(
            config: config, rules: try RuleSet.parse("", file: "rules.toml"), register: nil, session: session,
            writer: r.agent.writer, clock: clock)
        var perCycle: [Int] = [], readings: [Int] = []
        for _ in 0..<6 {
            let c = agent.cycle()
            perCycle.append(c.tags.count)
            readings.append(c.readings)
        }
        // Every cycle finds all eight and reads the same; after three cycles with quiet tags answering again,
        // Stay Quiet is left off.
        #expect(
            perCycle == Array(repeating: 8, count: 6) && Set(readings).count == 1 && readings[0] > 0,
            "\(perCycle) \(readings)")
        #expect(!agent.quietHolds && agent.counters.departures == 0 && agent.counters.errorTotal == 0)
    }

    @Test func anAuditRoundFindsTheQuietTagsToo() throws {
        let r = try rig(config: Self.everyTagConfig, rules: "")
        r.agent.cycle()
        #expect(try r.agent.session.client.inventory().isEmpty)  // every tag is quiet
        #expect(try r.agent.inventoryEveryTag().count == 8)
        // The next cycle finds and quiets them again, with no arrival or departure.
        let c = r.agent.cycle()
        #expect(c.tags.count == 8 && r.agent.counters.arrivals == 8 && r.agent.counters.departures == 0)
    }

    @Test func scenarioDriftsTheTemperatureAndMovesTags() throws {
        let scenario = Scenario(
            steps: [.init(atMs: 2000, action: .leave(try UID(parsing: "E008010000004212")))],
            signals: [
                .init(
                    uid: try UID(parsing: "E008010000004212"), block: 0xF8, byte: 0, encoding: .i16le, scale: 0.01,
                    start: 10, slopePerHour: 3600, amplitude: 0, periodMs: 0, min: nil, max: nil)
            ])
        let field = SimulatedField()
        let folder = try FieldFolder(url: Self.root.appendingPathComponent("Config/demo-field"))
        field.add(SimulatedTag(image: folder.field.tag(try UID(parsing: "E008010000004212"))!.image))
        let player = ScenarioPlayer(scenario: scenario, field: field)
        player.advance(toMs: 0)
        #expect(field.tags.first?.image.blocks[0xF8].prefix(2) == [0xE8, 0x03])  // 10.00 °C = 1000 = 0x03E8
        player.advance(toMs: 1500)
        #expect(field.tags.first?.image.blocks[0xF8].prefix(2) == [0x7E, 0x04])  // 11.50 °C = 1150 = 0x047E
        player.advance(toMs: 2000)
        #expect(field.tags.isEmpty)
    }
}

/// A reader that powers the field off and on around every request, as a PC/SC reader may between APDUs:
/// every tag is back in Ready for each command.
final class FieldResettingReader: TagReader {
    let inner: TagReader
    let field: SimulatedField
    init(_ inner: TagReader, field: SimulatedField) {
        self.inner = inner
        self.field = field
    }
    var name: String { "field-resetting \(inner.name)" }
    var limits: ReaderLimits { inner.limits }
    var airTime: AirTime { inner.airTime }
    var trace: ((TraceEvent) -> Void)? {
        get { inner.trace }
        set { inner.trace = newValue }
    }
    func fieldOn() throws(ReaderError) { try inner.fieldOn() }
    func fieldOff() throws(ReaderError) { try inner.fieldOff() }
    func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        field.powerOff()
        field.powerOn()
        return try inner.transceive(frame, wait: wait)
    }
    func nextSlot() throws(ReaderError) -> [UInt8] { try inner.nextSlot() }
    var supportsSlotMarkers: Bool { false }
}

/// `[polling] inventory-read`: NXP's (Fast) Inventory Read brings an ICODE newcomer's plan blocks with its
/// inventory answer (ICODE SLIX datasheet SL2S2002 Tables 23–25), so a pallet of ICODE tags needs no separate
/// reads; other chips are found by the Inventory after it.
@Suite(.drivers) struct InventoryReadAgentTests {
    static func config(inventoryRead: Bool) -> String {
        """
        [polling]
        interval = "1s"
        departure-cycles = 2
        inventory-read = \(inventoryRead)
        [[plan]]
        name = "pallet label"
        match.model = "ICODE SLIX2"
          [[plan.field]]
          name = "pallet"
          block = 0x00
          type = "ascii"
          length = 8
        [[plan]]
        name = "machine"
        match.model = "ST25DV64K"
          [[plan.read]]
          first = 0x00
        """
    }

    /// 12 ICODE SLIX2 pallet tags and 2 ST25DV64K arriving together.
    func field() -> SimulatedField {
        let field = SimulatedField()
        for i in 1...12 {
            var image = TagImage.blank(
                profile: .icodeSLIX2, uid: ChipProfile.icodeSLIX2.makeUID(serial: UInt64(i) * 0x0101_0003))
            image.blocks[0] = Array("PAL-".utf8)
            image.blocks[1] = Array(String(format: "%04d", i).utf8)
            field.add(SimulatedTag(image: image))
        }
        for i in 1...2 {
            field.add(
                SimulatedTag(image: .blank(profile: .st25dv64k, uid: ChipProfile.st25dv64k.makeUID(serial: UInt64(i)))))
        }
        return field
    }

    func run(inventoryRead: Bool) throws -> (first: CycleReport, steady: CycleReport, readings: [String], agent: Agent)
    {
        let field = field()
        let session = ReaderSession(reader: SimulatorReader.switchedOn(field))
        let config = try AgentConfig.parse(Self.config(inventoryRead: inventoryRead), file: "test.toml")
        let store = try Store(path: scratchPath("agent.db"))
        try store.registerFields(config.fieldInfos)
        let agent = Agent(
            config: config, rules: try RuleSet.parse("", file: "rules.toml"), register: nil, session: session,
            writer: StoreWriter(store: store, batchSize: 50, flushIntervalMs: 2000),
            clock: SimulatedClock(start: 1_763_800_000_000))
        let first = agent.cycle()
        let steady = agent.cycle()
        agent.writer.commitNow()
        let readings = try store.readings().map { "\($0.uid) \($0.block) \(Hex.format($0.data)) \($0.decoded ?? "")" }
            .sorted()
        return (first, steady, readings, agent)
    }

    @Test func aPalletOfICODETagsIsReadWithItsInventory() throws {
        #expect(
            try AgentConfig.parse(Self.config(inventoryRead: true), file: "t.toml").inventoryReadRange
                == PlanRead(first: 0, count: 2))
        let plain = try run(inventoryRead: false)
        let read = try run(inventoryRead: true)
        // Every tag found, the very same readings (data and decoded fields) both ways.
        #expect(read.first.tags.count == 14 && Set(read.first.tags) == Set(plain.first.tags))
        #expect(read.readings == plain.readings && read.readings.count == 28)
        #expect(read.readings.contains { $0.contains("{\"pallet\":\"PAL-0007\"}") })
        // No separate reads for the 12 ICODE tags: fewer exchanges and less air time in the arrival cycle.
        #expect(
            read.first.exchanges < plain.first.exchanges && read.first.airTime < plain.first.airTime,
            "\(read.first.exchanges) vs \(plain.first.exchanges) exchanges, \(read.first.airTime) vs \(plain.first.airTime)"
        )
        #expect(read.first.airTime >= read.first.lowerBound)
        // The steady cycle is untouched: 14 addressed reads and the silent one-slot probe.
        #expect(
            read.steady.exchanges == 15 && read.steady.airTime == plain.steady.airTime && read.steady.readings == 14)
        #expect(read.agent.counters.errorTotal == 0 && read.agent.counters.arrivals == 14)
    }

    @Test func aPlanNeedingLockStatusOrNoICODEPlanGivesNoRange() throws {
        let security = Self.config(inventoryRead: true).replacingOccurrences(
            of: """
                  [[plan.field]]
                  name = "pallet"
                """,
            with: """
                  [[plan.read]]
                  first = 0x00
                  security = true
                  [[plan.field]]
                  name = "pallet"
                """)
        // The field still needs blocks 0–1 without lock status, so those are the range.
        #expect(try AgentConfig.parse(security, file: "t.toml").inventoryReadRange == PlanRead(first: 0, count: 2))
        let stOnly = """
            [[plan]]
            name = "machine"
            match.model = "ST25DV64K"
              [[plan.read]]
              first = 0x00
            """
        #expect(try AgentConfig.parse(stOnly, file: "t.toml").inventoryReadRange == nil)
        // Asking for it anyway, or without Stay Quiet, is a configuration error that says why.
        #expect { try AgentConfig.parse("[polling]\ninventory-read = true\n" + stOnly, file: "t.toml") } throws: {
            "\($0)".contains("no plan that can match an ICODE chip")
        }
        #expect {
            try AgentConfig.parse(
                Self.config(inventoryRead: true) + "\n[[reader]]\nid = \"r\"\ndriver = \"sim\"\nstay-quiet = false\n",
                file: "t.toml")
        } throws: { "\($0)".contains("needs stay-quiet") }
        #expect(throws: (any Error).self) { try AgentConfig.parse("[polling]\ninventory-read = 3\n", file: "t.toml") }
    }
}
