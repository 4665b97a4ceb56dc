import TagImages
import Foundation
import TestDrivers
import Testing
import ISO15693
import ISO15693Fuzzing
import TagSimulator
@testable import Readers
import DriverLibNFC
import DriverSim

@Suite(.drivers) struct ClientTests {
    func session(_ tags: [TagImage]) throws -> (SimulatedField, ISO15693Client) {
        let field = SimulatedField(tags: tags.map { SimulatedTag(image: $0) })
        let reader = SimulatorReader(field: field)
        try reader.fieldOn()
        return (field, ISO15693Client(reader: reader))
    }
    func blank(_ p: ChipProfile, _ serial: UInt64) -> TagImage { .blank(profile: p, uid: p.makeUID(serial: serial)) }

    @Test func inventoryFindsAllOf200Tags() throws {
        // Deterministic spread of serials, many sharing low nibbles, so collisions need several mask levels.
        var rng = DecoderFuzzer.Random(seed: 200)
        let profiles = ChipProfile.all
        let tags = (0..<200).map { i in blank(profiles[i % profiles.count], rng.next() & 0xFF_FFFF_FFFF) }
        let (_, client) = try session(tags)
        let found = try client.inventory()
        #expect(Set(found.map(\.uid)) == Set(tags.map(\.uid)))
        #expect(found.count == 200)
    }

    @Test func inventoryResolvesDeepCollisions() throws {
        // UIDs equal in their low 56 bits collide down to a 56-bit mask (ISO/IEC 15693-3 Annex D tree walk).
        let a = UID(manufacturer: .nxp, serial: 0x01_0812_3456_7890)
        let b = UID(manufacturer: .nxp, serial: 0x02_0812_3456_7890)
        let images = try [a, b].map { try TagImage(uid: $0, blockSize: 4, blocks: [[0, 0, 0, 0]]) }
        let (_, client) = try session(images)
        #expect(Set(try client.inventory().map(\.uid)) == [a, b])
        // AFI filter: a tag with AFI 0x07 answers AFI 0x07 and 0x00 (all), not 0x08.
        var c = try TagImage(uid: UID(manufacturer: .nxp, serial: 7), blockSize: 4, blocks: [[0, 0, 0, 0]])
        c.afi = 0x07
        let (_, client2) = try session([c, images[0]])
        #expect(try client2.inventory(afi: 0x07).map(\.uid) == [c.uid])
        #expect(try client2.inventory(afi: 0x08).isEmpty)
        #expect(try client2.inventory(afi: 0x00).count == 2)
        // Stay Quiet keeps found tags out of the next inventory.
        _ = try client2.inventory(quiet: true)
        #expect(try client2.inventory().isEmpty)
    }

    @Test func memoryDiscoveryOnEveryProfile() throws {
        let expected: [(ChipProfile, MemorySource, TagMemory.Addressing)] = [
            (.icodeSLIX2, .getSystemInformation, .plain), (.st25dv64k, .extendedGetSystemInformation, .extended),
            (.tagitHFIPlus, .getSystemInformation, .plain), (.tagitHFIStandard, .probed, .plain),
            (.rf430frl152h, .getSystemInformation, .plain), (.mb89r118, .getSystemInformation, .plain),
            (.m24lr64, .protocolExtension, .protocolExtension),
        ]
        let (_, client) = try session(expected.enumerated().map { blank($0.element.0, UInt64($0.offset)) })
        for (i, (p, source, addressing)) in expected.enumerated() {
            let m = try client.memory(of: p.makeUID(serial: UInt64(i)))
            #expect(m.blockCount == p.blockCount && m.blockSize == p.blockSize, "\(p.id)")
            #expect(m.source == source && m.addressing == addressing, "\(p.id): \(m.source) \(m.addressing)")
            #expect(m.writeNeedsOption == p.writeRequiresOption, "\(p.id): reader-side knowledge agrees with the chip")
        }
    }

