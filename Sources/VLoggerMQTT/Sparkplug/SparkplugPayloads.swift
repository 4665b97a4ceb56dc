import Foundation
import VLoggerModel
import VLoggerStore

/// Sparkplug B data types (Sparkplug 3.0, chapter Payloads, "Data Types"; docs/reference/sparkplug-b.md): the
/// number a metric's `datatype` carries and which value field holds it. No 32-bit types: hosts disagree on
/// whether UInt32 goes in `int_value` or `long_value` (docs/reference/sparkplug-b.md), Int64 is read alike by all.
package enum SparkplugType: UInt32, Sendable {
    case int64 = 4
    case double = 10
    case boolean = 11
    case string = 12
    case bytes = 17
}

/// One metric's value (nil: `is_null`, with the type still said, as a birth declares a metric with no value yet).
package enum SparkplugValue: Equatable, Sendable {
    case int64(Int64)
    case double(Double)
    case boolean(Bool)
    case string(String)
    case bytes([UInt8])
}

/// A metric as vlogger builds it, before it is a protobuf message.
struct SparkplugMetric: Equatable, Sendable {
    var name: String
    var type: SparkplugType
    var value: SparkplugValue?
    var timestamp: Millis
    var historical = false
    /// The engineering unit, a String property `engUnit` of the metric in a birth (the key Ignition and Tahu's
    /// examples read; docs/reference/sparkplug-b.md).
    var unit: String?

    init(_ name: String, _ type: SparkplugType, _ value: SparkplugValue?, at timestamp: Millis) {
        self.name = name
        self.type = type
        self.value = value
        self.timestamp = timestamp
    }

    /// The protobuf message: in a birth with its datatype and properties (tck-id-payloads-metric-datatype-req), in
    /// data without them (tck-id-payloads-metric-datatype-not-req: a host knows the type from the birth).
    func message(birth: Bool) -> SparkplugBPayload.Metric {
        var m = SparkplugBPayload.Metric()
        m.name = name
        m.timestamp = UInt64(max(0, timestamp))
        if birth {
            m.datatype = type.rawValue
            if let unit, !unit.isEmpty {
                var v = SparkplugBPayload.PropertyValue()
                v.type = SparkplugType.string.rawValue
                v.stringValue = unit
                var set = SparkplugBPayload.PropertySet()
                set.keys = [SparkplugPayloads.engUnit]
                set.values = [v]
                m.properties = set
            }
        }
        if historical { m.isHistorical = true }
        switch value {
        case nil: m.isNull = true
        // Int64 in the unsigned 64-bit field: two's complement (the specification's rule for signed types).
        case .int64(let v): m.longValue = UInt64(bitPattern: v)
        case .double(let v): m.doubleValue = v
        case .boolean(let v): m.booleanValue = v
        case .string(let v): m.stringValue = v
        case .bytes(let v): m.bytesValue = Data(v)
        }
        return m
    }
}

/// The message types of an edge node (Sparkplug 3.0, chapter Topics).
enum SparkplugMessageType: String, Sendable {
    case nbirth = "NBIRTH"
    case ndeath = "NDEATH"
    case dbirth = "DBIRTH"
    case ddeath = "DDEATH"
    case ndata = "NDATA"
    case ddata = "DDATA"
    case ncmd = "NCMD"
}

/// Topics of one edge node: `spBv1.0/<group>/<type>/<edge node>[/<device>]`.
struct SparkplugTopics: Sendable, Equatable {
    var group: String
    var edgeNode: String

    func topic(_ type: SparkplugMessageType, device: String? = nil) -> String {
        "spBv1.0/\(group)/\(type.rawValue)/\(edgeNode)" + (device.map { "/\($0)" } ?? "")
    }

    /// A primary host's STATE topic (Sparkplug 3.0: `spBv1.0/STATE/<host id>`).
    static func state(host: String) -> String { "spBv1.0/STATE/\(host)" }
}

