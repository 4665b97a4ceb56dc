import FEIG
import ISO15693
import TestDrivers
import Testing

/// FEIG host-protocol frames. The four real frames are advanced frames of FEIG's buffered read mode as sent by
/// an independent implementation (shahu1200/FastGate, components/python-itek-feig/itekfeig/common/
/// feig_buffer_read.py, quoted in docs/reference/feig-host-protocol.md): their CRC bytes were computed by
/// that code, not by ours.
@Suite(.drivers) struct FEIGFrameTests {
    static let realFrames: [(hex: String, command: UInt8, data: [UInt8])] = [
        ("02 00 07 FF 33 DD 56", 0x33, []),  // Initialize Buffer
        ("02 00 07 FF 32 54 47", 0x32, []),  // Clear Data Buffer
        ("02 00 07 FF 31 CF 75", 0x31, []),  // Read Data Buffer Info
        ("02 00 09 FF 22 00 FF 79 69", 0x22, [0x00, 0xFF]),  // Read Buffer, 255 data sets
    ]

    @Test func realFramesDecodeAndEncodeByteForByte() throws {
        for f in Self.realFrames {
            let bytes = try Hex.parse(f.hex)
            let frame = try FEIGFrame.decode(bytes, direction: .request)
            #expect(
                frame.advanced && frame.address == 0xFF && frame.command == f.command && frame.data == f.data,
                "\(f.hex)")
            #expect(frame.encoded() == bytes, "\(f.hex)")
            // CRC-16/MCRF4XX of the bytes before the CRC, sent least-significant byte first.
            let crc = CRC16.mcrf4xx(bytes.dropLast(2))
            #expect([UInt8(crc & 0xFF), UInt8(crc >> 8)] == Array(bytes.suffix(2)))
        }
    }

    /// Real traffic of an ID ISC.LR1002 (a host's log posted on the ST community forum, thread "Error 0x12 when
    /// writing multiple blocks on ST25DV16KC", community.st.com …/td-p/76952; Tests/FEIGTests/FEIG-FACTS.md
    /// §1.8): an Inventory and its reply with two ST tags, a Write Multiple Blocks and its 0x95 reply.
    @Test func realLR1002TrafficDecodes() throws {
        let inventory = try FEIGFrame.decode(try Hex.parse("02 00 09 FF B0 01 00 18 43"), direction: .request)
        #expect(
            inventory.command == 0xB0 && inventory.data == [0x01, 0x00]
                && inventory.explanation.contains("ISO 15693 command: Inventory (0x01)"))
        // The reader at COM-ADR 0x00 answers the broadcast: 2 data sets, each TR-TYPE 0x03 (ISO 15693), DSFID,
        // and the UID most-significant byte first (E0, then ST's code 0x02).
        let reply = try FEIGFrame.decode(
            try Hex.parse("02 00 1D 00 B0 00 02 03 00 E0 02 51 00 02 56 4A A4 03 00 E0 02 23 00 18 89 2B 09 E3 00"),
            direction: .reply)
        #expect(reply.address == 0x00 && reply.status == 0x00 && reply.data.count == 1 + 2 * 10 && reply.data[0] == 2)
        let uids = try [1, 11].map { try UID(parsing: Hex.format(reply.data[($0 + 2)..<($0 + 10)], separator: "")) }
        #expect(uids.map(\.description) == ["E002510002564AA4", "E002230018892B09"])
        #expect(uids.allSatisfy { $0.manufacturer.rawValue == 0x02 })
        let write = try FEIGFrame.decode(
            try Hex.parse(
                """
                02 00 34 FF B0 24 01 E0 02 51 00 02 56 4A A4 00 08 04 04 03 02 01 70 60 00 05 0B A0 90 80 0F 0E 0D 0C 13 12 11 10 00 16 15 14 00 00 00 00 00 00 00 00 18 18
                """), direction: .request)
        #expect(
            write.explanation.contains("ISO 15693 command: Write Multiple Blocks (0x24)")
                && write.explanation.contains("MODE 0x01: addressed (the UID follows)"))
        // DB-ADR 0, DB-N 8, DB-SIZE 4, then 32 bytes of block data.
        #expect(Array(write.data[10...12]) == [0x00, 0x08, 0x04] && write.data.count == 13 + 32)
        // STATUS 0x95: the tag's ISO error 0x12 "block locked" (ISO/IEC 15693-3 Table 7), then DB-ADR-E 0.
        let refused = try FEIGFrame.decode(try Hex.parse("02 00 0A 00 B0 95 12 00 94 29"), direction: .reply)
        #expect(refused.status == FEIGStatus.iso15693Error.rawValue && refused.data == [0x12, 0x00])
        #expect(refused.explanation.contains { $0.hasPrefix("tag's ISO error: 0x12") })
        // Every frame re-encodes byte for byte (advanced, as sent).
        for f in [inventory, reply, write, refused] {
            #expect(try FEIGFrame.decode(f.encoded(), direction: f.direction) == f)
        }
    }

    /// Reader-control frames as FastGate's python-itek-feig sends them (feig_base.py; CRCs checked in
    /// FEIG-FACTS.md §1.8): Get Software Version, Get Reader Info mode 0, CPU Reset, RF Reset.
    @Test func readerControlFramesAreNamed() throws {
        for (hex, name) in [
            ("02 00 07 FF 65 6E 61", "Get Software Version [0x65]"),
            ("02 00 08 FF 66 00 88 12", "Get Reader Info [0x66]"),
            ("02 00 07 FF 63 58 04", "CPU Reset [0x63]"), ("02 00 07 FF 69 02 AB", "RF Reset [0x69]"),
        ] {
            let f = try FEIGFrame.decode(try Hex.parse(hex), direction: .request)
            #expect(f.explanation.contains("command: \(name)"), "\(hex): \(f.explanation)")
        }
    }

    @Test func mcrf4xxCheckValue() {
        // The catalogue check value of CRC-16/MCRF4XX over "123456789" is 0x6F91 (Greg Cook's CRC catalogue,
        // reveng.sourceforge.io/crc-catalogue/16.htm); CRC-16/X-25 (ISO 13239, the air CRC) is 0x906E, its complement.
        #expect(CRC16.mcrf4xx(Array("123456789".utf8)) == 0x6F91)
        #expect(CRC16.compute(Array("123456789".utf8)) == 0x906E)
    }

    @Test func standardFramesAndTheSwitchToAdvanced() throws {
        // LEN counts the whole frame: LEN, COM-ADR, CONTROL, data, two CRC bytes.
        let inventory = FEIGFrame(request: FEIGCommand.isoHost, data: [0x01, 0x00], address: 0x01).encoded()
        #expect(inventory.count == 7 && inventory[0] == 7 && Array(inventory[1...4]) == [0x01, 0xB0, 0x01, 0x00])
        #expect(
            try FEIGFrame.decode(inventory, direction: .request)
                == FEIGFrame(request: 0xB0, data: [0x01, 0x00], address: 0x01))
        // A reply has STATUS after CONTROL.
        let reply = FEIGFrame(reply: 0xB0, status: 0x01, address: 0x01).encoded()
        #expect(reply.count == 6 && reply[0] == 6 && reply[3] == 0x01)
        #expect(try FEIGFrame.decode(reply, direction: .reply).status == FEIGStatus.noTransponder.rawValue)
        // Past 255 bytes a frame can only be advanced: 0x02, two length bytes (MSB first) counting the whole frame.
        let big = FEIGFrame(reply: 0x22, status: 0x00, data: [UInt8](repeating: 0xA5, count: 300)).encoded()
        #expect(big[0] == 0x02 && Int(big[1]) << 8 | Int(big[2]) == big.count && big.count == 3 + 3 + 300 + 2)
        #expect(try FEIGFrame.decode(big, direction: .reply).data.count == 300)
        #expect(FEIGFrame.expectedLength(big.prefix(3)) == big.count && FEIGFrame.expectedLength(big.prefix(2)) == nil)
    }

    @Test func badFramesAreTypedErrors() throws {
        let good = try Hex.parse("02 00 07 FF 33 DD 56")
        #expect(throws: FEIGFrameError.badCRC(expected: 0x56DD, got: 0x56DC)) {
            try FEIGFrame.decode(Array(good.dropLast(2)) + [0xDC, 0x56], direction: .request)
        }
        #expect(throws: FEIGFrameError.truncated(got: 6, declared: 7)) {
            try FEIGFrame.decode(Array(good.dropLast()), direction: .request)
        }
        #expect(throws: FEIGFrameError.trailingBytes(got: 8, declared: 7)) {
            try FEIGFrame.decode(good + [0], direction: .request)
        }
        #expect(throws: FEIGFrameError.tooShort(got: 0, need: 5)) { try FEIGFrame.decode([], direction: .request) }
        #expect(throws: FEIGFrameError.tooShort(got: 1, need: 7)) { try FEIGFrame.decode([0x02], direction: .request) }
        #expect(throws: FEIGFrameError.badLength(declared: 3, minimum: 5)) {
            try FEIGFrame.decode([0x03, 0xFF, 0xB0], direction: .request)
        }
        // A reply needs its STATUS byte: a 5-byte standard frame is a request at most.
        #expect(throws: FEIGFrameError.badLength(declared: 5, minimum: 6)) {
            try FEIGFrame.decode(FEIGFrame(request: 0x65).encoded(), direction: .reply)
        }
        // Every message says what is wrong in words.
        #expect(
            "\(FEIGFrameError.badCRC(expected: 0x56DD, got: 0x56DC))".contains(
                "CRC mismatch: the frame carries DC 56, its bytes give DD 56"))
    }

    @Test func explanationNamesCommandStatusAndTheTagsISOError() throws {
        // [0xB0] carries ISO/IEC 15693-3's command codes: 0x23 Read Multiple Blocks, MODE 0x01 addressed.
        let read = FEIGFrame(request: 0xB0, data: [0x23, 0x01] + [UInt8](repeating: 0, count: 8) + [0x00, 0x03])
        #expect(read.explanation.contains("ISO 15693 command: Read Multiple Blocks (0x23)"))
        #expect(read.explanation.contains("MODE 0x01: addressed (the UID follows)"))
        // MODE 0x29: addressed, SEC (bit 3), EXT_ADR (bit 5) with BANK 0x03 and block 0x07F0 (ID ISC.MR102 p. 105).
        let wide = FEIGFrame(
            request: 0xB0, data: [0x23, 0x29] + [UInt8](repeating: 0, count: 8) + [0x03, 0x07, 0xF0, 0x04])
        #expect(
            wide.explanation.contains(
                "MODE 0x29: addressed (the UID follows), SEC (with each block's security status), EXT_ADR (BANK 0x03, block 0x07F0)"
            ))
        // STATUS 0x95 carries the tag's ISO error code: 0x12 "block locked" (ISO/IEC 15693-3 Table 7).
        let locked = FEIGFrame(reply: 0xB0, status: 0x95, data: [0x12])
        #expect(locked.explanation.contains("status: 0x95 ISO 15693 error (the tag's error code follows)"))
        #expect(locked.explanation.contains { $0.hasPrefix("tag's ISO error: 0x12") })
        #expect(FEIGStatus.describe(0x7A).contains("not a status FEIG documents"))
        #expect(FEIGStatus.allCases.filter(\.carriesData) == [.ok, .rfCommunicationError, .moreData, .iso15693Error])
    }
}
