// UA Secure Conversation's chunks (OPC 10000-6 §6.7.2), as values: their headers, the reassembly of a message
// from its chunks with the negotiated limits, the sequence numbers, and the chunking of an answer. The security
// policy None only (no signature, no padding); the signing and encrypting policies add their footer to these.

/// How a chunk is secured: OPN carries the asymmetric header (the policy's URI, the sender's certificate, the
/// thumbprint of the receiver's; OPC 10000-6 §6.7.2.3), MSG and CLO the symmetric one (the token id).
public enum SecurityHeader: Equatable, Sendable {
    case asymmetric(policyUri: String, senderCertificate: [UInt8]?, receiverThumbprint: [UInt8]?)
    case symmetric(tokenId: UInt32)
}

/// One chunk of a secure channel: the message header, the channel id, the security header, the sequence header
/// (sequence number and request id) and this chunk's part of the message body.
public struct SecureChunk: Equatable, Sendable {
    public var header: MessageHeader
    public var channelId: UInt32
    public var security: SecurityHeader
    public var sequenceNumber: UInt32
    public var requestId: UInt32
    public var body: [UInt8]

    public init(
        kind: MessageHeader.Kind, chunk: MessageHeader.Chunk = .final, channelId: UInt32, security: SecurityHeader,
        sequenceNumber: UInt32, requestId: UInt32, body: [UInt8]
    ) {
        header = MessageHeader(kind: kind, chunk: chunk, size: 0)
        self.channelId = channelId
        self.security = security
        self.sequenceNumber = sequenceNumber
        self.requestId = requestId
        self.body = body
        header.size = UInt32(clamping: encoded.count)
    }

    /// The policy URI of security policy None (OPC 10000-7), sent even when nothing is secured.
    public static let policyNone = "http://opcfoundation.org/UA/SecurityPolicy#None"

    /// The bytes after the message header and before the sequence header: the channel id and security header.
    var securityBytes: [UInt8] {
        var w = BinaryWriter()
        w.write(channelId)
        switch security {
        case .asymmetric(let uri, let certificate, let thumbprint):
            w.write(byteString: Array(uri.utf8))
            w.write(byteString: certificate)
            w.write(byteString: thumbprint)
        case .symmetric(let token):
            w.write(token)
        }
        return w.bytes
    }

    /// The chunk's bytes (header size as it is now).
    public var encoded: [UInt8] {
        var w = BinaryWriter(capacity: body.count + 64)
        w.append(raw: securityBytes)
        w.write(sequenceNumber)
        w.write(requestId)
        w.append(raw: body)
        return MessageHeader(kind: header.kind, chunk: header.chunk, size: UInt32(clamping: w.bytes.count + 8)).bytes
            + w.bytes
    }

    /// A whole OPN, MSG or CLO chunk (its header already checked against the receive buffer by the caller, and
    /// `bytes` exactly its size).
    public init(_ bytes: [UInt8]) throws(TransportError) {
        let header = try MessageHeader.parse(bytes, maxSize: UInt32(clamping: bytes.count))
        guard Int(header.size) == bytes.count else {
            throw TransportError(
                .badDecodingError, "\(header.kind.rawValue): \(bytes.count) bytes, the header says \(header.size)")
        }
        guard [.open, .message, .close].contains(header.kind) else {
            throw TransportError(.badTcpMessageTypeInvalid, "\(header.kind.rawValue) on a secure channel")
        }
        var r = BinaryReader(
            bytes,
            limits: DecodingLimits(maxStringLength: 0, maxByteStringLength: 1 << 16, maxArrayLength: 0, maxDepth: 1),
            offset: MessageHeader.length)
        do throws(DecodingError) {
            channelId = try r.readUInt32()
            if header.kind == .open {
                let uri = try r.readByteString() ?? []
                guard uri.count <= 255, let text = String(validating: uri, as: UTF8.self) else {
                    throw DecodingError(.invalid, at: MessageHeader.length + 4, "SecurityPolicyUri")
                }
                security = .asymmetric(
                    policyUri: text, senderCertificate: try r.readByteString(),
                    receiverThumbprint: try r.readByteString())
            } else {
                security = .symmetric(tokenId: try r.readUInt32())
            }
            sequenceNumber = try r.readUInt32()
            requestId = try r.readUInt32()
        } catch {
            throw TransportError(.badDecodingError, "\(header.kind.rawValue): \(error.detail)")
        }
        body = Array(bytes[r.offset...])
        self.header = header
    }
}