    @Test func readsAreChunkedToTheChipAndReader() throws {
        var img = blank(.st25dv64k, 1)
        for i in 0..<img.blockCount { img.blocks[i] = [UInt8(i & 0xFF), UInt8(i >> 8), 0xA5, 0x5A] }
        let (_, client) = try session([img])
        let uid = img.uid
        _ = try client.memory(of: uid)
        let before = client.exchanges
        // 600 blocks × 4 bytes: reader frame 256 bytes → 63 blocks per answer; blocks ≥ 256 use 0x33.
        let blocks = try client.readBlocks(uid, first: 0, count: 600)
        #expect(blocks.map(\.data) == Array(img.blocks[0..<600]))
        let used = client.exchanges - before
        #expect(used <= 11, "600 blocks in \(used) exchanges")
        #expect(try client.readBlocks(uid, first: 0x7FF, count: 1).first?.data == img.blocks[0x7FF])
        #expect(throws: ClientError.self) { try client.readBlocks(uid, first: 0x7FF, count: 2) }
    }

    @Test func writesVerifyAndSurviveLostAnswers() throws {
        let ti = blank(.tagitHFIPlus, 5)
        let st = blank(.st25dv64k, 6)
        let (field, client) = try session([ti, st])
        // TI: the Option flag is set for it; the write is read back.
        let r = try client.writeBlocks(ti.uid, first: 3, blocks: [[1, 2, 3, 4]])
        #expect(r.verified && field.tag(ti.uid)?.image.blocks[3] == [1, 2, 3, 4])
        // ST25DV: 9 blocks go as Write Multiple of ≤ 4 blocks (3 writes) plus the read-back.
        let data = (0..<9).map { [UInt8($0), 0, 0, UInt8($0)] }
        let w = try client.writeBlocks(st.uid, first: 0x0FF, blocks: data)
        #expect(w.verified && field.tag(st.uid)?.image.blocks[0x0FF..<0x108].map { $0 } == data)
        // A lost answer: the client reads back, sees the data arrived, and goes on.
        field.inject(.noResponse(uid: st.uid, count: 1))
        let lost = try client.writeBlocks(st.uid, first: 20, blocks: [[9, 9, 9, 9]])
        #expect(lost.verified && lost.retries >= 1)
        // A locked block: typed ISO error, nothing retried.
        try client.lockBlock(st.uid, block: 30)
        #expect(throws: ClientError.tag(.blockLocked, command: "Write Single Block")) {
            try client.writeBlocks(st.uid, first: 30, blocks: [[1, 1, 1, 1]])
        }
        #expect(throws: ClientError.self) { try client.writeBlocks(st.uid, first: 0, blocks: [[1, 2, 3]]) }
    }

    @Test func tagLeavingMidReadIsATypedError() throws {
        let img = blank(.icodeSLIX2, 9)
        let (field, client) = try session([img])
        _ = try client.memory(of: img.uid)
        field.inject(.leaveAfter(uid: img.uid, exchanges: 1))
        client.retries = 1
        // 80 blocks with security status, 51 per 256-byte answer: the second read finds no tag.
        #expect(throws: ClientError.reader(.timeout, command: "Read Multiple Blocks")) {
            _ = try client.readBlocks(img.uid, first: 0, count: 80, security: true)
        }
        // A corrupted answer is retried and then succeeds.
        let (f2, c2) = try session([img])
        f2.inject(.corruptCRC(uid: img.uid, count: 1))
        #expect(try c2.readBlocks(img.uid, first: 0, count: 4).count == 4)
    }

    /// A reader whose answers to one command come back damaged a number of times (a CRC error, as a noisy
    /// field gives one); everything else goes to the simulator.
    final class DamagingReader: TagReader {
        let inner: SimulatorReader
        let code: UInt8
        var left: Int
        /// What the damaged exchanges give instead of the answer.
        var error: ReaderError = .crcError(.invalidField("answer damaged by the test"))
        init(_ inner: SimulatorReader, code: UInt8, times: Int) {
            (self.inner, self.code, self.left) = (inner, code, times)
        }
        var name: String { "damaging " + inner.name }
        var limits: ReaderLimits { inner.limits }
        var airTime: AirTime { inner.airTime }
        var trace: ((TraceEvent) -> Void)? {
            get { inner.trace }
            set { inner.trace = newValue }
        }
        func fieldOn() throws(ReaderError) { try inner.fieldOn() }
        func fieldOff() throws(ReaderError) { try inner.fieldOff() }
        func nextSlot() throws(ReaderError) -> [UInt8] { try inner.nextSlot() }
        func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
            let answer = try inner.transceive(frame, wait: wait)
            if frame.count > 1, frame[1] == code, left > 0 {
                left -= 1
                throw error
            }
            return answer
        }
    }

    /// The ST25DV64K has 2048 blocks of 4 bytes; its plain Get System Information can only say 256, so the
    /// client asks Extended Get System Information (0x3B; ST25DV datasheet, Tests/…/docs/reference/iso15693.md Part 2 §2.2). A damaged or
    /// missing answer to 0x3B is asked again once; two are an error and nothing is cached, so the next call
    /// finds the 2048 blocks. Never a 256-block layout for this chip (before: one damaged 0x3B left the plain
    /// answer's 256 blocks cached for the whole run, and reads past block 255 were refused as "past the end").
    @Test(arguments: ["damaged", "silent"])
    func aFailed0x3BIsNeverTakenForA256BlockST25DV64K(_ kind: String) throws {
        let img = blank(.st25dv64k, 5)
        let sim = SimulatorReader(field: SimulatedField(tags: [SimulatedTag(image: img)]))
        try sim.fieldOn()
        let reader = DamagingReader(sim, code: 0x3B, times: 1)
        if kind == "silent" { reader.error = .timeout }
        let client = ISO15693Client(reader: reader)
        let once = try client.memory(of: img.uid)
        #expect(once.blockCount == 2048 && once.source == .extendedGetSystemInformation && reader.left == 0)
        client.forget()
        reader.left = 2
        #expect(throws: ClientError.reader(reader.error, command: CommandCode.extendedGetSystemInformation.name)) {
            try client.memory(of: img.uid)
        }
        #expect(reader.left == 0, "asked twice")
        #expect(try client.memory(of: img.uid).blockCount == 2048, "nothing was cached")
    }

    /// A chip known to have 256 blocks and no 0x3B (Fujitsu MB89R118: 256 blocks of 8 bytes, its datasheet and
    /// ID ISC.MR102 manual p. 117) is never asked 0x3B: its plain answer is the layout.
    @Test func aKnown256BlockChipWithout0x3BIsNotAskedForIt() throws {
        let img = blank(.mb89r118, 6)
        let sim = SimulatorReader(field: SimulatedField(tags: [SimulatedTag(image: img)]))
        try sim.fieldOn()
        let reader = DamagingReader(sim, code: 0x3B, times: 5)
        let client = ISO15693Client(reader: reader)
        let m = try client.memory(of: img.uid)
        #expect(m.blockCount == 256 && m.blockSize == 8 && m.source == .getSystemInformation)
        #expect(reader.left == 5, "0x3B was not sent")
    }

    @Test func libnfcRefusesISO15693WithTheReason() {
        #expect(LibNFC.unsupportedMessage.contains("PC/SC"))
        #expect(!LibNFC.version.isEmpty)
        do {
            try LibNFC.openAsISO15693Reader(connstring: "pn53x_usb:999:999")
        } catch let e {
            #expect(e.description.contains("ISO 15693"))
        }
    }
}

