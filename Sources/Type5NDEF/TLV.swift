import ISO15693

/// The TLVs of the Type 5 data area: NULL (0x00), NDEF Message (0x03), Proprietary (0xFD), Terminator (0xFE).
/// Lengths: one byte 0x00–0xFE, or 0xFF then two bytes big-endian (facts §5.2).
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

    /// Finds the first NDEF Message TLV in `area` (the bytes after the CC). `available` is how many bytes
    /// of the area exist on the tag (reads may give fewer: then a TLV past `area.count` asks for more).
    public static func findNDEF(in area: [UInt8]) throws(NDEFError) -> Located? {
        var i = 0
        while i < area.count {
            let t = area[i]
            switch t {
            case null:
                i += 1
            case terminator:
                return nil
            default:
                guard i + 1 < area.count else { throw .tlv("TLV 0x\(Hex.format([t])) at offset \(i) has no length byte") }
                var len = Int(area[i + 1])
                var header = 2
                if len == 0xFF {
                    guard i + 3 < area.count else { throw .tlv("TLV 0x\(Hex.format([t])) at offset \(i): 3-byte length runs past the data area") }
                    len = Int(area[i + 2]) << 8 | Int(area[i + 3])
                    header = 4
                    guard len >= 0xFF && len != 0xFFFF else { throw .tlv("TLV 0x\(Hex.format([t])) at offset \(i): 3-byte length \(len) is outside 0x00FF…0xFFFE") }
                }
                if t == ndef {
                    guard i + header + len <= area.count else {
                        throw .tlv("NDEF TLV at offset \(i) says \(len) bytes but only \(area.count - i - header) remain in the data area")
                    }
                    return Located(tlvOffset: i, valueOffset: i + header, length: len)
                }
                guard i + header + len <= area.count else { throw .tlv("TLV 0x\(Hex.format([t])) at offset \(i) runs past the data area") }
                i += header + len
            }
        }
        return nil
    }

    /// The NDEF Message TLV for `message`, with a Terminator when there is room for it.
    public static func encode(_ message: [UInt8], terminator addTerminator: Bool = true) -> [UInt8] {
        var out: [UInt8] = [ndef]
        if message.count < 0xFF { out.append(UInt8(message.count)) } else { out += [0xFF, UInt8(message.count >> 8), UInt8(message.count & 0xFF)] }
        out += message
        if addTerminator { out.append(terminator) }
        return out
    }
}
