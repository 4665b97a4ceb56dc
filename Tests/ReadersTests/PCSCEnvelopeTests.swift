import DriverPCSC
import DriverSim
import ISO15693
import ISO15693Fuzzing
import TagImages
import TagSimulator
import TestDrivers
import Testing

@testable import Readers

/// The vendor envelopes of PC/SC readers (docs/reference/reader-paths.md §2.6): HID OMNIKEY's
/// `FF 68 0E 03` against the public exchanges of an OMNIKEY 5022CL with an NTAG 5, replayed byte for byte, and
/// Identiv's `FF FD` against its reference manual's command form. Then the client's inventory, reads and writes run
/// through each codec, APDU by APDU, over the simulated field.
@Suite(.drivers) struct PCSCEnvelopeTests {
    /// VivoKey/ntag5sensor @ 442a1db8f0f8c18f9868eb117bae0d9260250297, doc/ACS/ACR1552U_reader_transcieve_commands.txt:
    /// NXP READ CONFIG (C0, manufacturer 04, 3D, block count − 1) of an NTAG 5 through an OMNIKEY 5022CL, then the same
    /// five reads through an ACR1552U's transparent exchange. The tag's answers (the flags byte and 4 bytes a block).
    static let answers: [[UInt8]] = [
        [0x00, 0x00, 0x00, 0x0A, 0x00],
        [0x00, 0x00, 0x00, 0x0A, 0x00, 0x54, 0x00, 0x09, 0x02],
        [0x00, 0x00, 0x00, 0x0A, 0x00, 0x54, 0x00, 0x09, 0x02, 0xA5, 0x00, 0xFF, 0xFF],
        [0x00, 0x00, 0x00, 0x0A, 0x00, 0x54, 0x00, 0x09, 0x02, 0xA5, 0x00, 0xFF, 0xFF, 0x81, 0xFC, 0x5E, 0xCF],
        [
            0x00, 0x00, 0x00, 0x0A, 0x00, 0x54, 0x00, 0x09, 0x02, 0xA5, 0x00, 0xFF, 0xFF, 0x81, 0xFC, 0x5E, 0xCF, 0x1F,
            0x1F, 0x17, 0x14,
        ],
    ]

