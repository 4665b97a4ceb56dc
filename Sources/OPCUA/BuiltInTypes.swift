// The built-in types of OPC UA (OPC 10000-6 §5.1.2, their binary forms §5.2.2) that are not plain numbers.

/// The 25 built-in types, by the id a Variant's encoding byte carries in its low 6 bits (OPC 10000-6 §5.1.2).
public enum BuiltInType: UInt8, Sendable, CaseIterable, Equatable {
    case boolean = 1, sByte, byte, int16, uInt16, int32, uInt32, int64, uInt64, float, double, string, dateTime
    case guid, byteString, xmlElement, nodeId, expandedNodeId, statusCode, qualifiedName, localizedText
    case extensionObject, dataValue, variant, diagnosticInfo
}

/// A status code (OPC 10000-4 §7.39): severity in the top two bits, the code in the next 14, flags below.
public struct StatusCode: RawRepresentable, Hashable, Sendable, BinaryCodable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    public var isGood: Bool { rawValue & 0xC000_0000 == 0 }
    public var isBad: Bool { rawValue & 0x8000_0000 != 0 }

    public func encode(to w: inout BinaryWriter) { w.write(rawValue) }
    public init(from r: inout BinaryReader) throws(DecodingError) { rawValue = try r.readUInt32() }

    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
    }

    /// The code's name from StatusCode.csv (`BadDecodingError`), the flag bits aside; nil for a code it lacks.
    public var name: String? { Self.names[rawValue & 0xFFFF_0000] }
    // The codes themselves: Generated/StatusCodes.swift.
}

/// A structure of an information model with its binary encoding: what travels in an ExtensionObject, named by
/// the NodeId of its DefaultBinary encoding (Generated/Types.swift has namespace 0's).
public protocol Structure: BinaryCodable, Hashable {
    static var dataTypeId: NodeId { get }
    static var binaryEncodingId: NodeId { get }
}

extension Structure {
    /// A service message's body (what a MSG or OPN chunk carries, OPC 10000-6 §6.7.2): the NodeId of the type's
    /// binary encoding, then the structure.
    public var messageBody: [UInt8] {
        var w = BinaryWriter(capacity: 256)
        Self.binaryEncodingId.encode(to: &w)
        encode(to: &w)
        return w.bytes
    }

    /// The structure in its envelope.
    public var extensionObject: ExtensionObject {
        ExtensionObject(typeId: Self.binaryEncodingId, body: .binary(encoded))
    }

    /// The structure in `object`, which must name this type's encoding and carry a binary body.
    public init(_ object: ExtensionObject, limits: DecodingLimits = .server) throws(DecodingError) {
        guard object.typeId == Self.binaryEncodingId, case .binary(let body) = object.body else {
            throw DecodingError(.invalid, at: 0, "ExtensionObject \(object.typeId) is not a \(Self.self)")
        }
        self = try Self.decode(body, limits: limits)
    }
}

/// A point in time: 100-nanosecond intervals since 1601-01-01 00:00 UTC (OPC 10000-6 §5.2.2.5).
public struct DateTime: RawRepresentable, Hashable, Sendable, BinaryCodable {
    public var rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }

    /// 1970-01-01 00:00 UTC as ticks: 11,644,473,600 s after 1601-01-01 (369 years, 89 of them leap years).
    public static let unixEpochTicks: Int64 = 116_444_736_000_000_000

    /// Milliseconds since 1970 (the store's times) as a DateTime, clamped to the encodable range.
    public init(millisecondsSince1970 ms: Int64) {
        let (ticks, over) = ms.multipliedReportingOverflow(by: 10_000)
        let (sum, over2) = ticks.addingReportingOverflow(Self.unixEpochTicks)
        rawValue = over || over2 ? (ms < 0 ? 0 : Int64.max) : max(0, sum)
    }

    /// Milliseconds since 1970 (rounded down).
    public var millisecondsSince1970: Int64 {
        let (d, over) = rawValue.subtractingReportingOverflow(Self.unixEpochTicks)
        if over { return Int64.min / 10_000 }
        let q = d / 10_000
        return d % 10_000 < 0 ? q - 1 : q
    }

    public func encode(to w: inout BinaryWriter) { w.write(rawValue) }
    public init(from r: inout BinaryReader) throws(DecodingError) { rawValue = try r.readInt64() }
}

/// A GUID: Data1 (UInt32), Data2 and Data3 (UInt16), each little-endian, then Data4's 8 bytes as they are
/// (OPC 10000-6 §5.2.2.7).
public struct Guid: Hashable, Sendable, BinaryCodable, CustomStringConvertible {
    public var data1: UInt32
    public var data2: UInt16
    public var data3: UInt16
    /// 8 bytes.
    public var data4: [UInt8]