/// The message sequence number: 0 on NBIRTH, one more on each later message of the node, 255 followed by 0
/// (Sparkplug 3.0, chapter Payloads, `seq`).
struct SparkplugSequence: Sendable, Equatable {
    private(set) var next: UInt64 = 0

    /// The number for NBIRTH: 0, and the count starts again.
    mutating func birth() -> UInt64 {
        next = 1
        return 0
    }

    mutating func take() -> UInt64 {
        defer { next = next == 255 ? 0 : next + 1 }
        return next
    }
}

/// The birth/death sequence number: one more for each new connection (each CONNECT's Will carries it), 255
/// followed by 0; the NBIRTH of a connection carries the same number as that connection's Will.
struct SparkplugBirthDeathSequence: Sendable, Equatable {
    /// The number of the Will last set (nil: none yet).
    private(set) var current: UInt64?

    init(start: UInt64? = nil) { current = start }

    /// The number for the next connection.
    mutating func advance() -> UInt64 {
        let n = current.map { $0 >= 255 ? 0 : $0 + 1 } ?? 0
        current = n
        return n
    }
}

/// Payloads of vlogger's edge node: what each message carries, built from the store's rows.
package enum SparkplugPayloads {
    /// The node's metric for the birth/death sequence number (Sparkplug 3.0: `bdSeq`, Int64).
    static let bdSeq = "bdSeq"
    static let rebirth = "Node Control/Rebirth"
    /// The property key of a metric's engineering unit.
    static let engUnit = "engUnit"

    /// `birth`: the metrics carry their datatypes and properties (NBIRTH, DBIRTH, NDEATH); data messages do not.
    static func encode(timestamp: Millis, seq: UInt64?, birth: Bool = true, _ metrics: [SparkplugMetric]) -> [UInt8] {
        var p = SparkplugBPayload()
        p.timestamp = UInt64(max(0, timestamp))
        if let seq { p.seq = seq }
        p.metrics = metrics.map { $0.message(birth: birth) }
        // Serialising a message of set scalar fields cannot fail (no required fields in the schema, no Any).
        return (try? p.serializedBytes()) ?? []
    }

    /// The Will and the explicit death: only `bdSeq`, no `seq`.
    package static func death(bdSeq: UInt64, at now: Millis) -> [UInt8] {
        encode(timestamp: now, seq: nil, [SparkplugMetric(Self.bdSeq, .int64, .int64(Int64(bdSeq)), at: now)])
    }

    /// The node's own metrics in NBIRTH: `bdSeq`, the rebirth control, what the gateway is, each reader's state
    /// (`Reader/<id>/Up`, `Reader/<id>/Location`) and the metrics of events that concern no tag (no value yet).
    static func nodeBirth(
        bdSeq: UInt64, gateway: String, readers: [(id: String, location: String?, up: Bool)], at now: Millis
    ) -> [SparkplugMetric] {
        [
            SparkplugMetric(Self.bdSeq, .int64, .int64(Int64(bdSeq)), at: now),
            SparkplugMetric(rebirth, .boolean, .boolean(false), at: now),
            SparkplugMetric("Properties/Software", .string, .string("vlogger"), at: now),
            SparkplugMetric("Properties/Gateway", .string, .string(gateway), at: now),
            SparkplugMetric("Properties/Readers", .int64, .int64(Int64(readers.count)), at: now),
        ]
            + readers.flatMap { r in
                [
                    SparkplugMetric(readerUp(r.id), .boolean, .boolean(r.up), at: now),
                    SparkplugMetric("Reader/\(r.id)/Location", .string, r.location.map { .string($0) }, at: now),
                ]
            } + eventMetrics(at: now) + [SparkplugMetric("Event/Reader", .string, nil, at: now)]
    }

    /// The name of a reader's up metric on the node.
    static func readerUp(_ reader: String) -> String { "Reader/\(reader)/Up" }

    /// A tag's metrics in its DBIRTH: what it is (its UID, its asset), where it was last read (null until then),
    /// the reading and event metrics (no value yet), and a `Field/<name>` for every decoded field the plans can
    /// give (Double for numbers, String for text and hex; JSON only in `Reading/JSON`), each with its unit.
    static func deviceBirth(_ device: SparkplugDevice, fields: [SparkplugField], at now: Millis) -> [SparkplugMetric] {
        [
            SparkplugMetric("Properties/UID", .string, .string(device.uid), at: now),
            SparkplugMetric("Properties/Asset", .string, device.asset.map { .string($0) }, at: now),
            SparkplugMetric("Properties/Reader", .string, device.reader.map { .string($0) }, at: now),
            SparkplugMetric("Properties/Location", .string, device.location.map { .string($0) }, at: now),
        ] + readingMetrics(at: now) + eventMetrics(at: now)
            + fields.map { f in
                var m = SparkplugMetric("Field/\(f.name)", f.type, nil, at: now)
                m.unit = f.unit
                return m
            }
    }

    static func readingMetrics(at now: Millis) -> [SparkplugMetric] {
        [
            SparkplugMetric("Reading/Block", .int64, nil, at: now),
            SparkplugMetric("Reading/Data", .bytes, nil, at: now),
            SparkplugMetric("Reading/JSON", .string, nil, at: now),
        ]
    }

    static func eventMetrics(at now: Millis) -> [SparkplugMetric] {
        ["Kind", "Name", "Severity", "Detail", "JSON"].map {
            SparkplugMetric("Event/\($0)", .string, nil, at: now)
        }
    }

    /// The metrics of one row, stamped with the row's own time. A reading: where it was read (`Properties/Reader`,
    /// `Properties/Location`), its first block, data, the JSON line of `export --format jsonl` with its key, and
    /// each decoded field as `Field/<name>`. An event: its kind, name, severity, detail and JSON line (and, of no
    /// tag, its reader).
    static func metrics(
        _ table: SyncTable, _ row: OutboxRow, gateway: String, jsonFields: Set<String>, historical: Bool
    ) -> [SparkplugMetric] {
        var json: [UInt8] = []
        OutboxJSON.append(table, row, gateway: gateway, jsonFields: jsonFields, to: &json)
        let t = row.time
        func text(_ name: String) -> SparkplugValue? { row.value(name, in: table).text.map { .string($0) } }
        var out: [SparkplugMetric]
        switch table {
        case .readings:
            let block = row.value("block", in: table).integer
            out = [
                SparkplugMetric("Properties/Reader", .string, text("reader"), at: t),
                SparkplugMetric("Properties/Location", .string, text("location"), at: t),
                SparkplugMetric("Reading/Block", .int64, block.map { .int64($0) }, at: t),
                SparkplugMetric("Reading/Data", .bytes, row.value("data", in: table).blob.map { .bytes($0) }, at: t),
                SparkplugMetric("Reading/JSON", .string, .string(String(decoding: json, as: UTF8.self)), at: t),
            ]
            for f in decodedFields(row.value("decoded", in: table).text) {
                out.append(SparkplugMetric("Field/\(f.name)", f.type, f.value, at: t))
            }
        default:
            out = [
                SparkplugMetric("Event/Kind", .string, text("kind"), at: t),
                SparkplugMetric("Event/Name", .string, text("name"), at: t),
                SparkplugMetric("Event/Severity", .string, text("severity"), at: t),
                SparkplugMetric("Event/Detail", .string, text("detail"), at: t),
                SparkplugMetric("Event/JSON", .string, .string(String(decoding: json, as: UTF8.self)), at: t),
            ]
            if row.value("uid", in: table).text == nil {
                out.append(SparkplugMetric("Event/Reader", .string, text("reader"), at: t))
            }
        }
        // A metric with no value in the row (a reading of no reader) is left out of data: null only in births.
        out.removeAll { $0.value == nil }
        if historical {
            for i in out.indices { out[i].historical = true }
        }
        return out
    }

    /// A reading's decoded fields (the stored JSON object): numbers as Double, true/false as Boolean, text as
    /// String; nested values (NDEF records) and names with `/` are left to `Reading/JSON`. Sorted by name.
    package static func decodedFields(_ text: String?) -> [(name: String, type: SparkplugType, value: SparkplugValue)] {
        guard var text else { return [] }
        var out: [(name: String, type: SparkplugType, value: SparkplugValue)] = []
        text.withUTF8 { p in
            _ = JSONMembers.scan(p) { key, value in
                guard let k = JSONMembers.unescape(p, key), let name = String(validating: k, as: UTF8.self),
                    SparkplugNames.isPlain(name), let first = value.first.map({ p[$0] })
                else { return }
                switch first {
                case 0x74, 0x66:  // true, false
                    out.append((name, .boolean, .boolean(first == 0x74)))
                case 0x22:  // a string
                    guard value.count >= 2,
                        let u = JSONMembers.unescape(p, (value.lowerBound + 1)..<(value.upperBound - 1)),
                        let s = String(validating: u, as: UTF8.self)
                    else { return }
                    out.append((name, .string, .string(s)))
                case 0x2D, 0x30...0x39:  // a number
                    guard let d = Double(String(decoding: UnsafeBufferPointer(rebasing: p[value]), as: UTF8.self)),
                        d.isFinite
                    else { return }
                    out.append((name, .double, .double(d)))
                default:  // null, an object or an array (NDEF records): in Reading/JSON only
                    return
                }
            }
        }
        return out.sorted { $0.name < $1.name }
    }

    /// Reads a rebirth request: an NCMD payload whose metric `Node Control/Rebirth` is true.
    package static func isRebirthRequest(_ payload: [UInt8]) -> Bool {
        guard let p = try? SparkplugBPayload(serializedBytes: payload) else { return false }
        return p.metrics.contains { m in
            m.name == rebirth && { if case .booleanValue(true) = m.value { return true } else { return false } }()
        }
    }

    /// A primary host's STATE payload (Sparkplug 3.0: JSON `{"online": Bool, "timestamp": ms}`); nil when it is
    /// not one.
    package static func hostState(_ payload: [UInt8]) -> (online: Bool, timestamp: Int64)? {
        guard let o = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
            let online = o["online"] as? Bool, let ts = o["timestamp"] as? NSNumber
        else { return nil }
        return (online, ts.int64Value)
    }
}

