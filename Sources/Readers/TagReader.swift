import ISO15693

/// How long the reader waits for an answer.
public enum ResponseWait: Sendable, Equatable {
    /// Read-alike: the answer starts t1 after the request.
    case standard
    /// Write-alike: without the Option flag the tag answers by itself after programming (up to 20 ms);
    /// with it, the reader sends a lone EOF after its EOF delay and the tag answers t1 later.
    case writeAlike(optionFlag: Bool)
    /// A chip slower than the standard: its answer may start up to this long after the request (the ams SL13A:
    /// "~30ms needed for SL13A", ams's AS3911 reader code; docs/reference/sensor-tags.md).
    case window(AirTime)
}

/// What a reader reports instead of an answer. Every driver maps its own errors onto these.
public enum ReaderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No tag answered within the waiting time.
    case timeout
    /// Two or more tags answered at once.
    case collision
    /// An answer arrived with a wrong CRC.
    case crcError(FrameError)
    /// The reader's RF field is off.
    case fieldOff
    /// A frame longer than the reader can send or receive.
    case frameTooLong(bytes: Int, limit: Int)
    /// The driver or device failed; the message says what to do.
    case device(String)
    /// This reader cannot carry ISO 15693 at all; the message names what works instead.
    case notSupported(String)
    /// A reader that speaks to the tag itself (a FEIG reader's host commands) reports that this exchange
    /// failed, for a reason that is neither silence nor a collision nor the tag's own error code (a write
    /// error, an address error, a command the reader does not offer). The reader itself still works.
    case readerStatus(code: UInt8, text: String)

    public var description: String {
        switch self {
        case .timeout: return "no answer from the tag (timeout)"
        case .collision: return "collision: two or more tags answered at once"
        case let .crcError(e): return "corrupted answer: \(e)"
        case .fieldOff: return "the reader's RF field is off"
        case let .frameTooLong(b, l): return "frame of \(b) bytes exceeds the reader's limit of \(l) bytes"
        case let .device(m): return m
        case let .notSupported(m): return m
        case let .readerStatus(code, text): return "the reader reports status 0x\(Hex.format([code])): \(text)"
        }
    }
}

/// The limits of a reader.
public struct ReaderLimits: Sendable, Equatable {
    /// Largest request frame without CRC.
    public var maxRequestBytes: Int
    /// Largest response frame without CRC.
    public var maxResponseBytes: Int
    /// When the reader sends the lone EOF after a write-alike command with the Option flag.
    public var optionEOFDelay: AirTime
    /// How long it waits for a write-alike answer without the Option flag.
    public var writeTimeout: AirTime

    public init(
        maxRequestBytes: Int = 256, maxResponseBytes: Int = 256,
        optionEOFDelay: AirTime = .microseconds(20_000), writeTimeout: AirTime = .microseconds(20_000)
    ) {
        self.maxRequestBytes = maxRequestBytes
        self.maxResponseBytes = maxResponseBytes
        self.optionEOFDelay = optionEOFDelay
        self.writeTimeout = writeTimeout
    }
}

/// One event of a reader's trace.
public struct TraceEvent: Sendable, Equatable {
    public enum Direction: String, Sendable {
        case readerToTag = ">>", tagToReader = "<<", slotMarker = "EOF", nothing = "--"
    }
    public let direction: Direction
    /// Bytes as on air, CRC included (empty for a slot marker or when nothing came back).
    public let bytes: [UInt8]
    /// Air time of this part of the exchange.
    public let airTime: AirTime
    /// What happened when there is no frame: timeout, collision, CRC error.
    public let note: String?

    public init(direction: Direction, bytes: [UInt8], airTime: AirTime, note: String? = nil) {
        self.direction = direction
        self.bytes = bytes
        self.airTime = airTime
        self.note = note
    }
}

/// The seam between vlogger and every reader: raw ISO 15693 frames out, raw frames in. Frames cross the
/// seam without CRC; the driver (or the reader hardware) adds and checks it. Everything above this layer
/// is tested against the simulator driver through this very protocol.
public protocol TagReader: AnyObject {
    /// A human-readable name (driver and device).
    var name: String { get }
    var limits: ReaderLimits { get }
    /// Air time spent so far (measured or, for hardware, estimated from frame lengths).
    var airTime: AirTime { get }
    /// Receives every exchange when set.
    var trace: ((TraceEvent) -> Void)? { get set }

