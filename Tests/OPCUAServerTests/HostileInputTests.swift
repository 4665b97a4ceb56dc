import Foundation
import NIOConcurrencyHelpers
import OPCUA
import Testing

@testable import OPCUAServer

/// What a hostile or broken client sends, each on a connection of its own while a well-behaved client keeps
/// reading on another: every case is refused or closed with the status OPC 10000-6 §7.1.5 and OPC 10000-4 give
/// it, and the well-behaved client's reads all succeed; memory stays bounded (the RSS before and after is printed).
@Suite(.serialized)
struct HostileInputTests {
    /// A clock the test moves (sessions' timeouts without sleeping).
    final class Clock: @unchecked Sendable {
        private let box = NIOLockedValueBox(Date())
        var now: Date { box.withLockedValue { $0 } }
        func advance(_ seconds: Double) { box.withLockedValue { $0 = $0.addingTimeInterval(seconds) } }
    }

    @Test func hostileClientsAreRefusedAndAWellBehavedOneIsServedThroughout() async throws {
        let clock = Clock()
        let s = try await TestServer(maxSessions: 50, clock: { clock.now })
        defer { Task { await s.stop() } }
        let good = try RawClient.withSession(port: s.port)
        #expect(try good.readCurrentTime() == .good)
        let rssBefore = residentKiB()

        // A message header claiming 4 GB before any Hello: ERR Bad_TcpMessageTooLarge, closed.
        do {
            let c = try RawClient(port: s.port)
            c.send(Array("HELF".utf8) + [0xFF, 0xFF, 0xFF, 0xFF])
            #expect(try c.error() == .badTcpMessageTooLarge)
            #expect(c.isClosed())
        }
        // A Hello asking for 4 GB buffers: the server answers with its own (64 KiB), not the client's.
        do {
            let c = try RawClient(port: s.port)
            let ack = try c.hello(receiveBufferSize: 0xFFFF_FFFF)
            #expect(ack.sendBufferSize == 65_536 && ack.receiveBufferSize == 65_536)
        }
        #expect(try good.readCurrentTime() == .good)

        // A chunk longer than the negotiated receive buffer: ERR Bad_TcpMessageTooLarge, closed.
        do {
            let c = try RawClient(port: s.port)
            let ack = try c.hello()
            c.send(Array("MSGF".utf8) + withUnsafeBytes(of: (ack.receiveBufferSize + 1).littleEndian, Array.init))
            #expect(try c.error() == .badTcpMessageTooLarge)
            #expect(c.isClosed())
        }
        // 10,000 chunks of one message: refused at the 65th (the server's chunk limit), Bad_RequestTooLarge.
        do {
            let c = try RawClient(port: s.port)
            _ = try c.hello()
            try c.open()
            var sent = 0
            for _ in 0..<10_000 {
                guard c.send(try c.chunk(ReadRequest(requestHeader: c.header()), kind: .intermediate)) else { break }
                c.requestId -= 1
                sent += 1
            }
            #expect(try c.error() == .badRequestTooLarge, "after \(sent) chunks")
            #expect(c.isClosed())
        }
        #expect(try good.readCurrentTime() == .good)

        // A replayed sequence number: Bad_SequenceNumberInvalid, closed.
        do {
            let c = try RawClient(port: s.port)
            _ = try c.hello()
            try c.open()
            let chunk = try c.chunk(GetEndpointsRequest(requestHeader: c.header()))
            c.send(chunk)
            _ = try c.receive()
            c.send(chunk)
            #expect(try c.error() == .badSequenceNumberInvalid)
            #expect(c.isClosed())
        }
        // A bad signature on a Basic256Sha256 SignAndEncrypt channel: Bad_SecurityChecksFailed, closed.
        do {
            let c = try RawClient(port: s.port)
            _ = try c.hello()
            try c.open(
                policy: .basic256Sha256, mode: .signAndEncrypt, own: (s.clientKeyPair, s.clientCertificate),
                server: s.serverCertificate)
            var fine = try c.call(GetEndpointsRequest(requestHeader: c.header()))
            #expect(fine.0 == GetEndpointsResponse.binaryEncodingId)
            _ = try GetEndpointsResponse(from: &fine.1)
            var chunk = try c.chunk(GetEndpointsRequest(requestHeader: c.header()))
            chunk[chunk.count - 1] ^= 0x01
            c.send(chunk)
            #expect(try c.error() == .badSecurityChecksFailed)
            #expect(c.isClosed())
        }
        #expect(try good.readCurrentTime() == .good)

        // 200 sessions opened and abandoned: 49 more fit beside the well-behaved one, the rest get
        // Bad_TooManySessions; once their timeout (10 s) has passed they are gone and new ones fit again.
        do {
            let c = try RawClient(port: s.port)
            _ = try c.hello()
            try c.open()
            var results: [StatusCode: Int] = [:]
            for _ in 0..<200 {
                let saved = c.authenticationToken
                results[try c.session(timeoutMs: 10_000), default: 0] += 1
                c.authenticationToken = saved
            }
            #expect(results[.good] == 49 && results[.badTooManySessions] == 151, "\(results)")
            #expect(try good.readCurrentTime() == .good)
            clock.advance(11)
            // The well-behaved session asked for 60 s and is used; the abandoned ones are dropped.
            #expect(try good.readCurrentTime() == .good)
            #expect(try c.session(timeoutMs: 10_000) == .good)
            #expect(s.server.core.sessionCount == 2)
        }
        #expect(try good.readCurrentTime() == .good)
        let rssAfter = residentKiB()
        print("hostile clients: RSS \(rssBefore) KiB before, \(rssAfter) KiB after")
        #expect(rssAfter - rssBefore < 64 * 1024, "\(rssBefore) → \(rssAfter) KiB")
    }

