import Testing
@testable import Type5NDEF

/// Facts from `docs/reference/iso15693.md` Part 3 (NFC Forum T5T mapping as implemented by ST RFAL
/// `ndef_t5t` and AOSP `rw_i93`; record layout from RFAL `ndef_record.h`).
@Suite struct CapabilityContainerTests {
    @Test func fourByteCCFromAnSTTrace() throws {
        // `E1 40 40 01`: v1.0, read/write always, MLEN 0x40 = 512 bytes, MBREAD (docs/reference/iso15693.md Part 3 §5.1, trace §7.2).
        let cc = try CapabilityContainer.decode([0xE1, 0x40, 0x40, 0x01])
        #expect(cc.majorVersion == 1 && cc.minorVersion == 0 && cc.readAccess == .always && cc.writeAccess == .always)
        #expect(cc.dataAreaBytes == 512 && cc.readMultipleBlocks && !cc.lockBlock && !cc.specialFrame && cc.length == 4)
        #expect(!cc.twoByteAddressing)
        #expect(cc.encode() == [0xE1, 0x40, 0x40, 0x01])
    }

    @Test func eightByteCCAndFeatureBits() throws {
        // MLEN byte 0 → 8-byte CC, MLEN in bytes 6–7 big-endian; E2 = 2-byte block numbers; 0x43 = write never.
        let cc = try CapabilityContainer.decode([0xE2, 0x43, 0x00, 0x1D, 0x00, 0x00, 0x03, 0xFF])
        #expect(cc.length == 8 && cc.twoByteAddressing && cc.dataAreaBytes == 0x3FF * 8)
        #expect(cc.writeAccess == .never && !cc.isWritable)
        #expect(cc.readMultipleBlocks && !cc.ipRead && cc.mlenOverflow && cc.lockBlock && cc.specialFrame)
        #expect(cc.encode() == [0xE2, 0x43, 0x00, 0x1D, 0x00, 0x00, 0x03, 0xFF])
    }

    @Test(
        arguments: [
            ([0xE1, 0x80, 0x40, 0x01], "version 2.0"),  // major version 2: rejected (RFAL ndefT5TPollerNdefDetect)
            ([0xE1, 0x48, 0x40, 0x01], "read access"),  // read access 10b (proprietary): rejected
            ([0x03, 0x40, 0x40, 0x01], "not NDEF-formatted"),  // no magic
            ([0xE1, 0x40, 0x00, 0x01], "8-byte CC"),  // MLEN 0 without the 8-byte form
            ([0xE1, 0x40], "needs 4 bytes"),
        ] as [([UInt8], String)])
    func rejected(_ bytes: [UInt8], _ reason: String) {
        #expect {
            try CapabilityContainer.decode(bytes)
        } throws: { ($0 as? NDEFError)?.description.contains(reason) == true }
    }

    @Test func formattingSizes() throws {
        // SLIX2: 80 × 4 = 320 bytes → MLEN (320 − 4) / 8 = 39. ST25DV64K: 2048 × 4 = 8192 bytes → 8-byte CC,
        // E2 (more than 256 blocks), MLEN (8192 − 8) / 8 = 1023 = 0x03FF.
        // As ST's RFAL formats (ndefT5TPollerTagFormat, NFC Forum option): MLEN = memory / 8 − 1 unit for the CC;
        // the 8-byte CC from 256 units (2048 bytes) on; Lock Block (b3) left clear.
        #expect(
            CapabilityContainer.forFormatting(blocks: 80, blockSize: 4, readMultiple: true).encode() == [
                0xE1, 0x40, 39, 0x01,
            ])
        #expect(
            CapabilityContainer.forFormatting(blocks: 2048, blockSize: 4, readMultiple: true).encode() == [
                0xE2, 0x40, 0x00, 0x01, 0x00, 0x00, 0x03, 0xFF,
            ])
        // Exactly 2048 bytes (an MB89R118: 256 blocks of 8 bytes): 256 units do not fit byte 2. RFAL's NFC Forum
        // option writes the 8-byte CC, MLEN 255, 0xE1 (kept behind eightByte) …
        #expect(
            CapabilityContainer.forFormatting(blocks: 256, blockSize: 8, readMultiple: true, eightByte: true).encode()
                == [
                    0xE1, 0x40, 0x00, 0x01, 0x00, 0x00, 0x00, 0xFF,
                ])
        // … which NXP's Linux rw_i93 (master, rw_i93.c:1630–1668) rejects and neard misreads (nfctype5.c:729–730);
        // the default is Android's 4-byte CC E1 40 FF 05 (rw_i93.cc:2855–2913: MLEN 0xFF, b2 the MLEN overflow)
        // with four NULL TLVs before the NDEF TLV at byte 8, which every one of them reads
        // (docs/reference/t5t-cc-layouts.md §1).
        let l4p = CapabilityContainer.forFormatting(blocks: 256, blockSize: 8, readMultiple: true)
        #expect(l4p.encode() == [0xE1, 0x40, 0xFF, 0x05])
        #expect(l4p.formattedBytes == [0xE1, 0x40, 0xFF, 0x05, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0xFE])
        // vlogger reads it back: the whole memory after the CC (overflow bit with MLEN 0xFF), the TLV at byte 8.
        let memory = l4p.formattedBytes + [UInt8](repeating: 0, count: 2048 - 11)
        let (area, message) = try NDEFArea.decode(image: memory)
        #expect(area.tlvOffset == 8 && area.areaBytes == 2044 && message.isEmpty, "\(area)")
        #expect(
            CapabilityContainer.forFormatting(blocks: 255, blockSize: 8, readMultiple: false).encode() == [
                0xE1, 0x40, 254, 0x00,
            ])
    }
}

