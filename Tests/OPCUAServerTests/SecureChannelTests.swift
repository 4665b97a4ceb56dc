import Foundation
import OPCUA
import Testing

@testable import OPCUAServer

/// The secure channel's token renewal and lifetime (OPC 10000-4 §5.5.2, OPC 10000-6 §6.7.6): a renewed channel
/// keeps the old token valid until the client uses the new one; a channel whose token expires without renewal
/// is closed (on an injected clock, no sleeping).
@Suite(.serialized)
struct SecureChannelTests {
    @Test func aRenewalKeepsTheOldTokenUntilTheNewOneIsUsed() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let c = try RawClient.withSession(port: s.port)
        let first = c.tokenId
        let second = try c.renew()
        #expect(second != first)
        // The old token still works: the client has not used the new one yet.
        #expect(try c.readCurrentTime() == .good)
        c.tokenId = second
        #expect(try c.readCurrentTime() == .good)
        // Once the new one is used, the old one is done: Bad_SecureChannelTokenUnknown, the channel closed.
        c.tokenId = first
        c.send(try c.chunk(ReadRequest(requestHeader: c.header())))
        #expect(try c.error() == .badSecureChannelTokenUnknown)
        #expect(c.isClosed())
    }

    @Test func aChannelWhoseTokenExpiresIsClosed() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let c = try RawClient(port: s.port)
        _ = try c.hello()
        try c.open()  // a lifetime of 600 s asked for and granted
        #expect(try c.readCurrentTimeWithoutSession() == .badSessionIdInvalid)
        clock.advance(600 * 1.2)
        #expect(try c.readCurrentTimeWithoutSession() == .badSessionIdInvalid)
        clock.advance(600 * 0.1)
        // Past a quarter over the lifetime without a renewal: the server's tick closes the channel.
        #expect(try c.error() == .badSecureChannelClosed)
        #expect(c.isClosed())
    }
}

extension RawClient {
    /// A Read without a session: the ServiceFault's status.
    func readCurrentTimeWithoutSession() throws -> StatusCode {
        let saved = authenticationToken
        defer { authenticationToken = saved }
        authenticationToken = .null
        return try readCurrentTime()
    }
}
