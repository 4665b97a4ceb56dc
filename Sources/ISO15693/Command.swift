/// A block number: 0…255 with the plain commands, 0…65535 with the extended commands (0x30–0x3C) or with the
/// Protocol Extension flag. Printed in hex (`0xF8`), accepted in hex or decimal.
public struct BlockNumber: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral, Codable
{
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
        value < 0x100
            ? "0x" + Hex.format([UInt8(value)])
            : "0x" + Hex.format([UInt8(value >> 8), UInt8(value & 0xFF)], separator: "")
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

/// A command code with its name and class (ISO/IEC 15693-3 table in `docs/reference/iso15693.md` §6.1). The one
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

    /// What a request of this code carries after its command byte, in order (ISO/IEC 15693-3 clause 10;
    /// `docs/reference/iso15693.md` §6). `[UID]` is present when the Address flag is set.
    public enum Layout: Sendable, Equatable {
        /// `[AFI] mask-length mask` with the Inventory flag.
        case inventory
        /// `UID`: only meaningful addressed (Stay Quiet, Select).
        case addressedOnly
        /// `[UID]`.
        case nothing
        /// `[UID] value`: one byte named by the string (AFI, DSFID).
        case value(String)
        /// `[UID] block`.
        case block
        /// `[UID] block data`.
        case blockData
        /// `[UID] first count−1`.
        case blocks
        /// `[UID] first count−1 data`.
        case blocksData
        /// `parameters [UID]` (Extended Get System Information: the parameter byte precedes the UID).
        case parametersThenAddress
        /// `manufacturer [UID] parameters…` (custom commands 0xA0–0xDF).
        case custom
        /// `[UID] parameters…` as bytes (proprietary, security framework, RFU).
        case opaque
    }

    /// One row of the command table.
    struct Entry: Sendable {
        let name: String
        let layout: Layout
        /// Block numbers always take two bytes (the extended commands).
        var wideBlocks = false
        /// Block numbers take two bytes when the Protocol Extension flag is set (ISO/IEC 15693-3 flag b4).
        var wideWithProtocolExtension = false
        /// The block count takes two bytes.
        var wideCount = false
        /// The tag programs memory after it (see `isWriteAlike`).
        var writeAlike = false
    }

    /// The command table of ISO/IEC 15693-3 (`docs/reference/iso15693.md` §6.1). Every other file names codes through
    /// the constants above and learns a code's request layout, name and timing class from here.
    static let table: [UInt8: Entry] = [
        0x01: Entry(name: "Inventory", layout: .inventory),
        0x02: Entry(name: "Stay Quiet", layout: .addressedOnly),
        0x20: Entry(name: "Read Single Block", layout: .block, wideWithProtocolExtension: true),
        0x21: Entry(name: "Write Single Block", layout: .blockData, wideWithProtocolExtension: true, writeAlike: true),
        0x22: Entry(name: "Lock Block", layout: .block, wideWithProtocolExtension: true, writeAlike: true),
        0x23: Entry(name: "Read Multiple Blocks", layout: .blocks, wideWithProtocolExtension: true),
        0x24: Entry(
            name: "Write Multiple Blocks", layout: .blocksData, wideWithProtocolExtension: true, writeAlike: true),
        0x25: Entry(name: "Select", layout: .addressedOnly),
        0x26: Entry(name: "Reset to Ready", layout: .nothing),
        0x27: Entry(name: "Write AFI", layout: .value("AFI"), writeAlike: true),
        0x28: Entry(name: "Lock AFI", layout: .nothing, writeAlike: true),
        0x29: Entry(name: "Write DSFID", layout: .value("DSFID"), writeAlike: true),
        0x2A: Entry(name: "Lock DSFID", layout: .nothing, writeAlike: true),
        0x2B: Entry(name: "Get System Information", layout: .nothing),
        0x2C: Entry(name: "Get Multiple Block Security Status", layout: .blocks, wideWithProtocolExtension: true),
        0x2D: Entry(name: "Fast Read Multiple Blocks", layout: .opaque),
        0x30: Entry(name: "Extended Read Single Block", layout: .block, wideBlocks: true),
        0x31: Entry(name: "Extended Write Single Block", layout: .blockData, wideBlocks: true, writeAlike: true),
        0x32: Entry(name: "Extended Lock Block", layout: .block, wideBlocks: true, writeAlike: true),
        0x33: Entry(name: "Extended Read Multiple Blocks", layout: .blocks, wideBlocks: true, wideCount: true),
        0x34: Entry(
            name: "Extended Write Multiple Blocks", layout: .blocksData, wideBlocks: true, wideCount: true,
            writeAlike: true),
        0x35: Entry(name: "Authenticate", layout: .opaque),
        0x36: Entry(name: "Key Update", layout: .opaque),
        0x39: Entry(name: "Challenge", layout: .opaque),
        0x3A: Entry(name: "Read Buffer", layout: .opaque),
        0x3B: Entry(name: "Extended Get System Information", layout: .parametersThenAddress),
        0x3C: Entry(
            name: "Extended Get Multiple Block Security Status", layout: .blocks, wideBlocks: true, wideCount: true),
        0x3D: Entry(name: "Fast Extended Read Multiple Blocks", layout: .opaque),
    ]