    func fieldOn() throws(ReaderError)
    func fieldOff() throws(ReaderError)
    /// Sends a request frame (without CRC) and returns the tag's answer (without CRC, CRC checked).
    func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8]
    /// The command-level entry: sends one request and returns the tag's answer, decoded (an error answer is a
    /// `Response` with an error body). The default encodes the request, `transceive`s the frame and decodes the
    /// answer; a reader that takes commands rather than frames (FEIG's host commands, PC/SC's storage-card
    /// APDUs) answers the request as it is, without decoding a frame the client has just encoded.
    func execute(_ request: Request, blockSize: Int?) throws(CommandFailure) -> Response
    /// During a 16-slot Inventory: sends the EOF that opens the next slot and returns its answer.
    func nextSlot() throws(ReaderError) -> [UInt8]
    /// Whether `nextSlot` works. Readers that only send whole frames (PC/SC) say false, and inventory then
    /// uses one-slot requests with the mask grown bit by bit on collisions.
    var supportsSlotMarkers: Bool { get }
    /// Whether the reader receives answers at twice the data rate (ST's fast reads). Readers whose receiver
    /// is not switched for them (PC/SC transparent exchange here) say false, and the plain reads are used.
    var receivesFastResponses: Bool { get }
    /// Whether the reader resolves collisions itself (a long-range reader's own inventory): the client then
    /// asks `readerInventory` instead of running ISO 15693's slotted search over `transceive`.
    var hasReaderInventory: Bool { get }
    /// The tags the reader's own inventory found (with `afi`, only tags of that family); nil on readers
    /// without one.
    func readerInventory(afi: UInt8?) throws(ReaderError) -> [InventoryEntry]?
    /// The reader's own buffer of tags it read by itself (`read-mode = "buffer"`); nil on readers without one.
    var buffer: (any BufferedReader)? { get }
}

/// Why `TagReader.execute` has no answer to give.
public enum CommandFailure: Error, Equatable, Sendable {
    /// The request cannot be encoded (a parameter out of range).
    case invalid(String)
    /// The reader reported no usable answer.
    case reader(ReaderError)
    /// The answer does not follow ISO/IEC 15693-3.
    case malformed(FrameError)
}

extension ResponseWait {
    /// How long a reader waits for the answer to `request`: write-alike commands wait for programming.
    public init(for request: Request) {
        self =
            request.command.code.isWriteAlike ? .writeAlike(optionFlag: request.flags.contains(.option)) : .standard
    }
}

extension TagReader {
    public var supportsSlotMarkers: Bool { true }
    public var receivesFastResponses: Bool { false }
    public var hasReaderInventory: Bool { false }
    public func readerInventory(afi: UInt8?) throws(ReaderError) -> [InventoryEntry]? { nil }
    public var buffer: (any BufferedReader)? { nil }

    public func execute(_ request: Request, blockSize: Int?) throws(CommandFailure) -> Response {
        try encodeAndTransceive(request, blockSize: blockSize)
    }

    /// `execute` over frames: encode, `transceive`, decode. Readers that answer some commands themselves call it for
    /// the others.
    public func encodeAndTransceive(_ request: Request, blockSize: Int?) throws(CommandFailure) -> Response {
        let frame: [UInt8]
        do { frame = try request.encode() } catch { throw .invalid("\(error)") }
        let answer: [UInt8]
        do { answer = try transceive(frame, wait: ResponseWait(for: request)) } catch { throw .reader(error) }
        do { return try Response.decode(answer, to: request, blockSize: blockSize) } catch { throw .malformed(error) }
    }
}

/// One record of a reader's own buffer (a reader that keeps reading tags by itself, e.g. FEIG's buffered read
/// mode): what it read, in the tag's memory order.
public struct BufferedRecord: Sendable, Equatable {
    /// The record as the reader sent it: its identity when it is read again before a clear.
    public var raw: [UInt8]
    public var uid: UID?
    public var blocks: [[UInt8]]
    /// The reader's clock at the read, as sent (no documented layout).
    public var readerTime: [UInt8]?
    public init(raw: [UInt8], uid: UID?, blocks: [[UInt8]], readerTime: [UInt8]? = nil) {
        self.raw = raw
        self.uid = uid
        self.blocks = blocks
        self.readerTime = readerTime
    }
}

/// A reader with a buffer of its own: the host fetches the oldest records (the same ones until it clears them)
/// and clears them once they are safe.
public protocol BufferedReader: AnyObject {
    func readBuffer(maxRecords: Int) throws(ReaderError) -> [BufferedRecord]
    func clearBuffer() throws(ReaderError)
}
