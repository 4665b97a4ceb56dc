/// An IC model, told from the UID (manufacturer code and the product bits of byte 5 and 4) and, where the
/// UID alone is ambiguous, from the IC reference and memory size of Get System Information.
///
/// Sources: Proxmark3 `client/src/cmdhf15.c` `uidmapping[]` (NXP ICODE bits, TI Tag-it bits, EM4233, Infineon
/// my-d, Fujitsu, the ST25TV codes); Flipper `lib/nfc/protocols/slix/slix.c` (`SlixUidLayout`: byte 5 is the
/// ICODE type, bits 3–4 of byte 4 the SLIX / SLIX2 indicator); ST datasheets via `docs/reference/iso15693.md`
/// §2.1 for the ST25DV/ST25TV codes; and for the ST LRI and M24LR families, onsemi and EM4034 the stacks
/// gateways run — Android's and NXP's Linux `rw_i93`, FEIG's ID ISC manuals, ST's LRI64 datasheet — as
/// gathered in `docs/reference/chip-codes.md`.
public enum ICModel: String, CaseIterable, Sendable, Codable {
    case icodeSLI, icodeSLIX, icodeSLIX2, icodeDNA, icodeSLIS, icodeSLIXS, icodeSLIL, icodeSLIXL, icode3
    case st25dv04k, st25dv16k, st25dv64k, st25dv16kOr64k, st25dvKC, st25tv02k512, st25tv04kp, st25tv16k64k
    case lri64, lri1k, lri2k, lris2k, lris64k, m24lr64, m24lr04er, m24lr16er, m24lr16dw, m24lr64er
    /// IC code 0x08: the ST25TV02KC and the ST25TV512C share it (pm3 uidmapping); 16 blocks is the 512C.
    case st25tv02kc, st25tv512c
    case n36rw02, n24rf04, n24rf04e, n24rf16, n24rf16e, n24rf64, n24rf64e
    case tagitHFIPlus, tagitHFIStandard, tagitHFIPro, rf430frl15xh
    case em4233, em4233slic, em4034, em4035, em4135, em4036, em4006, em4133, em4033, em4237, em4425
    case mydVicinity, mydMove
    case mb89r116, mb89r118

