import TagImages
import TestDrivers
import Testing
import ISO15693
import TagSimulator
import Type5NDEF
@testable import Readers
import DriverSim

/// NDEF on simulated tags through the ordinary client. Facts: NFC Forum Type 5 mapping as implemented by ST
/// RFAL `ndef_t5t` and AOSP `rw_i93` (`docs/reference/iso15693.md` Part 3 §5); Core NFC's status
/// values (Part 4 §1.4).
@Suite(.drivers) struct NDEFTagTests {
    func session(_ tags: [SimulatedTag]) throws -> (SimulatedField, ISO15693Client) {
        let field = SimulatedField(tags: tags)
        let reader = SimulatorReader(field: field)
        try reader.fieldOn()
        return (field, ISO15693Client(reader: reader))
    }

    func blank(_ p: ChipProfile, _ serial: UInt64 = 1) -> SimulatedTag {
        SimulatedTag(image: .blank(profile: p, uid: p.makeUID(serial: serial)))
    }

    /// Text, URI, MIME and External records: the message the round trips write (49 bytes).
    let message: [NDEFRecord] = [
        .text("Pallet 0001", language: "en"), .uri("https://www.example.com/p/1"),
        .mime("text/plain", Array("ok".utf8)), .external("example.com:asset", [0x2A]),
    ]

    @Test(arguments: ChipProfile.all)
    func formatWriteReadOnEveryProfile(_ p: ChipProfile) throws {
        let tag = blank(p)
        let (_, client) = try session([tag])
        // A blank tag has no CC: Core NFC's "not supported".
        let before = try client.readNDEF(tag.uid)
        #expect(before.status == .notSupported && before.capacity == 0)
        #expect(throws: NDEFTagError.self) { try client.writeNDEF(tag.uid, message: [0xD0, 0x00, 0x00]) }

        let cc = try client.formatNDEF(tag.uid)
        let formatted = try client.readNDEF(tag.uid, lockStatus: true)
        #expect(formatted.status == .readWrite && formatted.message.isEmpty)
        // Capacity: the memory less the CC (4 bytes, or 8 past 0xFF × 8 bytes), rounded down to 8-byte units
        // (MLEN), less the TLV's type and length (2 bytes up to 254, 4 beyond).
        let total = p.blockCount * p.blockSize
        // At exactly 2048 bytes the 4-byte CC with the MLEN-overflow bit: the data area is the rest of the memory,
        // after four NULL TLVs (CapabilityContainer.forFormatting, docs/reference/t5t-cc-layouts.md).
        let overflow = cc.length == 4 && cc.mlenOverflow
        let area = overflow ? 0xFF * 8 : cc.length == 4 ? ((total - 4) / 8) * 8 : ((total - 8) / 8) * 8
        #expect(cc.dataAreaBytes == area, "\(p.id)")
        let room = overflow ? total - 8 : area
        #expect(formatted.capacity == (room - 2 <= 254 ? room - 2 : room - 4), "\(p.id)")
        #expect(
            cc.specialFrame == p.writeRequiresOption,
            "\(p.id): Special Frame exactly where the chip needs the Option flag")
        // E2 only where blocks above 255 take the extended commands (not for Protocol Extension chips).
        #expect(cc.twoByteAddressing == (p.supportsExtendedCommands && p.blockCount > 256), "\(p.id)")

        let records = formatted.capacity >= NDEFMessage.encode(message).count ? message : [.text("hi", language: "en")]
        let bytes = NDEFMessage.encode(records)
        let report = try client.writeNDEF(tag.uid, message: bytes)
        #expect(report.option == p.writeRequiresOption)
        let back = try client.readNDEF(tag.uid, lockStatus: true)
        #expect(back.message == bytes && back.status == .readWrite, "\(p.id)")
        #expect(try back.records() == records)

