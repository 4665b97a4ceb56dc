import ISO15693
import Testing

@testable import TagSimulator

/// A chip's part written in a test (issue 48, item 4): a simulated tag answers a custom command through its part,
/// with no branch of its own for it, and a part's write hook sees what was written. The command and its answer are
/// made up for the test; the frame layout (flags, code, the IC manufacturer code, parameters; the answer's flags and
/// data) is ISO/IEC 15693-3's for custom commands (docs/reference/iso15693.md).
final class EchoPart: SimulatedPart {
    var writes: [(Int, Int)] = []
    static func make(for tag: SimulatedTag) -> EchoPart? { nil }

    func answer(_ request: Request, tag: SimulatedTag) -> PartAnswer? {
        guard case let .custom(code, manufacturer, parameters) = request.command, manufacturer == .nxp, code == 0xDE
        else { return nil }
        return parameters.isEmpty ? .unsupported : .answer(.data(parameters.reversed()))
    }

    func written(first: Int, count: Int, tag: SimulatedTag) { writes.append((first, count)) }
}

extension AirOutcome {
    var responseBytes: [UInt8]? { if case let .response(b) = self { b } else { nil } }
}

@Suite struct PartTests {
    @Test func aPartAnswersItsCustomCommandAndSeesWrites() throws {
        let tag = SimulatedTag(image: .blank(profile: .icodeSLIX2, uid: ChipProfile.icodeSLIX2.makeUID(serial: 7)))
        let part = EchoPart()
        tag.attach(part)
        let field = SimulatedField(tags: [tag])
        field.powerOn()
        func send(_ r: Request) throws -> AirOutcome { field.transmit(try r.encodeOnAir()).outcome }
        let echo = try send(
            Request(.custom(code: 0xDE, manufacturer: .nxp, parameters: [1, 2, 3]), addressing: .addressed(tag.uid)))
        guard case let .response(frame) = echo else {
            Issue.record("no answer: \(echo)")
            return
        }
        // Flags 0x00 (no error), the data, the CRC.
        #expect(Array(frame.dropLast(2)) == [0x00, 3, 2, 1])
        // Its own command without parameters is "not supported": the SLIX2 profile answers that with error 0x01.
        let bare = try send(
            Request(.custom(code: 0xDE, manufacturer: .nxp, parameters: []), addressing: .addressed(tag.uid)))
        #expect(bare.responseBytes.map { Array($0.prefix(2)) } == [0x01, 0x01], "\(bare)")
        _ = try send(Request(.writeSingleBlock(4, data: [9, 9, 9, 9]), addressing: .addressed(tag.uid)))
        #expect(part.writes.count == 1 && part.writes.first.map { $0 == (4, 1) } == true)
        #expect(tag.image.blocks[4] == [9, 9, 9, 9])
        #expect(tag.part(EchoPart.self) === part)
    }
}
