import Testing
@testable import ISO15693
import ISO15693Fuzzing

@Suite struct FrameTests {
    let uid = try! UID(parsing: "E004015012345678")

    @Test func inventoryFrames() throws {
        // docs/reference/iso15693.md Part 2 §1.5: 1-slot and 16-slot Inventory without mask: 26 01 00 F6 0A / 06 01 00 CD 09.
        #expect(
            try Request(.inventory(afi: nil, mask: .none), flags: [.highDataRate, .oneSlot]).encodeOnAir() == [
                0x26, 0x01, 0x00, 0xF6, 0x0A,
            ])
        #expect(
            try Request(.inventory(afi: nil, mask: .none), flags: [.highDataRate]).encodeOnAir() == [
                0x06, 0x01, 0x00, 0xCD, 0x09,
            ])
        // AFI and a 12-bit mask: flags 0x16, AFI, length 12, two mask bytes LSB first.
        let m = try InventoryMask(length: 12, value: 0xABC)
        let req = Request(.inventory(afi: 0x07, mask: m), flags: [.highDataRate])
        #expect(try req.encode() == [0x16, 0x01, 0x07, 0x0C, 0xBC, 0x0A])
        #expect(try Request.decode(req.encode()) == req)
        // 16 slots allow at most 60 mask bits.
        #expect(throws: FrameError.self) {
            try Request(.inventory(afi: nil, mask: InventoryMask(length: 61, value: 0))).encode()
        }
    }

    @Test func addressedFramesCarryTheUIDLeastSignificantFirst() throws {
        let frame = try Request(.readSingleBlock(0xF8), flags: [.highDataRate], addressing: .addressed(uid)).encode()
        #expect(frame == [0x22, 0x20, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0, 0xF8])
        // Selected mode: flag 0x10, no UID.
        #expect(try Request(.readSingleBlock(1), addressing: .selected).encode() == [0x12, 0x20, 0x01])
        // Read Multiple sends count − 1 (docs/reference/iso15693.md Part 1 §6.1; RFAL).
        #expect(try Request(.readMultipleBlocks(first: 0, count: 1)).encode() == [0x02, 0x23, 0x00, 0x00])
        // Extended Read Multiple: 16-bit block number and count − 1, LSB first.
        #expect(
            try Request(.extendedReadMultipleBlocks(first: 0x0100, count: 32)).encode() == [
                0x02, 0x33, 0x00, 0x01, 0x1F, 0x00,
            ])
        // Protocol Extension (M24LR64): 2-byte block number on the plain code.
        #expect(
            try Request(.readSingleBlock(0x0400), flags: [.highDataRate, .protocolExtension]).encode() == [
                0x0A, 0x20, 0x00, 0x04,
            ])
        // Custom command: IC manufacturer code after the command byte, then the UID (Apple, RFAL).
        #expect(
            try Request(.custom(code: 0xAB, manufacturer: .nxp, parameters: []), addressing: .addressed(uid)).encode()
                == [0x22, 0xAB, 0x04, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0])
        // Plain block commands cannot address block 256.
        #expect(throws: FrameError.self) { try Request(.readSingleBlock(0x100)).encode() }
        #expect(throws: FrameError.self) { try Request(.stayQuiet).encode() }
    }

    @Test func everyCommandRoundTrips() throws {
        let commands: [Command] = [
            .stayQuiet, .readSingleBlock(5), .writeSingleBlock(5, data: [1, 2, 3, 4]), .lockBlock(5),
            .readMultipleBlocks(first: 2, count: 256),
            .writeMultipleBlocks(first: 2, count: 2, data: [1, 2, 3, 4, 5, 6, 7, 8]),
            .select, .resetToReady, .writeAFI(0x42), .lockAFI, .writeDSFID(0x11), .lockDSFID, .getSystemInformation,
            .getMultipleBlockSecurityStatus(first: 0, count: 8), .extendedReadSingleBlock(0x7FF),
            .extendedWriteSingleBlock(0x7FF, data: [9, 9, 9, 9]), .extendedLockBlock(0x300),
            .extendedReadMultipleBlocks(first: 0x200, count: 1000),
            .extendedWriteMultipleBlocks(first: 0x200, count: 1, data: [1, 2, 3, 4]),
            .extendedGetSystemInformation(parameters: 0x7F),
            .extendedGetMultipleBlockSecurityStatus(first: 0x100, count: 300),
            .custom(code: 0xA2, manufacturer: .nxp, parameters: [0x01]), .proprietary(code: 0xE0, parameters: [1, 2]),
            .other(code: 0x35, parameters: [0, 1]),
        ]
        for c in commands {
            for addressing in [Addressing.addressed(uid), .selected, .nonAddressed] {
                if (c == .stayQuiet || c == .select) && addressing != .addressed(uid) { continue }
                let r = Request(c, flags: [.highDataRate, .option], addressing: addressing)
                #expect(try Request.decode(r.encode()) == r, "\(c) \(addressing)")
            }
        }
    }

    /// One table knows each code (issue 15): every code maps back to itself, names follow ISO/IEC 15693-3's
    /// table (docs/reference/iso15693.md Part 1 §6.1), and the write-alike set is RFAL's (0x21, 0x22, 0x24, 0x31, 0x32, 0x34) plus the
    /// AFI/DSFID writes and locks.
    @Test func oneCommandTable() throws {
        for code in UInt8.min...UInt8.max {
            #expect(Command.answered(code: code, count: 3).code.rawValue == code, "0x\(Hex.format([code]))")
        }
        #expect(CommandCode(0x02).name == "Stay Quiet" && CommandCode(0x25).name == "Select")
        #expect(CommandCode(0x2C).name == "Get Multiple Block Security Status")
        #expect(CommandCode(0x3B).layout == .parametersThenAddress)
        #expect(
            (UInt8.min...UInt8.max).filter { CommandCode($0).isWriteAlike } == [
                0x21, 0x22, 0x24, 0x27, 0x28, 0x29, 0x2A, 0x31, 0x32, 0x34,
            ])
        #expect(
            CommandCode.readMultipleBlocks.wideBlockNumbers([.protocolExtension])
                && !CommandCode.readMultipleBlocks.wideBlockNumbers([]))
        #expect(CommandCode.extendedReadMultipleBlocks.wideCount && !CommandCode.readMultipleBlocks.wideCount)
        // An "answer" to Stay Quiet never decodes: the command is never answered (ISO/IEC 15693-3 §10.3.2).
        #expect(throws: FrameError.self) {
            try Response.decode([0x00], to: Request(Command.answered(code: 0x02), addressing: .addressed(uid)))
        }
    }

    @Test func malformedRequestsAreTypedErrors() {
        #expect(throws: FrameError.empty) { try Request.decode([]) }
        #expect(throws: FrameError.self) { try Request.decode([0x22, 0x20, 0x01]) }  // UID cut short
        #expect(throws: FrameError.self) { try Request.decode([0x02, 0x20]) }  // block number missing
        #expect(throws: FrameError.self) { try Request.decode([0x02, 0x20, 0x01, 0x02]) }  // trailing byte
        #expect(throws: FrameError.self) { try Request.decode([0x32, 0x20, 0x01]) }  // select and address
        // non-E0 UID
        #expect(throws: FrameError.self) { try Request.decode([0x22, 0x20, 1, 2, 3, 4, 5, 6, 7, 0xE1, 0x00]) }
        #expect(throws: FrameError.self) { try Request.decode([0x06, 0x01, 0x40]) }  // mask of 64 bits with 16 slots
    }

    @Test func responses() throws {
        let rsb = Request(.readSingleBlock(0))
        // CR95HF log: 00 E1 40 40 01 is the answer to Read Single Block 0 (CC E1 40 40 01).
        let r = try Response.decode([0x00, 0xE1, 0x40, 0x40, 0x01], to: rsb)
        #expect(r.body == .blocks([BlockRead(number: 0, data: [0xE1, 0x40, 0x40, 0x01], security: nil)]))
        // With the Option flag each block is preceded by its security status byte.
        let opt = try Response.decode(
            [0x00, 0x01, 1, 2, 3, 4, 0x00, 5, 6, 7, 8],
            to: Request(.readMultipleBlocks(first: 4, count: 2), flags: [.option]))
        #expect(
            opt.body
                == .blocks([
                    BlockRead(number: 4, data: [1, 2, 3, 4], security: .locked),
                    BlockRead(number: 5, data: [5, 6, 7, 8], security: []),
                ]))
        #expect(throws: FrameError.self) { try Response.decode([0x00, 1, 2, 3], to: rsb, blockSize: 4) }
        #expect(throws: FrameError.self) {
            try Response.decode([0x00, 1, 2, 3, 4, 5], to: Request(.readMultipleBlocks(first: 0, count: 2)))
        }
        // Error flag: flags 01 then the error code.
        #expect(try Response.decode([0x01, 0x10], to: rsb).body == .error(.blockNotAvailable))
        #expect(throws: FrameError.self) { try Response.decode([0x01], to: rsb) }
        #expect(throws: FrameError.self) {
            try Response.decode([0x00, 0x01], to: Request(.stayQuiet, addressing: .addressed(uid)))
        }
    }

    @Test func errorCodeMeanings() {
        // ISO/IEC 15693-3 error codes (docs/reference/iso15693.md Part 1 §6.4).
        let expected: [UInt8: String] = [
            0x01: "command not supported", 0x02: "command not recognised", 0x03: "option not supported",
            0x0F: "unknown error",
            0x10: "not available", 0x11: "already locked", 0x12: "is locked", 0x13: "not successfully programmed",
            0x14: "not successfully locked", 0xA5: "custom", 0x20: "RFU",
        ]
        for (code, words) in expected { #expect(ISOErrorCode(code).meaning.contains(words), "0x\(code)") }
        #expect(ISOErrorCode(0xA0).isCustom && ISOErrorCode(0xDF).isCustom && !ISOErrorCode(0xE0).isCustom)
    }

    @Test func systemInformationFieldsPresentOrAbsent() throws {
        // vpcd bench transcript (docs/reference/reader-paths.md §3.6): 00 0F UID DSFID=00 AFI=00 1B 03 IC=01
        // → 28 blocks × 4 bytes, IC reference 0x01.
        let frame: [UInt8] = [0x00, 0x0F, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0, 0x00, 0x00, 0x1B, 0x03, 0x01]
        let r = try Response.decode(frame, to: Request(.getSystemInformation))
        guard case let .systemInformation(i) = r.body else { Issue.record("no system information"); return }
        #expect(
            i.uid == uid && i.dsfid == 0 && i.afi == 0 && i.blockCount == 28 && i.blockSize == 4
                && i.icReference == 0x01)
        // Every subset of the four fields encodes and decodes to itself.
        for mask in 0..<16 {
            let info = SystemInformation(
                uid: uid, dsfid: mask & 1 != 0 ? 0x11 : nil, afi: mask & 2 != 0 ? 0x22 : nil,
                blockCount: mask & 4 != 0 ? 80 : nil, blockSize: mask & 4 != 0 ? 4 : nil,
                icReference: mask & 8 != 0 ? 0x01 : nil)
            let encoded = Response(body: .systemInformation(info)).encode()
            #expect(try Response.decode(encoded, to: Request(.getSystemInformation)).body == .systemInformation(info))
        }
        // RF430FRL152H: info flags 0x04 only, memory F3 07 = 244 × 8 bytes (TI E2E capture, docs/reference/iso15693.md Part 2 §2.1).
        let rf: [UInt8] = [0x00, 0x04] + uid.onAirBytes + [0xF3, 0x07]
        guard case let .systemInformation(s) = try Response.decode(rf, to: Request(.getSystemInformation)).body else {
            Issue.record("the answer is not of the expected kind"); return
        }
        #expect(s.blockCount == 244 && s.blockSize == 8 && s.icReference == nil && s.dsfid == nil)
        // Extended: 16-bit block count (ST25DV64K: FF 07 → 2048 blocks).
        let ext: [UInt8] = [0x00, 0x04] + uid.onAirBytes + [0xFF, 0x07, 0x03]
        guard
            case let .systemInformation(e) = try Response.decode(
                ext, to: Request(.extendedGetSystemInformation(parameters: 0x04))
            ).body
        else { Issue.record("the answer is not of the expected kind"); return }
        #expect(e.blockCount == 2048 && e.blockSize == 4)
        #expect(throws: FrameError.self) {
            try Response.decode(Array(frame.dropLast()), to: Request(.getSystemInformation))
        }
    }

    @Test func flagsBothMeanings() throws {
        // docs/reference/iso15693.md Part 1 §6.2: 0x26 = inventory, 1 slot, high rate; 0x22 = addressed, high rate.
        #expect(RequestFlags(rawValue: 0x26).names == ["high", "inventory", "1-slot"])
        #expect(RequestFlags(rawValue: 0x22).names == ["high", "address"])
        #expect(RequestFlags(rawValue: 0x16).names == ["high", "inventory", "afi", "16-slots"])
        #expect(RequestFlags(rawValue: 0x12).names == ["high", "select"])
        #expect(try RequestFlags(parsing: "high,address,option").rawValue == 0x62)
        #expect(try RequestFlags(parsing: "0x0A").rawValue == 0x0A)
        #expect(throws: ParseError.self) { try RequestFlags(parsing: "fast") }
        #expect(try BlockNumber(parsing: "0xF8") == BlockNumber(248))
        #expect(try BlockNumber(parsing: "248") == BlockNumber(0xF8))
        #expect(BlockNumber(0xF8).description == "0xF8")
        #expect(throws: ParseError.self) { try BlockNumber(parsing: "0x10000") }
    }

    @Test func fuzzDecodersFindNoTrap() {
        var f = DecoderFuzzer(seed: 2026)
        let t = f.run(5000)
        #expect(t.inputs == 5000)
        #expect(t.accepted > 0 && t.rejected > 0)
    }
}
