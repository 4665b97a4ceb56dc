import Foundation
import ISO15693
import Readers
import SensorTags
import TagImages
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import TagSimulator
@testable import VLoggerCore
import DriverSim

/// An ST SmarTag on an ST25DV (docs/reference/sensor-tags.md, "ST SmarTag"): the record found as ST's app finds it,
/// the ring read oldest first with ST's timestamp and value packing, a wrapped ring's lost samples skipped, and a
/// cold-chain excursion in its log judged by a range rule: one violation with the record times of its start and end.
@Suite(.serialized, .drivers) struct SmarTagLogTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("IntegrationTests/Fixtures/smartag-field/smartag-truck-04.json")

    static func field(_ image: TagImage) -> ISO15693Client {
        let field = SimulatedField()
        field.add(SimulatedTag(image: image))
        return ReaderSession(reader: SimulatorReader.switchedOn(field)).client
    }

    static func fixtureImage() throws -> TagImage {
        try TagImageFormat.vlogger.decode(String(contentsOf: fixture, encoding: .utf8))
    }

    /// The calendar: `date -u -d @1764050400` prints Tue Nov 25 06:00:00 UTC 2025; 1709251199 is 2024-02-29T23:59:59Z
    /// (a leap day); the packing as ST's `GregorianCalendarExt.kt` (year − 2018 in bits 31–26).
    @Test func timestampsAsUTC() {
        let t = SmarTag.Timestamp(cell: SmarTag.Timestamp.cell(unixSeconds: 1_764_050_400))
        #expect(
            [t.year, t.month, t.day, t.hour, t.minute, t.second] == [2025, 11, 25, 6, 0, 0]
                && t.unixSeconds == 1_764_050_400)
        #expect(SmarTag.Timestamp.cell(unixSeconds: 1_764_050_400) == 0x1F36_6000)
        let leap = SmarTag.Timestamp(cell: SmarTag.Timestamp.cell(unixSeconds: 1_709_251_199))
        let fields: [Int] = [leap.year, leap.month, leap.day, leap.hour, leap.minute, leap.second]
        #expect(fields == [2024, 2, 29, 23, 59, 59])
        #expect(leap.unixSeconds == 1_709_251_199)
    }

    @Test func theLogIsTheSimulatorsSampleForSample() throws {
        let image = try Self.fixtureImage()
        let log = try #require(image.sensorLog)
        let client = Self.field(image)
        let uid = image.uid
        let kind = try #require(SensorKinds.kind(for: uid))
        #expect(kind.id == "smartag")
        let (info, records) = try kind.log(client, uid, from: 0) { _, _ in }
        #expect(info.recordCount == 48 && info.intervalSeconds == 600 && info.start == 1_764_050_400_000)
        #expect(records.count == log.celsius.count)
        for (i, r) in records.enumerated() {
            #expect(r.index == i && r.time == (1_764_050_400 + Int64(i) * 600) * 1000)
            #expect(r.values == [SensorValue("temperature", log.celsius[i], unit: "°C")], "record \(i)")
        }
        // From record 40 on: the last 8.
        #expect(try kind.log(client, uid, from: 40) { _, _ in }.records.map(\.index) == Array(40..<48))
    }

    @Test func aWrappedRingStartsAtItsOldestSample() throws {
        // An ST25DV04K-sized memory (128 blocks): the payload at block 8 leaves (127 − 8 − 16) / 2 = 51 slots; 60
        // samples wrap round, the first 9 are gone.
        var image = try TagImage(
            uid: UID(parsing: "E002240000000001"), blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 128))
        var log = SensorLogImage(kind: "smartag", startSeconds: 1_764_050_400, intervalSeconds: 60)
        log.celsius = (0..<60).map { Double($0 % 20) }
        image.sensorLog = log
        let client = Self.field(image)
        let (info, records) = try SmarTagKind().log(client, image.uid, from: 0) { _, _ in }
        #expect(info.recordCount == 60)
        #expect(records.map(\.index) == Array(9..<60))
        #expect(records.first?.time == Millis((1_764_050_400 + 9 * 60) * 1000))
        #expect(records.map { $0.values.first?.value } == (9..<60).map { Double($0 % 20) })
    }

    @Test func anExcursionInTheLogIsOneViolation() throws {
        let image = try Self.fixtureImage()
        let client = Self.field(image)
        let store = try Store(path: scratchPath("smartag") + ".db")
        defer { store.close() }
        let writer = StoreWriter(store: store, gateway: "gw-dock", batchSize: 500, flushIntervalMs: 2000)
        let rule = Rule(
            name: "cold chain", severity: .critical, match: TagMatch(),
            check: RangeRule(field: "temperature", min: nil, max: 8), line: 1)
        let o = try SensorLogCollector(store: store, writer: writer, gateway: "gw-dock").collect(
            client, image.uid, kind: SmarTagKind(), reader: "dock-3", location: "Dock 3",
            now: { 1_764_600_000_000 }, rules: [rule])
        #expect(o.stored == 48)
        let v = try store.events(kind: .violation), ended = try store.events(kind: .violationEnded)
        #expect(v.count == 1 && ended.count == 1)
        // Records 14–18 (9, 10, 11, 10, 9 °C) from 08:20; record 19 (8 °C) is back within at 09:10.
        #expect(v.first?.time == Millis(1_764_050_400_000 + 14 * 600_000))
        #expect(
            v.first?.detail
                == "logged on the tag: temperature = 9 is above 8 from 2025-11-25T08:20:00.000Z to 2025-11-25T09:10:00.000Z on the tag (50m, 5 records from record 14)",
            "\(v.first?.detail ?? "-")")
        #expect(ended.first?.time == Millis(1_764_050_400_000 + 19 * 600_000))
    }

    @Test func anST25DVWithoutTheRecordIsNoSmarTag() throws {
        var blocks = Array(repeating: [UInt8](repeating: 0, count: 4), count: 2048)
        blocks[0] = [0xE2, 0x40, 0x00, 0x01]
        blocks[2] = [0x03, 0x00, 0xFE, 0x00]
        let image = try TagImage(
            uid: UID(parsing: "E002260000000002"), blockSize: 4, blocks: blocks, icReference: 0x26,
            profileID: "st25dv64k")
        #expect(throws: SensorFailure.self) {
            _ = try SmarTagKind().info(Self.field(image), image.uid, measure: false, wait: { _ in })
        }
    }

    /// Issue 46, item 3: a SmarTag header is believed only as far as the memory it describes holds. Over random logs
    /// (0 to twice the ring's samples, so some wrap) whose header's sample count and next-sample pointer are then
    /// overwritten with random values: every record the kind returns is a sample that was written (its time and value
    /// as the log has them), never an erased slot; a header that does not fit the ring is refused with its reason.
    /// The corrupt header of the issue (more samples than the ring holds, the pointer on an empty slot) gave 963
    /// readings of −40 °C on 6b52d4c.
    @Test func aCorruptHeaderNeverMakesPhantomReadings() throws {
        let kind = SmarTagKind()
        var state: UInt64 = 0x5EED_4646
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 11
        }
        let blocks = 64, origin = 8
        let slots = SmarTag.ringSlots(cells: blocks - 1 - origin)
        var refused = 0, believed = 0
        for round in 0..<200 {
            let n = Int(next() % UInt64(slots * 2 + 1))
            let samples = (0..<n).map { (Int64(1_764_050_400 + $0 * 600), Int(next() % 60) - 20) }
            var memory = SmarTag.memory(
                blockCount: blocks, intervalSeconds: 600, start: 1_764_050_400, samples: samples)
            let written = Set(samples.suffix(slots).map { "\($0.0 * 1000) \($0.1)" })
            if round > 0 {
                // Cell 15 of the payload: count (bits 15–0) and next-sample byte address (bits 31–16), little-endian.
                let at = (origin + 15) * 4
                let count = round % 3 == 0 ? UInt32(n + 1 + Int(next() % 2000)) : UInt32(next() % 65536)
                let pointer =
                    round % 5 == 0
                    ? UInt32(next() % 65536) : UInt32((origin + 16 + 2 * Int(next() % UInt64(slots))) * 4)
                let v = count | pointer << 16
                for k in 0..<4 { memory[at + k] = UInt8(truncatingIfNeeded: v >> (8 * k)) }
            }
            var image = try TagImage(
                uid: UID(parsing: "E002260000C0FFEE"), blockSize: 4,
                blocks: stride(from: 0, to: memory.count, by: 4).map { Array(memory[$0..<($0 + 4)]) },
                icReference: 0x26, profileID: "st25dv64k")
            image.sensorLog = nil
            let client = Self.field(image)
            do {
                let (_, records) = try kind.log(client, image.uid, from: 0) { _, _ in }
                believed += 1
                if round == 0 { #expect(records.count == min(n, slots), "the untouched header: every sample kept") }
                for r in records {
                    let t = try #require(r.time)
                    let c = try #require(r.values.first { $0.name == "temperature" }?.value)
                    #expect(written.contains("\(t) \(Int(c))"), "round \(round): a record not written: \(t) \(c)")
                }
            } catch {
                refused += 1
                #expect("\(error)".contains("SmarTag header not believed"), "round \(round): \(error)")
            }
        }
        // Every fifth round puts the pointer anywhere in 64 KiB (almost never on a slot of the ring): refused.
        #expect(believed >= 1 && refused >= 30, "believed \(believed), refused \(refused)")
        print("SmarTag headers: \(believed) believed, \(refused) refused of 200")
    }

    /// A firmware that stops its sample counter at the ring's size (ST's app reads a ring as full from
    /// `sampleCounter ≥ maxSample`, SmarTag.kt `readDataSample`): a header counting exactly the ring with its pointer
    /// past the start is believed, and the samples come oldest first from the pointer's slot.
    @Test func aSaturatedCounterIsAFullRing() throws {
        let blocks = 64, origin = 8
        let slots = SmarTag.ringSlots(cells: blocks - 1 - origin)
        let n = slots + 7
        let samples = (0..<n).map { (Int64(1_764_050_400 + $0 * 600), $0 % 30) }
        var memory = SmarTag.memory(blockCount: blocks, intervalSeconds: 600, start: 1_764_050_400, samples: samples)
        let at = (origin + 15) * 4
        memory[at] = UInt8(slots & 0xFF)
        memory[at + 1] = UInt8(slots >> 8)
        let image = try TagImage(
            uid: UID(parsing: "E002260000C0FFEE"), blockSize: 4,
            blocks: stride(from: 0, to: memory.count, by: 4).map { Array(memory[$0..<($0 + 4)]) }, icReference: 0x26)
        let (_, records) = try SmarTagKind().log(Self.field(image), image.uid, from: 0) { _, _ in }
        #expect(records.map { $0.time } == samples.suffix(slots).map { Optional($0.0 * 1000) })
    }
}
