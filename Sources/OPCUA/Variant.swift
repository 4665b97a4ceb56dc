// Variant and DataValue (OPC 10000-6 §5.2.2.16 and §5.2.2.17).

/// One value of a built-in type.
public indirect enum Scalar: Hashable, Sendable {
    case boolean(Bool)
    case sByte(Int8)
    case byte(UInt8)
    case int16(Int16)
    case uInt16(UInt16)
    case int32(Int32)
    case uInt32(UInt32)
    case int64(Int64)
    case uInt64(UInt64)
    case float(Float)
    case double(Double)
    case string(String?)
    case dateTime(DateTime)
    case guid(Guid)
    case byteString([UInt8]?)
    case xmlElement(String?)
    case nodeId(NodeId)
    case expandedNodeId(ExpandedNodeId)
    case statusCode(StatusCode)
    case qualifiedName(QualifiedName)
    case localizedText(LocalizedText)
    case extensionObject(ExtensionObject)
    case dataValue(DataValue)
    /// Only as an element of an array: a Variant does not hold a Variant by itself (OPC 10000-6 §5.2.2.16).
    case variant(Variant)
    case diagnosticInfo(DiagnosticInfo)

    public var type: BuiltInType {
        switch self {
        case .boolean: return .boolean
        case .sByte: return .sByte
        case .byte: return .byte
        case .int16: return .int16
        case .uInt16: return .uInt16
        case .int32: return .int32
        case .uInt32: return .uInt32
        case .int64: return .int64
        case .uInt64: return .uInt64
        case .float: return .float
        case .double: return .double
        case .string: return .string
        case .dateTime: return .dateTime
        case .guid: return .guid
        case .byteString: return .byteString
        case .xmlElement: return .xmlElement
        case .nodeId: return .nodeId
        case .expandedNodeId: return .expandedNodeId
        case .statusCode: return .statusCode
        case .qualifiedName: return .qualifiedName
        case .localizedText: return .localizedText
        case .extensionObject: return .extensionObject
        case .dataValue: return .dataValue
        case .variant: return .variant
        case .diagnosticInfo: return .diagnosticInfo
        }
    }

    func encode(to w: inout BinaryWriter) {
        switch self {
        case .boolean(let v): w.write(v)
        case .sByte(let v): w.write(v)
        case .byte(let v): w.write(v)
        case .int16(let v): w.write(v)
        case .uInt16(let v): w.write(v)
        case .int32(let v): w.write(v)
        case .uInt32(let v): w.write(v)
        case .int64(let v): w.write(v)
        case .uInt64(let v): w.write(v)
        case .float(let v): w.write(v)
        case .double(let v): w.write(v)
        case .string(let v), .xmlElement(let v): w.write(string: v)
        case .dateTime(let v): v.encode(to: &w)
        case .guid(let v): v.encode(to: &w)
        case .byteString(let v): w.write(byteString: v)
        case .nodeId(let v): v.encode(to: &w)
        case .expandedNodeId(let v): v.encode(to: &w)
        case .statusCode(let v): v.encode(to: &w)
        case .qualifiedName(let v): v.encode(to: &w)
        case .localizedText(let v): v.encode(to: &w)
        case .extensionObject(let v): v.encode(to: &w)
        case .dataValue(let v): v.encode(to: &w)
        case .variant(let v): v.encode(to: &w)
        case .diagnosticInfo(let v): v.encode(to: &w)
        }
    }

    /// The fewest bytes one value of `type` takes on the wire (what an announced array length is checked with).
    static func minimumSize(_ type: BuiltInType) -> Int {
        switch type {
        case .boolean, .sByte, .byte, .localizedText, .dataValue, .variant, .diagnosticInfo: return 1
        case .int16, .uInt16, .nodeId, .expandedNodeId: return 2
        case .int32, .uInt32, .float, .string, .byteString, .xmlElement, .statusCode: return 4
        case .int64, .uInt64, .double, .dateTime: return 8
        case .guid: return 16
        case .qualifiedName: return 6
        case .extensionObject: return 3
        }
    }

    static func decode(_ type: BuiltInType, from r: inout BinaryReader) throws(DecodingError) -> Scalar {
        switch type {
        case .boolean: return .boolean(try r.readBool())
        case .sByte: return .sByte(try r.readInt8())
        case .byte: return .byte(try r.readUInt8())
        case .int16: return .int16(try r.readInt16())
        case .uInt16: return .uInt16(try r.readUInt16())
        case .int32: return .int32(try r.readInt32())
        case .uInt32: return .uInt32(try r.readUInt32())
        case .int64: return .int64(try r.readInt64())
        case .uInt64: return .uInt64(try r.readUInt64())
        case .float: return .float(try r.readFloat())
        case .double: return .double(try r.readDouble())
        case .string: return .string(try r.readString())
        case .dateTime: return .dateTime(try DateTime(from: &r))
        case .guid: return .guid(try Guid(from: &r))
        case .byteString: return .byteString(try r.readByteString())
        case .xmlElement: return .xmlElement(try r.readString())
        case .nodeId: return .nodeId(try NodeId(from: &r))
        case .expandedNodeId: return .expandedNodeId(try ExpandedNodeId(from: &r))
        case .statusCode: return .statusCode(try StatusCode(from: &r))
        case .qualifiedName: return .qualifiedName(try QualifiedName(from: &r))
        case .localizedText: return .localizedText(try LocalizedText(from: &r))
        case .extensionObject: return .extensionObject(try ExtensionObject(from: &r))
        case .dataValue:
            return .dataValue(
                try r.nested("DataValue") { (r: inout BinaryReader) throws(DecodingError) in try DataValue(from: &r) })
        case .variant:
            return .variant(
                try r.nested("Variant") { (r: inout BinaryReader) throws(DecodingError) in try Variant(from: &r) })
        case .diagnosticInfo:
            return .diagnosticInfo(
                try r.nested("DiagnosticInfo") { (r: inout BinaryReader) throws(DecodingError) in
                    try DiagnosticInfo(from: &r)
                })
        }
    }
}

