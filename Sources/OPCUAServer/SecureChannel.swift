import Foundation
import OPCUA

/// What the services see of the channel a request came on.
public protocol ChannelContext: AnyObject, Sendable {
    var channelId: UInt32 { get }
    var security: EndpointSecurity { get }
    /// The client's certificate (nil on policy None).
    var clientCertificate: ApplicationCertificate? { get }
    /// The URL the client said it dialled in its Hello.
    var endpointUrl: String? { get }
    /// Sends the answer to `requestId` (a Publish answered later, when there is something to say).
    func respond(requestId: UInt32, _ response: any Structure)
    var isOpen: Bool { get }
}

/// One UA-TCP connection and the secure channel on it (OPC 10000-6 §6.7 and §7.1): the Hello and its
/// Acknowledge, the OPN that opens and renews the channel, MSG chunks put together into requests, the answers
/// cut into chunks, CLO. Each whole UA-TCP message comes in through `receive` (the framing has checked its size
/// against the receive buffer); what goes out goes through `send`. A failure that ends the connection is an ERR
/// with its status, then `close`.
public final class SecureChannel: ChannelContext, @unchecked Sendable {
    struct Token {
        let id: UInt32
        let created: Date
        let lifetimeMs: UInt32
        let crypto: ChunkCrypto
        /// Valid until a quarter past its lifetime (OPC 10000-4 §5.5.2: the client renews at 75 %).
        var expires: Date { created.addingTimeInterval(Double(lifetimeMs) / 1000 * 1.25) }
    }

    private let lock = NSLock()
    private let server: ServerCore
    private let sendBytes: @Sendable ([UInt8]) -> Void
    private let closeConnection: @Sendable () -> Void
    private var negotiated: TransportLimits.Negotiated?
    private var assembler: ChunkAssembler?
    private var asymmetric = ChunkCrypto.none
    private var tokens: [Token] = []
    private var sendSequence: UInt32 = 0
    private var nextTokenId: UInt32 = 1
    private var closed = false
    private var _channelId: UInt32 = 0
    private var _security = EndpointSecurity(.none, .none)
    private var _clientCertificate: ApplicationCertificate?
    /// When the connection came (it has 30 s to open its channel).
    private let connected: Date
    static let openDeadline: TimeInterval = 30

    /// The lock around a body that throws a typed error.
    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    public var channelId: UInt32 { lock.withLock { _channelId } }
    public var security: EndpointSecurity { lock.withLock { _security } }
    public var clientCertificate: ApplicationCertificate? { lock.withLock { _clientCertificate } }
    public var endpointUrl: String? { lock.withLock { negotiated?.endpointUrl } }
    public var isOpen: Bool { lock.withLock { !closed } }

    init(
        server: ServerCore, send: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable () -> Void
    ) {
        self.server = server
        self.sendBytes = send
        self.closeConnection = close
        self.connected = server.now()
    }

    /// One whole UA-TCP message from the client.
    public func receive(_ message: [UInt8]) {
        do throws(TransportError) {
            let header = try MessageHeader.parse(message, maxSize: UInt32(clamping: message.count))
            switch header.kind {
            case .hello: try hello(message)
            case .open: try open(message)
            case .message: try self.message(message)
            case .close: try closeChannel(message)
            default: throw TransportError(.badTcpMessageTypeInvalid, "\(header.kind.rawValue) from a client")
            }
        } catch {
            fail(error)
        }
    }

