/// Request flags, byte 0 of every request (ISO/IEC 15693-3 §7.3.1; table in `docs/reference/iso15693.md` §6.2).
///
/// Bits 1–4 mean the same in every request. Bits 5–8 have two meanings: with the Inventory flag clear they
/// are Select / Address / Option / RFU; with it set they are AFI / Nb_slots / Option / RFU.
public struct RequestFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let dualSubcarrier = RequestFlags(rawValue: 0x01)
    public static let highDataRate = RequestFlags(rawValue: 0x02)
    public static let inventory = RequestFlags(rawValue: 0x04)
    public static let protocolExtension = RequestFlags(rawValue: 0x08)
    // Inventory flag clear
    public static let select = RequestFlags(rawValue: 0x10)
    public static let address = RequestFlags(rawValue: 0x20)
    // Both meanings
    public static let option = RequestFlags(rawValue: 0x40)
    public static let rfu8 = RequestFlags(rawValue: 0x80)
    // Inventory flag set
    public static let afi = RequestFlags(rawValue: 0x10)
    /// Set: one slot. Clear: 16 slots.
    public static let oneSlot = RequestFlags(rawValue: 0x20)

    public var isInventory: Bool { contains(.inventory) }

    /// The names of the bits that are set, in the meaning the Inventory flag gives them.
    public var names: [String] {
        var n: [String] = []
        if contains(.dualSubcarrier) { n.append("dual-subcarrier") }
        n.append(contains(.highDataRate) ? "high" : "low")
        if contains(.inventory) { n.append("inventory") }
        if contains(.protocolExtension) { n.append("protocol-extension") }
        if isInventory {
            if contains(.afi) { n.append("afi") }
            n.append(contains(.oneSlot) ? "1-slot" : "16-slots")
        } else {
            if contains(.select) { n.append("select") }
            if contains(.address) { n.append("address") }
        }
        if contains(.option) { n.append("option") }
        if contains(.rfu8) { n.append("rfu8") }
        return n
    }

    public var description: String { "0x\(Hex.format([rawValue])) (\(names.joined(separator: ",")))" }

    /// Parses a comma-separated list of names (`high,address,option`) or a byte (`0x22`).
    /// Names: high, low, dual-subcarrier (fsk), inventory, protocol-extension (ext), select, address,
    /// option, afi, 1-slot, 16-slots.
    public init(parsing text: String) throws(ParseError) {
        let t = text.trimmingWhitespace()
        if t.hasPrefix("0x") || t.hasPrefix("0X") {
            self.init(rawValue: UInt8(try Hex.parseInteger(t, max: 0xFF, what: "flags byte")))
            return
        }
        var f = RequestFlags()
        for raw in t.split(separator: ",") {
            switch String(raw).trimmingWhitespace().lowercased() {
            case "high", "high-rate": f.insert(.highDataRate)
            case "low", "low-rate": f.remove(.highDataRate)
            case "dual-subcarrier", "fsk", "two-subcarriers": f.insert(.dualSubcarrier)
            case "inventory": f.insert(.inventory)
            case "protocol-extension", "ext", "extension": f.insert(.protocolExtension)
            case "select", "selected": f.insert(.select)
            case "address", "addressed": f.insert(.address)
            case "option": f.insert(.option)
            case "afi": f.insert(.afi)
            case "1-slot", "one-slot": f.insert(.oneSlot)
            case "16-slots", "16-slot": f.remove(.oneSlot)
            case "": continue
            case let other:
                throw ParseError(
                    "unknown request flag '\(other)'; known: high, low, dual-subcarrier, inventory, protocol-extension, select, address, option, afi, 1-slot, 16-slots, or a byte like 0x22"
                )
            }
        }
        self = f
    }
}

/// Response flags, byte 0 of every response (ISO/IEC 15693-3 §7.4.1 and the 2019 security framework).
public struct ResponseFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let error = ResponseFlags(rawValue: 0x01)
    public static let responseBufferValid = ResponseFlags(rawValue: 0x02)
    public static let finalResponse = ResponseFlags(rawValue: 0x04)
    public static let protocolExtension = ResponseFlags(rawValue: 0x08)
    public static let blockSecurityStatus5 = ResponseFlags(rawValue: 0x10)
    public static let blockSecurityStatus6 = ResponseFlags(rawValue: 0x20)
    public static let waitingTimeExtension = ResponseFlags(rawValue: 0x40)

    public var description: String {
        var n: [String] = []
        if contains(.error) { n.append("error") }
        if contains(.responseBufferValid) { n.append("buffer-valid") }
        if contains(.finalResponse) { n.append("final") }
        if contains(.protocolExtension) { n.append("extension") }
        if contains(.waitingTimeExtension) { n.append("wait-extension") }
        return "0x\(Hex.format([rawValue]))" + (n.isEmpty ? "" : " (\(n.joined(separator: ",")))")
    }
}

/// The error code a tag returns after a response with the Error flag set (ISO/IEC 15693-3 table 7;
/// `docs/reference/iso15693.md` §6.4).
public struct ISOErrorCode: Hashable, Sendable, CustomStringConvertible, Error {
    public let rawValue: UInt8
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let commandNotSupported = ISOErrorCode(0x01)
    public static let commandNotRecognized = ISOErrorCode(0x02)
    public static let optionNotSupported = ISOErrorCode(0x03)
    public static let unknownError = ISOErrorCode(0x0F)
    public static let blockNotAvailable = ISOErrorCode(0x10)
    public static let blockAlreadyLocked = ISOErrorCode(0x11)
    public static let blockLocked = ISOErrorCode(0x12)
    public static let blockNotProgrammed = ISOErrorCode(0x13)
    public static let blockNotLocked = ISOErrorCode(0x14)
    /// ST25DV: "The specified block is protected in read" (ST data sheet DS13519 Rev 2, Table 101).
    public static let blockReadProtected = ISOErrorCode(0x15)

    public var isCustom: Bool { (0xA0...0xDF).contains(rawValue) }

    public var meaning: String {
        switch rawValue {
        case 0x01: return "command not supported (request code not recognised)"
        case 0x02: return "command not recognised (e.g. a format error)"
        case 0x03: return "option not supported"
        case 0x0F: return "unknown error (no information given)"
        case 0x10: return "specified block is not available (does not exist)"
        case 0x11: return "specified block is already locked and cannot be locked again"
        case 0x12: return "specified block is locked and its content cannot be changed"
        case 0x13: return "specified block was not successfully programmed"
        case 0x14: return "specified block was not successfully locked"
        case 0x15: return "specified block is read-protected (ST25DV: DS13519 Table 101)"
        case 0xA0...0xDF: return "custom command error code (manufacturer-specific)"
        default: return "RFU error code (reserved for future use)"
        }
    }

    public var description: String { "error 0x\(Hex.format([rawValue])): \(meaning)" }
}