/// A tag as a Sparkplug device: its asset id when the register names one, else its UID (as a topic level).
public struct SparkplugDevice: Sendable, Equatable {
    public var uid: String
    public var asset: String?
    public var reader: String?
    public var location: String?

    public init(uid: String, asset: String? = nil, reader: String? = nil, location: String? = nil) {
        self.uid = uid
        self.asset = asset.flatMap { $0.isEmpty ? nil : $0 }
        self.reader = reader
        self.location = location
    }

    /// The device id in topics.
    public var id: String { MQTTOutput.level(asset ?? uid) }
}

/// A decoded field as a device declares it in its birth.
package struct SparkplugField: Sendable, Equatable {
    package var name: String
    package var type: SparkplugType
    package var unit: String?

    /// The fields of the configuration's plans that a device declares: numbers as Double, text and hex as String;
    /// JSON (NDEF records) and names with `/` only in `Reading/JSON`.
    package static func declared(_ infos: [FieldInfo]) -> [SparkplugField] {
        infos.compactMap { f in
            guard SparkplugNames.isPlain(f.name) else { return nil }
            switch f.kind {
            case .number: return SparkplugField(name: f.name, type: .double, unit: f.unit)
            case .text, .hex: return SparkplugField(name: f.name, type: .string, unit: f.unit)
            case .json: return nil
            }
        }
    }
}

/// Metric and device names made of outside values.
enum SparkplugNames {
    /// A name that can be part of a metric name: printable, without `/` (a metric's folder separator).
    static func isPlain(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 200 && !name.contains("/")
            && !name.unicodeScalars.contains { $0.value < 0x20 }
    }
}
