import ISO15693
import VLoggerModel

/// The gateway's readers as a server's clients use them (OPC UA's AutoID Scan, ReadTag and WriteTag, and their
/// scalar twins): each operation runs on the reader's polling thread between two of its cycles, so a reader is never
/// opened a second time nor used by two at once, and goes through what the agent does itself (its inventory, its
/// addressed and chunked reads, its write path: verified by read-back, never written twice, recorded with the
/// client as the origin). The service gives servers one (`OutputContext.fieldAccess`); tests give a fake.
public protocol FieldAccess: Sendable {
    /// An inventory of every tag in the reader's field now (the quiet ones too); recorded as an access of `origin`
    /// (nil: not recorded, a round of a scan already recorded when it started).
    func scan(reader: String, origin: String?) async -> Result<[UID], FieldAccessError>
    /// Bytes of a tag in the reader's field: whole blocks, or a range of bytes within its memory. `password`: one
    /// given with the access (OPC UA's ReadTag), for blocks a password protects (`TagPassword`).
    func read(reader: String, uid: UID, _ range: TagRange, origin: String, password: TagPassword?) async -> Result<
        [UInt8], FieldAccessError
    >
    /// Writes bytes to a tag in the reader's field from a block or from a byte offset (the blocks around a byte
    /// range are read first and kept); the outcome as the write event says it.
    func write(
        reader: String, uid: UID, at start: TagRange.Start, data: [UInt8], origin: String, password: TagPassword?
    )
        async -> Result<String, FieldAccessError>
    /// Queues a write of whole blocks for when the tag is next in the reader's field (the write queue, as `vlogger
    /// write --when-seen` does); its id.
    func queueWrite(reader: String, uid: UID, firstBlock: Int, data: [UInt8], origin: String) async
        -> Result<Int64, FieldAccessError>
    /// Locks whole blocks of a tag in the reader's field for ever (ISO 15693 Lock Block), each read back locked; a
    /// range that is not whole blocks locks nothing. Recorded as a write event of `origin`.
    func lock(reader: String, uid: UID, _ range: TagRange, origin: String, password: TagPassword?) async -> Result<
        String, FieldAccessError
    >
}

extension FieldAccess {
    /// A field access that cannot lock (a fake, a probe): `invalid`.
    public func lock(reader: String, uid: UID, _ range: TagRange, origin: String, password: TagPassword?) async
        -> Result<String, FieldAccessError>
    {
        .failure(FieldAccessError(.invalid, "locking is not possible here"))
    }
}

/// A password given with an access (OPC UA's ReadTag, WriteTag and LockTag `Password`), for the blocks a tag's
/// password protects (docs/opcua.md, "Passwords"). It authorises the access against the secrets file: where the file
/// holds a password the blocks need, the one given must be one of those (or no password is sent to the tag), and the
/// file's are sent; a password the file does not hold for the tag is the one given. Never shown: its description
/// is its length.
public struct TagPassword: Sendable, Equatable, CustomStringConvertible {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var description: String { "a \(bytes.count)-byte password (not shown)" }

    /// Whether `other` is this password, in time that does not depend on where they differ.
    public func matches(_ other: [UInt8]) -> Bool {
        guard other.count == bytes.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(bytes, other) { difference |= a ^ b }
        return difference == 0
    }
}

/// Where in a tag's memory.
public enum TagRange: Sendable, Equatable {
    /// Whole blocks.
    case blocks(first: Int, count: Int)
    /// Bytes from the start of the user memory (block 0, byte 0).
    case bytes(offset: Int, length: Int)

    public enum Start: Sendable, Equatable {
        case block(Int)
        case byte(Int)
    }
}

/// Why an access failed, as a client is told (AutoID's operation status, OPC 30010 §9.1.1, maps each kind).
public struct FieldAccessError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// No reader of that id on this gateway.
        case noReader
        /// The reader fails its cycles now.
        case readerDown
        /// The tag is not in the reader's field (answered at once, without air).
        case notInField
        /// Blocks or bytes past the end of the tag's memory, or not whole blocks.
        case outOfRange
        /// A block to be written is locked.
        case locked
        /// The tag refused the password it needed (or one is needed and there is none).
        case password
        /// The tag did not answer (it left the field mid-access, or the air was bad).
        case noAnswer
        /// The tag answered with its error flag, or what it answered is not ISO 15693.
        case tagError
        /// The request itself is wrong (a zero length, a UID of another length …).
        case invalid
        /// The reader's work queue is full, or the store refused the write.
        case busy
        /// Written, but the read-back differs (or the locks read back unlocked).
        case failed
    }
    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}

/// A rule that judges a tag's values, as a server shows its violations (OPC UA's alarm conditions): its name, its
/// severity, and where it watches one numeric field within limits (a `range` rule), that field and its limits.
public struct AlarmRule: Sendable, Equatable {
    public var name: String
    public var severity: Event.Severity
    public var field: String?
    public var low: Double?
    public var high: Double?
    public init(name: String, severity: Event.Severity, field: String? = nil, low: Double? = nil, high: Double? = nil) {
        self.name = name
        self.severity = severity
        self.field = field
        self.low = low
        self.high = high
    }
}

/// A client's acknowledgement of a rule violation (OPC UA's Acknowledge): the service records it as an
/// `acknowledged` event with the client as origin, and the field state marks the alarm (the pages show it).
public struct AlarmAcknowledgement: Sendable, Equatable {
    public var rule: String
    public var uid: UID
    public var comment: String
    public var origin: String
    public var time: Millis
    /// When the violation acknowledged began: the field state's alarm is marked only when it is that one (an ended
    /// violation's acknowledgement leaves a new one of the same rule and tag unacknowledged).
    public var since: Millis
    public init(rule: String, uid: UID, comment: String, origin: String, time: Millis, since: Millis) {
        self.rule = rule
        self.uid = uid
        self.comment = comment
        self.origin = origin
        self.time = time
        self.since = since
    }
}