    /// The maker, whose code is byte 6 of every UID of the model (the family `from(uid:…)` tells it by).
    public var manufacturer: ManufacturerCode {
        switch self {
        case .icodeSLI, .icodeSLIX, .icodeSLIX2, .icodeDNA, .icodeSLIS, .icodeSLIXS, .icodeSLIL, .icodeSLIXL, .icode3:
            return .nxp
        case .st25dv04k, .st25dv16k, .st25dv64k, .st25dv16kOr64k, .st25dvKC, .st25tv02k512, .st25tv04kp,
            .st25tv16k64k, .lri64, .lri1k, .lri2k, .lris2k, .lris64k, .m24lr64, .m24lr04er, .m24lr16er, .m24lr16dw,
            .m24lr64er, .st25tv02kc, .st25tv512c:
            return .stMicroelectronics
        case .n36rw02, .n24rf04, .n24rf04e, .n24rf16, .n24rf16e, .n24rf64, .n24rf64e: return .onsemi
        case .tagitHFIPlus, .tagitHFIStandard, .tagitHFIPro, .rf430frl15xh: return .texasInstruments
        case .em4233, .em4233slic, .em4034, .em4035, .em4135, .em4036, .em4006, .em4133, .em4033, .em4237, .em4425:
            return .emMicroelectronic
        case .mydVicinity, .mydMove: return .infineon
        case .mb89r116, .mb89r118: return .fujitsu
        }
    }

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
        case .icode3: return "NXP ICODE 3"
        case .st25dv04k: return "ST ST25DV04K"
        case .st25dv16k: return "ST ST25DV16K"
        case .st25dv64k: return "ST ST25DV64K"
        case .st25dv16kOr64k: return "ST ST25DV16K/64K"
        case .st25dvKC: return "ST ST25DVxxKC"
        case .st25tv02k512: return "ST ST25TV02K/ST25TV512"
        case .st25tv04kp: return "ST ST25TV04K-P"
        case .st25tv16k64k: return "ST ST25TV16K/64K"
        case .lri64: return "ST LRI64"
        case .lri1k: return "ST LRI1K"
        case .lri2k: return "ST LRI2K"
        case .st25tv02kc: return "ST ST25TV02KC/ST25TV512C"
        case .st25tv512c: return "ST ST25TV512C"
        case .lris2k: return "ST LRIS2K"
        case .lris64k: return "ST LRIS64K"
        case .m24lr64: return "ST M24LR64-R"
        case .m24lr04er: return "ST M24LR04E-R"
        case .m24lr16er: return "ST M24LR16E-R"
        case .m24lr16dw: return "ST M24LR16D-W"
        case .m24lr64er: return "ST M24LR64E-R"
        case .n36rw02: return "onsemi N36RW02"
        case .n24rf04: return "onsemi N24RF04"
        case .n24rf04e: return "onsemi N24RF04E"
        case .n24rf16: return "onsemi N24RF16"
        case .n24rf16e: return "onsemi N24RF16E"
        case .n24rf64: return "onsemi N24RF64"
        case .n24rf64e: return "onsemi N24RF64E"
        case .tagitHFIPlus: return "TI Tag-it HF-I Plus"
        case .tagitHFIStandard: return "TI Tag-it HF-I Standard"
        case .tagitHFIPro: return "TI Tag-it HF-I Pro"
        case .rf430frl15xh: return "TI RF430FRL15xH"
        case .em4233: return "EM Microelectronic EM4233"
        case .em4233slic: return "EM Microelectronic EM4233SLIC"
        case .em4034: return "EM Microelectronic EM4034"
        case .em4035: return "EM Microelectronic EM4035"
        case .em4135: return "EM Microelectronic EM4135"
        case .em4036: return "EM Microelectronic EM4036"
        case .em4006: return "EM Microelectronic EM4006"
        case .em4133: return "EM Microelectronic EM4133"
        case .em4033: return "EM Microelectronic EM4033"
        case .em4237: return "EM Microelectronic EM4237"
        case .em4425: return "EM Microelectronic EM4425"
        case .mydVicinity: return "Infineon my-d vicinity"
        case .mydMove: return "Infineon my-d move (SLE66R01P)"
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
            // ICODE 3: byte 4 bits 3–6 = 0100 (pm3 mask 0xFFFFFF7800000000, e.g. E004012001110CDE).
            case 0x01 where b4 & 0x78 == 0x20: return .icode3
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
            // The UID's product code (byte 5, bits 47–40) first; where it names nothing, the IC reference of Get
            // System Information, which carries the same code (docs/reference/chip-codes.md §1).
            return stModel(b5, blockCount: blockCount) ?? icReference.flatMap { stModel($0, blockCount: blockCount) }
        case .texasInstruments:
            // pm3 uidmapping: E0 07 0x… Tag-it HF-I Plus inlay, E0 07 1x… Plus chip (20 bits), E0 07 80/81 Plus
            // (RF-HDT-DVBB and third-party products), C0/C1 Standard, C4/C5 Pro (23 bits).
            switch b5 & 0xFE {
            case 0xC0: return .tagitHFIStandard
            case 0xC4: return .tagitHFIPro
            case 0x80: return .tagitHFIPlus
            case 0xA0, 0xA2: return .rf430frl15xh  // observed UIDs E0 07 A0 … / E0 07 A2 …
            default: return b5 >> 4 <= 1 ? .tagitHFIPlus : nil  // inlay (0x0_), chip (0x1_)
            }
        case .emMicroelectronic:
            // pm3 uidmapping (IC id in byte 5); EM4034 as FEIG gives it, "1h = x00001xxb" (bits 47–40: bit 7 and
            // bits 1–0 free), docs/reference/chip-codes.md §4.
            switch b5 {
            case 0x04...0x07, 0x84...0x87: return .em4034
            case 0x24, 0x7C: return .em4233
            case 0x28, 0xA8: return .em4233slic
            case 0x0C: return .em4035
            case 0x10: return .em4135
            case 0x14, 0x94: return .em4036
            case 0x18: return .em4006
            case 0x1C, 0x9C: return .em4133
            case 0x20: return .em4033
            case 0x3C, 0xBC: return .em4237
            case 0x78: return .em4425
            default: return nil
            }
        case .infineon:
            // pm3 uidmapping: SRF55V10P 00, SRF55V10S 10, SRF55V02P 40, SRF55V02S 50, SRF55V01P A1/A8 (my-d
            // vicinity); SLE66R01P my-d move 1E/1F (23 bits) and 20–27 (21 bits).
            switch b5 {
            case 0x00, 0x40, 0x10, 0x50, 0xA1, 0xA8: return .mydVicinity
            case 0x1E, 0x1F, 0x20...0x27: return .mydMove
            default: return nil
            }
        case .fujitsu:
            switch b5 {
            case 0x00: return .mb89r116
            case 0x01: return .mb89r118
            default: return nil
            }
        case .onsemi:
            // By the exact IC reference of Get System Information, as Android's and NXP's rw_i93 do; no source
            // says what an onsemi UID carries (docs/reference/chip-codes.md §2).
            switch icReference {
            case 0x1A: return .n36rw02
            case 0x2A: return .n24rf04
            case 0x2E: return .n24rf04e
            case 0x4A: return .n24rf16
            case 0x4E: return .n24rf16e
            case 0x6A: return .n24rf64
            case 0x6E: return .n24rf64e
            default: return nil
            }
        default:
            return nil
        }
    }

    /// An ST product code (the UID's byte 5 or the IC reference): exact codes first, then the 6-bit LRI and
    /// M24LR family codes in bits 7–2 (mask 0xFC), as Android's rw_i93 tests them (docs/reference/chip-codes.md
    /// §1). 0x23 stays the ST25TV02K/ST25TV512 (pm3 uidmapping; that chip is LRI2K-compatible by its datasheet)
    /// though it lies in the LRI2K family 0x20–0x23.
    static func stModel(_ code: UInt8, blockCount: Int?) -> ICModel? {
        switch code {
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
        case 0x08: return blockCount == 16 ? .st25tv512c : .st25tv02kc
        case 0x5A: return .m24lr04er
        case 0x4E: return .m24lr16er
        case 0x4D: return .m24lr16dw
        case 0x5E: return .m24lr64er
        default: break
        }
        switch code & 0xFC {
        case 0x14: return .lri64
        case 0x40: return .lri1k
        case 0x20: return .lri2k
        case 0x28: return .lris2k
        case 0x44: return .lris64k
        case 0x2C: return .m24lr64
        default: return nil
        }
    }
}