    @Test func omnikeyExchangesOfThePublicTrace() throws {
        for (n, answer) in Self.answers.enumerated() {
            let frame: [UInt8] = [0x02, 0xC0, 0x04, 0x3D, UInt8(n)]
            // `FF 68 0E 03 0F 05 00 00 00 00 00 00 00 00 00 02 C0 04 3D 0N` (the trace's command, no Le).
            let command: [UInt8] =
                [0xFF, 0x68, 0x0E, 0x03, 0x0F, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00] + frame
            #expect(PCSC.Omnikey.apdu(frame) == command)
            #expect(PCSC.Omnikey.frame(in: command) == frame)
            // `00 00 <answer> 90 00`: STS 00, RXB 00, then the tag's answer without its CRC.
            let response: [UInt8] = [0x00, 0x00] + answer + [0x90, 0x00]
            #expect(try PCSC.Omnikey.outcome(of: response) == .answer(answer))
            // The same read through the ACR1552U's FF C2 carries the same bytes in DO 97.
            let acs: [UInt8] =
                [0xC0, 0x03, 0x00, 0x90, 0x00, 0x92, 0x01, 0x00, 0x96, 0x02, 0x00, 0x00, 0x97, UInt8(answer.count)]
                + answer + [0x90, 0x00]
            #expect(try PCSC.outcome(of: acs) == .answer(answer))
            #expect(
                PCSC.exchangeAPDU(frame) == [0xFF, 0xC2, 0x00, 0x01, 0x07, 0x95, 0x05] + frame + [0x00],
                "the ACR1552U command of the same file")
        }
        // Not an answer: too short, a refused instruction, a silent tag, an unclean answer.
        #expect(throws: FrameError.self) { try PCSC.Omnikey.outcome(of: [0x00, 0x90, 0x00]) }
        #expect(throws: FrameError.self) { try PCSC.Omnikey.outcome(of: [0x90]) }
        #expect(try PCSC.Omnikey.outcome(of: [0x6D, 0x00]) == .readerError(sw: 0x6D00, object: 0))
        #expect(try PCSC.Omnikey.outcome(of: [0x00, 0x00, 0x90, 0x00]) == .noAnswer)
        #expect(try PCSC.Omnikey.outcome(of: [0x01, 0x00, 0x90, 0x00]) == .noAnswer)
        #expect(try PCSC.Omnikey.outcome(of: [0x02, 0x00, 0xFF, 0x90, 0x00]) == .rfError(status: 0x02))
        #expect(PCSC.Omnikey.frame(in: [0xFF, 0x68, 0x0E, 0x03, 0x20] + Array(repeating: 0, count: 12)) == nil)
    }

    /// uTrust 3720F reference manual §6.3.7.12 (FWT codes 00…14) and §6.3.6's my-d move Access, `FF FD 04 01 05 B2
    /// <password> 00`: FWT code 04 (10 ms), frame type 01, the command without its CRC.
    @Test func identivCommandsOfTheManual() throws {
        #expect(PCSC.Identiv.waitingTimeCode(500) == 0x00 && PCSC.Identiv.waitingTimeCode(10_000) == 0x04)
        #expect(PCSC.Identiv.waitingTimeCode(20_000) == 0x05 && PCSC.Identiv.waitingTimeCode(50_000) == 0x06)
        #expect(PCSC.Identiv.waitingTimeCode(1_000_000) == 0x0C && PCSC.Identiv.waitingTimeCode(9_000_000) == 0x14)
        let access: [UInt8] = [0xB2, 0x11, 0x22, 0x33, 0x44]
        let command = PCSC.Identiv.apdu(access, waitMicroseconds: 10_000)
        #expect(command == [0xFF, 0xFD, 0x04, 0x01, 0x05, 0xB2, 0x11, 0x22, 0x33, 0x44, 0x00])
        #expect(PCSC.Identiv.frame(in: command)?.frame == access && PCSC.Identiv.frame(in: command)?.waitCode == 4)
        // The answers are the bench's reading (no public Traverse exchange with an ISO 15693 tag exists): the tag's
        // bytes and 90 00, with or without its CRC; 64 xx silent, 6F 00 unclean; 6D 00 not this reader's.
        let answer = Self.answers[1]
        #expect(try PCSC.Identiv.outcome(of: answer + [0x90, 0x00], crcIncluded: false) == .answer(answer))
        #expect(
            try PCSC.Identiv.outcome(of: CRC16.appending(to: answer) + [0x90, 0x00], crcIncluded: true)
                == .answer(answer))
        #expect(
            try PCSC.Identiv.outcome(of: answer + [0x00, 0x00, 0x90, 0x00], crcIncluded: true)
                == .rfError(status: PCSC.statusCRC))
        #expect(try PCSC.Identiv.outcome(of: [0x64, 0x01], crcIncluded: false) == .noAnswer)
        #expect(try PCSC.Identiv.outcome(of: [0x90, 0x00], crcIncluded: false) == .noAnswer)
        #expect(try PCSC.Identiv.outcome(of: [0x6F, 0x00], crcIncluded: false) == .rfError(status: PCSC.statusCRC))
        #expect(try PCSC.Identiv.outcome(of: [0x6D, 0x00], crcIncluded: false) == .readerError(sw: 0x6D00, object: 0))
        #expect(PCSC.refusesEnvelope(0x6D00) && PCSC.refusesEnvelope(0x6E00) && !PCSC.refusesEnvelope(0x6401))
    }

    /// Whether an Identiv reader passes the CRC on, from its answer to a one-slot Inventory: the TI tag's answer of
    /// Proxmark3's traces/hf_15_reader.trace (Tests/Fixtures/public/SOURCES.md), 12 bytes on the air, and the same
    /// without its CRC.
    @Test func identivCRCHabitFromTheInventoryAnswer() throws {
        let onAir: [UInt8] = CRC16.appending(to: [0x00, 0x00, 0x83, 0x60, 0x79, 0x3E, 0x98, 0x80, 0x07, 0xE0])
        #expect(PCSC.Identiv.crcIncluded(inventoryAnswer: onAir) == true)
        #expect(PCSC.Identiv.crcIncluded(inventoryAnswer: Array(onAir.prefix(10))) == false)
        #expect(PCSC.Identiv.crcIncluded(inventoryAnswer: [0x01, 0x0F]) == nil)
    }

    /// The reader's name picks the codec tried first (libccid's names: "HID Global OMNIKEY 5022 Smart Card Reader",
    /// "Identiv uTrust 3700 F CL Reader", "SCM Microsystems Inc. SCL01x Contactless Reader"); the storage-card
    /// commands are always last.
    @Test func theReadersNameOrdersTheProbes() {
        #expect(
            PCSC.Codec.probeOrder(readerName: "HID Global OMNIKEY 5022 Smart Card Reader [OMNIKEY 5022] 00 00").first
                == .omnikey)
        #expect(
            PCSC.Codec.probeOrder(readerName: "Identiv uTrust 3700 F CL Reader (55072290205) 00 00").first == .identiv)
        #expect(PCSC.Codec.probeOrder(readerName: "SCM Microsystems Inc. SCL01x Contactless Reader").first == .identiv)
        #expect(PCSC.Codec.probeOrder(readerName: "ACS ACR1552 1S CL Reader PICC 00 00").first == .transparent)
        for name in ["OMNIKEY", "uTrust", "ACS", "Virtual PCD 00 00"] {
            #expect(PCSC.Codec.probeOrder(readerName: name).last == .storage)
            #expect(Set(PCSC.Codec.probeOrder(readerName: name)) == Set(PCSC.Codec.allCases))
        }
    }

    /// Each codec end to end in memory: the client's frame wrapped as the driver wraps it, unwrapped and answered by
    /// the simulated field as the test bench answers it, the answer read as the driver reads it (`PCSCReader.answer`).
    /// The one-slot UID tree walk finds every one of 40 random tags, blocks are read in chunks and
    /// written verified, an addressed write leaves the other tag byte-identical, and a tag that left is no answer.
    @Test(arguments: [PCSC.Codec.transparent, .omnikey, .identiv])
    func theClientThroughEachCodec(_ codec: PCSC.Codec) throws {
        var rng = DecoderFuzzer.Random(seed: 52)
        var uids: [UID] = []
        while uids.count < 40 {
            let u = UID(manufacturer: .nxp, serial: rng.next() & 0xFF_FFFF_FFFF)
            if !uids.contains(u) { uids.append(u) }
        }
        let blocks = (0..<64).map { [UInt8($0), 0xA5, 0x5A, UInt8(255 - $0)] }
        let field = SimulatedField(
            tags: try uids.map {
                SimulatedTag(image: try TagImage(uid: $0, blockSize: 4, blocks: blocks), profile: .icodeSLIX2)
            })
        let reader = EnvelopeLoopback(codec, SimulatorReader(field: field), crc: codec == .identiv)
        try reader.fieldOn()
        let client = ISO15693Client(reader: reader)
        let found = try client.inventory()
        #expect(Set(found.map(\.uid)) == Set(uids) && found.count == uids.count, "\(codec): \(found.count) found")
        #expect(reader.apdus > uids.count)
        let (a, b) = (uids[0], uids[1])
        let read = try client.readBlocks(a, first: 0, count: 64)
        #expect(read.map(\.data) == blocks)
        let before = try #require(field.tag(b)).image.blocks
        let report = try client.writeBlocks(a, first: 10, blocks: [[1, 2, 3, 4], [5, 6, 7, 8]], verify: true)
        #expect(report.verified && field.tag(a)?.image.blocks[10] == [1, 2, 3, 4])
        #expect(field.tag(b)?.image.blocks == before)
        field.remove(b)
        #expect(throws: ClientError.self) { try client.readBlocks(b, first: 0, count: 1) }
    }
}
