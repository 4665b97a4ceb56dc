// OPC UA Binary encoding (OPC 10000-6, "Mappings", §5.2), as values: no I/O. Little-endian integers, IEEE 754
// floats, strings and byte strings as an Int32 length (−1: null) and their bytes. docs/reference/opcua.md has the
// facts with their sources.

/// What a decoder takes from the wire at most. Every length and count read is checked against these before
/// anything is allocated for it, so a hostile message costs at most its own size.
public struct DecodingLimits: Sendable, Equatable {
    /// Bytes of one String or XmlElement.
    public var maxStringLength: Int
    /// Bytes of one ByteString.
    public var maxByteStringLength: Int
    /// Elements of one array (of a Variant, or of a structure's field).
    public var maxArrayLength: Int
    /// How deep Variants, DataValues and DiagnosticInfos may nest in one another.
    public var maxDepth: Int

    public init(maxStringLength: Int, maxByteStringLength: Int, maxArrayLength: Int, maxDepth: Int) {
        self.maxStringLength = maxStringLength
        self.maxByteStringLength = maxByteStringLength
        self.maxArrayLength = maxArrayLength
        self.maxDepth = maxDepth
    }

    /// The server's defaults: 1 MiB strings and byte strings, 100,000 elements an array, 64 levels of nesting
    /// (more than any structure of namespace 0, DI or AutoID needs).
    public static let server = DecodingLimits(
        maxStringLength: 1 << 20, maxByteStringLength: 1 << 20, maxArrayLength: 100_000, maxDepth: 64)
}

/// A message that cannot be decoded: where, and why. Never a trap.
public struct DecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The bytes ended inside a value.
        case truncated
        /// A length, count or nesting beyond the limits (Bad_EncodingLimitsExceeded).
        case limit
        /// A value the encoding does not allow (Bad_DecodingError).
        case invalid
    }
    public let kind: Kind
    /// The offset in the message where the value that failed begins.
    public let offset: Int
    public let detail: String

    public init(_ kind: Kind, at offset: Int, _ detail: String) {
        self.kind = kind
        self.offset = offset
        self.detail = detail
    }

    /// The status code a server answers with (OPC 10000-6 §7.1.5 and §5.2; StatusCode.csv): Bad_DecodingError
    /// 0x80070000, Bad_EncodingLimitsExceeded 0x80080000.
    public var statusCode: StatusCode {
        kind == .limit ? .badEncodingLimitsExceeded : .badDecodingError
    }

    public var description: String { "OPC UA decoding at byte \(offset): \(detail)" }
}