        // Exactly the capacity fits; one byte more is refused with both sizes, and the tag keeps its message.
        let cap = back.capacity
        let full = [UInt8](repeating: 0x55, count: cap)
        try client.writeNDEF(tag.uid, message: full)
        #expect(try client.readNDEF(tag.uid).message == full, "\(p.id)")
        #expect(throws: NDEFTagError.content(.tooLarge(message: cap + 1, capacity: cap))) {
            try client.writeNDEF(tag.uid, message: full + [0x55])
        }
        #expect(try client.readNDEF(tag.uid).message == full)
    }

    @Test func demoSLIX2ReadsInOneReadAfterSystemInformation() throws {
        // The demo SLIX2 layout (Config/demo-field): CC E1 40 0A 01, TLV 03 13, the Text record "vlogger demo".
        var image = TagImage.blank(profile: .icodeSLIX2, uid: ChipProfile.icodeSLIX2.makeUID(serial: 0x1234_5601))
        let memory: [UInt8] =
            [0xE1, 0x40, 0x0A, 0x01] + TLV.encode(NDEFMessage.encode([.text("vlogger demo", language: "en")]))
        for (i, b) in memory.enumerated() { image.blocks[i / 4][i % 4] = b }
        let tag = SimulatedTag(image: image)
        let (_, client) = try session([tag])
        _ = try client.memory(of: tag.uid)
        let before = client.exchanges
        let state = try client.readNDEF(tag.uid)
        #expect(client.exchanges - before == 1, "CC, TLV and a 19-byte message come in the first 32-byte read")
        #expect(state.capacity == 78 && state.message.count == 0x13)
        #expect(try state.records().map { try $0.interpret() } == [.text("vlogger demo", language: "en", utf16: false)])
    }

    @Test func longMessageTakesAsFewReadsAsTheFrameAllows() throws {
        // ST25DV64K: 8-byte CC, a 600-byte message in the 3-byte length form. After the first 32 bytes the
        // rest (574 bytes) comes in reads of at most 63 blocks (the reader's 256-byte frame, 4-byte blocks).
        let tag = blank(.st25dv64k)
        let (_, client) = try session([tag])
        try client.formatNDEF(tag.uid)
        let bytes = NDEFMessage.encode([.mime("application/octet-stream", [UInt8](repeating: 0xA5, count: 570))])
        #expect(bytes.count > 0xFF)
        try client.writeNDEF(tag.uid, message: bytes)
        let raw = try client.readBlocks(tag.uid, first: 2, count: 1)[0].data
        #expect(Array(raw.prefix(4)) == [0x03, 0xFF, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)])
        let before = client.exchanges
        #expect(try client.readNDEF(tag.uid).message == bytes)
        let rest = 8 + 4 + bytes.count - 32
        #expect(client.exchanges - before == 1 + (rest + 4 * 63 - 1) / (4 * 63))
    }

    @Test func aTagPulledAwayMidWriteReadsAsEmptyOrWhole() throws {
        // NFC Forum write order: length 0 first, the message, the real length last. Whenever the tag leaves,
        // what is on it is the old message, an empty one, or the new one: never a half message.
        let old = NDEFMessage.encode([.text("old", language: "en")])
        let new = NDEFMessage.encode([.text(String(repeating: "new ", count: 12), language: "en")])
        // How many exchanges the whole write takes, so each k below leaves while it is under way.
        let dry = blank(.icodeSLIX2)
        let (_, dryClient) = try session([dry])
        try dryClient.formatNDEF(dry.uid)
        try dryClient.writeNDEF(dry.uid, message: old)
        let n = try dryClient.writeNDEF(dry.uid, message: new).exchanges
        #expect(n > 10)
        var seen: Set<String> = []
        for k in 1..<n {
            let tag = blank(.icodeSLIX2)
            let (field, client) = try session([tag])
            try client.formatNDEF(tag.uid)
            try client.writeNDEF(tag.uid, message: old)
            field.inject(.leaveAfter(uid: tag.uid, exchanges: k))
            client.retries = 0
            do { try client.writeNDEF(tag.uid, message: new) } catch {}
            if field.tag(tag.uid) == nil { field.add(tag) }
            let after = try client.readNDEF(tag.uid).message
            #expect(after == old || after.isEmpty || after == new, "left after \(k) exchanges: \(Hex.format(after))")
            seen.insert(after == old ? "old" : after.isEmpty ? "empty" : "new")
        }
        #expect(seen == ["old", "empty", "new"], "the sweep passes through each state")
    }

    @Test func readOnlyByCCAndBlockLocks() throws {
        let tag = blank(.icodeSLIX2)
        let (_, client) = try session([tag])
        try client.formatNDEF(tag.uid)
        try client.writeNDEF(tag.uid, message: NDEFMessage.encode([.uri("https://example.com")]))
        let report = try client.lockNDEF(tag.uid)
        // SLIX2: 320 bytes → 4-byte CC + 312-byte area = 316 bytes = blocks 0x00–0x4E (79 blocks); block 0x4F
        // (the counter block) stays as it was.
        #expect(report.locked == 79 && report.alreadyLocked == 0 && report.lockProblem == nil)
        #expect(report.cc.encode()[1] == 0x43, "write access 11b = never (docs/reference/iso15693.md Part 3 §5.3)")
        let state = try client.readNDEF(tag.uid, lockStatus: true)
        #expect(state.status == .readOnly)
        #expect(try state.records() == [.uri("https://example.com")])
        #expect(throws: NDEFTagError.self) { try client.writeNDEF(tag.uid, message: [0xD0, 0x00, 0x00]) }
        #expect(throws: ClientError.tag(.blockLocked, command: "Write Single Block")) {
            try client.writeBlocks(tag.uid, first: 1, blocks: [[0, 0, 0, 0]], verify: false)
        }
        #expect(!(try client.securityStatus(tag.uid, first: 0x4F, count: 1)[0].isLocked))
    }

    @Test func aLockedTLVBlockMakesTheTagReadOnlyThoughTheCCSaysReadWrite() throws {
        let tag = blank(.tagitHFIPlus)
        let (_, client) = try session([tag])
        try client.formatNDEF(tag.uid)
        #expect(try client.readNDEF(tag.uid, lockStatus: true).status == .readWrite)
        try client.lockBlock(tag.uid, block: 1)  // the block of the NDEF TLV's type and length
        let state = try client.readNDEF(tag.uid, lockStatus: true)
        #expect(state.status == .readOnly && state.lockedBlocks == [1])
        #expect(try client.readNDEF(tag.uid).status == .readWrite, "without lock status the CC alone decides")
    }

    /// CC byte 3 declares Read Multiple Blocks only on chips that have it: AOSP `rw_i93.cc` `rw_i93_sm_format`
    /// (msft-mirror-aosp/platform.system.nfc @3d3e1be8) writes 0 for Tag-it HF-I Standard/Pro and
    /// MBREAD (0x01) for Tag-it HF-I Plus; the client then reads the Standard block by block.
    @Test func formatDeclaresReadMultipleOnlyWhereTheChipHasIt() throws {
        let std = blank(.tagitHFIStandard), plus = blank(.tagitHFIPlus)
        let (_, client) = try session([std, plus])
        // Bit 0 (MBREAD) clear as AOSP writes it; bit 4 (Special Frame) is set because the chip's writes need
        // the Option flag (T5T CC byte 3 b4, as RFAL sets it), where AOSP writes the whole byte as 0.
        #expect(try client.formatNDEF(std.uid).encode()[3] == 0x10)
        #expect(try client.formatNDEF(plus.uid).encode()[3] & 0x01 == 0x01)
        try client.writeNDEF(std.uid, message: NDEFMessage.encode([.text("std", language: "en")]))
        #expect(try client.readNDEF(std.uid).records() == [.text("std", language: "en")])
        #expect(throws: ClientError.self) {
            try client.send(
                Request(.readMultipleBlocks(first: 0, count: 2), addressing: .addressed(std.uid)), retries: 0)
        }
    }

    @Test func formatRetriesWithSpecialFrameWhenTheChipIsUnknown() throws {
        // A Tag-it HF-I Plus behind a UID the client cannot place (manufacturer 0x7F): it does not know the
        // chip wants the Option flag, the silent first CC write fails, and the CC is written again with the
        // Option flag and Special Frame set (RFAL ndefT5TPollerTagFormat, docs/reference/iso15693.md Part 3 §5.1).
        let tag = SimulatedTag(image: .blank(profile: .tagitHFIPlus, uid: try UID(parsing: "E07F000000000001")))
        let (_, client) = try session([tag])
        client.retries = 0
        #expect(try client.memory(of: tag.uid).writeNeedsOption == false)
        let cc = try client.formatNDEF(tag.uid)
        #expect(cc.specialFrame && cc.encode() == [0xE1, 0x40, 0x1F, 0x11])
        // Later writes follow the CC's Special Frame bit.
        let report = try client.writeNDEF(tag.uid, message: NDEFMessage.encode([.text("hi", language: "en")]))
        #expect(report.option)
        #expect(try client.readNDEF(tag.uid).records() == [.text("hi", language: "en")])
    }

    @Test func formatRefusesATagWithACCUnlessForced() throws {
        let tag = blank(.mb89r118)
        let (_, client) = try session([tag])
        try client.formatNDEF(tag.uid)
        try client.writeNDEF(tag.uid, message: NDEFMessage.encode([.text("keep", language: "en")]))
        #expect { try client.formatNDEF(tag.uid) } throws: { e in
            guard case let .refused(m)? = e as? NDEFTagError else { return false }
            return m.contains("--force")
        }
        #expect(try client.readNDEF(tag.uid).message.count > 0)
        try client.formatNDEF(tag.uid, force: true)
        #expect(try client.readNDEF(tag.uid).message.isEmpty)
    }
}

extension ChipProfile: CustomTestStringConvertible {
    public var testDescription: String { id }
}
