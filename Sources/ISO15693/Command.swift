/// A block number: 0…255 with the plain commands, 0…65535 with the extended commands (0x30–0x3C) or with the
/// Protocol Extension flag. Printed in hex (`0xF8`), accepted in hex or decimal.
public struct BlockNumber: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral, Codable {
    public let value: UInt16
    public init(_ value: UInt16) { self.value = value }
    public init(integerLiteral value: UInt16) { self.value = value }
    /// nil when `value` is outside 0…65535.
    public init?(exactly value: Int) {
        guard let v = UInt16(exactly: value) else { return nil }
        self.value = v
    }
    /// `0xF8`, `248`, `F8h`.
    public init(parsing text: String) throws(ParseError) {
        value = UInt16(try Hex.parseInteger(text, max: 0xFFFF, what: "block number"))
    }
    public var int: Int { Int(value) }
    public var description: String {
        value < 0x100 ? "0x" + Hex.format([UInt8(value)]) : "0x" + Hex.format([UInt8(value >> 8), UInt8(value & 0xFF)], separator: "")
    }
    public static func < (a: Self, b: Self) -> Bool { a.value < b.value }
    public func advanced(by n: Int) -> BlockNumber? { BlockNumber(exactly: Int(value) + n) }
}

/// The mask of an Inventory request: the `length` least-significant bits of the UIDs that may answer.
public struct InventoryMask: Hashable, Sendable, CustomStringConvertible {
    public let length: Int
    public let value: UInt64

    public static let none = InventoryMask(uncheckedLength: 0, value: 0)

    init(uncheckedLength length: Int, value: UInt64) {
        self.length = length
        self.value = value
    }

    /// `length` bits (0…64) of `value`; higher bits of `value` are dropped.
    public init(length: Int, value: UInt64) throws(FrameError) {
        guard (0...64).contains(length) else {
            throw FrameError.invalidField("inventory mask length \(length) is outside 0…64 bits")
        }
        self.length = length
        self.value = length == 64 ? value : value & ((1 << UInt64(length)) - 1)
    }

    var bitMask: UInt64 { length == 64 ? .max : (1 << UInt64(length)) - 1 }

    /// True when the least-significant `length` bits of the UID equal the mask.
    public func matches(_ uid: UID) -> Bool { uid.value & bitMask == value }

    /// The mask extended by `bits` more bits with `extra` as their value.
    public func extended(by bits: Int, with extra: UInt64) throws(FrameError) -> InventoryMask {
        try InventoryMask(length: length + bits, value: value | (extra << UInt64(length)))
    }

    /// ceil(length/8) bytes, least-significant first, as on air.
    public var onAirBytes: [UInt8] {
        (0..<((length + 7) / 8)).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    public var description: String {
        length == 0 ? "no mask" : "\(length)-bit mask 0x\(String(value, radix: 16, uppercase: true))"
    }
}

/// A command code with its name and class (ISO/IEC 15693-3 table in `iso15693-facts.md` §6.1). The one
/// place that knows each command's code.
public struct CommandCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let inventory = CommandCode(0x01)
    public static let stayQuiet = CommandCode(0x02)
    public static let readSingleBlock = CommandCode(0x20)
    public static let writeSingleBlock = CommandCode(0x21)
    public static let lockBlock = CommandCode(0x22)
    public static let readMultipleBlocks = CommandCode(0x23)
    public static let writeMultipleBlocks = CommandCode(0x24)
    public static let select = CommandCode(0x25)
    public static let resetToReady = CommandCode(0x26)
    public static let writeAFI = CommandCode(0x27)
    public static let lockAFI = CommandCode(0x28)
    public static let writeDSFID = CommandCode(0x29)
    public static let lockDSFID = CommandCode(0x2A)
    public static let getSystemInformation = CommandCode(0x2B)
    public static let getMultipleBlockSecurityStatus = CommandCode(0x2C)
    public static let fastReadMultipleBlocks = CommandCode(0x2D)
    public static let extendedReadSingleBlock = CommandCode(0x30)
    public static let extendedWriteSingleBlock = CommandCode(0x31)
    public static let extendedLockBlock = CommandCode(0x32)
    public static let extendedReadMultipleBlocks = CommandCode(0x33)
    public static let extendedWriteMultipleBlocks = CommandCode(0x34)
    public static let extendedGetSystemInformation = CommandCode(0x3B)
    public static let extendedGetMultipleBlockSecurityStatus = CommandCode(0x3C)