/// Writes OPC UA Binary into a byte array.
public struct BinaryWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func write(_ v: Bool) { bytes.append(v ? 1 : 0) }
    public mutating func write(_ v: UInt8) { bytes.append(v) }
    public mutating func write(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    public mutating func write(_ v: UInt16) { little(UInt64(v), 2) }
    public mutating func write(_ v: Int16) { little(UInt64(UInt16(bitPattern: v)), 2) }
    public mutating func write(_ v: UInt32) { little(UInt64(v), 4) }
    public mutating func write(_ v: Int32) { little(UInt64(UInt32(bitPattern: v)), 4) }
    public mutating func write(_ v: UInt64) { little(v, 8) }
    public mutating func write(_ v: Int64) { little(UInt64(bitPattern: v), 8) }
    public mutating func write(_ v: Float) { little(UInt64(v.bitPattern), 4) }
    public mutating func write(_ v: Double) { little(v.bitPattern, 8) }

    private mutating func little(_ v: UInt64, _ n: Int) {
        for i in 0..<n { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    /// A String (or XmlElement): UTF-8 after its length; nil is the null string (length −1).
    public mutating func write(string: String?) {
        guard let s = string else { return write(Int32(-1)) }
        let utf8 = Array(s.utf8)
        write(Int32(clamping: utf8.count))
        bytes += utf8
    }

    /// A ByteString; nil is the null byte string.
    public mutating func write(byteString: [UInt8]?) {
        guard let b = byteString else { return write(Int32(-1)) }
        write(Int32(clamping: b.count))
        bytes += b
    }

    /// Bytes as they are (a value already encoded).
    public mutating func append(raw: [UInt8]) { bytes += raw }

    /// An array: its Int32 length (−1 for nil), then each element.
    public mutating func write<T>(array: [T]?, _ element: (inout BinaryWriter, T) -> Void) {
        guard let a = array else { return write(Int32(-1)) }
        write(Int32(clamping: a.count))
        for e in a { element(&self, e) }
    }
}

/// Reads OPC UA Binary from a byte array, every length checked against `limits` and the bytes left.
public struct BinaryReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int
    public let limits: DecodingLimits
    /// How deep the value being read is nested (Variant in DataValue in Variant…).
    var depth = 0

    public init(_ bytes: [UInt8], limits: DecodingLimits = .server, offset: Int = 0) {
        self.bytes = bytes
        self.limits = limits
        self.offset = max(0, min(offset, bytes.count))
    }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset >= bytes.count }

    /// Fails unless `n` more bytes are there.
    mutating func need(_ n: Int, _ what: String) throws(DecodingError) {
        guard n >= 0, n <= remaining else {
            throw DecodingError(.truncated, at: offset, "\(what): \(n) bytes needed, \(remaining) left")
        }
    }

    private mutating func little(_ n: Int, _ what: String) throws(DecodingError) -> UInt64 {
        try need(n, what)
        var v: UInt64 = 0
        for i in 0..<n { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += n
        return v
    }

    public mutating func readBool() throws(DecodingError) -> Bool { try readUInt8() != 0 }
    public mutating func readUInt8() throws(DecodingError) -> UInt8 { UInt8(truncatingIfNeeded: try little(1, "Byte")) }
    public mutating func readInt8() throws(DecodingError) -> Int8 { Int8(bitPattern: try readUInt8()) }
    public mutating func readUInt16() throws(DecodingError) -> UInt16 {
        UInt16(truncatingIfNeeded: try little(2, "UInt16"))
    }
    public mutating func readInt16() throws(DecodingError) -> Int16 { Int16(bitPattern: try readUInt16()) }
    public mutating func readUInt32() throws(DecodingError) -> UInt32 {
        UInt32(truncatingIfNeeded: try little(4, "UInt32"))
    }
    public mutating func readInt32() throws(DecodingError) -> Int32 { Int32(bitPattern: try readUInt32()) }
    public mutating func readUInt64() throws(DecodingError) -> UInt64 { try little(8, "UInt64") }
    public mutating func readInt64() throws(DecodingError) -> Int64 { Int64(bitPattern: try readUInt64()) }
    public mutating func readFloat() throws(DecodingError) -> Float {
        Float(bitPattern: UInt32(truncatingIfNeeded: try little(4, "Float")))
    }
    public mutating func readDouble() throws(DecodingError) -> Double { Double(bitPattern: try little(8, "Double")) }

    /// `n` bytes as they are.
    public mutating func readRaw(_ n: Int, _ what: String) throws(DecodingError) -> [UInt8] {
        try need(n, what)
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }

    /// A length prefix: −1 is null (nil), another negative value is invalid, a value past `max` is over the
    /// limits, and a value past the bytes left (each element at least `minimumSize` bytes) is truncated.
    mutating func readLength(max: Int, minimumSize: Int, _ what: String) throws(DecodingError) -> Int? {
        let at = offset
        let n = try readInt32()
        if n == -1 { return nil }
        guard n >= 0 else { throw DecodingError(.invalid, at: at, "\(what): length \(n)") }
        guard Int(n) <= max else {
            throw DecodingError(.limit, at: at, "\(what): length \(n) is over the limit of \(max)")
        }
        guard Int(n) * minimumSize <= remaining else {
            throw DecodingError(.truncated, at: at, "\(what): \(n) announced, \(remaining) bytes left")
        }
        return Int(n)
    }

    /// A String (or XmlElement); nil for the null string. Text that is not UTF-8 is invalid.
    public mutating func readString() throws(DecodingError) -> String? {
        let at = offset
        guard let n = try readLength(max: limits.maxStringLength, minimumSize: 1, "String") else { return nil }
        let raw = try readRaw(n, "String")
        guard let s = String(validating: raw, as: UTF8.self) else {
            throw DecodingError(.invalid, at: at, "String: not UTF-8")
        }
        return s
    }

    /// A ByteString; nil for the null byte string.
    public mutating func readByteString() throws(DecodingError) -> [UInt8]? {
        guard let n = try readLength(max: limits.maxByteStringLength, minimumSize: 1, "ByteString") else {
            return nil
        }
        return try readRaw(n, "ByteString")
    }

    /// An array of elements each at least `minimumSize` bytes long; nil for the null array.
    public mutating func readArray<T>(
        minimumSize: Int, _ what: String, _ element: (inout BinaryReader) throws(DecodingError) -> T
    ) throws(DecodingError) -> [T]? {
        guard let n = try readLength(max: limits.maxArrayLength, minimumSize: max(1, minimumSize), what) else {
            return nil
        }
        var out: [T] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(try element(&self)) }
        return out
    }

    /// Runs `body` one level deeper, failing past `limits.maxDepth`.
    mutating func nested<T>(_ what: String, _ body: (inout BinaryReader) throws(DecodingError) -> T)
        throws(DecodingError) -> T
    {
        guard depth < limits.maxDepth else {
            throw DecodingError(.limit, at: offset, "\(what): nested more than \(limits.maxDepth) levels")
        }
        depth += 1
        defer { depth -= 1 }
        return try body(&self)
    }
}

/// A value with an OPC UA Binary encoding.
public protocol BinaryCodable: Sendable {
    func encode(to w: inout BinaryWriter)
    init(from r: inout BinaryReader) throws(DecodingError)
}

extension BinaryCodable {
    /// The value's bytes.
    public var encoded: [UInt8] {
        var w = BinaryWriter()
        encode(to: &w)
        return w.bytes
    }

    /// The value of `bytes`, which must hold it and nothing more.
    public static func decode(_ bytes: [UInt8], limits: DecodingLimits = .server) throws(DecodingError) -> Self {
        var r = BinaryReader(bytes, limits: limits)
        let v = try Self(from: &r)
        guard r.isAtEnd else { throw DecodingError(.invalid, at: r.offset, "\(r.remaining) bytes after the value") }
        return v
    }
}

/// Bytes from hex text, two digits a byte and nothing else; nil when it is not that (a GUID's text, a users
/// file's salts and hashes).
func bytes(hex text: some StringProtocol) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(digits.count / 2)
    for i in stride(from: 0, to: digits.count, by: 2) {
        guard let hi = hexValue(digits[i]), let lo = hexValue(digits[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
    }
    return out
}

private func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: return c - 0x30
    case 0x41...0x46: return c - 0x41 + 10
    case 0x61...0x66: return c - 0x61 + 10
    default: return nil
    }
}

/// Bytes as hex text, two digits a byte.
func hex(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
    let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
    var out: [UInt8] = []
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Hex text for the layers above (the generated nodes' values, certificate fingerprints in messages).
public enum HexText {
    /// The bytes of `text` (pairs of hex digits), nil for anything else.
    public static func bytes(_ text: some StringProtocol) -> [UInt8]? { OPCUA.bytes(hex: text) }
    /// Two lowercase (or `uppercase`) digits per byte.
    public static func string(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        OPCUA.hex(bytes, uppercase: uppercase)
    }
}
