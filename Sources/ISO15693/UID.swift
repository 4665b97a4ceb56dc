/// The 64-bit unique identifier of an ISO/IEC 15693 tag.
///
/// Byte 7 (most significant) is 0xE0, byte 6 the IC manufacturer code (ISO/IEC 7816-6), bytes 5…0 the
/// serial number set by the manufacturer. On air the UID is sent least-significant byte first; it is printed
/// most-significant byte first, as `E004015012345678`, everywhere in vlogger.
public struct UID: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    /// The UID as a 64-bit number, byte 7 in the most significant position.
    public let value: UInt64

    /// From the 64-bit value; byte 7 must be 0xE0.
    public init(_ value: UInt64) throws(FrameError) {
        guard value >> 56 == 0xE0 else {
            throw FrameError.invalidUID(
                "most significant byte is 0x\(Hex.format([UInt8(value >> 56)])), ISO/IEC 15693-3 requires 0xE0")
        }
        self.value = value
    }

    /// From a manufacturer code and a 48-bit serial number (bytes 5…0); byte 7 is 0xE0.
    public init(manufacturer: ManufacturerCode, serial: UInt64) {
        value = 0xE0 << 56 | UInt64(manufacturer.rawValue) << 48 | (serial & 0x0000_FFFF_FFFF_FFFF)
    }

    /// From 8 bytes in on-air order (least-significant byte first), as in an Inventory response.
    public init<C: Collection>(onAir bytes: C) throws(FrameError) where C.Element == UInt8 {
        guard bytes.count == 8 else {
            throw FrameError.invalidUID("needs 8 bytes, got \(bytes.count)")
        }
        var v: UInt64 = 0
        for (i, b) in bytes.enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        try self.init(v)
    }

    /// From 8 bytes in printed order (most-significant byte first).
    public init(displayBytes bytes: [UInt8]) throws(FrameError) {
        try self.init(onAir: bytes.reversed())
    }

    /// Parses `E004015012345678`, `E0 04 01 50 12 34 56 78` or `E0:04:…` (most-significant byte first).
    public init(parsing text: String) throws(ParseError) {
        let bytes = try Hex.parse(text)
        guard bytes.count == 8 else {
            throw ParseError(
                "UID '\(text)' has \(bytes.count) bytes; a UID has 8, written most-significant first, e.g. E004015012345678"
            )
        }
        do {
            try self.init(displayBytes: bytes)
        } catch {
            throw ParseError("UID '\(text)': \(error); write it most-significant byte first, e.g. E004015012345678")
        }
    }

    /// Bytes as sent on air: least-significant first.
    public var onAirBytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }
    /// Bytes as printed: most-significant first.
    public var displayBytes: [UInt8] { onAirBytes.reversed() }
    /// Byte `i` (0 = least significant, 7 = 0xE0).
    public func byte(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }

    /// The IC manufacturer code, byte 6.
    public var manufacturer: ManufacturerCode { ManufacturerCode(byte(6)) }
    /// The 48-bit serial number, bytes 5…0.
    public var serial: UInt64 { value & 0x0000_FFFF_FFFF_FFFF }

    /// `E004015012345678`
    public var description: String { Hex.format(displayBytes, separator: "") }
    /// The printed form appended as ASCII (the store's hot path: no String, no array).
    public func appendPrinted(to out: inout [UInt8]) {
        Hex.append((0..<8).lazy.map { byte(7 - $0) }, to: &out)
    }
    /// `E0 04 01 50 12 34 56 78`
    public var spaced: String { Hex.format(displayBytes) }

    public static func < (a: UID, b: UID) -> Bool { a.value < b.value }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(parsing: text) } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
