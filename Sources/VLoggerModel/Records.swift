import Foundation
import ISO15693

/// Milliseconds since 1970-01-01T00:00:00Z: how the store keeps every time (UTC, millisecond precision).
public typealias Millis = Int64

/// A decoded field value.
public enum FieldValue: Equatable, Sendable {
    case integer(Int64)
    case number(Double)
    case text(String)
    /// A JSON value kept as its text (the NDEF records of a reading).
    case json(String)

    /// Appends the value as JSON.
    package func appendJSON(to out: inout [UInt8]) {
        switch self {
        case let .integer(n): out.append(contentsOf: String(n).utf8)
        case let .number(d): out.append(contentsOf: (d.isFinite ? JSONText.number(d) : "null").utf8)
        case let .text(s): JSONText.appendQuoted(s, to: &out)
        case let .json(j): out.append(contentsOf: j.utf8)
        }
    }
}

/// One read of consecutive blocks of one tag: what the tag returned, and the fields decoded from it.
public struct Reading: Equatable, Sendable {
    public var time: Millis
    public var gateway: String
    public var uid: UID
    public var first: BlockNumber
    public var count: Int
    /// The blocks' bytes, in order.
    public var data: [UInt8]
    /// Block security status bytes (bit 0 = locked), one per block, when read with the Option flag.
    public var security: [UInt8]?
    /// Named values from the plan's field decoders, in plan order.
    public var decoded: [(name: String, value: FieldValue)]
    /// The reader that took it, and where that reader is.
    public var reader: String?
    public var location: String?

    public init(
        time: Millis, gateway: String, reader: String? = nil, location: String? = nil, uid: UID, first: BlockNumber,
        count: Int,
        data: [UInt8], security: [UInt8]? = nil, decoded: [(name: String, value: FieldValue)] = []
    ) {
        self.time = time
        self.gateway = gateway
        self.reader = reader
        self.location = location
        self.uid = uid
        self.first = first
        self.count = count
        self.data = data
        self.security = security
        self.decoded = decoded
    }

    public static func == (a: Reading, b: Reading) -> Bool {
        a.time == b.time && a.gateway == b.gateway && a.reader == b.reader && a.location == b.location && a.uid == b.uid
            && a.first == b.first && a.count == b.count
            && a.data == b.data && a.security == b.security && a.decoded.map(\.name) == b.decoded.map(\.name)
            && a.decoded.map(\.value) == b.decoded.map(\.value)
    }

    /// Appends the decoded values as one JSON object (the store's hot path: no intermediate strings).
    package func appendDecodedJSON(to out: inout [UInt8]) {
        out.append(0x7B)
        for (i, d) in decoded.enumerated() {
            if i > 0 { out.append(0x2C) }
            JSONText.appendQuoted(d.name, to: &out)
            out.append(0x3A)
            d.value.appendJSON(to: &out)
        }
        out.append(0x7D)
    }
}

/// What a tag is, as the store remembers it.
public struct TagRecord: Equatable, Sendable {
    public var uid: UID
    public var seen: Millis
    public var manufacturer: String
    public var model: String?
    public var blockCount: Int?
    public var blockSize: Int?
    public var memorySource: String?
    /// The reader that saw it last, and its location.
    public var reader: String?
    public var location: String?
    /// The verdict on its originality signature, once checked ("verified (NXP key …)", "signature does not verify …").
    public var originality: String?

    public init(
        uid: UID, seen: Millis, manufacturer: String, model: String? = nil, blockCount: Int? = nil,
        blockSize: Int? = nil, memorySource: String? = nil, reader: String? = nil, location: String? = nil,
        originality: String? = nil
    ) {
        self.originality = originality
        self.reader = reader
        self.location = location
        self.uid = uid
        self.seen = seen
        self.manufacturer = manufacturer
        self.model = model
        self.blockCount = blockCount
        self.blockSize = blockSize
        self.memorySource = memorySource
    }
}

