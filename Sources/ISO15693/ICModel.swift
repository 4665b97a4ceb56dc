/// An IC model, told from the UID (manufacturer code and the product bits of byte 5 and 4) and, where the
/// UID alone is ambiguous, from the IC reference and memory size of Get System Information.
///
/// Sources: Proxmark3 `client/src/cmdhf15.c` `uidmapping[]` (ST LRI codes, NXP ICODE bits, TI Tag-it bits,
/// EM4233, Infineon my-d, Fujitsu); Flipper `lib/nfc/protocols/slix/slix.c` (`SlixUidLayout`: byte 5 is the
/// ICODE type, bits 3–4 of byte 4 the SLIX / SLIX2 indicator); ST datasheets via the facts file
/// (`shared/reference/iso15693-facts.md` §2.1) for the ST25DV/ST25TV codes.
public enum ICModel: String, CaseIterable, Sendable, Codable {
    case icodeSLI, icodeSLIX, icodeSLIX2, icodeDNA, icodeSLIS, icodeSLIXS, icodeSLIL, icodeSLIXL
    case st25dv04k, st25dv16k, st25dv64k, st25dv16kOr64k, st25dvKC, st25tv02k512, st25tv04kp, st25tv16k64k
    case lri64, lri2k, lris2k, lris64k, m24lr64
    case tagitHFIPlus, tagitHFIStandard, tagitHFIPro, rf430frl15xh
    case em4233, em4233slic
    case mydVicinity
    case mb89r116, mb89r118

    public var name: String {
        switch self {
        case .icodeSLI: return "NXP ICODE SLI"
        case .icodeSLIX: return "NXP ICODE SLIX"
        case .icodeSLIX2: return "NXP ICODE SLIX2"
        case .icodeDNA: return "NXP ICODE DNA / NTAG 5"
        case .icodeSLIS: return "NXP ICODE SLI-S"
        case .icodeSLIXS: return "NXP ICODE SLIX-S"
        case .icodeSLIL: return "NXP ICODE SLI-L"
        case .icodeSLIXL: return "NXP ICODE SLIX-L"
        case .st25dv04k: return "ST ST25DV04K"
        case .st25dv16k: return "ST ST25DV16K"
        case .st25dv64k: return "ST ST25DV64K"
        case .st25dv16kOr64k: return "ST ST25DV16K/64K"
        case .st25dvKC: return "ST ST25DVxxKC"
        case .st25tv02k512: return "ST ST25TV02K/ST25TV512"
        case .st25tv04kp: return "ST ST25TV04K-P"
        case .st25tv16k64k: return "ST ST25TV16K/64K"
        case .lri64: return "ST LRI64"
        case .lri2k: return "ST LRI2K"
        case .lris2k: return "ST LRIS2K"
        case .lris64k: return "ST LRIS64K"
        case .m24lr64: return "ST M24LR64"
        case .tagitHFIPlus: return "TI Tag-it HF-I Plus"
        case .tagitHFIStandard: return "TI Tag-it HF-I Standard"
        case .tagitHFIPro: return "TI Tag-it HF-I Pro"
        case .rf430frl15xh: return "TI RF430FRL15xH"
        case .em4233: return "EM Microelectronic EM4233"
        case .em4233slic: return "EM Microelectronic EM4233SLIC"
        case .mydVicinity: return "Infineon my-d vicinity"
        case .mb89r116: return "Fujitsu MB89R116"
        case .mb89r118: return "Fujitsu MB89R118"
        }
    }

    /// The model of a tag, or nil when neither the UID nor the system information tells it.
    /// `icReference` and `blockCount` come from Get System Information when known.
    public static func identify(uid: UID, icReference: UInt8? = nil, blockCount: Int? = nil) -> ICModel? {
        let b5 = uid.byte(5)
        let b4 = uid.byte(4)
        switch uid.manufacturer {
        case .nxp:
            // Byte 5 = ICODE type; bits 3–4 of byte 4 = type indicator (Flipper SlixUidLayout; pm3 bits 35/36).
            let indicator = (b4 >> 3) & 0x03
            switch b5 {
            case 0x01:
                switch indicator {
                case 0: return .icodeSLI
                case 2: return .icodeSLIX
                case 1: return .icodeSLIX2
                default: return .icodeDNA
                }
            case 0x02: return indicator & 0x02 != 0 ? .icodeSLIXS : .icodeSLIS
            case 0x03: return indicator & 0x02 != 0 ? .icodeSLIXL : .icodeSLIL
            default: return nil
            }
        case .stMicroelectronics:
            switch b5 {
            case 0x24: return .st25dv04k
            case 0x26:
                switch blockCount {
                case 512: return .st25dv16k
                case 2048: return .st25dv64k
                default: return .st25dv16kOr64k
                }
            case 0x50, 0x51: return .st25dvKC
            case 0x23: return .st25tv02k512
            case 0x35: return .st25tv04kp
            case 0x48: return .st25tv16k64k
            case 0x05: return .lri64
            case 0x08: return .lri2k
            case 0x0A: return .lris2k
            case 0x44: return .lris64k
            // UNVERIFIED: 0x2C is the IC reference reported for the M24LR64-R; no UID dump confirms it.
            case 0x2C: return .m24lr64
            default:
                if icReference == 0x2C { return .m24lr64 }
                return nil
            }
        case .texasInstruments:
            switch b5 & 0xFE {
            case 0xC0: return .tagitHFIStandard
            case 0xC4: return .tagitHFIPro
            case 0x80: return .tagitHFIPlus   // chip
            case 0x00: return .tagitHFIPlus   // inlay
            case 0xA0, 0xA2: return .rf430frl15xh // observed UIDs E0 07 A0 … / E0 07 A2 …
            default: return nil
            }
        case .emMicroelectronic:
            switch b5 {
            case 0x24, 0x7C: return .em4233
            case 0x28, 0xA8: return .em4233slic
            default: return nil
            }
        case .infineon:
            switch b5 {
            case 0x00, 0x40, 0x10, 0x50: return .mydVicinity
            default: return nil
            }
        case .fujitsu:
            switch b5 {
            case 0x00: return .mb89r116
            case 0x01: return .mb89r118
            default: return nil
            }
        default:
            return nil
        }
    }
}