/// ST's fast reads (0xC0/0xC3/0xC4/0xC5, IC manufacturer code 0x02): layouts from ST's RFAL
/// (`rfal_st25xv.c`), the answer at twice the data rate ("for the Fast commands using one subcarrier, all pulse
/// numbers and times are divided by 2", M24LR64-R datasheet §11–12).
@Suite(.drivers) struct FastReadTests {
    func session(_ tags: [SimulatedTag]) throws -> (SimulatedField, SimulatorReader, ISO15693Client) {
        let field = SimulatedField(tags: tags)
        let reader = SimulatorReader(field: field)
        try reader.fieldOn()
        return (field, reader, ISO15693Client(reader: reader))
    }

    @Test func framesAsRFALBuildsThem() throws {
        let uid = try UID(parsing: "E002260000C0FFEE")
        let c3 = Request(
            STFastRead.command(first: 0x10, count: 4, layout: .plain), flags: [.highDataRate, .address],
            addressing: .addressed(uid))
        // flags, C3, manufacturer 02, UID LSB first, first block, count − 1.
        #expect(try c3.encode() == [0x22, 0xC3, 0x02, 0xEE, 0xFF, 0xC0, 0x00, 0x00, 0x26, 0x02, 0xE0, 0x10, 0x03])
        #expect(
            STFastRead.command(first: 0x100, count: 2, layout: .extended)
                == .custom(code: 0xC5, manufacturer: .stMicroelectronics, parameters: [0x00, 0x01, 0x01, 0x00]))
        #expect(
            STFastRead.command(first: 0x7FF, count: 1, layout: .extended)
                == .custom(code: 0xC4, manufacturer: .stMicroelectronics, parameters: [0xFF, 0x07]))
        #expect(
            STFastRead.command(first: 0x123, count: 32, layout: .protocolExtension)
                == .custom(code: 0xC3, manufacturer: .stMicroelectronics, parameters: [0x23, 0x01, 0x1F]))
        // A fast answer of 7 bytes (flags, 4 data, CRC) at the high rate: SOF + 7 bytes + EOF = 8 × 2048/fc
        // (≈ 1208 µs), half the 8 × 4096/fc (≈ 2417 µs) of the ISO rate.
        #expect(AirTiming.fastTagFrame(bytes: 7, flags: [.highDataRate]).ticks == 8 * 2048)
        #expect(AirTiming.tagFrame(bytes: 7, flags: [.highDataRate]).ticks == 8 * 4096)
    }

    @Test func anST25DVIsReadFastBelowAndAboveBlock255AndTheDataIsTheSame() throws {
        var image = TagImage.blank(profile: .st25dv64k, uid: ChipProfile.st25dv64k.makeUID(serial: 0xC0FFEE))
        for b in [0, 1, 2, 3, 0x100, 0x101] { image.blocks[b] = [UInt8(b & 0xFF), UInt8(b >> 8), 0xA5, 0x5A] }
        let (_, reader, client) = try session([SimulatedTag(image: image)])
        let m = try client.memory(of: image.uid)
        #expect(client.fastReads(image.uid, m))
        var air = reader.airTime
        let low = try client.readBlocks(image.uid, first: 0, count: 4)
        let fastLow = reader.airTime - air
        air = reader.airTime
        let high = try client.readBlocks(image.uid, first: 0x100, count: 2, security: true)
        #expect(
            low.map(\.data) == (0...3).map { image.blocks[$0] }
                && high.map(\.data) == [image.blocks[0x100], image.blocks[0x101]])
        #expect(high.allSatisfy { $0.security == [] })
        // The same read with ISO commands: the answer (flags, 16 bytes, CRC = 19 bytes) takes twice as long; the
        // fast request is one byte longer (the manufacturer code).
        client.useFastReads = false
        air = reader.airTime
        #expect(try client.readBlocks(image.uid, first: 0, count: 4) == low)
        let plainLow = reader.airTime - air
        let saved =
            AirTiming.tagFrame(bytes: 19, flags: [.highDataRate])
            - AirTiming.fastTagFrame(bytes: 19, flags: [.highDataRate])
            - AirTiming.readerByte(.oneOfFour)
        #expect(plainLow - fastLow == saved, "\(plainLow) vs \(fastLow)")
    }

    @Test func anM24LR64IsReadFastWithTwoByteBlockNumbers() throws {
        var image = TagImage.blank(profile: .m24lr64, uid: ChipProfile.m24lr64.makeUID(serial: 0x2121))
        image.blocks[0x123] = [1, 2, 3, 4]
        let (_, _, client) = try session([SimulatedTag(image: image)])
        let m = try client.memory(of: image.uid)
        #expect(m.addressing == .protocolExtension && client.fastReads(image.uid, m))
        let before = client.exchanges
        #expect(try client.readBlocks(image.uid, first: 0x123, count: 1).first?.data == [1, 2, 3, 4])
        #expect(client.exchanges - before == 1)
    }

    @Test func aTagThatRefusesFastReadsIsReadPlainFromThenOn() throws {
        // An ST UID whose chip answers "command not supported" to the fast reads.
        var profile = ChipProfile.st25dv64k
        profile.fastReads = false
        var image = TagImage.blank(profile: .st25dv64k, uid: ChipProfile.st25dv64k.makeUID(serial: 0xBEEF))
        image.blocks[5] = [9, 8, 7, 6]
        let (_, _, client) = try session([SimulatedTag(image: image, profile: profile)])
        let m = try client.memory(of: image.uid)
        var before = client.exchanges
        #expect(try client.readBlocks(image.uid, first: 5, count: 1).first?.data == [9, 8, 7, 6])
        #expect(client.exchanges - before == 2)  // the refused fast read, then the plain one
        #expect(!client.fastReads(image.uid, m))
        before = client.exchanges
        _ = try client.readBlocks(image.uid, first: 5, count: 1)
        #expect(client.exchanges - before == 1)
    }
}