    var entry: Entry? { Self.table[rawValue] }

    /// The request layout of this code; custom codes carry the manufacturer byte, unknown ones raw bytes.
    public var layout: Layout {
        if let e = entry { return e.layout }
        return kind == .custom ? .custom : .opaque
    }

    /// Block numbers of this command take two bytes with these flags: always for the extended commands,
    /// with the Protocol Extension flag for the plain block commands.
    public func wideBlockNumbers(_ flags: RequestFlags) -> Bool {
        guard let e = entry else { return false }
        return e.wideBlocks || (e.wideWithProtocolExtension && flags.contains(.protocolExtension))
    }

    /// The block count takes two bytes (Extended Read/Write Multiple Blocks, Extended Get Multiple Block
    /// Security Status).
    public var wideCount: Bool { entry?.wideCount ?? false }

    /// One of the extended commands (0x30–0x3C) that a tag without them refuses.
    public var isExtended: Bool { entry?.wideBlocks == true || self == .extendedGetSystemInformation }

    /// A command on the tag's memory or system information that the Protocol Extension flag reshapes
    /// (the plain block commands and Get System Information).
    public var takesProtocolExtension: Bool {
        entry?.wideWithProtocolExtension == true || self == .getSystemInformation
    }

    /// Commands after which the tag programs memory; the Option flag then asks it to wait for an EOF
    /// (ISO/IEC 15693-3 §10.4.2; RFAL applies it to 0x21, 0x22, 0x24, 0x31, 0x32, 0x34; AFI/DSFID too).
    public var isWriteAlike: Bool { entry?.writeAlike ?? false }

    /// Custom commands that change a tag for ever, by (manufacturer, code): NXP ICODE and ST custom
    /// commands from `docs/reference/iso15693.md`.
    static let irreversibleCustom: [ManufacturerCode: [UInt8: String]] = [
        .nxp: [
            0xA4: "NXP Lock EAS", 0xB5: "NXP Lock Password", 0xB7: "NXP Lock Page Protection Condition",
            0xB9: "NXP Destroy", 0xBA: "NXP Enable Privacy",
        ],
        .stMicroelectronics: [0xA4: "ST Lock EAS", 0xA6: "ST Kill", 0xB2: "ST Lock Kill"],
    ]

    /// The name of the command in a request frame (without CRC) that cannot be undone: the ISO locks
    /// (Lock Block, Lock AFI, Lock DSFID, Extended Lock Block) and the known custom locks, kill and privacy
    /// commands (custom commands by their manufacturer byte). nil for anything else or a frame too short.
    public static func irreversibleCommand(in frame: [UInt8]) -> String? {
        guard frame.count >= 2 else { return nil }
        let code = CommandCode(frame[1])
        if [.lockBlock, .lockAFI, .lockDSFID, .extendedLockBlock].contains(code) { return code.name }
        guard frame.count >= 3, code.kind == .custom else { return nil }
        return irreversibleCustom[ManufacturerCode(frame[2])]?[frame[1]]
    }

    /// Custom commands known to only read (ISO15693 facts, custom command table: NXP ICODE and ST): Inventory
    /// Read and its page and fast forms, GET NXP SYSTEM INFO, GET RANDOM NUMBER, GET MULTIPLE BLOCK PROTECTION
    /// STATUS, READ SIGNATURE, EAS Alarm (NXP); Read Configuration, Read Message (Length), Read Dynamic
    /// Configuration, Get Random Number and the fast reads (ST). Every other custom or proprietary code may
    /// change a tag, some for ever (NXP 0xA6 Password Protect EAS/AFI, 0xBB 64-bit password protection).
    static let readOnlyCustom: [ManufacturerCode: Set<UInt8>] = [
        .nxp: [0xA0, 0xA1, 0xA5, 0xAB, 0xB0, 0xB1, 0xB2, 0xB8, 0xBD],
        .stMicroelectronics: [0xA0, 0xAB, 0xAC, 0xAD, 0xB4, 0xC0, 0xC3, 0xC4, 0xC5, 0xCB, 0xCC, 0xCD],
    ]

