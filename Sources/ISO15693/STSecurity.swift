/// ST25DV area security seen from RF (custom commands, manufacturer 0x02): docs/reference/tag-passwords.md, "ST25DV
/// areas". The user memory is cut into up to four areas by the ENDAi registers; each area's RFAiSS register says
/// which RF password opens it (PWD_CTRL) and what is allowed without it (RW_PROTECTION). Facts from the ST25DV data
/// sheets DocID027603 Rev 4 and DS13519 Rev 2 (ST25DVxxKC), with the page of each in the reference.
public enum STSecurity {
    /// READ CONFIGURATION: a register pointer; answers the register's value. Allowed always (no password).
    public static let readConfiguration: UInt8 = 0xA0
    /// PRESENT PASSWORD: the password number (0 configuration, 1–3 RF_PWD_1…3), then the 8-byte password.
    public static let presentPassword: UInt8 = 0xB3
    /// The password's length on the ST25DV: 64 bits.
    public static let passwordLength = 8

    /// The registers that make the area map, in the order they are read: RFA1SS, ENDA1, RFA2SS, ENDA2, RFA3SS, ENDA3,
    /// RFA4SS (DS13519 Table 7; ST's `st25dv_reg.h`).
    public static let areaRegisters: [UInt8] = [0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A]

    /// Whether a model is an ST25DV (dynamic tag with the area registers).
    public static func hasAreas(_ model: ICModel?) -> Bool {
        switch model {
        case .st25dv04k, .st25dv16k, .st25dv64k, .st25dv16kOr64k, .st25dvKC: return true
        default: return false
        }
    }

    /// What an area allows over RF.
    public struct Area: Equatable, Sendable, CustomStringConvertible {
        /// 1…4.
        public var number: Int
        public var firstBlock: Int
        /// The last block, inclusive.
        public var lastBlock: Int
        /// PWD_CTRL: the RF password (1–3) that opens the area's session; 0: none can.
        public var password: Int
        /// RW_PROTECTION, 0…3.
        public var protection: Int

        /// Reading needs the session: areas 2–4 with RW_PROTECTION 10b or 11b ("Area 1 is always readable",
        /// DS13519 §4.2.1 p. 14).
        public var readNeedsSession: Bool { number > 1 && protection >= 2 }
        /// Writing needs the session: RW_PROTECTION 01b or 10b.
        public var writeNeedsSession: Bool { protection == 1 || protection == 2 }
        public init(number: Int, firstBlock: Int, lastBlock: Int, password: Int, protection: Int) {
            (self.number, self.firstBlock, self.lastBlock) = (number, firstBlock, lastBlock)
            (self.password, self.protection) = (password, protection)
        }

        /// The area in words: "area 2, blocks 0x008–0x00F: read open, write with RF_PWD_1".
        public var description: String {
            func hex(_ n: Int) -> String { "0x" + Hex.format([UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)], separator: "") }
            let key = password == 0 ? "no password opens it" : "RF_PWD_\(password)"
            let read = readNeedsSession ? (password == 0 ? "read closed" : "read with \(key)") : "read open"
            let write =
                writeForbidden
                ? "write never"
                : writeNeedsSession ? (password == 0 ? "write closed" : "write with \(key)") : "write open"
            return "area \(number), blocks \(hex(firstBlock))–\(hex(lastBlock)): \(read), \(write)"
        }

        /// Writing is never allowed: RW_PROTECTION 11b.
        public var writeForbidden: Bool { protection == 3 }
    }

    /// The area map from the seven registers (`areaRegisters`' order) and the memory's block count. Nil when the
    /// registers break the data sheet's rules (ENDA1 ≤ ENDA2 ≤ ENDA3 ≤ the end of memory).
    public static func areas(registers r: [UInt8], blockCount: Int) -> [Area]? {
        guard r.count == 7, blockCount >= 8 else { return nil }
        let ends = [Int(r[1]), Int(r[3]), Int(r[5])].map { 8 * $0 + 7 }  // "Last RF block of area = 8 × ENDAi + 7"
        guard ends[0] <= ends[1], ends[1] <= ends[2], ends[2] <= blockCount - 1 else { return nil }
        let ss = [r[0], r[2], r[4], r[6]]
        var out: [Area] = []
        var first = 0
        for i in 0..<4 {
            let last = i < 3 ? ends[i] : blockCount - 1
            if last >= first {
                out.append(
                    Area(
                        number: i + 1, firstBlock: first, lastBlock: last, password: Int(ss[i] & 0x03),
                        protection: Int(ss[i] >> 2 & 0x03)))
            }
            first = max(first, last + 1)
        }
        return out
    }
}
