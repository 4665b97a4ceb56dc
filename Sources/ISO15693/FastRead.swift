/// ST's fast reads: custom commands (IC manufacturer code 0x02) that read like Read Single / Multiple
/// Blocks but answer at twice the data rate (52.97 kbit/s at the high rate: "for the Fast commands using one
/// subcarrier, all pulse numbers and times are divided by 2", M24LR64-R datasheet §11–12; ST25DV and
/// ST25TV datasheets: "custom fast read access up to 53 kbit/s"). Layouts from ST's RFAL (`rfal_st25xv.c`):
/// - 0xC0 Fast Read Single Block: block (1 byte); 0xC3 Fast Read Multiple Blocks: first (1), count − 1 (1);
/// - 0xC4 / 0xC5 Fast Extended Read Single / Multiple: block, first and count − 1 as 2 bytes, LSB first
///   (ST25DV, ST25TV above block 255);
/// - M24LR: 0xC0 with a 2-byte block, 0xC3 with a 2-byte first block and a 1-byte count − 1, and the Protocol
///   Extension flag set.
/// The answer is laid out as the ISO read's (flags, then per block the security status if the Option flag is
/// set, and the data); the request and t1 are unchanged.
public enum STFastRead {
    public static let single: UInt8 = 0xC0, multiple: UInt8 = 0xC3, extendedSingle: UInt8 = 0xC4,
        extendedMultiple: UInt8 = 0xC5
    public static let codes: Set<UInt8> = [single, multiple, extendedSingle, extendedMultiple]

    /// How the block numbers go on air.
    public enum Layout: Sendable, Equatable {
        /// 1-byte block numbers and count (0xC0, 0xC3).
        case plain
        /// 2-byte block numbers and count (0xC4, 0xC5).
        case extended
        /// M24LR: 2-byte block numbers, 1-byte count, Protocol Extension flag (0xC0, 0xC3).
        case protocolExtension
    }

    /// The command reading `count` blocks from `first` (1…256 blocks; 1…65536 in the extended layout).
    public static func command(first: BlockNumber, count: Int, layout: Layout) -> Command {
        let f = UInt16(truncatingIfNeeded: first.int), n = UInt16(truncatingIfNeeded: count - 1)
        let lo = UInt8(truncatingIfNeeded: f), hi = UInt8(truncatingIfNeeded: f >> 8)
        switch layout {
        case .plain:
            return .custom(
                code: count == 1 ? single : multiple, manufacturer: .stMicroelectronics,
                parameters: count == 1 ? [lo] : [lo, UInt8(truncatingIfNeeded: n)])
        case .extended:
            return .custom(
                code: count == 1 ? extendedSingle : extendedMultiple, manufacturer: .stMicroelectronics,
                parameters: count == 1
                    ? [lo, hi] : [lo, hi, UInt8(truncatingIfNeeded: n), UInt8(truncatingIfNeeded: n >> 8)])
        case .protocolExtension:
            return .custom(
                code: count == 1 ? single : multiple, manufacturer: .stMicroelectronics,
                parameters: count == 1 ? [lo, hi] : [lo, hi, UInt8(truncatingIfNeeded: n)])
        }
    }

    /// Whether a command is one of ST's fast reads (its answer comes at twice the data rate).
    public static func isFastRead(_ command: Command) -> Bool {
        if case let .custom(code, manufacturer, _) = command {
            return manufacturer == .stMicroelectronics && codes.contains(code)
        }
        return false
    }

    /// The blocks a fast read asks for (`protocolExtension`: the request had that flag, M24LR layout); nil
    /// when the parameters do not fit the command.
    public static func range(of command: Command, protocolExtension: Bool) -> (first: Int, count: Int)? {
        guard case let .custom(code, manufacturer, p) = command, manufacturer == .stMicroelectronics else { return nil }
        func u16(_ i: Int) -> Int { Int(p[i]) | Int(p[i + 1]) << 8 }
        switch (code, protocolExtension) {
        case (single, false): return p.count == 1 ? (Int(p[0]), 1) : nil
        case (multiple, false): return p.count == 2 ? (Int(p[0]), Int(p[1]) + 1) : nil
        case (single, true): return p.count == 2 ? (u16(0), 1) : nil
        case (multiple, true): return p.count == 3 ? (u16(0), Int(p[2]) + 1) : nil
        case (extendedSingle, _): return p.count == 2 ? (u16(0), 1) : nil
        case (extendedMultiple, _): return p.count == 4 ? (u16(0), u16(2) + 1) : nil
        default: return nil
        }
    }
}

extension AirTiming {
    /// A tag frame at twice the data rate (ST fast commands): every pulse count and time halved.
    public static func fastTagFrame(bytes: Int, flags: RequestFlags) -> AirTime {
        AirTime(ticks: tagFrame(bytes: bytes, flags: flags).ticks / 2)
    }
}

extension Response {
    /// The blocks of a read's answer body (after the flags byte): for custom reads laid out as Read Multiple
    /// Blocks' (ST's fast reads).
    public static func blocks(
        _ body: [UInt8], first: BlockNumber, count: Int, option: Bool, blockSize: Int?, name: String
    ) throws(FrameError) -> [BlockRead] {
        var r = Reader([0] + body, from: 1)
        return try decodeBlocks(&r, first: first, count: count, option: option, blockSize: blockSize, name: name)
    }
}