/// Any value (OPC 10000-6 §5.2.2.16): an encoding byte (the built-in type in its low 6 bits, 0x80 an array,
/// 0x40 array dimensions after it), then the value, or the array's Int32 length and elements, then the
/// dimensions. A multi-dimensional array is its elements in row order (the last index varies fastest) and its
/// dimensions, whose product is the element count.
public indirect enum Variant: Hashable, Sendable, BinaryCodable {
    /// No value (encoding byte 0).
    case null
    case scalar(Scalar)
    /// An array of one type; nil elements is the null array; dimensions nil for a one-dimensional one.
    case array(BuiltInType, [Scalar]?, dimensions: [Int32]? = nil)

    public func encode(to w: inout BinaryWriter) {
        switch self {
        case .null: w.write(UInt8(0))
        case .scalar(let s):
            w.write(s.type.rawValue)
            s.encode(to: &w)
        case .array(let type, let elements, let dimensions):
            w.write(type.rawValue | 0x80 | (dimensions != nil ? 0x40 : 0))
            w.write(array: elements) { w, e in e.encode(to: &w) }
            if let d = dimensions { w.write(array: d) { w, n in w.write(n) } }
        }
    }

    public init(from r: inout BinaryReader) throws(DecodingError) {
        let at = r.offset
        let mask = try r.readUInt8()
        let id = mask & 0x3F
        if id == 0 {
            guard mask == 0 else { throw DecodingError(.invalid, at: at, "Variant: null with flags") }
            self = .null
            return
        }
        guard let type = BuiltInType(rawValue: id) else {
            throw DecodingError(.invalid, at: at, "Variant: built-in type \(id)")
        }
        guard mask & 0x80 != 0 else {
            guard mask & 0x40 == 0 else { throw DecodingError(.invalid, at: at, "Variant: dimensions of a scalar") }
            guard type != .variant else { throw DecodingError(.invalid, at: at, "Variant: a Variant in a Variant") }
            self = .scalar(try Scalar.decode(type, from: &r))
            return
        }
        let elements = try r.readArray(minimumSize: Scalar.minimumSize(type), "Variant array") {
            (r: inout BinaryReader) throws(DecodingError) in try Scalar.decode(type, from: &r)
        }
        guard mask & 0x40 != 0 else {
            self = .array(type, elements)
            return
        }
        let dimsAt = r.offset
        let dimensions = try r.readArray(minimumSize: 4, "ArrayDimensions") {
            (r: inout BinaryReader) throws(DecodingError) in try r.readInt32()
        }
        // The product of the dimensions is the element count (counted without overflow: each factor is
        // checked against the count first).
        var product = 1
        for d in dimensions ?? [] {
            guard d >= 0 else { throw DecodingError(.invalid, at: dimsAt, "ArrayDimensions: \(d)") }
            guard d == 0 || product <= (elements?.count ?? 0) / Int(d) else {
                throw DecodingError(
                    .invalid, at: dimsAt, "ArrayDimensions: more than the \(elements?.count ?? 0) elements")
            }
            product *= Int(d)
        }
        guard product == (elements?.count ?? 0) || (dimensions ?? []).isEmpty else {
            throw DecodingError(
                .invalid, at: dimsAt,
                "ArrayDimensions \((dimensions ?? []).map(String.init)) for \(elements?.count ?? 0) elements")
        }
        self = .array(type, elements, dimensions: dimensions)
    }
}

