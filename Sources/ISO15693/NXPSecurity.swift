/// NXP ICODE security commands that only read (custom commands, manufacturer 0x04):
/// docs/reference/originality-signatures.md.
public enum NXPSecurity {
    /// READ SIGNATURE: 32 bytes, the chip's originality signature (ICODE SLIX2 data sheet SL2S2602 §9.5.3.20).
    public static let readSignature: UInt8 = 0xBD
    /// GET NXP SYSTEM INFO: protection pointer, protection condition, lock bits, feature flags (4 bytes, least
    /// significant first; bit 8 = the chip has an originality signature). Flipper `slix_i.h`, Proxmark3 `NxpSysInfo`.
    public static let getSystemInfo: UInt8 = 0xAB

    /// GET NXP SYSTEM INFO's answer (after the flags byte).
    public struct SystemInfo: Equatable, Sendable {
        public var protectionPointer: UInt8
        public var protectionCondition: UInt8
        public var lockBits: UInt8
        public var features: UInt32
        /// Feature flag bit 8: READ SIGNATURE is supported.
        public var hasSignature: Bool { features & (1 << 8) != 0 }

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
