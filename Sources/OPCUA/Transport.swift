// UA-TCP, the connection protocol under a secure channel (OPC 10000-6 §7.1), as values: the message header,
// Hello, Acknowledge and Error, and the server's side of the buffer negotiation. No I/O: the server's channel
// handler reads the bytes and asks these.

/// A failure of the connection itself: the server answers it with an ERR message (this status and reason) and
/// closes the connection (OPC 10000-6 §7.1.5).
public struct TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: StatusCode
    public let reason: String

    public init(_ status: StatusCode, _ reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "OPC UA transport \(status): \(reason)" }

    /// The ERR message that says it.
    public var message: ErrorMessage { ErrorMessage(error: status, reason: reason) }
}

/// The 8 bytes before every UA-TCP message and secure-conversation chunk (OPC 10000-6 §7.1.2.2, §6.7.2.2): three
/// ASCII letters, the chunk type (`F` final, `C` intermediate, `A` abort), the UInt32 size including these 8 bytes.
public struct MessageHeader: Equatable, Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case hello = "HEL", acknowledge = "ACK", error = "ERR", reverseHello = "RHE"
        case open = "OPN", message = "MSG", close = "CLO"
    }
    public enum Chunk: UInt8, Sendable {
        case final = 0x46, intermediate = 0x43, abort = 0x41
    }
    public var kind: Kind
    public var chunk: Chunk
    public var size: UInt32

    public static let length = 8

    public init(kind: Kind, chunk: Chunk = .final, size: UInt32) {
        self.kind = kind
        self.chunk = chunk
        self.size = size
    }

    public var bytes: [UInt8] {
        var w = BinaryWriter(capacity: 8)
        w.append(raw: Array(kind.rawValue.utf8))
        w.write(chunk.rawValue)
        w.write(size)
        return w.bytes
    }

    /// The header at the start of `bytes` (at least 8 of them). `maxSize`: the largest message the server takes
    /// now (its receive buffer; before the Hello, the 8,192 bytes every peer supports). Only a MSG may be an
    /// intermediate or abort chunk.
    public static func parse(_ bytes: [UInt8], maxSize: UInt32) throws(TransportError) -> MessageHeader {
        guard bytes.count >= length else {
            throw TransportError(.badDecodingError, "a message header needs 8 bytes, \(bytes.count) came")
        }
        let letters = String(decoding: bytes[0..<3], as: UTF8.self)
        guard let kind = Kind(rawValue: letters), bytes[0..<3].allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            throw TransportError(
                .badTcpMessageTypeInvalid, "message type \(bytes[0..<3].map { String($0, radix: 16) })")
        }
        guard let chunk = Chunk(rawValue: bytes[3]), chunk == .final || kind == .message else {
            throw TransportError(
                .badTcpMessageTypeInvalid, "\(letters) with chunk type 0x\(String(bytes[3], radix: 16))")
        }
        let size = UInt32(bytes[4]) | UInt32(bytes[5]) << 8 | UInt32(bytes[6]) << 16 | UInt32(bytes[7]) << 24
        guard size >= UInt32(length) else {
            throw TransportError(.badDecodingError, "\(letters): size \(size) is less than its header")
        }
        guard size <= maxSize else {
            throw TransportError(
                .badTcpMessageTooLarge, "\(letters): \(size) bytes, more than the \(maxSize) negotiated")
        }
        return MessageHeader(kind: kind, chunk: chunk, size: size)
    }
}

/// HEL: the client's first message (OPC 10000-6 §7.1.2.3).
public struct Hello: Equatable, Sendable {
    public var protocolVersion: UInt32
    /// The largest chunk the client can receive, and the largest it will send.
    public var receiveBufferSize: UInt32
    public var sendBufferSize: UInt32
    /// The largest response message (all chunks) and the most chunks the client takes; 0: no limit.
    public var maxMessageSize: UInt32
    public var maxChunkCount: UInt32
    public var endpointUrl: String?

    public init(
        protocolVersion: UInt32 = 0, receiveBufferSize: UInt32, sendBufferSize: UInt32, maxMessageSize: UInt32 = 0,
        maxChunkCount: UInt32 = 0, endpointUrl: String?
    ) {
        self.protocolVersion = protocolVersion
        self.receiveBufferSize = receiveBufferSize
        self.sendBufferSize = sendBufferSize
        self.maxMessageSize = maxMessageSize
        self.maxChunkCount = maxChunkCount
        self.endpointUrl = endpointUrl
    }

    /// The longest endpoint URL a Hello may carry (OPC 10000-6 §7.1.2.3: 4,096 bytes).
    public static let maxEndpointUrlLength = 4096

    /// The whole message, header included.
    public var message: [UInt8] {
        var w = BinaryWriter()
        for v in [protocolVersion, receiveBufferSize, sendBufferSize, maxMessageSize, maxChunkCount] { w.write(v) }
        w.write(string: endpointUrl)
        return MessageHeader(kind: .hello, size: UInt32(clamping: w.bytes.count + 8)).bytes + w.bytes
    }

    /// A whole HEL message (header included, as `MessageHeader.parse` took it).
    public init(message bytes: [UInt8]) throws(TransportError) {
        let header = try MessageHeader.parse(bytes, maxSize: UInt32(clamping: bytes.count))
        guard header.kind == .hello, Int(header.size) == bytes.count else {
            throw TransportError(.badTcpMessageTypeInvalid, "not one whole HEL message")
        }
        var r = BinaryReader(
            bytes,
            limits: DecodingLimits(
                maxStringLength: Self.maxEndpointUrlLength, maxByteStringLength: 0, maxArrayLength: 0, maxDepth: 1),
            offset: MessageHeader.length)
        do throws(DecodingError) {
            protocolVersion = try r.readUInt32()
            receiveBufferSize = try r.readUInt32()
            sendBufferSize = try r.readUInt32()
            maxMessageSize = try r.readUInt32()
            maxChunkCount = try r.readUInt32()
            endpointUrl = try r.readString()
        } catch {
            throw TransportError(
                error.kind == .limit ? .badTcpEndpointUrlInvalid : .badDecodingError, "HEL: \(error.detail)")
        }
        guard r.isAtEnd else { throw TransportError(.badDecodingError, "HEL: \(r.remaining) bytes after it") }
    }
}

