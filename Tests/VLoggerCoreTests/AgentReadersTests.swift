import DriverPCSC
import DriverPN5180
import DriverSim
import Foundation
import ISO15693
import ISO15693Fuzzing
import PN5180Emulator
import Readers
import TagImages
import TagSimulator
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import VLoggerCore

/// Issue 52: the polling agent over the new readers, not only the simulator — the PN5180 driver on its fake chip
/// (16-slot rounds with EOF slot markers) and the PC/SC driver's OMNIKEY and Identiv codecs (one-slot tree walk),
/// APDU by APDU (`EnvelopeLoopback`). Twenty SLIX2 tags with random UIDs and a plan reading two blocks and the whole
/// memory (80 blocks, one reading: one exchange on a PN5180, whose buffer takes 508 bytes; two chunks on the PC/SC
/// readers' 236): every tag arrives in the first cycle and is read once per cycle, Stay Quiet keeps the found tags out of
/// later inventories, a queued write to one tag is made and read back while its neighbour stays byte-identical, a
/// tag taken out of the field in the middle of its plan stores nothing of that cycle, and it is departed after the
/// configured cycles.
@Suite(.serialized, .drivers) struct AgentReadersTests {
    static let config = """
        [gateway]
        id = "gw-readers"
        [polling]
        interval = "1s"
        slots = "adaptive"
        stay-quiet = true
        departure-cycles = 2
        [[plan]]
        name = "label"
        match.model = "ICODE SLIX2"
          [[plan.read]]
          first = 0x04
          count = 2
          [[plan.read]]
          first = 0x00
          count = 80
        """

    enum Path: String, CaseIterable { case pn5180, omnikey, identiv }

    /// The reader of `path` over `field`, and where to hook a look at each frame before the field answers it.
    static func reader(_ path: Path, _ field: SimulatedField) throws -> (
        TagReader, (@escaping ([UInt8]) -> Void) -> Void
    ) {
        switch path {
        case .pn5180:
            let fake = FakePN5180(field: field)
            let r = PN5180Reader(link: PN5180Link(pins: fake), name: "PN5180 (fake)")
            try r.fieldOn()
            return (r, { fake.beforeFrame = $0 })
        case .omnikey, .identiv:
            let r = EnvelopeLoopback(
                path == .omnikey ? .omnikey : .identiv, SimulatorReader(field: field), crc: path == .identiv)
            try r.fieldOn()
            return (r, { r.beforeFrame = $0 })
        }
    }

    @Test(arguments: Path.allCases) func twentyTagsPolledThrough(_ path: Path) throws {
        var rng = DecoderFuzzer.Random(seed: 52)
        var uids: [UID] = []
        while uids.count < 20 {
            // E0 04 01 08 and 32 random bits: the UID says ICODE SLIX2 (type 0x01, indicator 0b01: docs/reference/chip-codes.md §7).
            let u = UID(manufacturer: .nxp, serial: 0x0108_0000_0000 | (rng.next() & 0xFFFF_FFFF))
            if !uids.contains(u) { uids.append(u) }
        }
        let field = SimulatedField()
        for u in uids {
            var image = TagImage.blank(profile: .icodeSLIX2, uid: u)
            image.blocks[4] = Array("LBL-".utf8)
            image.blocks[5] = Array(u.description.suffix(4).utf8)
            field.add(SimulatedTag(image: image, profile: .icodeSLIX2))
        }
        let config = try AgentConfig.parse(Self.config, file: "test.toml")
        let store = try Store(path: scratchPath("agent-\(path).db"))
        try store.registerFields(config.fieldInfos)
        let (target, neighbour) = (uids[2], uids[9])
        _ = try store.enqueue(QueuedWrite(created: 1_763_800_000_000, uid: target, first: 0x10, data: [1, 2, 3, 4]))
        let pending = PendingWrites()
        try pending.refresh(from: store)
        let (reader, hook) = try Self.reader(path, field)
        let agent = Agent(
            config: config, rules: RuleSet(), register: nil, session: ReaderSession(reader: reader),
            writer: StoreWriter(store: store, batchSize: 500, flushIntervalMs: 2000),
            clock: SimulatedClock(start: 1_763_800_000_000))
        agent.writeQueue = pending
        let before = try #require(field.tag(neighbour)).image.blocks
        agent.run(cycles: 3, stop: StopSignal())
        agent.writer.commitNow()
        #expect(agent.counters.arrivals == 20 && agent.counters.errorTotal == 0, "\(path): \(agent.counters)")
        for u in uids {
            let readings = try store.readings(uid: u)
            // The plan's two ranges come as one reading of blocks 0–79 a cycle (the planner merges them).
            #expect(readings.count == 3, "\(path): \(u) has \(readings.count) readings after 3 cycles")
            #expect(readings.allSatisfy { $0.block == 0x00 && $0.data.count == 320 })
            #expect(readings.allSatisfy { Array($0.data[16..<20]) == Array("LBL-".utf8) })
        }
        // Found tags stay quiet: a steady cycle is the 20 reads and one inventory exchange that nobody answers (the 20
        // tags answering would take dozens).
        // (A run ends by waking its quiet tags: the first cycle after it finds and quiets them again.)
        agent.cycle()
        let steady = agent.cycle()
        let planReads = path == .pn5180 ? 20 : 40
        #expect(steady.exchanges == planReads + 1 && steady.readings == 20, "\(path): \(steady.exchanges) exchanges")
        #expect(try store.queuedWrite(1)?.state == .done)
        #expect(field.tag(target)?.image.blocks[0x10] == [1, 2, 3, 4] && field.tag(neighbour)?.image.blocks == before)
        // A tag taken out of the field at its second Read Multiple Blocks of a run (its first cycle's read, then the
        // next one's; on PC/SC its second chunk, in the middle of a reading): nothing of that reading is stored; it is
        // departed after two cycles without it; the others are read on.
        let leaving = uids[0]
        agent.writer.commitNow()
        let stored = try store.readings(uid: leaving).count
        var reads = 0
        hook { frame in
            if frame.count >= 10, frame[1] == 0x23, Array(frame[2..<10]) == leaving.onAirBytes,
                field.tag(leaving) != nil
            {
                reads += 1
                if reads == 2 { _ = field.remove(leaving) }
            }
        }
        for _ in 1...3 { agent.cycle() }
        agent.writer.commitNow()
        #expect(reads == 2 && field.tag(leaving) == nil, "\(path): \(reads) reads of the leaving tag")
        #expect(
            try store.readings(uid: leaving).count == stored + (path == .pn5180 ? 1 : 0), "\(path): a half-read stored")
        #expect(try store.events(kind: .departure).map(\.uid) == [leaving], "\(path)")
        #expect(try store.readings(uid: uids[1]).count == 8)
    }
}