/// A dump's own IC Reference is what the simulated tag reports, not its chip profile's (issue 15): the real
/// Flipper SLIX dump (Tests/Fixtures/public, IC Reference 01) with its IC Reference changed to 03.
@Suite(.drivers) struct DumpICReferenceTests {
    @Test func theFilesICReferenceIsWhatTheTagAnswers() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/public")
        let text = try String(
            contentsOf: dir.appendingPathComponent("unleashed_unit_test_Slix_cap_default.nfc"), encoding: .utf8)
        #expect(text.contains("IC Reference: 01\n"))
        let image = try TagImageFormat.flipper.decode(
            text.replacingOccurrences(of: "IC Reference: 01\n", with: "IC Reference: 03\n"))
        let field = SimulatedField(tags: [SimulatedTag(image: image)])
        let reader = SimulatorReader(field: field)
        try reader.fieldOn()
        let client = ISO15693Client(reader: reader)
        #expect(try client.memory(of: image.uid).info.icReference == 0x03)
        #expect(image.profile.icReference == 0x01, "the SLIX2 profile's own IC reference differs")
    }
}

/// NXP ICODE Inventory Read (0xA0) / Fast Inventory Read (0xA1): layouts from the ICODE SLIX datasheet
/// SL2S2002 Rev 3.4 Tables 23–25 (request: flags, code, 0x04, [AFI], mask length, mask, first block, count − 1;
/// answer with the Option flag: the UID bytes the mask and slot do not give, then the blocks), and the
/// answer at twice the data rate for 0xA1 (same datasheet; NXP Reader Library `phpalSli15693.h`).
@Suite(.drivers) struct InventoryReadTests {
    func session(_ tags: [SimulatedTag]) throws -> (SimulatedField, SimulatorReader, ISO15693Client) {
        let field = SimulatedField(tags: tags)
        let reader = SimulatorReader(field: field)
        try reader.fieldOn()
        return (field, reader, ISO15693Client(reader: reader))
    }
    func slix2(_ serial: UInt64) -> SimulatedTag {
        var image = TagImage.blank(profile: .icodeSLIX2, uid: ChipProfile.icodeSLIX2.makeUID(serial: serial))
        image.blocks[0] = [0x10, 0x20, 0x30, UInt8(truncatingIfNeeded: serial)]
        image.blocks[1] = [0xA1, 0xB2, 0xC3, 0xD4]
        return SimulatedTag(image: image)
    }