/// ACK: the server's answer to a Hello (OPC 10000-6 §7.1.2.4): what it takes and what it will send.
public struct Acknowledge: Equatable, Sendable {
    public var protocolVersion: UInt32
    public var receiveBufferSize: UInt32
    public var sendBufferSize: UInt32
    public var maxMessageSize: UInt32
    public var maxChunkCount: UInt32

    public init(
        protocolVersion: UInt32 = 0, receiveBufferSize: UInt32, sendBufferSize: UInt32, maxMessageSize: UInt32,
        maxChunkCount: UInt32
    ) {
        self.protocolVersion = protocolVersion
        self.receiveBufferSize = receiveBufferSize
        self.sendBufferSize = sendBufferSize
        self.maxMessageSize = maxMessageSize
        self.maxChunkCount = maxChunkCount
    }

    public var message: [UInt8] {
        var w = BinaryWriter(capacity: 28)
        for v in [protocolVersion, receiveBufferSize, sendBufferSize, maxMessageSize, maxChunkCount] { w.write(v) }
        return MessageHeader(kind: .acknowledge, size: 28).bytes + w.bytes
    }
}

/// ERR: why the connection ends (OPC 10000-6 §7.1.2.5); the reason at most 4,096 bytes.
public struct ErrorMessage: Equatable, Sendable {
    public var error: StatusCode
    public var reason: String

    public init(error: StatusCode, reason: String) {
        self.error = error
        self.reason = reason
    }

    public var message: [UInt8] {
        var w = BinaryWriter()
        error.encode(to: &w)
        // Cut at a character boundary within 4,096 bytes.
        var text = Substring(reason)
        while text.utf8.count > 4096 { text = text.dropLast() }
        w.write(string: String(text))
        return MessageHeader(kind: .error, size: UInt32(clamping: w.bytes.count + 8)).bytes + w.bytes
    }
}

/// What the server takes and sends on a connection, and the negotiation of a Hello against it.
public struct TransportLimits: Equatable, Sendable {
    /// The largest chunk the server receives and sends (each at least 8,192: OPC 10000-6 §7.1.2.3).
    public var receiveBufferSize: UInt32
    public var sendBufferSize: UInt32
    /// The largest request message, and the most chunks of one, the server takes.
    public var maxMessageSize: UInt32
    public var maxChunkCount: UInt32

    public init(receiveBufferSize: UInt32, sendBufferSize: UInt32, maxMessageSize: UInt32, maxChunkCount: UInt32) {
        self.receiveBufferSize = receiveBufferSize
        self.sendBufferSize = sendBufferSize
        self.maxMessageSize = maxMessageSize
        self.maxChunkCount = maxChunkCount
    }

    /// 64 KiB chunks, requests up to 4 MiB in at most 64 chunks.
    public static let server = TransportLimits(
        receiveBufferSize: 65_536, sendBufferSize: 65_536, maxMessageSize: 4 << 20, maxChunkCount: 64)

    /// The smallest buffer any peer must support.
    public static let minimumBufferSize: UInt32 = 8192

    /// The connection's terms after a Hello: what the server receives (its own limits, and chunks no larger than
    /// the client sends) and what it may send (chunks no larger than the client receives; responses within the
    /// client's maximum message size and chunk count, 0 meaning none).
    public struct Negotiated: Equatable, Sendable {
        public var receiveBufferSize: UInt32
        public var sendBufferSize: UInt32
        public var maxRequestSize: UInt32
        public var maxRequestChunks: UInt32
        public var maxResponseSize: UInt32
        public var maxResponseChunks: UInt32
        public var endpointUrl: String?

        /// The ACK that says the server's part.
        public var acknowledge: Acknowledge {
            Acknowledge(
                receiveBufferSize: receiveBufferSize, sendBufferSize: sendBufferSize, maxMessageSize: maxRequestSize,
                maxChunkCount: maxRequestChunks)
        }
    }

    /// The terms for `hello`: the server's receive buffer no larger than the client's send buffer, its send buffer
    /// no larger than the client's receive buffer (OPC 10000-6 §7.1.2.4). A client whose buffers are below 8,192
    /// bytes is refused; a huge one (asyncua asks for 2³¹ − 1) gets the server's own sizes.
    public func negotiate(_ hello: Hello) throws(TransportError) -> Negotiated {
        guard hello.receiveBufferSize >= Self.minimumBufferSize, hello.sendBufferSize >= Self.minimumBufferSize else {
            throw TransportError(
                .badConnectionRejected,
                "HEL: buffers of \(hello.receiveBufferSize)/\(hello.sendBufferSize) bytes, below the 8192 every peer supports"
            )
        }
        return Negotiated(
            receiveBufferSize: min(receiveBufferSize, hello.sendBufferSize),
            sendBufferSize: min(sendBufferSize, hello.receiveBufferSize),
            maxRequestSize: maxMessageSize, maxRequestChunks: maxChunkCount, maxResponseSize: hello.maxMessageSize,
            maxResponseChunks: hello.maxChunkCount, endpointUrl: hello.endpointUrl)
    }
}