/// Puts a secure channel's messages together from their chunks, within the negotiated limits, and checks each
/// chunk's sequence number against the one before (OPC 10000-6 §6.7.2.4: one more, wrapping at the top).
public struct ChunkAssembler: Sendable {
    /// A message whose last chunk came, or the abort of one.
    public enum Outcome: Equatable, Sendable {
        case message(kind: MessageHeader.Kind, requestId: UInt32, body: [UInt8], security: SecurityHeader)
        /// An abort chunk ended the message `requestId` (its body: an error and a reason); the channel stays.
        case aborted(requestId: UInt32)
    }

    public let maxMessageSize: UInt32
    public let maxChunkCount: UInt32
    private var lastSequence: UInt32?
    private var partial: (requestId: UInt32, chunks: Int, body: [UInt8])?

    /// `maxMessageSize`, `maxChunkCount`: the server's, as its ACK said (0: no limit).
    public init(maxMessageSize: UInt32, maxChunkCount: UInt32) {
        self.maxMessageSize = maxMessageSize
        self.maxChunkCount = maxChunkCount
    }

    /// Takes the next chunk; a complete message (or an abort) when it ends one, nil while one is in progress.
    public mutating func add(_ chunk: SecureChunk) throws(TransportError) -> Outcome? {
        if let last = lastSequence {
            // The next number, or after the top (legacy policies wrap below 1024, others to 0).
            let wrapped = last >= UInt32.max - 1024 && chunk.sequenceNumber < 1024
            guard chunk.sequenceNumber == last &+ 1 || wrapped else {
                throw TransportError(
                    .badSequenceNumberInvalid, "sequence number \(chunk.sequenceNumber) after \(last)")
            }
        }
        lastSequence = chunk.sequenceNumber
        if chunk.header.chunk == .abort {
            guard let p = partial, p.requestId == chunk.requestId else {
                throw TransportError(
                    .badDecodingError, "an abort of request \(chunk.requestId), which is not in progress")
            }
            partial = nil
            return .aborted(requestId: p.requestId)
        }
        var p = partial ?? (chunk.requestId, 0, [])
        guard p.requestId == chunk.requestId else {
            throw TransportError(
                .badDecodingError, "a chunk of request \(chunk.requestId) inside request \(p.requestId)")
        }
        p.chunks += 1
        if maxChunkCount > 0, p.chunks > Int(maxChunkCount) {
            partial = nil
            throw TransportError(.badRequestTooLarge, "more than \(maxChunkCount) chunks in one message")
        }
        if maxMessageSize > 0, p.body.count + chunk.body.count > Int(maxMessageSize) {
            partial = nil
            throw TransportError(.badRequestTooLarge, "a message of more than \(maxMessageSize) bytes")
        }
        p.body += chunk.body
        if chunk.header.chunk == .intermediate {
            partial = p
            return nil
        }
        partial = nil
        return .message(kind: chunk.header.kind, requestId: p.requestId, body: p.body, security: chunk.security)
    }

    /// Cuts an answer into chunks of at most `bufferSize` bytes each (the client's receive buffer), numbered from
    /// `firstSequence`; refused past the client's `maxMessageSize` or `maxChunkCount` (0: no limit) with
    /// Bad_ResponseTooLarge (OPC 10000-6 §7.1.2.4).
    public static func chunks(
        kind: MessageHeader.Kind, channelId: UInt32, security: SecurityHeader, requestId: UInt32,
        firstSequence: UInt32, body: [UInt8], bufferSize: UInt32, maxMessageSize: UInt32, maxChunkCount: UInt32
    ) throws(TransportError) -> [SecureChunk] {
        if maxMessageSize > 0, body.count > Int(maxMessageSize) {
            throw TransportError(
                .badResponseTooLarge, "an answer of \(body.count) bytes, the client takes \(maxMessageSize)")
        }
        let empty = SecureChunk(
            kind: kind, channelId: channelId, security: security, sequenceNumber: 0, requestId: requestId, body: [])
        let room = Int(bufferSize) - Int(empty.header.size)
        guard room > 0 else { throw TransportError(.badTcpMessageTooLarge, "a buffer of \(bufferSize) bytes") }
        let count = max(1, (body.count + room - 1) / room)
        if maxChunkCount > 0, count > Int(maxChunkCount) {
            throw TransportError(
                .badResponseTooLarge, "an answer of \(count) chunks, the client takes \(maxChunkCount)")
        }
        var out: [SecureChunk] = []
        out.reserveCapacity(count)
        for i in 0..<count {
            let part = Array(body[min(body.count, i * room)..<min(body.count, (i + 1) * room)])
            out.append(
                SecureChunk(
                    kind: kind, chunk: i == count - 1 ? .final : .intermediate, channelId: channelId,
                    security: security, sequenceNumber: firstSequence &+ UInt32(truncatingIfNeeded: i),
                    requestId: requestId, body: part))
        }
        return out
    }
}
