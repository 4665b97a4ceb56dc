import Foundation
import OPCUA

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking UA-TCP client over a plain socket, for tests that must send what no well-made client sends: its
/// own Hello, chunks of any size and number, replayed sequence numbers, broken signatures. Policy None, or an RSA
/// policy with the chunk security of the OPCUA target (whose own tests hold it to asyncua's bytes).
final class RawClient {
    let fd: Int32
    var channelId: UInt32 = 0
    var tokenId: UInt32 = 0
    var sequence: UInt32 = 0
    var requestId: UInt32 = 0
    var crypto = ChunkCrypto.none
    var policy = SecurityPolicy.none
    var mode = MessageSecurityMode.none
    var authenticationToken = NodeId.null
    var serverNonce: [UInt8] = []

    struct Closed: Error, CustomStringConvertible {
        let description: String
    }

    /// `receiveBuffer`: the socket's receive buffer (SO_RCVBUF, before connecting: the TCP window it offers).
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Closed(description: "socket") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard r == 0 else { throw Closed(description: "connect: \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends bytes; false when the server closed the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    private func read(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { throw Closed(description: n == 0 ? "closed" : "recv: \(errno)") }
            got += n
        }
        return out
    }

    /// The next whole message from the server.
    func receive() throws -> [UInt8] {
        let head = try read(8)
        let size = Int(head[4]) | Int(head[5]) << 8 | Int(head[6]) << 16 | Int(head[7]) << 24
        guard size >= 8, size < 1 << 24 else { throw Closed(description: "a header of \(size) bytes") }
        return head + (try read(size - 8))
    }

    /// The status of the ERR the server answers with (nil for any other message).
    func error() throws -> StatusCode? {
        let m = try receive()
        guard m.count >= 12, Array(m[0..<3]) == Array("ERR".utf8) else { return nil }
        return StatusCode(UInt32(m[8]) | UInt32(m[9]) << 8 | UInt32(m[10]) << 16 | UInt32(m[11]) << 24)
    }

    /// Whether the server closed the connection (reads until EOF or the timeout).
    func isClosed() -> Bool {
        var byte: UInt8 = 0
        while true {
            let n = recv(fd, &byte, 1, 0)
            if n == 0 { return true }
            if n < 0 { return false }
        }
    }

    func hello(receiveBufferSize: UInt32 = 65_536, maxChunkCount: UInt32 = 0) throws -> Acknowledge {
        send(
            Hello(
                protocolVersion: 0, receiveBufferSize: receiveBufferSize, sendBufferSize: 65_536, maxMessageSize: 0,
                maxChunkCount: maxChunkCount, endpointUrl: "opc.tcp://127.0.0.1"
            ).message)
        let m = try receive()
        guard Array(m[0..<3]) == Array("ACK".utf8) else { throw Closed(description: "no ACK") }
        var r = BinaryReader(m, offset: 8)
        return Acknowledge(
            protocolVersion: try r.readUInt32(), receiveBufferSize: try r.readUInt32(),
            sendBufferSize: try r.readUInt32(), maxMessageSize: try r.readUInt32(), maxChunkCount: try r.readUInt32())
    }

    /// Opens the channel: policy None, or `policy` in `mode` with `own` key and certificate to the server's.
    func open(
        policy: SecurityPolicy = .none, mode: MessageSecurityMode = .none,
        own: (key: RSAKeyPair, certificate: ApplicationCertificate)? = nil, server: ApplicationCertificate? = nil
    ) throws {
        self.policy = policy
        self.mode = mode
        let nonce = policy == .none ? [] : (0..<policy.nonceLength).map { _ in UInt8.random(in: 0...255) }
        let request = OpenSecureChannelRequest(
            requestHeader: RequestHeader(requestHandle: 1, timeoutHint: 10_000), requestType: .issue,
            securityMode: mode, clientNonce: nonce, requestedLifetime: 600_000)
        var asymmetric = ChunkCrypto.none
        if let own, let server, let key = server.publicKey { asymmetric = .asymmetric(own: own.key, peer: key) }
        sequence += 1
        requestId += 1
        let chunk = SecureChunk(
            kind: .open, channelId: 0,
            security: .asymmetric(
                policyUri: policy.uri, senderCertificate: own?.certificate.der, receiverThumbprint: server?.thumbprint),
            sequenceNumber: sequence, requestId: requestId, body: request.messageBody)
        send(try chunk.sealed(with: asymmetric))
        let answer = try SecureChunk(try receive(), opening: asymmetric)
        var r = BinaryReader(answer.body)
        _ = try NodeId(from: &r)
        let response = try OpenSecureChannelResponse(from: &r)
        channelId = response.securityToken.channelId
        tokenId = response.securityToken.tokenId
        if policy != .none {
            let keys = policy.keys(clientNonce: nonce, serverNonce: response.serverNonce ?? [])
            crypto = .symmetric(local: keys.client, remote: keys.server, encrypt: mode == .signAndEncrypt)
        }
    }