@Suite struct TLVTests {
    @Test func theDemoSLIX2Memory() throws {
        // Config/demo-field/slix2-pallet-0001.json blocks 0–6: CC E1 40 0A 01, NDEF TLV 03 13, a short Text
        // record (D1 01 0F 54, status 02 "en", "vlogger demo"), terminator FE.
        let memory: [UInt8] = [
            0xE1, 0x40, 0x0A, 0x01, 0x03, 0x13, 0xD1, 0x01, 0x0F, 0x54, 0x02, 0x65, 0x6E, 0x76, 0x6C, 0x6F,
            0x67, 0x67, 0x65, 0x72, 0x20, 0x64, 0x65, 0x6D, 0x6F, 0xFE,
        ]
        let cc = try CapabilityContainer.decode(memory)
        #expect(cc.dataAreaBytes == 80)
        let found = try TLV.findNDEF(in: Array(memory[4...]))
        #expect(found == TLV.Located(tlvOffset: 0, valueOffset: 2, length: 0x13))
        let records = try NDEFMessage.decode(Array(memory[6..<(6 + 0x13)]))
        #expect(try records.map { try $0.interpret() } == [.text("vlogger demo", language: "en", utf16: false)])
    }

    @Test func nullProprietaryThreeByteLengthAndTerminator() throws {
        // NULL, a proprietary TLV skipped by length, then an NDEF TLV with the 3-byte length form (0xFF + 2 bytes).
        let message = [UInt8](repeating: 0x41, count: 300)
        let area: [UInt8] = [0x00, 0x00, 0xFD, 0x02, 0xAA, 0xBB] + TLV.encode(message)
        let found = try TLV.findNDEF(in: area)
        #expect(found == TLV.Located(tlvOffset: 6, valueOffset: 10, length: 300))
        #expect(Array(TLV.encode(message).prefix(4)) == [0x03, 0xFF, 0x01, 0x2C])
        #expect(TLV.encode([]) == [0x03, 0x00, 0xFE])
        #expect(try TLV.findNDEF(in: [0xFE, 0x03, 0x00]) == nil)
    }

    @Test(
        arguments: [[0x03, 0x10, 0x00], [0x03, 0xFF, 0x00], [0x03, 0xFF, 0x00, 0x10], [0xFD, 0x05, 0x01], [0x03]]
            as [[UInt8]])
    func malformedTLVs(_ area: [UInt8]) {
        #expect(throws: NDEFError.self) { try TLV.findNDEF(in: area) }
    }
}