    public enum Kind: String, Sendable { case mandatory, optional, custom, proprietary, rfu }

    public var kind: Kind {
        switch rawValue {
        case 0x01, 0x02: return .mandatory
        case 0x20...0x2D, 0x30...0x3D: return .optional
        case 0xA0...0xDF: return .custom
        case 0xE0...0xFF: return .proprietary
        default: return .rfu
        }
    }

    /// Commands after which the tag programs memory; the Option flag then asks it to wait for an EOF
    /// (ISO/IEC 15693-3 §10.4.2; RFAL applies it to 0x21, 0x22, 0x24, 0x31, 0x32, 0x34; AFI/DSFID too).
    public var isWriteAlike: Bool {
        [0x21, 0x22, 0x24, 0x27, 0x28, 0x29, 0x2A, 0x31, 0x32, 0x34].contains(rawValue)
    }

    public var name: String {
        switch rawValue {
        case 0x01: return "Inventory"
        case 0x02: return "Stay Quiet"
        case 0x20: return "Read Single Block"
        case 0x21: return "Write Single Block"
        case 0x22: return "Lock Block"
        case 0x23: return "Read Multiple Blocks"
        case 0x24: return "Write Multiple Blocks"
        case 0x25: return "Select"
        case 0x26: return "Reset to Ready"
        case 0x27: return "Write AFI"
        case 0x28: return "Lock AFI"
        case 0x29: return "Write DSFID"
        case 0x2A: return "Lock DSFID"
        case 0x2B: return "Get System Information"
        case 0x2C: return "Get Multiple Block Security Status"
        case 0x2D: return "Fast Read Multiple Blocks"
        case 0x30: return "Extended Read Single Block"
        case 0x31: return "Extended Write Single Block"
        case 0x32: return "Extended Lock Block"
        case 0x33: return "Extended Read Multiple Blocks"
        case 0x34: return "Extended Write Multiple Blocks"
        case 0x35: return "Authenticate"
        case 0x36: return "Key Update"
        case 0x39: return "Challenge"
        case 0x3A: return "Read Buffer"
        case 0x3B: return "Extended Get System Information"
        case 0x3C: return "Extended Get Multiple Block Security Status"
        case 0x3D: return "Fast Extended Read Multiple Blocks"
        case 0xA0...0xDF: return "Custom command 0x\(Hex.format([rawValue]))"
        case 0xE0...0xFF: return "Proprietary command 0x\(Hex.format([rawValue]))"
        default: return "RFU command 0x\(Hex.format([rawValue]))"
        }
    }

    public var description: String { "\(name) (0x\(Hex.format([rawValue])))" }
}

/// Every ISO/IEC 15693-3 command as a value. Addressing is not part of the command; see `Request`.
public enum Command: Hashable, Sendable {
    case inventory(afi: UInt8?, mask: InventoryMask)
    case stayQuiet
    case readSingleBlock(BlockNumber)
    case writeSingleBlock(BlockNumber, data: [UInt8])
    case lockBlock(BlockNumber)
    /// `count` blocks (1…256); sent on air as count − 1.
    case readMultipleBlocks(first: BlockNumber, count: Int)
    case writeMultipleBlocks(first: BlockNumber, count: Int, data: [UInt8])
    case select
    case resetToReady
    case writeAFI(UInt8)
    case lockAFI
    case writeDSFID(UInt8)
    case lockDSFID
    case getSystemInformation
    case getMultipleBlockSecurityStatus(first: BlockNumber, count: Int)
    case extendedReadSingleBlock(BlockNumber)
    case extendedWriteSingleBlock(BlockNumber, data: [UInt8])
    case extendedLockBlock(BlockNumber)
    /// `count` blocks (1…65536); sent on air as a 16-bit count − 1.
    case extendedReadMultipleBlocks(first: BlockNumber, count: Int)
    case extendedWriteMultipleBlocks(first: BlockNumber, count: Int, data: [UInt8])
    /// `parameters`: which fields to return (b0 DSFID, b1 AFI, b2 memory size, b3 IC reference, b4 MOI,
    /// b5 command list, b6 CSI, b7 extended info flags).
    case extendedGetSystemInformation(parameters: UInt8)
    case extendedGetMultipleBlockSecurityStatus(first: BlockNumber, count: Int)
    /// Custom command 0xA0–0xDF; the IC manufacturer code goes right after the command byte.
    case custom(code: UInt8, manufacturer: ManufacturerCode, parameters: [UInt8])
    /// Proprietary command 0xE0–0xFF.
    case proprietary(code: UInt8, parameters: [UInt8])
    /// Any other code (RFU, the security framework 0x35–0x3A, fast reads 0x2D/0x3D) with its parameters as bytes.
    case other(code: UInt8, parameters: [UInt8])