    /// Ends the connection with an ERR that says why.
    public func fail(_ error: TransportError) {
        let first = lock.withLock {
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        server.log("channel \(channelId): \(error)")
        sendBytes(error.message.message)
        closeConnection()
        server.channelClosed(self)
    }

    /// The connection went away (the peer closed it, or the server stops).
    public func connectionClosed() {
        lock.withLock { closed = true }
        server.channelClosed(self)
    }

    /// Called now and then: a channel whose last token expired without a renewal is closed.
    public func tick(now: Date) {
        let (expired, unopened) = lock.withLock {
            (
                !closed && (tokens.last.map { $0.expires < now } ?? false),
                !closed && tokens.isEmpty && now.timeIntervalSince(connected) > Self.openDeadline
            )
        }
        if expired { fail(TransportError(.badSecureChannelClosed, "the channel's lifetime ended without a renewal")) }
        if unopened { fail(TransportError(.badTimeout, "no secure channel opened in \(Int(Self.openDeadline)) s")) }
    }

    // MARK: Hello

    private func hello(_ bytes: [UInt8]) throws(TransportError) {
        guard lock.withLock({ negotiated == nil }) else {
            throw TransportError(.badTcpMessageTypeInvalid, "a second Hello")
        }
        let hello = try Hello(message: bytes)
        let n = try server.configuration.limits.negotiate(hello)
        lock.withLock {
            negotiated = n
            assembler = ChunkAssembler(maxMessageSize: n.maxRequestSize, maxChunkCount: n.maxRequestChunks)
        }
        sendBytes(n.acknowledge.message)
    }

    // MARK: OpenSecureChannel

    private func open(_ bytes: [UInt8]) throws(TransportError) {
        guard let n = lock.withLock({ negotiated }) else {
            throw TransportError(.badTcpMessageTypeInvalid, "an OPN before the Hello")
        }
        let plain = try SecureChunk(bytes)
        guard case .asymmetric(let uri, let certificate, let thumbprint) = plain.security else {
            throw TransportError(.badDecodingError, "an OPN without its asymmetric header")
        }
        guard plain.header.chunk == .final else {
            throw TransportError(.badTcpMessageTooLarge, "an OPN in more than one chunk")
        }
        guard let policy = SecurityPolicy.named(uri),
            server.configuration.security.contains(where: { $0.policy == policy })
        else { throw TransportError(.badSecurityPolicyRejected, "security policy \(uri) is not offered") }
        let renewing = lock.withLock { _channelId != 0 }
        if renewing {
            guard plain.channelId == channelId, policy == security.policy else {
                throw TransportError(
                    .badSecureChannelIdInvalid, "a renewal of channel \(plain.channelId) on \(channelId)")
            }
        }
        var crypto = ChunkCrypto.none
        var client: ApplicationCertificate?
        if policy != .none {
            guard let identity = server.configuration.identity else {
                throw TransportError(.badSecurityPolicyRejected, "\(uri) needs the server's certificate")
            }
            guard thumbprint == identity.certificate.thumbprint else {
                throw TransportError(.badCertificateInvalid, "the OPN is encrypted for another certificate")
            }
            guard let der = certificate, let c = try? ApplicationCertificate(der: der), let key = c.publicKey else {
                throw TransportError(.badCertificateInvalid, "the client's certificate cannot be read")
            }
            if let refusal = c.check(now: server.now(), applicationUri: nil, trusted: server.configuration.trusted()) {
                server.certificateRefused()
                if refusal.status == .badCertificateUntrusted { server.configuration.rejected(c) }
                // The client learns Bad_SecurityChecksFailed only (OPC 10000-4 §5.5.2: nothing a probe could use);
                // the log has the reason.
                // Untrusted ones are logged by the `rejected` hook with how to trust them; the others here.
                if refusal.status != .badCertificateUntrusted, server.refusals.shouldLog(c.fingerprint) {
                    server.logger.warning(
                        "opcua: refused a secure channel: \(refusal.status.name ?? "\(refusal.status)"): \(refusal.description)"
                    )
                }
                throw TransportError(.badSecurityChecksFailed, "the client's certificate was refused")
            }
            guard key.size >= 256, key.size <= 512 else {
                throw TransportError(.badCertificatePolicyCheckFailed, "a \(key.size * 8)-bit client key")
            }
            crypto = .asymmetric(own: identity.key, peer: key)
            client = c
        }
        let chunk = try SecureChunk(bytes, opening: crypto)
        guard
            case .message(_, let requestId, let body, _)? = try locked({ () throws(TransportError) in
                try assembler?.add(chunk)
            })
        else { throw TransportError(.badDecodingError, "an OPN that does not end a message") }
        let request: OpenSecureChannelRequest
        do throws(DecodingError) {
            var r = BinaryReader(body, limits: server.decodingLimits)
            let type = try NodeId(from: &r)
            guard type == OpenSecureChannelRequest.binaryEncodingId else {
                throw DecodingError(.invalid, at: 0, "an OPN carrying \(type)")
            }
            request = try OpenSecureChannelRequest(from: &r)
        } catch { throw TransportError(.badDecodingError, "OpenSecureChannelRequest: \(error.detail)") }

        switch request.requestType {
        case .issue where renewing, .renew where !renewing:
            throw TransportError(.badRequestTypeInvalid, "\(request.requestType) on channel \(channelId)")
        default: break
        }
        let security = EndpointSecurity(policy, request.securityMode)
        if renewing {
            guard security == self.security else {
                throw TransportError(.badSecurityModeRejected, "a renewal may not change the security mode")
            }
        } else {
            guard server.configuration.security.contains(security) else {
                throw TransportError(.badSecurityModeRejected, "\(security) is not offered")
            }
        }
        let clientNonce = request.clientNonce ?? []
        guard policy == .none || clientNonce.count == policy.nonceLength else {
            throw TransportError(.badNonceInvalid, "a client nonce of \(clientNonce.count) bytes")
        }
        let serverNonce = policy == .none ? [] : ServerCore.random(policy.nonceLength)
        var symmetric = ChunkCrypto.none
        if policy != .none {
            let keys = policy.keys(clientNonce: clientNonce, serverNonce: serverNonce)
            symmetric = .symmetric(local: keys.server, remote: keys.client, encrypt: security.mode == .signAndEncrypt)
        }
        let lifetime = min(max(request.requestedLifetime, 10_000), 3_600_000)
        let now = server.now()
        let (id, token): (UInt32, Token) = lock.withLock {
            if _channelId == 0 { _channelId = server.newChannelId() }
            let token = Token(id: nextTokenId, created: now, lifetimeMs: lifetime, crypto: symmetric)
            nextTokenId &+= 1
            // The old token stays valid until the client uses the new one (or it expires).
            // At most the token the client uses and the new one: renewals cannot pile tokens up.
            tokens = Array(tokens.filter { $0.expires > now }.prefix(1)) + [token]
            asymmetric = crypto
            _security = security
            _clientCertificate = client
            return (_channelId, token)
        }
        let response = OpenSecureChannelResponse(
            responseHeader: server.header(request.requestHeader, now: now), serverProtocolVersion: 0,
            securityToken: ChannelSecurityToken(
                channelId: id, tokenId: token.id, createdAt: DateTime(now), revisedLifetime: lifetime),
            serverNonce: serverNonce)
        let header = SecurityHeader.asymmetric(
            policyUri: policy.uri,
            senderCertificate: policy == .none ? nil : server.configuration.identity?.certificate.der,
            receiverThumbprint: client?.thumbprint)
        try sendMessage(
            kind: .open, security: header, crypto: crypto, requestId: requestId,
            body: response.messageBody, limits: n)
    }

    // MARK: MSG and CLO

    private func token(for chunk: SecureChunk) throws(TransportError) -> Token {
        guard case .symmetric(let id) = chunk.security else {
            throw TransportError(.badDecodingError, "a \(chunk.header.kind.rawValue) without its token id")
        }
        let now = server.now()
        return try locked { () throws(TransportError) -> Token in
            guard _channelId != 0, chunk.channelId == _channelId else {
                throw TransportError(.badTcpSecureChannelUnknown, "channel \(chunk.channelId) is not open here")
            }
            guard let i = tokens.firstIndex(where: { $0.id == id }), tokens[i].expires > now else {
                throw TransportError(.badSecureChannelTokenUnknown, "token \(id) of channel \(_channelId)")
            }
            // The client uses a newer token: the older ones are done.
            if i > 0 { tokens.removeFirst(i) }
            return tokens[0]
        }
    }

    private func message(_ bytes: [UInt8]) throws(TransportError) {
        let plain = try SecureChunk(bytes)
        let token = try token(for: plain)
        let chunk = try SecureChunk(bytes, opening: token.crypto)
        guard let outcome = try locked({ () throws(TransportError) in try assembler?.add(chunk) }) else { return }
        guard case .message(_, let requestId, let body, _) = outcome else { return }
        server.services.handle(body, requestId: requestId, on: self)
    }

    private func closeChannel(_ bytes: [UInt8]) throws(TransportError) {
        let plain = try SecureChunk(bytes)
        let token = try token(for: plain)
        _ = try SecureChunk(bytes, opening: token.crypto)
        lock.withLock { closed = true }
        closeConnection()
        server.channelClosed(self)
    }

    // MARK: Sending

    public func respond(requestId: UInt32, _ response: any Structure) {
        let (limits, token, channel) = lock.withLock { (negotiated, tokens.first, _channelId) }
        guard let limits, let token, isOpen else { return }
        do throws(TransportError) {
            try sendMessage(
                kind: .message, security: .symmetric(tokenId: token.id), crypto: token.crypto, requestId: requestId,
                body: response.messageBody, limits: limits)
        } catch  where error.status == .badResponseTooLarge {
            // Too large for the client: a ServiceFault says so instead (OPC 10000-6 §7.1.2.4).
            var header = ResponseHeader(timestamp: DateTime(server.now()), serviceResult: .badResponseTooLarge)
            header.requestHandle = Self.requestHandle(of: response)
            let fault = ServiceFault(responseHeader: header)
            try? sendMessage(
                kind: .message, security: .symmetric(tokenId: token.id), crypto: token.crypto, requestId: requestId,
                body: fault.messageBody, limits: limits)
        } catch {
            server.log("channel \(channel): \(error)")
            fail(error)
        }
    }

    private static func requestHandle(of response: any Structure) -> UInt32 {
        // Every response starts with its ResponseHeader: its timestamp (8 bytes), then the request handle.
        let bytes = response.encoded
        guard bytes.count >= 12 else { return 0 }
        return bytes[8..<12].reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    private func sendMessage(
        kind: MessageHeader.Kind, security: SecurityHeader, crypto: ChunkCrypto, requestId: UInt32, body: [UInt8],
        limits: TransportLimits.Negotiated
    ) throws(TransportError) {
        if limits.maxResponseSize > 0, body.count > Int(limits.maxResponseSize) {
            throw TransportError(
                .badResponseTooLarge, "an answer of \(body.count) bytes, the client takes \(limits.maxResponseSize)")
        }
        let channel = lock.withLock { _channelId }
        let probe = SecureChunk(
            kind: kind, channelId: channel, security: security, sequenceNumber: 0, requestId: requestId, body: [])
        let room = crypto.maxBodySize(bufferSize: Int(limits.sendBufferSize), headerLength: probe.headerLength)
        guard room > 0 else {
            throw TransportError(.badTcpMessageTooLarge, "a send buffer of \(limits.sendBufferSize)")
        }
        let count = max(1, (body.count + room - 1) / room)
        if limits.maxResponseChunks > 0, count > Int(limits.maxResponseChunks) {
            throw TransportError(
                .badResponseTooLarge, "an answer of \(count) chunks, the client takes \(limits.maxResponseChunks)")
        }
        var out: [UInt8] = []
        out.reserveCapacity(body.count + count * (probe.headerLength + 64))
        // The sequence numbers and the bytes go out in one piece, so chunks of two answers never interleave.
        try locked { () throws(TransportError) in
            for i in 0..<count {
                sendSequence &+= 1
                if sendSequence == 0 { sendSequence = 1 }
                let part = Array(body[min(body.count, i * room)..<min(body.count, (i + 1) * room)])
                let chunk = SecureChunk(
                    kind: kind, chunk: i == count - 1 ? .final : .intermediate, channelId: channel, security: security,
                    sequenceNumber: sendSequence, requestId: requestId, body: part)
                do { out += try chunk.sealed(with: crypto) } catch {
                    throw TransportError(.badSecurityChecksFailed, "sealing an answer: \(error)")
                }
            }
            sendBytes(out)
        }
    }
}

extension DateTime {
    public init(_ date: Date) { self.init(millisecondsSince1970: Int64((date.timeIntervalSince1970 * 1000).rounded())) }
}