@Suite struct RecordTests {
    @Test func textRecordFromAnM24LRDump() throws {
        // `D1 01 05 54 02 65 6E 68 69`: short well-known record "T", status 02, "en", "hi" (docs/reference/iso15693.md Part 3 §5.4).
        let bytes: [UInt8] = [0xD1, 0x01, 0x05, 0x54, 0x02, 0x65, 0x6E, 0x68, 0x69]
        let r = try NDEFMessage.decode(bytes)
        #expect(try r[0].interpret() == .text("hi", language: "en", utf16: false))
        #expect(NDEFMessage.encode([.text("hi")]) == bytes)
    }

    @Test func utf16Text() throws {
        let r = NDEFRecord.text("Größe", language: "de", utf16: true)
        #expect(r.payload[0] == 0x82)  // bit 7 = UTF-16, language length 2
        #expect(try r.interpret() == .text("Größe", language: "de", utf16: true))
    }

    @Test func everyURIPrefixRoundTrips() throws {
        #expect(URIPrefix.table.count == 36)
        #expect(URIPrefix.table[0x1F] == "urn:epc:tag:")  // with the colon (RFAL drops it: a known discrepancy)
        #expect(URIPrefix.table[0x23] == "urn:nfc:")  // AOSP's map stops at 0x22
        for (code, prefix) in URIPrefix.table.enumerated() where !prefix.isEmpty {
            let r = NDEFRecord.uri(prefix + "x")
            #expect(r.payload == [UInt8(code), 0x78], "\(prefix)")
            #expect(try r.interpret() == .uri(prefix + "x"))
        }
        // The longest prefix wins: https://www. is 0x02, not 0x04.
        #expect(NDEFRecord.uri("https://www.example.com").payload.first == 0x02)
        #expect(throws: NDEFError.self) {
            try NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [0x24, 0x61]).interpret()
        }
    }

    @Test func smartPosterMimeExternalAbsoluteEmptyAndUnknown() throws {
        let poster = NDEFRecord.smartPoster([.uri("https://example.com"), .text("Example")])
        let records: [NDEFRecord] = [
            poster, .mime("text/plain", [0x68, 0x69]), .external("example.com:Sensor", [1, 2]),
            .absoluteURI("http://example.com/x"), .empty,
            NDEFRecord(tnf: .unknown, type: [], payload: [9, 9]),
        ]
        let decoded = try NDEFMessage.decode(NDEFMessage.encode(records))
        #expect(decoded == records)
        #expect(try decoded[0].interpret() == .smartPoster([.uri("https://example.com"), .text("Example")]))
        #expect(try decoded[1].interpret() == .mime(type: "text/plain", data: [0x68, 0x69]))
        #expect(try decoded[2].interpret() == .external(type: "example.com:sensor", data: [1, 2]))
        #expect(try decoded[3].interpret() == .absoluteURI("http://example.com/x", data: []))
        #expect(try decoded[4].interpret() == .empty)
        #expect(try decoded[5].interpret() == .other(records[5]))
    }

    @Test func longRecordsUseTheFourByteLengthAndIDsAreKept() throws {
        let r = NDEFRecord(
            tnf: .media, type: Array("application/octet-stream".utf8), id: [0x31],
            payload: [UInt8](repeating: 7, count: 300))
        let bytes = NDEFMessage.encode([r])
        #expect(bytes[0] == 0xC0 | 0x08 | 0x02)  // MB, ME, IL, TNF media; no SR
        #expect(try NDEFMessage.decode(bytes) == [r])
    }

    @Test func chunkedRecordsAreJoined() throws {
        // First chunk: CF with the type; then TNF Unchanged (6) chunks; the last without CF.
        let bytes: [UInt8] =
            [0xB2, 0x0A, 0x02] + Array("text/plain".utf8) + [
                0x61, 0x62,
                0x36, 0x00, 0x01, 0x63,
                0x56, 0x00, 0x02, 0x64, 0x65,
            ]
        let r = try NDEFMessage.decode(bytes)
        #expect(r == [NDEFRecord(tnf: .media, type: Array("text/plain".utf8), payload: Array("abcde".utf8))])
    }

    @Test(
        arguments: [
            [0xD1, 0x01, 0x09, 0x54, 0x02],  // payload length past the end
            [0x51, 0x01, 0x01, 0x54, 0x00],  // no Message Begin
            [0x91, 0x01, 0x01, 0x54, 0x00],  // no Message End
            [0xD6, 0x00, 0x00],  // Unchanged outside a chunk
            [0xB2, 0x01, 0x01, 0x61, 0x61, 0x52, 0x01, 0x01, 0x61, 0x61],  // a later chunk with a type and TNF ≠ 6
            [0xF2, 0x01, 0x01, 0x61, 0x61],  // Message End inside a chunked record
            [0xD0, 0x01, 0x00, 0x61],  // Empty with a type
            [0xD1, 0x01, 0x03, 0x54, 0x05, 0x65, 0x6E],  // decodes; its Text language runs past the payload
        ] as [[UInt8]])
    func malformedMessagesAreTypedErrors(_ bytes: [UInt8]) {
        #expect(throws: NDEFError.self) {
            let records = try NDEFMessage.decode(bytes)
            for r in records { _ = try r.interpret() }
        }
    }
}