    /// A client that sends requests and does not read the answers: past 256 KiB of answers waiting, its connection
    /// stops reading requests (SwiftNIO's write buffer water mark and autoRead), so what waits stays bounded; when
    /// the client reads again, every answer comes, in order, and a well-behaved client is served throughout.
    @Test func aClientThatDoesNotReadIsNotBufferedWithoutEnd() async throws {
        let s = try await TestServer(maxSessions: 50)
        defer { Task { await s.stop() } }
        let good = try RawClient.withSession(port: s.port)
        // A small window, so that the kernel's buffers do not take in what the test is about.
        let slow = try RawClient.withSession(port: s.port, receiveBuffer: 65_536)
        // Each request reads ServerStatus (i=2256) 2,000 times: ~36 KiB asked, ~300 KiB answered. 100 of them
        // unanswered would be ~30 MiB waiting in the server without backpressure.
        let items = [ReadValueId](repeating: ReadValueId(nodeId: NodeId(2256), attributeId: 13), count: 2_000)
        var sent = 0
        for _ in 0..<100 {
            guard slow.send(try slow.chunk(ReadRequest(requestHeader: slow.header(), nodesToRead: items))) else {
                break
            }
            sent += 1
        }
        // Until the server has stopped taking requests: answers wait past the low water mark (64 KiB) and what
        // waits has not grown for a second (a request of 2,000 reads takes the server some milliseconds).
        var peak = 0
        var grew = Date()
        let end = Date().addingTimeInterval(60)
        while peak < 65_536 || Date().timeIntervalSince(grew) < 1, Date() < end {
            #expect(try good.readCurrentTime() == .good)
            let pending = s.server.core.statistics().pendingOutputBytes
            if pending > peak {
                peak = pending
                grew = Date()
            }
        }
        print("a client that does not read: \(sent) requests sent, at most \(peak) bytes waiting in the server")
        #expect(sent >= 20)
        #expect(peak >= 65_536 && peak < 8 << 20, "\(peak) bytes waiting")
        // It reads again: every answer, then the connection goes on as before.
        for _ in 0..<sent {
            let (type, _) = try slow.receiveResponse()
            #expect(type == ReadResponse.binaryEncodingId)
        }
        #expect(try slow.readCurrentTime() == .good)
        // The last writes' completions run on the event loop after the client has the bytes.
        let settled = Date().addingTimeInterval(5)
        while s.server.core.statistics().pendingOutputBytes != 0, Date() < settled { usleep(1000) }
        #expect(s.server.core.statistics().pendingOutputBytes == 0)
    }
}