    /// Why a request frame (without CRC) must be confirmed before it is sent, or nil: an irreversible command
    /// (`irreversibleCommand`), or any custom (0xA0–0xDF) or proprietary (0xE0–0xFF) command that is not a known
    /// read of its manufacturer.
    public static func confirmationNeeded(for frame: [UInt8]) -> String? {
        if let what = irreversibleCommand(in: frame) { return "\(what), which cannot be undone" }
        guard frame.count >= 2 else { return nil }
        let code = CommandCode(frame[1])
        switch code.kind {
        case .proprietary:
            return
                "a proprietary command (0x\(Hex.format([frame[1]]))), a manufacturer's internal command that may change the tag for ever"
        case .custom:
            guard frame.count >= 3 else {
                return "a custom command (0x\(Hex.format([frame[1]]))) without its manufacturer byte"
            }
            let maker = ManufacturerCode(frame[2])
            if readOnlyCustom[maker]?.contains(frame[1]) == true { return nil }
            let named = CustomCommands.name(frame[1], maker).map { "\($0), " } ?? ""
            return
                "\(named)custom command 0x\(Hex.format([frame[1]])) for manufacturer 0x\(Hex.format([frame[2]])), which is not a known read: it may change the tag, some such commands for ever"
        default:
            return nil
        }
    }

    public var name: String {
        if let e = entry { return e.name }
        switch kind {
        case .custom: return "Custom command 0x\(Hex.format([rawValue]))"
        case .proprietary: return "Proprietary command 0x\(Hex.format([rawValue]))"
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
        let c = CommandCode(code)
        switch c.layout {
        case .inventory: return .inventory(afi: nil, mask: .none)
        case .custom: return .custom(code: code, manufacturer: ManufacturerCode(0), parameters: [])
        default:
            // Only Inventory and custom codes (above) need more than these placeholders.
            return
                (try? Command(
                    code: c, count: max(1, count), data: [0], value: c == .extendedGetSystemInformation ? 0xFF : 0))
                ?? .other(code: code, parameters: [])
        }
    }

    /// The command of `code` with its decoded fields; the fields its layout does not carry are ignored.
    /// Codes without a structured case (security framework, ISO fast reads, RFU) become `.other`,
    /// proprietary ones `.proprietary`, custom ones need `Command.custom` and are refused here.
    public init(code: CommandCode, block: BlockNumber = 0, count: Int = 1, data: [UInt8] = [], value: UInt8 = 0)
        throws(FrameError)
    {
        switch code {
        case .stayQuiet: self = .stayQuiet
        case .select: self = .select
        case .resetToReady: self = .resetToReady
        case .lockAFI: self = .lockAFI
        case .lockDSFID: self = .lockDSFID
        case .getSystemInformation: self = .getSystemInformation
        case .writeAFI: self = .writeAFI(value)
        case .writeDSFID: self = .writeDSFID(value)
        case .readSingleBlock: self = .readSingleBlock(block)
        case .lockBlock: self = .lockBlock(block)
        case .extendedReadSingleBlock: self = .extendedReadSingleBlock(block)
        case .extendedLockBlock: self = .extendedLockBlock(block)
        case .writeSingleBlock: self = .writeSingleBlock(block, data: data)
        case .extendedWriteSingleBlock: self = .extendedWriteSingleBlock(block, data: data)
        case .readMultipleBlocks: self = .readMultipleBlocks(first: block, count: count)
        case .getMultipleBlockSecurityStatus: self = .getMultipleBlockSecurityStatus(first: block, count: count)
        case .extendedReadMultipleBlocks: self = .extendedReadMultipleBlocks(first: block, count: count)
        case .extendedGetMultipleBlockSecurityStatus:
            self = .extendedGetMultipleBlockSecurityStatus(first: block, count: count)
        case .writeMultipleBlocks: self = .writeMultipleBlocks(first: block, count: count, data: data)
        case .extendedWriteMultipleBlocks: self = .extendedWriteMultipleBlocks(first: block, count: count, data: data)
        case .extendedGetSystemInformation: self = .extendedGetSystemInformation(parameters: value)
        case .inventory:
            throw FrameError.invalidField("Inventory needs its AFI and mask; build it with Command.inventory")
        default:
            switch code.kind {
            case .custom:
                throw FrameError.invalidField("\(code.name) needs its manufacturer code; build it with Command.custom")
            case .proprietary: self = .proprietary(code: code.rawValue, parameters: data)
            default: self = .other(code: code.rawValue, parameters: data)
            }
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
