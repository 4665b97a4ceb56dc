import ISO15693

/// The TLVs of the Type 5 data area: NULL (0x00), NDEF Message (0x03), Proprietary (0xFD), Terminator (0xFE).
/// Lengths: one byte 0x00–0xFE, or 0xFF then two bytes big-endian (docs/reference/iso15693.md Part 3 §5.2).
public enum TLV {
    public static let null: UInt8 = 0x00
    public static let ndef: UInt8 = 0x03
    public static let proprietary: UInt8 = 0xFD
    public static let terminator: UInt8 = 0xFE

    /// Where the NDEF message sits in the data area.
    public struct Located: Equatable, Sendable {
        /// Offset of the TLV's T byte in the data area.
        public var tlvOffset: Int
        /// Offset of the message's first byte.
        public var valueOffset: Int
        public var length: Int
    }

    /// What a walk over the TLVs found.
    public enum Search: Equatable, Sendable {
        /// The first NDEF Message TLV.
        case found(Located)
        /// No NDEF Message TLV: a new one would go at `insertAt` (where the Terminator is, or after the
        /// last TLV that is not NULL; 0 when the area holds only NULL TLVs).
        case absent(insertAt: Int)
        /// The walk needs the area up to this offset (exclusive) to go on: read more of the tag.
        case needBytes(Int)
    }

    /// Walks the TLVs of a data area of `areaSize` bytes of which the first `area.count` have been read.
    /// A TLV that runs past `areaSize` is malformed; one that runs past what was read asks for more.
    public static func locate(in area: [UInt8], areaSize: Int) throws(NDEFError) -> Search {
        var i = 0
        var insertAt = 0
        while i < areaSize {
            guard i < area.count else { return .needBytes(min(areaSize, i + 4)) }
            let t = area[i]
            switch t {
            case null:
                i += 1
            case terminator:
                return .absent(insertAt: i)
            default:
                guard i + 1 < areaSize else { throw .tlv("TLV 0x\(Hex.format([t])) at offset \(i) has no length byte") }
                guard i + 1 < area.count else { return .needBytes(min(areaSize, i + 4)) }
                var len = Int(area[i + 1])
                var header = 2
                if len == 0xFF {
                    guard i + 3 < areaSize else {
                        throw .tlv("TLV 0x\(Hex.format([t])) at offset \(i): 3-byte length runs past the data area")
                    }
                    guard i + 3 < area.count else { return .needBytes(i + 4) }
                    len = Int(area[i + 2]) << 8 | Int(area[i + 3])
                    header = 4
                    guard len >= 0xFF && len != 0xFFFF else {
                        throw .tlv(
                            "TLV 0x\(Hex.format([t])) at offset \(i): 3-byte length \(len) is outside 0x00FF…0xFFFE")
                    }
                }
                guard i + header + len <= areaSize else {
                    if t == ndef {
                        throw .tlv(
                            "NDEF TLV at offset \(i) says \(len) bytes but only \(areaSize - i - header) remain in the data area"
                        )
                    }
                    throw .tlv("TLV 0x\(Hex.format([t])) at offset \(i) runs past the data area")
                }
                if t == ndef {
                    guard i + header + len <= area.count else { return .needBytes(i + header + len) }
                    return .found(Located(tlvOffset: i, valueOffset: i + header, length: len))
                }
                i += header + len
                insertAt = i
            }
        }
        return .absent(insertAt: insertAt)
    }

    /// Finds the first NDEF Message TLV in `area` (the whole data area after the CC), or nil.
    public static func findNDEF(in area: [UInt8]) throws(NDEFError) -> Located? {
        switch try locate(in: area, areaSize: area.count) {
        case let .found(l): return l
        case .absent, .needBytes: return nil
        }
    }

    /// The length field for a message of `length` bytes: one byte up to 254, else 0xFF and two bytes.
    public static func lengthField(_ length: Int) -> [UInt8] {
        length < 0xFF ? [UInt8(length)] : [0xFF, UInt8(length >> 8), UInt8(length & 0xFF)]
    }

    /// The NDEF Message TLV for `message`, with a Terminator when there is room for it.
    public static func encode(_ message: [UInt8], terminator addTerminator: Bool = true) -> [UInt8] {
        var out: [UInt8] = [ndef] + lengthField(message.count)
        out += message
        if addTerminator { out.append(terminator) }
        return out
    }
}
