/// The names of custom commands (0xA0–0xDF), which belong to the IC manufacturer named by the byte after the
/// command: one code means different things on different chips. From docs/reference/iso15693.md §2.2:
/// NXP ICODE from Proxmark3 `include/protocols.h` (the names its `annotateIso15693` prints) and Flipper
/// `slix_i.h`; ST25DV/ST25TV from ST's RFAL (`rfal_st25xv.h`) and ST25DV driver; TI Tag-it HF-I Pro and Fujitsu
/// MB89R118 from FEIG's ID ISC manuals; EM Microelectronic from a comment in Proxmark3's `protocols.h`; Fudan from its FM13 SDK. Codes a
/// source does not settle (TI Tag-it HF-I Plus 0xA2/0xA3) are left unnamed, and no public source lists IDS's.
public enum CustomCommands {
    /// Names by manufacturer and code.
    public static let names: [ManufacturerCode: [UInt8: String]] = [
        .nxp: [
            0xA0: "NXP Inventory Read", 0xA1: "NXP Fast Inventory Read", 0xA2: "NXP Set EAS", 0xA3: "NXP Reset EAS",
            0xA4: "NXP Lock EAS", 0xA5: "NXP EAS Alarm", 0xA6: "NXP Password Protect EAS/AFI",
            0xA7: "NXP Write EAS ID", 0xA8: "NXP Read EPC", 0xAB: "NXP Get NXP System Info",
            0xB0: "NXP Inventory Page Read", 0xB1: "NXP Fast Inventory Page Read", 0xB2: "NXP Get Random Number",
            0xB3: "NXP Set Password", 0xB4: "NXP Write Password", 0xB5: "NXP Lock Password",
            0xB6: "NXP Protect Page", 0xB7: "NXP Lock Page Protection Condition",
            0xB8: "NXP Get Multiple Block Protection Status", 0xB9: "NXP Destroy", 0xBA: "NXP Enable Privacy",
            0xBB: "NXP 64-bit Password Protection", 0xBC: "NXP Stay Quiet Persistent", 0xBD: "NXP Read Signature",
        ],
        .stMicroelectronics: [
            0xA0: "ST Read Configuration", 0xA1: "ST Write Configuration", 0xA2: "ST Set EAS", 0xA3: "ST Reset EAS",
            0xA4: "ST Lock EAS", 0xA5: "ST Enable EAS", 0xA6: "ST Kill", 0xA7: "ST Write EAS ID",
            0xA8: "ST Write EAS Config", 0xA9: "ST Manage GPO", 0xAA: "ST Write Message",
            0xAB: "ST Read Message Length", 0xAC: "ST Read Message", 0xAD: "ST Read Dynamic Configuration",
            0xAE: "ST Write Dynamic Configuration", 0xB1: "ST Write Password", 0xB2: "ST Lock Kill",
            0xB3: "ST Present Password", 0xB4: "ST Get Random Number", 0xC0: "ST Fast Read Single Block",
            0xC3: "ST Fast Read Multiple Blocks", 0xC4: "ST Fast Extended Read Single Block",
            0xC5: "ST Fast Extended Read Multiple Blocks", 0xCA: "ST Fast Write Message",
            0xCB: "ST Fast Read Message Length", 0xCC: "ST Fast Read Message",
            0xCD: "ST Fast Read Dynamic Configuration", 0xCE: "ST Fast Write Dynamic Configuration",
        ],
        .texasInstruments: [0xA4: "TI Kill", 0xA5: "TI Write Single Block with Password"],
        .emMicroelectronic: [0xA5: "EM Active EAS", 0xA7: "EM Write EAS ID", 0xB8: "EM Get Protection Status"],
        .fujitsu: [
            0xA0: "Fujitsu EAS", 0xA1: "Fujitsu Write EAS", 0xA5: "Fujitsu Read Multiple Blocks Unlimited",
            0xB1: "Fujitsu Fast Inventory", 0xC3: "Fujitsu Fast Read Multiple Blocks",
            0xC4: "Fujitsu Fast Write Multiple Blocks", 0xD1: "Fujitsu Fast Write EAS",
            0xD5: "Fujitsu Fast Read Multiple Blocks Unlimited",
        ],
        // Fudan FM13HT160-T5T: the commands its SDK sends (FudanMicro/FM13DT160 `InstructMap.java`;
        // docs/reference/sensor-tags.md).
        ManufacturerCode(0x1D): [
            0xB1: "Fudan Read Memory", 0xB3: "Fudan Write Memory", 0xC0: "Fudan Measure", 0xC2: "Fudan Start/Stop Log",
            0xC5: "Fudan Write Register", 0xC6: "Fudan Read Register", 0xCF: "Fudan Status",
        ],
    ]

