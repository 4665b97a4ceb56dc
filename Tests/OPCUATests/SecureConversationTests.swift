import Foundation
import Testing

@testable import OPCUA

/// Secure-conversation chunks of policy None (OPC 10000-6 §6.7.2) against asyncua 2.1.0's SecureConnection
/// (Fixtures/asyncua-golden.json: an OPN, and a 20,480-byte MSG cut for an 8,192-byte buffer), and the limits a
/// hostile peer meets: too many chunks, a message too large, a sequence number out of turn, an abort.
@Suite struct SecureConversationTests {
    /// The chunks of a byte stream, each as long as its header says.
    static func split(_ stream: [UInt8]) throws -> [SecureChunk] {
        var out: [SecureChunk] = []
        var at = 0
        while at < stream.count {
            let header = try MessageHeader.parse(Array(stream[at...]), maxSize: 65_536)
            out.append(try SecureChunk(Array(stream[at..<(at + Int(header.size))])))
            at += Int(header.size)
        }
        return out
    }

    static func golden(_ name: String) throws -> [UInt8] {
        try TransportTests.golden(name)
    }

    @Test func anOPNOfAsyncuaIsReadAndWrittenTheSame() throws {
        let stream = try Self.golden("opn-chunk")
        let chunks = try Self.split(stream)
        let opn = try #require(chunks.first)
        #expect(chunks.count == 1 && opn.header.kind == .open && opn.channelId == 0)
        #expect(
            opn.security
                == .asymmetric(policyUri: SecureChunk.policyNone, senderCertificate: nil, receiverThumbprint: nil))
        #expect(opn.sequenceNumber == 1 && opn.requestId == 1)
        #expect(opn.encoded == stream)
        // Its body is the OpenSecureChannelRequest of the service golden: its encoding NodeId, then the fields.
        var r = BinaryReader(opn.body)
        #expect(try NodeId(from: &r) == OpenSecureChannelRequest.binaryEncodingId)
        let request = try OpenSecureChannelRequest.decode(Array(opn.body[r.offset...]))
        #expect(request.requestedLifetime == 3_600_000 && request.securityMode == MessageSecurityMode.none)
    }

    @Test func aMessageInThreeChunksIsPutTogetherAndCutTheSameWay() throws {
        let stream = try Self.golden("msg-chunks")
        let chunks = try Self.split(stream)
        #expect(chunks.map(\.header.chunk) == [.intermediate, .intermediate, .final])
        #expect(chunks.map(\.sequenceNumber) == [2, 3, 4] && chunks.allSatisfy { $0.header.size <= 8192 })
        var assembler = ChunkAssembler(maxMessageSize: 4 << 20, maxChunkCount: 64)
        var outcome: ChunkAssembler.Outcome?
        for c in chunks { outcome = try assembler.add(c) }
        let body = (0..<80).flatMap { _ in (0...255).map { UInt8($0) } }
        #expect(outcome == .message(kind: .message, requestId: 2, body: body, security: .symmetric(tokenId: 9)))
        let again = try ChunkAssembler.chunks(
            kind: .message, channelId: 5, security: .symmetric(tokenId: 9), requestId: 2, firstSequence: 2, body: body,
            bufferSize: 8192, maxMessageSize: 0, maxChunkCount: 0)
        #expect(again.flatMap(\.encoded) == stream)
    }

    static func chunk(_ n: UInt32, _ kind: MessageHeader.Chunk = .intermediate, request: UInt32 = 1, size: Int = 10)
        -> SecureChunk
    {
        SecureChunk(
            kind: .message, chunk: kind, channelId: 5, security: .symmetric(tokenId: 9), sequenceNumber: n,
            requestId: request, body: [UInt8](repeating: 0xAB, count: size))
    }

    @Test func hostileChunksMeetTheirLimits() throws {
        // 10,000 chunks of one message against 64: refused at the 65th, nothing kept of it.
        var a = ChunkAssembler(maxMessageSize: 4 << 20, maxChunkCount: 64)
        var refused: TransportError?
        for i in 0..<10_000 {
            do throws(TransportError) { _ = try a.add(Self.chunk(UInt32(i + 1))) } catch {
                refused = error
                #expect(i == 64)
                break
            }
        }
        #expect(refused?.status == .badRequestTooLarge)
        // A message over the size limit.
        var b = ChunkAssembler(maxMessageSize: 100, maxChunkCount: 0)
        _ = try b.add(Self.chunk(1, size: 60))
        #expect(TransportTests.status { _ = try b.add(Self.chunk(2, .final, size: 60)) } == .badRequestTooLarge)
        // A replayed or skipped sequence number.
        var c = ChunkAssembler(maxMessageSize: 0, maxChunkCount: 0)
        _ = try c.add(Self.chunk(7, .final))
        #expect(TransportTests.status { _ = try c.add(Self.chunk(7, .final)) } == .badSequenceNumberInvalid)
        var d = ChunkAssembler(maxMessageSize: 0, maxChunkCount: 0)
        _ = try d.add(Self.chunk(7, .final))
        #expect(TransportTests.status { _ = try d.add(Self.chunk(9, .final)) } == .badSequenceNumberInvalid)
        // The number wraps at the top (to 0, or below 1024 for legacy policies).
        var e = ChunkAssembler(maxMessageSize: 0, maxChunkCount: 0)
        _ = try e.add(Self.chunk(UInt32.max, .final))
        #expect(try e.add(Self.chunk(0, .final)) != nil)
        // An abort drops the message in progress and keeps the channel.
        var f = ChunkAssembler(maxMessageSize: 0, maxChunkCount: 0)
        _ = try f.add(Self.chunk(1))
        #expect(try f.add(Self.chunk(2, .abort)) == .aborted(requestId: 1))
        #expect(try f.add(Self.chunk(3, .final, request: 2)) != nil)
        // A chunk of another request inside a message.
        var g = ChunkAssembler(maxMessageSize: 0, maxChunkCount: 0)
        _ = try g.add(Self.chunk(1))
        #expect(TransportTests.status { _ = try g.add(Self.chunk(2, .final, request: 9)) } == .badDecodingError)
    }

    /// An answer larger than the client takes is refused (Bad_ResponseTooLarge, OPC 10000-6 §7.1.2.4).
    @Test func anAnswerTooLargeForTheClientIsRefused() {
        func cut(_ size: Int, maxSize: UInt32, maxChunks: UInt32) -> StatusCode? {
            TransportTests.status {
                _ = try ChunkAssembler.chunks(
                    kind: .message, channelId: 1, security: .symmetric(tokenId: 1), requestId: 1, firstSequence: 1,
                    body: [UInt8](repeating: 0, count: size), bufferSize: 8192, maxMessageSize: maxSize,
                    maxChunkCount: maxChunks)
            }
        }
        #expect(cut(10_000, maxSize: 9_000, maxChunks: 0) == .badResponseTooLarge)
        #expect(cut(30_000, maxSize: 0, maxChunks: 3) == .badResponseTooLarge)
        #expect(cut(20_000, maxSize: 0, maxChunks: 3) == nil)
    }
}
