import TagImages
import TestDrivers
import Testing
import ISO15693
import ISO15693Fuzzing
import TagSimulator
@testable import Readers
import DriverPCSC
import DriverSim

/// The PC/SC pseudo-APDUs as values. Facts: `docs/reference/reader-paths.md` §2.3 (PC/SC 2.02 Part 3
/// transparent exchange; ACR1552 driver: timer DO 5F 46 04 in µs big-endian) and the transcript of §3.6.
@Suite(.drivers) struct PCSCFrameTests {
    @Test func commandAPDUsOfTheTranscript() {
        #expect(PCSC.startSessionAPDU == [0xFF, 0xC2, 0x00, 0x00, 0x02, 0x81, 0x00, 0x00])
        #expect(PCSC.endSessionAPDU == [0xFF, 0xC2, 0x00, 0x00, 0x02, 0x82, 0x00, 0x00])
        #expect(PCSC.iso15693APDU == [0xFF, 0xC2, 0x00, 0x02, 0x04, 0x8F, 0x02, 0x02, 0x03, 0x00])
        // Get System Information, non-addressed: `FF C2 00 01 04 95 02 02 2B 00`.
        #expect(PCSC.exchangeAPDU([0x02, 0x2B]) == [0xFF, 0xC2, 0x00, 0x01, 0x04, 0x95, 0x02, 0x02, 0x2B, 0x00])
        // With a 1 s timer (ACR1552 driver): 5F 46 04 00 0F 42 40.
        #expect(
            PCSC.exchangeAPDU([0x02, 0x2B], timeoutMicroseconds: 1_000_000)
                == [
                    0xFF, 0xC2, 0x00, 0x01, 0x0B, 0x5F, 0x46, 0x04, 0x00, 0x0F, 0x42, 0x40, 0x95, 0x02, 0x02, 0x2B,
                    0x00,
                ])
    }

    @Test func responsesOfTheTranscriptAndItsFaults() throws {
        // The answer to Get System Information in the transcript: C0 ok, 92 valid bits, 96 status ok, 97 the answer.
        let gsi: [UInt8] = [
            0xC0, 0x03, 0x00, 0x90, 0x00, 0x92, 0x01, 0x00, 0x96, 0x02, 0x00, 0x00, 0x97, 0x0F,
            0x00, 0x0F, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0, 0x00, 0x00, 0x1B, 0x03, 0x01, 0x90, 0x00,
        ]
        #expect(
            try PCSC.outcome(of: gsi)
                == .answer([0x00, 0x0F, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0, 0x00, 0x00, 0x1B, 0x03, 0x01]))
        // no answer from the ICC
        #expect(try PCSC.outcome(of: [0xC0, 0x03, 0x01, 0x64, 0x01, 0x90, 0x00]) == .noAnswer)
        #expect(
            try PCSC.outcome(of: [0xC0, 0x03, 0x00, 0x90, 0x00, 0x96, 0x02, 0x01, 0x00, 0x90, 0x00])
                == .rfError(status: 0x01))
        #expect(
            try PCSC.outcome(of: [0xC0, 0x03, 0x01, 0x6A, 0x81, 0x90, 0x00]) == .readerError(sw: 0x6A81, object: 1))
        #expect(try PCSC.outcome(of: [0x6D, 0x00]) == .readerError(sw: 0x6D00, object: 0))
        // Malformed: a DO longer than the answer, a truncated 2-byte tag.
        #expect(throws: FrameError.self) { try PCSC.outcome(of: [0x97, 0x05, 0x00, 0x90, 0x00]) }
        #expect(throws: FrameError.self) { try PCSC.outcome(of: [0x5F, 0x90, 0x00]) }
        // Long lengths (0x81 form) round-trip.
        let long = PCSC.DataObject(0x97, [UInt8](repeating: 7, count: 200))
        #expect(Array(long.encoded.prefix(3)) == [0x97, 0x81, 0xC8])
        #expect(try PCSC.parse(long.encoded[...]) == [long])
    }

    @Test func atrOfAnICODETag() {
        // `3B 8F 80 01 80 4F 0C A0 00 00 03 06 0B 00 14 00 00 00 00 77` (pcsc-tools: Philips/NXP ICODE).
        #expect(
            PCSC.atr(cardName: PCSC.cardName(for: .nxp)) == [
                0x3B, 0x8F, 0x80, 0x01, 0x80, 0x4F, 0x0C, 0xA0, 0x00, 0x00, 0x03, 0x06,
                0x0B, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x77,
            ])
    }
}

/// A reader that only sends whole frames (as PC/SC readers do): no slot markers.
final class WholeFrameReader: TagReader {
    let inner: SimulatorReader
    init(_ inner: SimulatorReader) { self.inner = inner }
    var name: String { "whole frames" }
    var limits: ReaderLimits { inner.limits }
    var airTime: AirTime { inner.airTime }
    var trace: ((TraceEvent) -> Void)? {
        get { inner.trace }
        set { inner.trace = newValue }
    }
    func fieldOn() throws(ReaderError) { try inner.fieldOn() }
    func fieldOff() throws(ReaderError) { try inner.fieldOff() }
    func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        try inner.transceive(frame, wait: wait)
    }
    func nextSlot() throws(ReaderError) -> [UInt8] { throw .notSupported("no slot markers") }
    var supportsSlotMarkers: Bool { false }
}

@Suite(.drivers) struct OneSlotInventoryTests {
    @Test func theUIDTreeWalkFindsEveryTag() throws {
        // One-slot Inventory with the mask grown a bit per collision (ISO/IEC 15693-3: a one-slot request
        // with a mask is answered by the tags whose UID ends in it), including UIDs equal in their low 56 bits.
        var rng = DecoderFuzzer.Random(seed: 15)
        var uids = (0..<40).map { _ in UID(manufacturer: .nxp, serial: rng.next() & 0xFF_FFFF_FFFF) }
        uids += [
            UID(manufacturer: .nxp, serial: 0x01_0812_3456_7890), UID(manufacturer: .nxp, serial: 0x02_0812_3456_7890),
        ]
        let field = SimulatedField(
            tags: try uids.map { SimulatedTag(image: try TagImage(uid: $0, blockSize: 4, blocks: [[0, 0, 0, 0]])) })
        let reader = WholeFrameReader(SimulatorReader(field: field))
        try reader.fieldOn()
        let client = ISO15693Client(reader: reader)
        let found = try client.inventory()
        #expect(
            Set(found.map(\.uid)) == Set(uids) && found.count == Set(uids).count,
            "\(found.count) of \(uids.count) (\(Set(uids).count) distinct)")
        // A lone tag takes one exchange.
        let lone = SimulatedField(tags: [
            SimulatedTag(image: try TagImage(uid: uids[0], blockSize: 4, blocks: [[0, 0, 0, 0]]))
        ])
        let r1 = WholeFrameReader(SimulatorReader(field: lone))
        try r1.fieldOn()
        let c1 = ISO15693Client(reader: r1)
        #expect(try c1.inventory().map(\.uid) == [uids[0]] && c1.exchanges == 1)
    }
}
