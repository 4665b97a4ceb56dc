import Testing
import ISO15693
import Readers
import TagSimulator
@testable import VLoggerCore

@Suite struct CoreTests {
    func session(_ images: [TagImage]) throws -> ISO15693Client {
        let field = SimulatedField(tags: images.map { SimulatedTag(image: $0) })
        let reader = SimulatorReader(field: field)
        try reader.fieldOn()
        return ISO15693Client(reader: reader)
    }

    @Test func traceShowsBytesOnAirAndMeaning() throws {
        let img = TagImage.blank(profile: .icodeSLIX2, uid: try UID(parsing: "E004010812345601"))
        let client = try session([img])
        var lines: [String] = []
        let formatter = TraceFormatter { lines.append($0) }
        client.reader.trace = formatter.handle
        _ = try client.inventory()
        // The 16-slot request goes out as 06 01 00 CD 09 (facts §1.5), followed by 15 slot-marker EOFs.
        #expect(lines.first?.hasPrefix(">> 06 01 00 CD 09") == true)
        #expect(lines.filter { $0.hasPrefix("EOF") }.count == 15)
        #expect(lines.contains { $0.hasPrefix("<<") && $0.contains("UID E004010812345601") })
        // The air time the trace adds up equals the reader's own account.
        #expect(formatter.total == client.reader.airTime)
    }

    @Test func dumpAndRestoreSkipLockedBlocks() throws {
        var img = TagImage.blank(profile: .icodeSLIX2, uid: try UID(parsing: "E004010812345601"))
        img.blocks[1] = [1, 2, 3, 4]
        img.locked[2] = true
        let client = try session([img])
        let dumped = try TagDump.dump(client, uid: img.uid)
        #expect(dumped.blocks == img.blocks && dumped.locked == img.locked && dumped.icReference == 0x01)
        var target = dumped
        target.blocks[1] = [9, 9, 9, 9]
        target.blocks[2] = [8, 8, 8, 8] // locked on the tag: reported, not written
        let report = try TagDump.restore(client, uid: img.uid, image: target)
        #expect(report.written == 1 && report.lockedSkipped == [2])
        #expect(try client.readBlocks(img.uid, first: 1, count: 2).map(\.data) == [[9, 9, 9, 9], [0, 0, 0, 0]])
    }

    @Test func readerSessionErrorsAreReadable() {
        #expect(throws: VLoggerError.self) { try ReaderSession.open(kind: .sim, field: "/nonexistent-field", device: nil) }
    }
}
