import ISO15693

/// The four NXP ICODE SLIX types as Flipper Zero tells them from the UID, and what each keeps beyond its memory
/// (flipperzero-firmware `lib/nfc/protocols/slix/slix.c` at 217bfac2: `slix_get_type`, `slix_type_features`;
/// docs/reference/flipper-slix.md). Manufacturer 0x04; byte 5 (the ICODE type) 0x02 is a SLIX-S and 0x03 a SLIX-L
/// whatever else the UID says, 0x01 a SLIX with type indicator 0b10 and a SLIX2 with 0b01 (bits 3–4 of byte 4).
/// Anything else (an ICODE SLI, DNA or ICODE 3, another maker) is no SLIX: Flipper saves it as ISO15693-3.
public enum SlixType: String, Sendable, CaseIterable {
    case slix = "SLIX", slixS = "SLIX-S", slixL = "SLIX-L", slix2 = "SLIX2"

    public init?(uid: UID) {
        guard uid.manufacturer == .nxp else { return nil }
        let indicator = (uid.byte(4) >> 3) & 0x03
        switch uid.byte(5) {
        case 0x02: self = .slixS
        case 0x03: self = .slixL
        case 0x01 where indicator == 0b10: self = .slix
        case 0x01 where indicator == 0b01: self = .slix2
        default: return nil
        }
    }

    /// The passwords the type has, by NXP password id, in the order Flipper writes them: read, write, privacy,
    /// destroy, EAS/AFI (`SLIX_TYPE_FEATURES_*`: a SLIX has only the EAS/AFI password, a SLIX-L privacy, destroy and
    /// EAS/AFI, a SLIX-S and SLIX2 all five).
    public var passwordIDs: [UInt8] {
        switch self {
        case .slix: return [0x10]
        case .slixL: return [0x04, 0x08, 0x10]
        case .slixS, .slix2: return [0x01, 0x02, 0x04, 0x08, 0x10]
        }
    }

    /// Privacy mode (the SLIX-S, SLIX-L and SLIX2).
    public var hasPrivacy: Bool { self != .slix }
    /// The originality signature, page protection (pointer, condition, their lock) and GET NXP SYSTEM INFO: the SLIX2.
    public var hasSignature: Bool { self == .slix2 }
    public var hasPageProtection: Bool { self == .slix2 }

    /// Flipper's key for a password id, and the value its loader takes when the key is absent (privacy and destroy
    /// 0F 0F 0F 0F since flipperzero-firmware pull request #3504, the others zero).
    public static func passwordKey(_ id: UInt8) -> (key: String, flipperDefault: [UInt8])? {
        switch id {
        case 0x01: return ("Password Read", [0, 0, 0, 0])
        case 0x02: return ("Password Write", [0, 0, 0, 0])
        case 0x04: return ("Password Privacy", [0x0F, 0x0F, 0x0F, 0x0F])
        case 0x08: return ("Password Destroy", [0x0F, 0x0F, 0x0F, 0x0F])
        case 0x10: return ("Password EAS", [0, 0, 0, 0])
        default: return nil
        }
    }
}