    /// Renews the channel's token (policy None): an OPN with requestType Renew on the open channel; answers the
    /// new token's id (the client keeps sending with the old until it sets `tokenId`).
    func renew(lifetimeMs: UInt32 = 600_000) throws -> UInt32 {
        sequence += 1
        requestId += 1
        let request = OpenSecureChannelRequest(
            requestHeader: RequestHeader(requestHandle: 2, timeoutHint: 10_000), requestType: .renew,
            securityMode: .none, clientNonce: [], requestedLifetime: lifetimeMs)
        send(
            SecureChunk(
                kind: .open, channelId: channelId,
                security: .asymmetric(
                    policyUri: SecurityPolicy.none.uri, senderCertificate: nil, receiverThumbprint: nil),
                sequenceNumber: sequence, requestId: requestId, body: request.messageBody
            ).encoded)
        let answer = try SecureChunk(try receive())
        var r = BinaryReader(answer.body)
        _ = try NodeId(from: &r)
        let response = try OpenSecureChannelResponse(from: &r)
        return response.securityToken.tokenId
    }

    /// A MSG chunk of `request`, sealed, as bytes (not sent).
    func chunk(_ request: any Structure, kind: MessageHeader.Chunk = .final) throws -> [UInt8] {
        sequence += 1
        requestId += 1
        return try SecureChunk(
            kind: .message, chunk: kind, channelId: channelId, security: .symmetric(tokenId: tokenId),
            sequenceNumber: sequence, requestId: requestId, body: request.messageBody
        ).sealed(with: crypto)
    }

    /// Sends a request and answers the response's body (its encoding NodeId and the structure).
    func call(_ request: any Structure) throws -> (NodeId, BinaryReader) {
        send(try chunk(request))
        return try receiveResponse()
    }

    /// The next response's body, its chunks put together.
    func receiveResponse() throws -> (NodeId, BinaryReader) {
        var body: [UInt8] = []
        while true {
            let m = try receive()
            if Array(m[0..<3]) == Array("ERR".utf8) { throw Closed(description: "ERR") }
            let c = try SecureChunk(m, opening: crypto)
            body += c.body
            if c.header.chunk == .final { break }
        }
        var r = BinaryReader(body)
        let type = try NodeId(from: &r)
        return (type, r)
    }

    func header() -> RequestHeader {
        RequestHeader(authenticationToken: authenticationToken, requestHandle: requestId + 1, timeoutHint: 10_000)
    }

    /// CreateSession and ActivateSession, anonymous (on policy None).
    func session(timeoutMs: Double = 60_000) throws -> StatusCode {
        let (type, r0) = try call(
            CreateSessionRequest(
                requestHeader: header(),
                clientDescription: ApplicationDescription(applicationUri: "urn:raw", applicationType: .client),
                endpointUrl: "opc.tcp://127.0.0.1", sessionName: "raw", clientNonce: [UInt8](repeating: 7, count: 32),
                requestedSessionTimeout: timeoutMs))
        var r = r0
        guard type == CreateSessionResponse.binaryEncodingId else {
            return (try? ServiceFault(from: &r).responseHeader.serviceResult) ?? .badUnexpectedError
        }
        let created = try CreateSessionResponse(from: &r)
        authenticationToken = created.authenticationToken
        let (type2, r1) = try call(
            ActivateSessionRequest(
                requestHeader: header(),
                userIdentityToken: AnonymousIdentityToken(policyId: "anonymous").extensionObject))
        var r2 = r1
        guard type2 == ActivateSessionResponse.binaryEncodingId else {
            return (try? ServiceFault(from: &r2).responseHeader.serviceResult) ?? .badUnexpectedError
        }
        return .good
    }

    /// A client with a channel (policy None) and an activated anonymous session, the start of most tests.
    static func withSession(port: Int, receiveBuffer: Int32? = nil) throws -> RawClient {
        let c = try RawClient(port: port, receiveBuffer: receiveBuffer)
        _ = try c.hello()
        try c.open()
        let status = try c.session()
        guard status == .good else { throw Closed(description: "the session: \(status)") }
        return c
    }

    /// Reads the server's CurrentTime (i=2258): its status.
    func readCurrentTime() throws -> StatusCode {
        let (type, r0) = try call(
            ReadRequest(requestHeader: header(), nodesToRead: [ReadValueId(nodeId: NodeId(2258), attributeId: 13)]))
        var r = r0
        guard type == ReadResponse.binaryEncodingId else {
            return (try? ServiceFault(from: &r).responseHeader.serviceResult) ?? .badUnexpectedError
        }
        let response = try ReadResponse(from: &r)
        guard let v = response.results?.first else { return .badUnexpectedError }
        guard case .scalar(.dateTime)? = v.value else { return v.status ?? .badUnexpectedError }
        return .good
    }
}

/// The resident set of this process (the server runs in it), from /proc/self/status, in KiB.
func residentKiB() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}