    /// The command's name for this manufacturer, or nil when no source names it.
    public static func name(_ code: UInt8, _ manufacturer: ManufacturerCode) -> String? {
        names[manufacturer]?[code]
    }

    /// Its parameters laid out for people, where their layout is known; nil to show them as hex. Passwords (NXP SET
    /// PASSWORD's XORed value, ST PRESENT and WRITE PASSWORD) are shown as `**`.
    public static func parameters(_ code: UInt8, _ manufacturer: ManufacturerCode, _ p: [UInt8], flags: RequestFlags)
        -> String?
    {
        switch (manufacturer, code) {
        case (.nxp, 0xA0), (.nxp, 0xA1), (.nxp, 0xB0), (.nxp, 0xB1):
            // [AFI] mask length, mask, first block (page), count − 1 (SLIX data sheet SL2S2002 Table 23).
            var i = 0
            var out: [String] = []
            if flags.contains(.afi) {
                guard p.count > i else { return nil }
                out.append("AFI 0x\(Hex.format([p[i]]))")
                i += 1
            }
            guard p.count > i else { return nil }
            let length = Int(p[i])
            let maskBytes = (length + 7) / 8
            i += 1
            guard p.count == i + maskBytes + 2 else { return nil }
            out.append(
                "mask \(length) bit\(length == 1 ? "" : "s")"
                    + (maskBytes > 0 ? " \(Hex.format(Array(p[i..<(i + maskBytes)])))" : ""))
            let unit = code >= 0xB0 ? "page" : "block"
            out.append("first \(unit) 0x\(Hex.format([p[i + maskBytes]])), \(Int(p[i + maskBytes + 1]) + 1) \(unit)s")
            return out.joined(separator: ", ")
        case (.nxp, 0xB3):
            // Password id, then the password XORed with the random number (4 bytes).
            guard p.count == 5 else { return nil }
            return "password \(nxpPasswordName(p[0])), XORed value **"
        case (.nxp, 0xB4):
            guard p.count == 5 else { return nil }
            return "password \(nxpPasswordName(p[0])), new value **"
        case (.nxp, 0xB5):
            guard p.count == 1 else { return nil }
            return "password \(nxpPasswordName(p[0]))"
        case (.nxp, 0xB9), (.nxp, 0xBA):
            guard p.count == 4 else { return nil }
            return "XORed password **"
        case (.nxp, 0xB6):
            // Protection pointer, then the protection condition bits (RL b0, WL b1, RH b4, WH b5).
            guard p.count == 2 else { return nil }
            return "pointer 0x\(Hex.format([p[0]])), condition 0x\(Hex.format([p[1]]))"
        case (.nxp, 0xB8):
            guard p.count == 2 else { return nil }
            return "blocks 0x\(Hex.format([p[0]]))… (\(Int(p[1]) + 1) block\(p[1] == 0 ? "" : "s"))"
        case (.stMicroelectronics, 0xB3), (.stMicroelectronics, 0xB1):
            // Password number, then the password (8 bytes on the ST25DV, 4 on others).
            guard p.count >= 2 else { return nil }
            return "password \(p[0]) (\(p.count - 1) bytes) **"
        case (.stMicroelectronics, 0xA0), (.stMicroelectronics, 0xAD), (.stMicroelectronics, 0xCD):
            guard p.count == 1 else { return nil }
            return "register 0x\(Hex.format([p[0]]))"
        default:
            return nil
        }
    }

    /// NXP password ids (Proxmark3 PR #1606 quoting the SLIX-L data sheet; Flipper `SlixPasswordType`).
    static func nxpPasswordName(_ id: UInt8) -> String {
        switch id {
        case 0x01: return "read (0x01)"
        case 0x02: return "write (0x02)"
        case 0x04: return "privacy (0x04)"
        case 0x08: return "destroy (0x08)"
        case 0x10: return "EAS/AFI (0x10)"
        default: return "0x\(Hex.format([id]))"
        }
    }
}