/// Something worth an operator's attention.
public struct Event: Equatable, Sendable {
    /// The closed set of event kinds (docs/json.md). `name` says which rule, error, write or audit an event is
    /// about; it is empty where the kind says all (start, stop, arrival, departure, reader down and up).
    public enum Kind: String, Sendable, CaseIterable {
        /// The agent of a reader started or stopped polling.
        case start, stop
        /// A tag entered or left a reader's field.
        case arrival, departure
        /// A rule started to be violated by a tag (`name`: the rule), and stopped being violated (it passes
        /// again, or the tag left the field).
        case violation
        case violationEnded = "violation_ended"
        /// Something failed (`name`: what, e.g. `read-timeout`).
        case error
        /// A queued write's outcome (`name`: the write's id).
        case writeDone = "write_done"
        case writeFailed = "write_failed"
        case writeExpired = "write_expired"
        /// An audit finished and was stored (`name`: the audit's id).
        case auditFinished = "audit_finished"
        /// A reader failed a whole cycle after working, and works again.
        case readerDown = "reader_down"
        case readerUp = "reader_up"
        /// A server's client used a reader (an OPC UA Scan or ReadTag; `name`: the command, `origin`: the client).
        /// Its writes are `write_done` and `write_failed` events with the client as their origin.
        case access
        /// Someone acknowledged a rule violation (`name`: the rule, `detail`: their comment, `origin`: who, e.g. an
        /// OPC UA client's Acknowledge); the violation goes on until it ends.
        case acknowledged

        /// Who asked for what an event of this kind reports, when the kind says: a queued write's outcome is the
        /// queue's, a finished audit the audit's; nil for what the agent sees by itself.
        public var origin: String? {
            switch self {
            case .writeDone, .writeFailed, .writeExpired: return "queue"
            case .auditFinished: return "audit"
            default: return nil
            }
        }
    }
    public enum Severity: String, Sendable, CaseIterable {
        case info, warning, critical
    }
    public var time: Millis
    public var gateway: String
    public var uid: UID?
    public var kind: Kind
    /// The rule's name for a violation, the error's kind for an error, the write's or audit's id; empty where
    /// the kind says all.
    public var name: String
    public var severity: Severity
    public var detail: String
    /// The reader it concerns (nil for the gateway's own events, like the store's), and its location.
    public var reader: String?
    public var location: String?
    /// Who asked for what it reports (docs/json.md, "origin"): `cli`, `api`, `queue`, `audit`, `opcua`, then
    /// `:` and the client's name where there is one; nil for what the agent sees by itself. By default the kind's
    /// (`Kind.origin`).
    public var origin: String?

    public init(
        time: Millis, gateway: String, reader: String? = nil, location: String? = nil, uid: UID?, kind: Kind,
        name: String,
        severity: Severity, detail: String, origin: String? = nil
    ) {
        self.origin = origin ?? kind.origin
        self.time = time
        self.gateway = gateway
        self.reader = reader
        self.location = location
        self.uid = uid
        self.kind = kind
        self.name = name
        self.severity = severity
        self.detail = detail
    }
}

/// A block write made through vlogger.
public struct WriteRecord: Equatable, Sendable {
    public var time: Millis
    public var gateway: String
    public var uid: UID
    public var first: BlockNumber
    public var data: [UInt8]
    public var flags: RequestFlags?
    public var result: String
    public var verified: Bool
    public var exchanges: Int
    /// Who asked for the write (as `Event.origin`): `cli` for `vlogger write`; for a queued write the queue's
    /// record of who queued it (`api`, `cli`), or `queue` when the queue does not know.
    public var origin: String?

    public init(
        time: Millis, gateway: String, uid: UID, first: BlockNumber, data: [UInt8], flags: RequestFlags?,
        result: String, verified: Bool, exchanges: Int, origin: String? = nil
    ) {
        self.origin = origin
        self.time = time
        self.gateway = gateway
        self.uid = uid
        self.first = first
        self.data = data
        self.flags = flags
        self.result = result
        self.verified = verified
        self.exchanges = exchanges
    }
}

/// A decoded field the store knows of, so exports can give it a column.
public struct FieldInfo: Equatable, Sendable {
    /// What a field's values are: where an output must know before it has seen one (a Sparkplug birth declares a
    /// type, CSV marks bytes).
    public enum Kind: String, Sendable {
        /// Numbers (a plan's integer and float types, sensor values).
        case number
        /// Text (a plan's `ascii`, NDEF text and URI, a sensor log's read time).
        case text
        /// Bytes written as hex (a plan's `hex`): CSV writes them with the `\x` prefix, so data tools read them as
        /// text (docs/json.md, "CSV and data tools").
        case hex
        /// JSON (the NDEF records), nested in JSON lines.
        case json
    }
    public var name: String
    public var unit: String?
    public var kind: Kind
    public var hex: Bool { kind == .hex }
    public init(name: String, unit: String?, kind: Kind = .number) {
        self.name = name
        self.unit = unit
        self.kind = kind
    }
    public init(name: String, unit: String?, hex: Bool) {
        self.init(name: name, unit: unit, kind: hex ? .hex : .number)
    }