    @Test func requestAsTheDatasheetLaysItOut() throws {
        // 1 slot, high rate, no AFI, no mask, blocks 0x00…0x01: flags 0x66 (high rate 0x02, Inventory 0x04,
        // 1 slot 0x20, Option 0x40), 0xA1, 0x04, mask length 0, block 0x00, count − 1 = 0x01.
        let r = try NXPInventoryRead(fast: true, first: 0, count: 2).request(flags: [.highDataRate], oneSlot: true)
        #expect(try r.encode() == [0x66, 0xA1, 0x04, 0x00, 0x00, 0x01])
        // 16 slots, AFI 0x07, a 12-bit mask 0xABC: AFI before the mask length, two mask bytes LSB first.
        let m = try InventoryMask(length: 12, value: 0xABC)
        let r16 = try NXPInventoryRead(fast: false, afi: 0x07, mask: m, first: 0x10, count: 4).request(
            flags: [.highDataRate], oneSlot: false)
        #expect(try r16.encode() == [0x56, 0xA0, 0x04, 0x07, 0x0C, 0xBC, 0x0A, 0x10, 0x03])
        #expect(
            NXPInventoryRead(try Request.decode(r16.encode()))
                == NXPInventoryRead(fast: false, afi: 0x07, mask: m, first: 0x10, count: 4))
        #expect(throws: FrameError.self) {
            try NXPInventoryRead(fast: true, first: 0x100, count: 1).request(flags: [], oneSlot: true)
        }
    }

    @Test func eitherUIDLengthOfTheAnswerDecodes() throws {
        // A 4-bit mask with 16 slots: the datasheet's rule gives ⌈(64 − 4 − 4)/8⌉ = 7 UID bytes, NXP's library
        // parses 8 − ⌊4/8⌋ = 8. Both answers give the same UID (low byte from mask 0x5 and slot 0xA).
        let uid = try UID(parsing: "E0040108123456A5")
        let read = NXPInventoryRead(fast: true, mask: try InventoryMask(length: 4, value: 0x5), first: 0, count: 1)
        #expect(NXPInventoryRead.uidBytes(maskLength: 4, sixteenSlots: true) == 7)
        let seven = [0x00] + Array(uid.onAirBytes.suffix(7)) + [1, 2, 3, 4]
        let eight = [0x00] + uid.onAirBytes + [1, 2, 3, 4]
        #expect(try read.decodeAnswer(seven, slot: 0xA, sixteenSlots: true, blockSize: 4).uid == uid)
        #expect(try read.decodeAnswer(eight, slot: 0xA, sixteenSlots: true, blockSize: 4).uid == uid)
        #expect(
            try read.decodeAnswer(eight, slot: 0xA, sixteenSlots: true, blockSize: 4).blocks.map(\.data) == [
                [1, 2, 3, 4]
            ])
        // Anything else is a typed error, never a trap.
        #expect(throws: FrameError.self) {
            try read.decodeAnswer([0x00, 1, 2], slot: 0, sixteenSlots: true, blockSize: 4)
        }
        #expect(throws: FrameError.self) { try read.decodeAnswer([], slot: 0, sixteenSlots: true, blockSize: 4) }
        #expect(throws: FrameError.self) {
            try read.decodeAnswer([0x01, 0x0F], slot: 0, sixteenSlots: true, blockSize: 4)
        }
    }

    @Test func onlyTheICODETagsAnswerWithTheirBlocksAtTwiceTheRate() throws {
        let nxp = (1...12).map { slix2(UInt64($0) * 0x1_0001_0003) }
        let st = SimulatedTag(image: .blank(profile: .st25dv64k, uid: ChipProfile.st25dv64k.makeUID(serial: 9)))
        let (field, _, client) = try session(nxp + [st])
        let found = try client.inventoryRead(first: 0, count: 2, fast: true)
        #expect(Set(found.map(\.uid)) == Set(nxp.map(\.uid)))
        for (uid, blocks) in found {
            let tag = try #require(field.tag(uid))
            #expect(blocks.map(\.data) == Array(tag.image.blocks[0..<2]) && blocks.map(\.number) == [0, 1])
        }
        // The ST tag stays silent to NXP's custom command; an Inventory finds it once the ICODE tags are quiet.
        for t in nxp { try client.stayQuiet(t.uid) }
        #expect(try client.inventory(oneSlotFirst: true).map(\.uid) == [st.uid])
        // A quiet tag does not answer an Inventory Read either (SLIX2 datasheet p.28).
        #expect(try client.inventoryRead(first: 0, count: 2, fast: true).isEmpty)
    }

    @Test func aLoneTagsFastAnswerCostsHalfTheAnswerTime() throws {
        let tag = slix2(7)
        let (field, _, client) = try session([tag])
        let before = field.elapsed
        let found = try client.inventoryRead(first: 0, count: 2, fast: true)
        let fast = field.elapsed - before
        #expect(found.count == 1 && found[0].uid == tag.uid)
        try client.resetToReady(tag.uid)
        let mid = field.elapsed
        _ = try client.inventoryRead(first: 0, count: 2, fast: false)
        let slow = field.elapsed - mid
        // Answer: flags + 8 UID bytes + 8 data bytes + CRC = 19 bytes; at the ISO rate (19 + 1) × 4096/fc,
        // at twice the rate half that. The request and t1 are the same, so the difference is the half.
        let answer = AirTiming.tagFrame(bytes: 19, flags: client.baseFlags)
        #expect(
            slow.ticks - fast.ticks == answer.ticks - AirTiming.fastTagFrame(bytes: 19, flags: client.baseFlags).ticks)
        #expect(AirTiming.fastTagFrame(bytes: 19, flags: [.highDataRate]).ticks == 20 * 2048)
    }
}