    public init(data1: UInt32, data2: UInt16, data3: UInt16, data4: [UInt8]) {
        self.data1 = data1
        self.data2 = data2
        self.data3 = data3
        self.data4 = Array((data4 + [UInt8](repeating: 0, count: 8)).prefix(8))
    }

    /// A GUID from its text form (`72962B91-FA75-4AE6-8D28-B404DC7DAF63`); nil when it is not one.
    public init?(_ text: String) {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12], let b = bytes(hex: groups.joined()) else { return nil }
        data1 = UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
        data2 = UInt16(b[4]) << 8 | UInt16(b[5])
        data3 = UInt16(b[6]) << 8 | UInt16(b[7])
        data4 = Array(b[8...])
    }

    public var description: String {
        // The text form is Data1, Data2 and Data3 most significant byte first, then Data4 as it is.
        let t = hex(
            [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: data1 >> $0) }
                + [8, 0].map { UInt8(truncatingIfNeeded: data2 >> $0) }
                + [8, 0].map { UInt8(truncatingIfNeeded: data3 >> $0) } + data4, uppercase: true)
        let c = Array(t)
        return [c[0..<8], c[8..<12], c[12..<16], c[16..<20], c[20...]].map { String($0) }.joined(separator: "-")
    }

    public func encode(to w: inout BinaryWriter) {
        w.write(data1)
        w.write(data2)
        w.write(data3)
        w.append(raw: data4)
    }

    public init(from r: inout BinaryReader) throws(DecodingError) {
        data1 = try r.readUInt32()
        data2 = try r.readUInt16()
        data3 = try r.readUInt16()
        data4 = try r.readRaw(8, "Guid")
    }
}

/// A node's identifier in a namespace (OPC 10000-3 §8.2; binary OPC 10000-6 §5.2.2.9).
public struct NodeId: Hashable, Sendable, BinaryCodable, CustomStringConvertible {
    public enum Identifier: Hashable, Sendable {
        case numeric(UInt32)
        /// A String identifier (nil: the null string, which the encoding allows).
        case string(String?)
        case guid(Guid)
        /// A ByteString identifier.
        case opaque([UInt8]?)
    }
    public var namespace: UInt16
    public var identifier: Identifier

    public init(namespace: UInt16 = 0, _ identifier: Identifier) {
        self.namespace = namespace
        self.identifier = identifier
    }

    public init(_ numeric: UInt32, namespace: UInt16 = 0) { self.init(namespace: namespace, .numeric(numeric)) }

    /// ns=0;i=0, the null NodeId.
    public static let null = NodeId(0)
    public var isNull: Bool { self == .null }

    public var description: String {
        let ns = namespace == 0 ? "" : "ns=\(namespace);"
        switch identifier {
        case .numeric(let n): return ns + "i=\(n)"
        case .string(let s): return ns + "s=\(s ?? "")"
        case .guid(let g): return ns + "g=\(g)"
        case .opaque(let b): return ns + "b=" + (b ?? []).map { String($0, radix: 16) }.joined()
        }
    }

    /// The encoding byte's forms (its low 6 bits): the numeric ones take the shortest that holds the value.
    enum Form: UInt8 { case twoByte = 0, fourByte, numeric, string, guid, byteString }

    /// Writes the NodeId with `flags` (ExpandedNodeId's 0x80 and 0x40) in its encoding byte.
    func encode(to w: inout BinaryWriter, flags: UInt8) {
        switch identifier {
        case .numeric(let n) where namespace == 0 && n <= 0xFF:
            w.write(Form.twoByte.rawValue | flags)
            w.write(UInt8(n))
        case .numeric(let n) where namespace <= 0xFF && n <= 0xFFFF:
            w.write(Form.fourByte.rawValue | flags)
            w.write(UInt8(namespace))
            w.write(UInt16(n))
        case .numeric(let n):
            w.write(Form.numeric.rawValue | flags)
            w.write(namespace)
            w.write(n)
        case .string(let s):
            w.write(Form.string.rawValue | flags)
            w.write(namespace)
            w.write(string: s)
        case .guid(let g):
            w.write(Form.guid.rawValue | flags)
            w.write(namespace)
            g.encode(to: &w)
        case .opaque(let b):
            w.write(Form.byteString.rawValue | flags)
            w.write(namespace)
            w.write(byteString: b)
        }
    }

    public func encode(to w: inout BinaryWriter) { encode(to: &w, flags: 0) }