/// A value with its status and times (OPC 10000-6 §5.2.2.17): a mask (0x01 value, 0x02 status, 0x04 source
/// timestamp, 0x08 server timestamp, 0x10 source picoseconds, 0x20 server picoseconds), then those present in
/// the order value, status, source timestamp, source picoseconds, server timestamp, server picoseconds.
public struct DataValue: Hashable, Sendable, BinaryCodable {
    /// Held in an array of at most one: a struct cannot hold a Variant that may hold it.
    private var held: [Variant] = []
    public var value: Variant? {
        get { held.first }
        set { held = newValue.map { [$0] } ?? [] }
    }
    public var status: StatusCode?
    public var sourceTimestamp: DateTime?
    public var sourcePicoseconds: UInt16?
    public var serverTimestamp: DateTime?
    public var serverPicoseconds: UInt16?

    public init(
        value: Variant? = nil, status: StatusCode? = nil, sourceTimestamp: DateTime? = nil,
        sourcePicoseconds: UInt16? = nil, serverTimestamp: DateTime? = nil, serverPicoseconds: UInt16? = nil
    ) {
        self.status = status
        self.sourceTimestamp = sourceTimestamp
        self.sourcePicoseconds = sourcePicoseconds
        self.serverTimestamp = serverTimestamp
        self.serverPicoseconds = serverPicoseconds
        self.value = value
    }

    public func encode(to w: inout BinaryWriter) {
        var mask: UInt8 = 0
        if !held.isEmpty { mask |= 0x01 }
        if status != nil { mask |= 0x02 }
        if sourceTimestamp != nil { mask |= 0x04 }
        if serverTimestamp != nil { mask |= 0x08 }
        if sourcePicoseconds != nil { mask |= 0x10 }
        if serverPicoseconds != nil { mask |= 0x20 }
        w.write(mask)
        if let v = held.first { v.encode(to: &w) }
        if let v = status { v.encode(to: &w) }
        if let v = sourceTimestamp { v.encode(to: &w) }
        if let v = sourcePicoseconds { w.write(v) }
        if let v = serverTimestamp { v.encode(to: &w) }
        if let v = serverPicoseconds { w.write(v) }
    }

    public init(from r: inout BinaryReader) throws(DecodingError) {
        let at = r.offset
        let mask = try r.readUInt8()
        guard mask & 0xC0 == 0 else {
            throw DecodingError(.invalid, at: at, "DataValue: mask 0x\(String(mask, radix: 16))")
        }
        if mask & 0x01 != 0 {
            held = [try r.nested("Variant") { (r: inout BinaryReader) throws(DecodingError) in try Variant(from: &r) }]
        }
        status = mask & 0x02 != 0 ? try StatusCode(from: &r) : nil
        sourceTimestamp = mask & 0x04 != 0 ? try DateTime(from: &r) : nil
        sourcePicoseconds = mask & 0x10 != 0 ? try r.readUInt16() : nil
        serverTimestamp = mask & 0x08 != 0 ? try DateTime(from: &r) : nil
        serverPicoseconds = mask & 0x20 != 0 ? try r.readUInt16() : nil
    }
}