/// The data area, capacity and write order (docs/reference/iso15693.md Part 3 §5.1–5.2: area after the CC, MLEN × 8 bytes; 1-byte
/// lengths up to 254, 0xFF + 2 bytes beyond; the Android/ST MLEN-overflow convention).
@Suite struct NDEFAreaTests {
    @Test func scanAsksForMoreUntilTheMessageIsIn() throws {
        // The demo SLIX2: 4-byte CC, MLEN 0x0A → 80-byte area; TLV 03 13 at byte 4; message bytes 6..<25.
        let memory: [UInt8] =
            [0xE1, 0x40, 0x0A, 0x01] + TLV.encode(NDEFMessage.encode([.text("vlogger demo", language: "en")]))
        #expect(try NDEFArea.scan([0xE1, 0x40], memoryBytes: 320) == .needBytes(4))
        #expect(try NDEFArea.scan(Array(memory.prefix(8)), memoryBytes: 320) == .needBytes(25))
        guard case let .area(a) = try NDEFArea.scan(memory, memoryBytes: 320) else { Issue.record("no area"); return }
        #expect(
            a.areaBytes == 80 && a.tlvOffset == 4 && a.message == 6..<25 && a.capacity == 78 && a.status == .readWrite)
        // An 8-byte CC is asked for whole before it is read.
        #expect(try NDEFArea.scan([0xE2, 0x40, 0x00, 0x01], memoryBytes: 8192) == .needBytes(8))
    }

    @Test func capacityAtTheLengthFormBoundary() throws {
        func area(_ mlen: UInt8) throws -> NDEFArea {
            guard case let .area(a) = try NDEFArea.scan([0xE1, 0x40, mlen, 0x01, 0x03, 0x00, 0xFE], memoryBytes: 4096)
            else { throw NDEFError.tlv("no area") }
            return a
        }
        #expect(try area(0x20).capacity == 256 - 2)  // 256-byte area: 254 fits the 1-byte length
        #expect(try area(0x21).capacity == 264 - 4)  // 264: the 3-byte length form
        #expect(try area(0x01).capacity == 6)
        // MLEN-overflow bit with MLEN 0xFF on a 4-byte CC: the area is the rest of the memory (4096 − 4).
        guard case let .area(o) = try NDEFArea.scan([0xE1, 0x40, 0xFF, 0x05, 0x03, 0x00, 0xFE], memoryBytes: 4096)
        else { Issue.record("the answer is not of the expected kind"); return }
        #expect(o.areaBytes == 4092 && o.capacity == 4088)
    }

    @Test func writePlanStagesLengthZeroThenTheRealLength() throws {
        let (a, _) = try NDEFArea.decode(
            image: [0xE1, 0x40, 0x02, 0x01, 0x03, 0x00, 0xFE] + [UInt8](repeating: 0, count: 13))
        // "hi" (docs/reference/iso15693.md Part 3 §5.4)
        let msg: [UInt8] = [0xD1, 0x01, 0x05, 0x54, 0x02, 0x65, 0x6E, 0x68, 0x69]
        let p = try a.writePlan(for: msg)
        #expect(p.offset == 4 && p.staged == [0x03, 0x00] + msg + [0xFE])
        #expect(p.lengthOffset == 5 && p.lengthField == [0x09] && p.final == [0x03, 0x09] + msg + [0xFE])
        // 16-byte area: capacity 14; a 14-byte message leaves no room for the Terminator.
        #expect(a.capacity == 14)
        #expect(try a.writePlan(for: [UInt8](repeating: 1, count: 14)).staged.count == 16)
        #expect(throws: NDEFError.tooLarge(message: 15, capacity: 14)) {
            try a.writePlan(for: [UInt8](repeating: 1, count: 15))
        }
        // 3-byte form: staged as 03 00 00 00 (reads as an empty message), then FF 01 2C.
        let (big, _) = try NDEFArea.decode(image: [0xE1, 0x40, 0x40, 0x01, 0xFE] + [UInt8](repeating: 0, count: 512))
        let long = try big.writePlan(for: [UInt8](repeating: 2, count: 300))
        #expect(Array(long.staged.prefix(4)) == [0x03, 0x00, 0x00, 0x00] && long.lengthField == [0xFF, 0x01, 0x2C])
        #expect(try TLV.findNDEF(in: Array(long.staged)) == TLV.Located(tlvOffset: 0, valueOffset: 2, length: 0))
    }

    @Test func aNewTLVGoesAfterOtherTLVs() throws {
        // A proprietary TLV (FD 02 AA BB) then the Terminator: the NDEF TLV is written where the Terminator was.
        let (a, msg) = try NDEFArea.decode(
            image: [0xE1, 0x40, 0x02, 0x00, 0xFD, 0x02, 0xAA, 0xBB, 0xFE] + [UInt8](repeating: 0, count: 11))
        #expect(a.message == nil && msg.isEmpty && a.tlvOffset == 8 && a.capacity == 16 - 4 - 2)
    }

    @Test func readOnlyCCAndFormattedBytes() throws {
        let cc = CapabilityContainer.forFormatting(blocks: 64, blockSize: 4, readMultiple: true, specialFrame: true)
        // Tag-it HF-I Plus: 256 bytes → MLEN 256 / 8 − 1 = 31 = 0x1F (RFAL); features MBREAD | Special Frame.
        #expect(cc.formattedBytes == [0xE1, 0x40, 0x1F, 0x11, 0x03, 0x00, 0xFE])
        #expect(cc.readOnly.encode() == [0xE1, 0x43, 0x1F, 0x11])
        let (a, _) = try NDEFArea.decode(image: cc.readOnly.formattedBytes + [UInt8](repeating: 0, count: 249))
        #expect(a.status == .readOnly)
        // M24LR64-like: 2048 blocks with the Protocol Extension flag keep E1 (RFAL "legacy ST high density").
        #expect(
            CapabilityContainer.forFormatting(blocks: 2048, blockSize: 4, readMultiple: true, twoByteAddressing: false)
                .encode()[0] == 0xE1)
    }
}

/// Nesting from a hostile-input pass: thousands of Smart Posters inside each other overflowed the stack
/// when the message was described; past 4 levels the innermost poster is an error, and nothing recurses.
@Suite struct NestedPosterTests {
    @Test func deeplyNestedSmartPostersAreAnErrorNotAStackOverflow() throws {
        var r = NDEFRecord.uri("https://example.com/")
        for _ in 0..<2000 { r = NDEFRecord.smartPoster([r]) }
        let decoded = try NDEFMessage.decode(NDEFMessage.encode([r]))
        #expect(throws: NDEFError.self) { try decoded[0].interpret() }
        // Four levels (a poster in a poster in a poster in a poster) are still read.
        var ok = NDEFRecord.uri("https://example.com/")
        for _ in 0..<4 { ok = NDEFRecord.smartPoster([ok]) }
        guard case .smartPoster? = try? ok.interpret() else { Issue.record("4 levels refused"); return }
    }
}
