/// NXP ICODE security commands that only read (custom commands, manufacturer 0x04):
/// docs/reference/originality-signatures.md.
public enum NXPSecurity {
    /// READ SIGNATURE: 32 bytes, the chip's originality signature (ICODE SLIX2 data sheet SL2S2602 §9.5.3.20).
    public static let readSignature: UInt8 = 0xBD
    /// GET NXP SYSTEM INFO: protection pointer, protection condition, lock bits, feature flags (4 bytes, least
    /// significant first; bit 8 = the chip has an originality signature). Flipper `slix_i.h`, Proxmark3 `NxpSysInfo`.
    public static let getSystemInfo: UInt8 = 0xAB
    /// GET RANDOM NUMBER: 2 bytes, the key of the next SET PASSWORD.
    public static let getRandomNumber: UInt8 = 0xB2
    /// SET PASSWORD: password id, then the password XORed with the random number (4 bytes).
    public static let setPassword: UInt8 = 0xB3
    /// GET MULTIPLE BLOCK PROTECTION STATUS: first block, count − 1; a status byte per block.
    public static let getMultipleBlockProtectionStatus: UInt8 = 0xB8

    /// Password ids (Proxmark3 PR #1606 quoting the SLIX-L data sheet; Flipper `SlixPasswordType`).
    public static let readPassword: UInt8 = 0x01, writePassword: UInt8 = 0x02, privacyPassword: UInt8 = 0x04

    /// SET PASSWORD's value: the password XORed with the random number repeated (`p0^r0 p1^r1 p2^r0 p3^r1`, r0 the
    /// first byte GET RANDOM NUMBER answered; NXP Reader Library `phalICode_Sw.c`, Proxmark3
    /// `init_password_15693_Slix`, Flipper `slix_poller_set_password`).
    public static func xor(_ password: [UInt8], random: [UInt8]) -> [UInt8] {
        guard password.count == 4, random.count == 2 else { return password }
        return [password[0] ^ random[0], password[1] ^ random[1], password[2] ^ random[0], password[3] ^ random[1]]
    }

    /// The password from SET PASSWORD's value (XOR is its own inverse).
    public static func unxor(_ value: [UInt8], random: [UInt8]) -> [UInt8] { xor(value, random: random) }

    /// Bit 2 of a GET MULTIPLE BLOCK PROTECTION STATUS byte: writing the block needs the write password; bit 1:
    /// reading it needs the read password.
    public static func writeProtected(_ status: UInt8) -> Bool { status & 0x04 != 0 }
    public static func readProtected(_ status: UInt8) -> Bool { status & 0x02 != 0 }

    /// GET NXP SYSTEM INFO's answer (after the flags byte).
    public struct SystemInfo: Equatable, Sendable {
        public var protectionPointer: UInt8
        public var protectionCondition: UInt8
        public var lockBits: UInt8
        public var features: UInt32
        /// The lock bits (docs/reference/tag-passwords.md, "GET NXP SYSTEM INFO"): b0 AFI, b1 EAS, b2 DSFID, b3 the
        /// protection pointer and condition, each locked when set (NXP TagInfo, Flipper `slix_i.h`, the NTAG 5
        /// library agree; Proxmark3's `& 0x03` for DSFID is a bug).
        public var afiLocked: Bool { lockBits & 0x01 != 0 }
        public var easLocked: Bool { lockBits & 0x02 != 0 }
        public var dsfidLocked: Bool { lockBits & 0x04 != 0 }
        public var protectionLocked: Bool { lockBits & 0x08 != 0 }

        /// The locks in words ("AFI, DSFID locked", "none locked").
        public var locksText: String {
            let names = [
                (afiLocked, "AFI"), (easLocked, "EAS"), (dsfidLocked, "DSFID"), (protectionLocked, "page protection"),
            ]
            .filter(\.0).map(\.1)
            return names.isEmpty ? "none locked" : names.joined(separator: ", ") + " locked"
        }

        /// Feature flag bit 8: READ SIGNATURE is supported.
        public var hasSignature: Bool { features & (1 << 8) != 0 }

        /// The page protection in words: which password guards reading and writing the low page (blocks below the
        /// pointer) and the high page (docs/reference/tag-passwords.md).
        public var protectionText: String {
            func page(_ read: UInt8, _ write: UInt8) -> String {
                let r = protectionCondition & read != 0, w = protectionCondition & write != 0
                return r && w ? "read and write password" : r ? "read password" : w ? "write password" : "none"
            }
            return
                "pointer 0x\(Hex.format([protectionPointer])); low page \(page(0x01, 0x02)), high page \(page(0x10, 0x20))"
        }

        /// Parses the 7 bytes after the flags; nil when there are not exactly 7.
        public init?(_ bytes: [UInt8]) {
            guard bytes.count == 7 else { return nil }
            protectionPointer = bytes[0]
            protectionCondition = bytes[1]
            lockBits = bytes[2]
            features = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[3 + $1]) << (8 * UInt32($1)) }
        }
    }
}
