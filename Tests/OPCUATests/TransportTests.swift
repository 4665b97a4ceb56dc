import Foundation
import Testing

@testable import OPCUA

/// UA-TCP's messages and the server's side of the Hello (OPC 10000-6 §7.1; docs/reference/opcua.md), against
/// asyncua 2.1.0's bytes for the same messages (Fixtures/asyncua-golden.json) and against hostile Hellos.
@Suite struct TransportTests {
    static func golden(_ name: String) throws -> [UInt8] {
        let g = try #require(BinaryEncodingTests.golden)
        return BinaryEncodingTests.bytes(try #require(g.cases.first { $0.name == name }, "\(name)").hex)
    }

    @Test func helloAcknowledgeAndErrorAreAsyncuasBytes() throws {
        let hello = Hello(receiveBufferSize: 65_536, sendBufferSize: 65_536, endpointUrl: "opc.tcp://127.0.0.1:4840")
        // 56 bytes: "HELF", the size, five UInt32s, the URL's length and its 24 bytes.
        #expect(hello.message == (try Self.golden("hello")) && hello.message.count == 56)
        #expect(try Hello(message: Self.golden("hello")) == hello)
        let defaults = try Hello(message: Self.golden("hello-asyncua-defaults"))
        #expect(defaults.receiveBufferSize == 0x7FFF_FFFF && defaults.maxChunkCount == 0x7FFF_FFFF)
        #expect(defaults.endpointUrl == "opc.tcp://gateway.plant.example:4840/vlogger")
        let ack = Acknowledge(
            receiveBufferSize: 65_536, sendBufferSize: 65_536, maxMessageSize: 4 << 20, maxChunkCount: 64)
        #expect(ack.message == (try Self.golden("acknowledge")))
        #expect(ErrorMessage(error: .badTcpMessageTooLarge, reason: "too large").message == (try Self.golden("error")))
    }

    /// asyncua asks for 2³¹ − 1 everywhere; the server answers with its own sizes and keeps the client's limits for
    /// what it sends. A client below 8,192 bytes is refused.
    @Test func theServerNegotiatesItsOwnSizes() throws {
        let n = try TransportLimits.server.negotiate(try Hello(message: Self.golden("hello-asyncua-defaults")))
        #expect(n.receiveBufferSize == 65_536 && n.sendBufferSize == 65_536)
        #expect(n.maxRequestSize == 4 << 20 && n.maxRequestChunks == 64)
        #expect(n.maxResponseSize == 0x7FFF_FFFF && n.maxResponseChunks == 0x7FFF_FFFF)
        #expect(n.acknowledge.message.count == 28)
        // A small client: the server sends no larger chunks than it receives, and takes none larger than it sends.
        let small = try TransportLimits.server.negotiate(
            Hello(receiveBufferSize: 8192, sendBufferSize: 16_384, endpointUrl: nil))
        #expect(small.sendBufferSize == 8192 && small.receiveBufferSize == 16_384)
        #expect(
            Self.status {
                _ = try TransportLimits.server.negotiate(
                    Hello(receiveBufferSize: 1024, sendBufferSize: 65_536, endpointUrl: nil))
            } == .badConnectionRejected)
    }

    /// The status of the TransportError `body` throws (nil: none, or another error).
    static func status(_ body: () throws -> Void) -> StatusCode? {
        do {
            try body()
            return nil
        } catch let e as TransportError { return e.status } catch { return nil }
    }

    /// Hostile headers and Hellos: each a typed error with the status the ERR message carries, nothing allocated
    /// for what a header announces.
    @Test func hostileHeadersAndHellosAreRefusedWithTheirStatus() throws {
        let status = Self.status
        // A header announcing 4 GB before any Hello (8,192 bytes is all a peer must take then).
        var huge = MessageHeader(kind: .hello, size: 0xFFFF_FFFF).bytes
        huge += [UInt8](repeating: 0, count: 20)
        #expect(status { _ = try MessageHeader.parse(huge, maxSize: 8192) } == .badTcpMessageTooLarge)
        #expect(
            status { _ = try MessageHeader.parse(Array("XYZF\u{8}\0\0\0".utf8), maxSize: 8192) }
                == .badTcpMessageTypeInvalid)
        #expect(
            status { _ = try MessageHeader.parse(Array("HELC\u{8}\0\0\0".utf8), maxSize: 8192) }
                == .badTcpMessageTypeInvalid)
        #expect(
            status { _ = try MessageHeader.parse(Array("MSGA\u{4}\0\0\0".utf8), maxSize: 8192) } == .badDecodingError)
        #expect(status { _ = try MessageHeader.parse([0x48, 0x45], maxSize: 8192) } == .badDecodingError)
        #expect(try MessageHeader.parse(Array("MSGC\u{10}\0\0\0".utf8), maxSize: 8192).chunk == .intermediate)
        // An endpoint URL over 4,096 bytes.
        let long = Hello(
            receiveBufferSize: 65_536, sendBufferSize: 65_536, endpointUrl: String(repeating: "a", count: 5000))
        #expect(status { _ = try Hello(message: long.message) } == .badTcpEndpointUrlInvalid)
        // A URL whose length runs past the message, a truncated body, bytes after the URL.
        var lying = try Self.golden("hello")
        lying[28] = 100
        #expect(status { _ = try Hello(message: lying) } == .badDecodingError)
        let golden = try Self.golden("hello")
        var cut = Array(golden.prefix(30))
        cut[4] = 30
        #expect(status { _ = try Hello(message: cut) } == .badDecodingError)
        var extra = golden + [0]
        extra[4] = UInt8(extra.count)
        #expect(status { _ = try Hello(message: extra) } == .badDecodingError)
    }

    /// An ERR's reason is cut to 4,096 bytes at a character boundary (OPC 10000-6 §7.1.2.5).
    @Test func anErrorsReasonIsCutAt4096Bytes() throws {
        let m = ErrorMessage(error: .badTcpMessageTooLarge, reason: String(repeating: "ü", count: 3000)).message
        #expect(m.count == 8 + 4 + 4 + 4096)
        var r = BinaryReader(m, offset: 12)
        #expect(try r.readString()?.count == 2048)
    }
}