    /// Each field's unit by name ("" for none), the first of a name winning.
    public static func units(_ fields: [FieldInfo]) -> [String: String] {
        Dictionary(fields.map { ($0.name, $0.unit ?? "") }, uniquingKeysWith: { a, _ in a })
    }
}

/// JSON text helpers (one quoting routine for the store and for jsonl export).
public enum JSONText {
    /// Appends `s` as a JSON string; plain ASCII without quotes, backslashes or controls is copied as is.
    public static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        var plain = true
        for b in s.utf8 where b < 0x20 || b == 0x22 || b == 0x5C { plain = false; break }
        if plain {
            out.append(0x22)
            out.append(contentsOf: s.utf8)
            out.append(0x22)
        } else {
            out.append(contentsOf: quote(s).utf8)
        }
    }

    package static func quote(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                out +=
                    "\\u" + String(repeating: "0", count: 4 - String(u.value, radix: 16).count)
                    + String(u.value, radix: 16)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    /// Shortest text that reads back as the same Double (Swift's description), without a trailing ".0"
    /// only where the value is integral and small.
    public static func number(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return "\(d)"
    }
}

extension Millis {
    /// Now, in milliseconds since 1970 UTC.
    public static func now() -> Millis { Millis((Date().timeIntervalSince1970 * 1000).rounded()) }
}

/// A value of a stored column as a record gives it (the store binds it; this layer knows no SQL).
public enum ColumnValue: Sendable, Equatable {
    case null, integer(Int64), text(String), blob([UInt8])

    init(_ text: String?) { self = text.map { .text($0) } ?? .null }
    init(_ n: Int?) { self = n.map { .integer(Int64($0)) } ?? .null }
}

/// A record stored as one row of a described table (`VLoggerStore.TableDescription`): its value of each column,
/// by the column's name. The description says which columns there are and how a row is merged; the record says
/// only what it holds, so a new column is its description line and its `case` here. A name the record does not
/// hold is NULL (the columns the store fills itself: an asset id from the register, a change number); a test
/// holds every record to its table's columns.
public protocol StoredRow {
    func column(_ name: String) -> ColumnValue
}

extension TagRecord: StoredRow {
    public func column(_ name: String) -> ColumnValue {
        switch name {
        case "uid": return .text(uid.description)
        // First and last seen alike: the store keeps the earliest and latest (`ColumnMerge`).
        case "first_seen", "last_seen": return .integer(seen)
        case "manufacturer": return .text(manufacturer)
        case "model": return ColumnValue(model)
        case "block_count": return ColumnValue(blockCount)
        case "block_size": return ColumnValue(blockSize)
        case "memory_source": return ColumnValue(memorySource)
        case "last_reader": return ColumnValue(reader)
        case "last_location": return ColumnValue(location)
        case "originality": return ColumnValue(originality)
        default: return .null
        }
    }
}

extension Event: StoredRow {
    public func column(_ name: String) -> ColumnValue {
        switch name {
        case "time": return .integer(time)
        case "gateway": return .text(gateway)
        case "reader": return ColumnValue(reader)
        case "location": return ColumnValue(location)
        case "uid": return ColumnValue(uid?.description)
        case "kind": return .text(kind.rawValue)
        case "name": return .text(self.name)
        case "severity": return .text(severity.rawValue)
        case "detail": return .text(detail)
        case "origin": return ColumnValue(origin)
        default: return .null
        }
    }
}

extension WriteRecord: StoredRow {
    public func column(_ name: String) -> ColumnValue {
        switch name {
        case "time": return .integer(time)
        case "gateway": return .text(gateway)
        case "uid": return .text(uid.description)
        case "block": return .integer(Int64(first.int))
        case "data": return .blob(data)
        case "flags": return flags.map { .integer(Int64($0.rawValue)) } ?? .null
        case "result": return .text(result)
        case "verified": return .integer(verified ? 1 : 0)
        case "exchanges": return .integer(Int64(exchanges))
        case "origin": return ColumnValue(origin)
        default: return .null
        }
    }
}
