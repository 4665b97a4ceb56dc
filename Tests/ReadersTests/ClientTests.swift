import Testing
import ISO15693
import TagSimulator
@testable import Readers

@Suite struct ClientTests {
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
        #expect(throws: ClientError.tag(.blockLocked, command: "Write Single Block")) { try client.writeBlocks(st.uid, first: 30, blocks: [[1, 1, 1, 1]]) }
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