    /// Reads a NodeId whose encoding byte is `first` (its flags already taken off by the caller).
    init(form first: UInt8, at: Int, from r: inout BinaryReader) throws(DecodingError) {
        guard let form = Form(rawValue: first & 0x3F) else {
            throw DecodingError(.invalid, at: at, "NodeId: encoding 0x\(String(first, radix: 16))")
        }
        switch form {
        case .twoByte: self.init(UInt32(try r.readUInt8()))
        case .fourByte:
            let ns = try r.readUInt8()
            self.init(UInt32(try r.readUInt16()), namespace: UInt16(ns))
        case .numeric:
            let ns = try r.readUInt16()
            self.init(try r.readUInt32(), namespace: ns)
        case .string:
            let ns = try r.readUInt16()
            self.init(namespace: ns, .string(try r.readString()))
        case .guid:
            let ns = try r.readUInt16()
            self.init(namespace: ns, .guid(try Guid(from: &r)))
        case .byteString:
            let ns = try r.readUInt16()
            self.init(namespace: ns, .opaque(try r.readByteString()))
        }
    }

    /// Any of the six forms; a NodeId's encoding byte has no flags (OPC 10000-6 §5.2.2.9).
    public init(from r: inout BinaryReader) throws(DecodingError) {
        let at = r.offset
        let first = try r.readUInt8()
        guard first & 0xC0 == 0 else {
            throw DecodingError(.invalid, at: at, "NodeId: ExpandedNodeId flags 0x\(String(first & 0xC0, radix: 16))")
        }
        try self.init(form: first, at: at, from: &r)
    }
}

/// A NodeId that may name its namespace by URI and another server (OPC 10000-6 §5.2.2.10): flag 0x80 of the
/// encoding byte says a NamespaceUri String follows, 0x40 a UInt32 ServerIndex.
public struct ExpandedNodeId: Hashable, Sendable, BinaryCodable {
    public var nodeId: NodeId
    public var namespaceUri: String?
    public var serverIndex: UInt32

    public init(_ nodeId: NodeId, namespaceUri: String? = nil, serverIndex: UInt32 = 0) {
        self.nodeId = nodeId
        self.namespaceUri = namespaceUri
        self.serverIndex = serverIndex
    }

    public func encode(to w: inout BinaryWriter) {
        nodeId.encode(to: &w, flags: (namespaceUri != nil ? 0x80 : 0) | (serverIndex != 0 ? 0x40 : 0))
        if let uri = namespaceUri { w.write(string: uri) }
        if serverIndex != 0 { w.write(serverIndex) }
    }

    public init(from r: inout BinaryReader) throws(DecodingError) {
        let at = r.offset
        let first = try r.readUInt8()
        nodeId = try NodeId(form: first, at: at, from: &r)
        namespaceUri = first & 0x80 != 0 ? try r.readString() : nil
        serverIndex = first & 0x40 != 0 ? try r.readUInt32() : 0
    }
}

/// A name qualified by a namespace index (OPC 10000-6 §5.2.2.13).
public struct QualifiedName: Hashable, Sendable, BinaryCodable, CustomStringConvertible {
    public var namespace: UInt16
    public var name: String?

    public init(namespace: UInt16 = 0, _ name: String?) {
        self.namespace = namespace
        self.name = name
    }

    public var description: String { (namespace == 0 ? "" : "\(namespace):") + (name ?? "") }

    public func encode(to w: inout BinaryWriter) {
        w.write(namespace)
        w.write(string: name)
    }

    public init(from r: inout BinaryReader) throws(DecodingError) {
        namespace = try r.readUInt16()
        name = try r.readString()
    }
}

/// Text with its locale (OPC 10000-6 §5.2.2.14): a mask byte (0x01 locale, 0x02 text), then those present.
public struct LocalizedText: Hashable, Sendable, BinaryCodable {
    public var locale: String?
    public var text: String?

    public init(locale: String? = nil, _ text: String?) {
        self.locale = locale
        self.text = text
    }

    public func encode(to w: inout BinaryWriter) {
        w.write(UInt8((locale != nil ? 0x01 : 0) | (text != nil ? 0x02 : 0)))
        if let l = locale { w.write(string: l) }
        if let t = text { w.write(string: t) }
    }

    public init(from r: inout BinaryReader) throws(DecodingError) {
        let at = r.offset
        let mask = try r.readUInt8()
        guard mask & ~0x03 == 0 else {
            throw DecodingError(.invalid, at: at, "LocalizedText: mask 0x\(String(mask, radix: 16))")
        }
        // A null string under a set bit is kept as an empty one: the mask says the field is there.
        locale = mask & 0x01 != 0 ? (try r.readString() ?? "") : nil
        text = mask & 0x02 != 0 ? (try r.readString() ?? "") : nil
    }
}

/// A structure in an envelope (OPC 10000-6 §5.2.2.15): the NodeId of its DefaultBinary encoding, an encoding
/// byte (0 no body, 1 ByteString, 2 XmlElement), the body. The body is kept as bytes here: a structure's own
/// decoder reads it.
public struct ExtensionObject: Hashable, Sendable, BinaryCodable {
    public enum Body: Hashable, Sendable {
        case none
        case binary([UInt8])
        case xml(String)
    }
    public var typeId: NodeId
    public var body: Body

