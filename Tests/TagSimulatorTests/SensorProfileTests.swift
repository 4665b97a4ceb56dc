import Foundation
import ISO15693
import Testing

@testable import TagSimulator

/// The RF430FRL152H profile against TI's own facts (docs/reference/sensor-tags.md): TI's reader identifies the
/// chip by the raw Get System Information memory size `F2 07` (SLOA233 §4.3, `nfc_app.c:314-321`), 243 blocks of 8
/// bytes, and TI limits Read and Write Multiple Blocks to 24 bytes (TI E2E thread 424601), 3 blocks.
@Suite struct RF430ProfileTests {
    let tag = SimulatedTag(image: .blank(profile: .rf430frl152h, uid: ChipProfile.rf430frl152h.makeUID(serial: 7)))

    func exchange(_ command: Command) throws -> [UInt8] {
        let f = SimulatedField(tags: [tag])
        f.powerOn()
        let frame = try Request(command, addressing: .addressed(tag.uid)).encodeOnAir()
        guard case let .response(bytes) = f.transmit(frame).outcome else {
            Issue.record("no answer to \(command)")
            return []
        }
        return Array(bytes.dropLast(2))  // the CRC
    }

    @Test func memorySizeIsTheBytesTIsReaderTestsFor() throws {
        let answer = try exchange(.getSystemInformation)
        // flags 00, info flags 0x04 (memory size only), UID (8 bytes, LSB first), then F2 07.
        #expect(answer.count == 12 && answer[0] == 0x00 && answer[1] == 0x04)
        #expect(Array(answer[10...]) == [0xF2, 0x07])
    }

    @Test func readMultipleTakesAtMostThreeBlocks() throws {
        let three = try exchange(.readMultipleBlocks(first: 0, count: 3))
        #expect(three.count == 1 + 24 && three[0] == 0x00)
        let four = try exchange(.readMultipleBlocks(first: 0, count: 4))
        #expect(four.count == 2 && four[0] & 0x01 == 0x01)
        let last = try exchange(.readSingleBlock(242))
        #expect(last.count == 9 && last[0] == 0x00)
        let past = try exchange(.readSingleBlock(243))
        #expect(past.count == 2 && past[0] & 0x01 == 0x01)
    }
}