    public var code: CommandCode {
        switch self {
        case .inventory: return .inventory
        case .stayQuiet: return .stayQuiet
        case .readSingleBlock: return .readSingleBlock
        case .writeSingleBlock: return .writeSingleBlock
        case .lockBlock: return .lockBlock
        case .readMultipleBlocks: return .readMultipleBlocks
        case .writeMultipleBlocks: return .writeMultipleBlocks
        case .select: return .select
        case .resetToReady: return .resetToReady
        case .writeAFI: return .writeAFI
        case .lockAFI: return .lockAFI
        case .writeDSFID: return .writeDSFID
        case .lockDSFID: return .lockDSFID
        case .getSystemInformation: return .getSystemInformation
        case .getMultipleBlockSecurityStatus: return .getMultipleBlockSecurityStatus
        case .extendedReadSingleBlock: return .extendedReadSingleBlock
        case .extendedWriteSingleBlock: return .extendedWriteSingleBlock
        case .extendedLockBlock: return .extendedLockBlock
        case .extendedReadMultipleBlocks: return .extendedReadMultipleBlocks
        case .extendedWriteMultipleBlocks: return .extendedWriteMultipleBlocks
        case .extendedGetSystemInformation: return .extendedGetSystemInformation
        case .extendedGetMultipleBlockSecurityStatus: return .extendedGetMultipleBlockSecurityStatus
        case let .custom(code, _, _): return CommandCode(code)
        case let .proprietary(code, _): return CommandCode(code)
        case let .other(code, _): return CommandCode(code)
        }
    }
}

extension Command {
    /// The command of `code` with placeholder parameters, to decode an answer against (`vlogger decode
    /// --response`): what the answer holds depends only on the command and, for multiple-block commands, the
    /// block count. Stay Quiet (0x02) is never answered, so an "answer" to it does not decode.
    public static func answered(code: UInt8, count: Int = 1) -> Command {
        switch code {
        case 0x01: return .inventory(afi: nil, mask: .none)
        case 0x02: return .stayQuiet
        case 0x20: return .readSingleBlock(0)
        case 0x21: return .writeSingleBlock(0, data: [0])
        case 0x22: return .lockBlock(0)
        case 0x23: return .readMultipleBlocks(first: 0, count: count)
        case 0x24: return .writeMultipleBlocks(first: 0, count: 1, data: [0])
        case 0x25: return .select
        case 0x26: return .resetToReady
        case 0x27: return .writeAFI(0)
        case 0x28: return .lockAFI
        case 0x29: return .writeDSFID(0)
        case 0x2A: return .lockDSFID
        case 0x2B: return .getSystemInformation
        case 0x2C: return .getMultipleBlockSecurityStatus(first: 0, count: count)
        case 0x30: return .extendedReadSingleBlock(0)
        case 0x31: return .extendedWriteSingleBlock(0, data: [0])
        case 0x32: return .extendedLockBlock(0)
        case 0x33: return .extendedReadMultipleBlocks(first: 0, count: count)
        case 0x34: return .extendedWriteMultipleBlocks(first: 0, count: 1, data: [0])
        case 0x3B: return .extendedGetSystemInformation(parameters: 0xFF)
        case 0x3C: return .extendedGetMultipleBlockSecurityStatus(first: 0, count: count)
        case 0xA0...0xDF: return .custom(code: code, manufacturer: ManufacturerCode(0), parameters: [])
        case 0xE0...0xFF: return .proprietary(code: code, parameters: [])
        default: return .other(code: code, parameters: [])
        }
    }
}

/// How a request picks its tag.
public enum Addressing: Hashable, Sendable, CustomStringConvertible {
    /// Every tag in the Ready or Selected state answers.
    case nonAddressed
    /// Only the tag with this UID answers; the UID goes on air least-significant byte first.
    case addressed(UID)
    /// Only the tag in the Selected state answers.
    case selected

    public var description: String {
        switch self {
        case .nonAddressed: return "non-addressed"
        case let .addressed(uid): return "addressed to \(uid)"
        case .selected: return "selected"
        }
    }
}