/// A reader that is not there at start is opened again at each exchange, and works once it can be opened.
@Suite(.drivers) struct ReopeningReaderTests {
    @Test func aReaderThatAppearsLaterIsUsedThen() throws {
        let field = SimulatedField(tags: [
            SimulatedTag(image: .blank(profile: .icodeSLIX2, uid: ChipProfile.icodeSLIX2.makeUID(serial: 5)))
        ])
        final class Attempts { var n = 0 }
        let attempts = Attempts()
        let reader = ReopeningReader(name: "pcsc desk (not opened yet)", error: "pcscd not running") {
            attempts.n += 1
            guard attempts.n >= 3 else { throw ReaderError.device("cannot reach pcscd (attempt \(attempts.n))") }
            let r = SimulatorReader(field: field)
            try r.fieldOn()
            return OpenedReader(reader: r)
        }
        let client = ISO15693Client(reader: reader)
        client.retries = 0
        for _ in 0..<2 {
            #expect { try client.inventory() } throws: { e in
                guard case .reader(.device(let m), _) = e as? ClientError else { return false }
                return m.contains("reader not available") && m.contains("cannot reach pcscd")
            }
        }
        #expect(reader.name == "pcsc desk (not opened yet)" && !reader.supportsSlotMarkers)
        #expect(try client.inventory().count == 1 && attempts.n == 3)
        #expect(reader.name.hasPrefix("simulator") && reader.supportsSlotMarkers)
    }
}