    public init(typeId: NodeId, body: Body) {
        self.typeId = typeId
        self.body = body
    }

    /// The null ExtensionObject: no type, no body.
    public static let null = ExtensionObject(typeId: .null, body: .none)

    public func encode(to w: inout BinaryWriter) {
        typeId.encode(to: &w)
        switch body {
        case .none: w.write(UInt8(0))
        case .binary(let b):
            w.write(UInt8(1))
            w.write(byteString: b)
        case .xml(let x):
            w.write(UInt8(2))
            w.write(string: x)
        }
    }

    public init(from r: inout BinaryReader) throws(DecodingError) {
        typeId = try NodeId(from: &r)
        let at = r.offset
        switch try r.readUInt8() {
        case 0: body = .none
        case 1: body = .binary(try r.readByteString() ?? [])
        case 2: body = .xml(try r.readString() ?? "")
        case let e: throw DecodingError(.invalid, at: at, "ExtensionObject: encoding \(e)")
        }
    }
}

/// Diagnostics for a status code (OPC 10000-6 §5.2.2.12): a mask byte, then the fields present in the order
/// SymbolicId, NamespaceUri, Locale, LocalizedText, AdditionalInfo, InnerStatusCode, InnerDiagnosticInfo; the
/// mask's bits are 0x01 SymbolicId, 0x02 NamespaceUri, 0x04 LocalizedText, 0x08 Locale, 0x10 AdditionalInfo,
/// 0x20 InnerStatusCode, 0x40 InnerDiagnosticInfo (note: LocalizedText's bit comes before Locale's, its field
/// after). The indices point into the response's string table.
public struct DiagnosticInfo: Hashable, Sendable, BinaryCodable {
    public var symbolicId: Int32?
    public var namespaceUri: Int32?
    public var locale: Int32?
    public var localizedText: Int32?
    public var additionalInfo: String?
    public var innerStatusCode: StatusCode?
    /// Held in an array of at most one: a struct cannot hold itself.
    private var inner: [DiagnosticInfo] = []
    public var innerDiagnosticInfo: DiagnosticInfo? {
        get { inner.first }
        set { inner = newValue.map { [$0] } ?? [] }
    }

    public init(
        symbolicId: Int32? = nil, namespaceUri: Int32? = nil, locale: Int32? = nil, localizedText: Int32? = nil,
        additionalInfo: String? = nil, innerStatusCode: StatusCode? = nil, innerDiagnosticInfo: DiagnosticInfo? = nil
    ) {
        self.symbolicId = symbolicId
        self.namespaceUri = namespaceUri
        self.locale = locale
        self.localizedText = localizedText
        self.additionalInfo = additionalInfo
        self.innerStatusCode = innerStatusCode
        self.innerDiagnosticInfo = innerDiagnosticInfo
    }

    public func encode(to w: inout BinaryWriter) {
        var mask: UInt8 = 0
        if symbolicId != nil { mask |= 0x01 }
        if namespaceUri != nil { mask |= 0x02 }
        if localizedText != nil { mask |= 0x04 }
        if locale != nil { mask |= 0x08 }
        if additionalInfo != nil { mask |= 0x10 }
        if innerStatusCode != nil { mask |= 0x20 }
        if !inner.isEmpty { mask |= 0x40 }
        w.write(mask)
        if let v = symbolicId { w.write(v) }
        if let v = namespaceUri { w.write(v) }
        if let v = locale { w.write(v) }
        if let v = localizedText { w.write(v) }
        if let v = additionalInfo { w.write(string: v) }
        if let v = innerStatusCode { v.encode(to: &w) }
        if let v = inner.first { v.encode(to: &w) }
    }

    public init(from r: inout BinaryReader) throws(DecodingError) {
        let at = r.offset
        let mask = try r.readUInt8()
        guard mask & 0x80 == 0 else { throw DecodingError(.invalid, at: at, "DiagnosticInfo: mask 0x80") }
        symbolicId = mask & 0x01 != 0 ? try r.readInt32() : nil
        namespaceUri = mask & 0x02 != 0 ? try r.readInt32() : nil
        locale = mask & 0x08 != 0 ? try r.readInt32() : nil
        localizedText = mask & 0x04 != 0 ? try r.readInt32() : nil
        additionalInfo = mask & 0x10 != 0 ? (try r.readString() ?? "") : nil
        innerStatusCode = mask & 0x20 != 0 ? try StatusCode(from: &r) : nil
        if mask & 0x40 != 0 {
            inner = [
                try r.nested("DiagnosticInfo") { (r: inout BinaryReader) throws(DecodingError) in
                    try DiagnosticInfo(from: &r)
                }
            ]
        }
    }
}
