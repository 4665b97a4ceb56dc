/// An IC manufacturer code from the ISO/IEC 7816-6 register (UID byte 6).
///
/// Names follow the register as reproduced in Proxmark3 `client/src/cmdhf14a.c` `manufactureMapping[]`
/// ("ISO/IEC JTC1/SC17 Standing Document 5, updated 20 September 2024"). From 0x7F on, the current register
/// writes codes as `FF xx`; a Type 5 UID has a single manufacturer byte, so those entries are marked legacy.
public struct ManufacturerCode: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let stMicroelectronics = ManufacturerCode(0x02)
    public static let nxp = ManufacturerCode(0x04)
    public static let infineon = ManufacturerCode(0x05)
    public static let texasInstruments = ManufacturerCode(0x07)
    public static let fujitsu = ManufacturerCode(0x08)
    public static let emMicroelectronic = ManufacturerCode(0x16)
    public static let onsemi = ManufacturerCode(0x67)

    /// The registered name, or nil when the code is not in the register.
    public var name: String? { Self.register[rawValue] }
    /// True for 0x7F and above, which the current register only knows in its two-byte `FF xx` form.
    public var isLegacyRange: Bool { rawValue >= 0x7F }

    /// `0x04 NXP Semiconductors Germany`
    public var description: String {
        "0x\(Hex.format([rawValue])) \(name ?? "unregistered")"
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// Looks a manufacturer up by code (`0x04`, `4`) or by a word of its name (`NXP`, `texas`).
    public static func lookup(_ text: String) -> ManufacturerCode? {
        if let v = try? Hex.parseInteger(text, max: 0xFF) { return ManufacturerCode(UInt8(v)) }
        let needle = text.lowercased()
        let squeezed = needle.filter { $0.isLetter || $0.isNumber }
        if let code = aliases[squeezed] { return ManufacturerCode(code) }
        return register.sorted { $0.key < $1.key }.first { $0.value.lowercased().contains(needle) }.map {
            ManufacturerCode($0.key)
        }
    }

    /// Names the register spells otherwise (its text is kept as published), lower-case without spaces.
    static let aliases: [String: UInt8] = [
        "st": 0x02, "stmicro": 0x02, "stmicroelectronics": 0x02, "nxp": 0x04, "philips": 0x04,
        "ti": 0x07, "texasinstruments": 0x07, "texasinstrument": 0x07, "infineon": 0x05, "fujitsu": 0x08,
        "em": 0x16, "emmicroelectronic": 0x16, "emmarin": 0x16,
    ]

    static let register: [UInt8: String] = [
        0x01: "Motorola UK", 0x02: "ST Microelectronics SA France", 0x03: "Hitachi, Ltd Japan",
        0x04: "NXP Semiconductors Germany", 0x05: "Infineon Technologies AG Germany", 0x06: "Cylink USA",
        0x07: "Texas Instrument France", 0x08: "Fujitsu Limited Japan",
        0x09: "Matsushita Electronics Corporation, Semiconductor Company Japan", 0x0A: "NEC Japan",
        0x0B: "Oki Electric Industry Co. Ltd Japan", 0x0C: "Toshiba Corp. Japan",
        0x0D: "Mitsubishi Electric Corp. Japan", 0x0E: "Samsung Electronics Co. Ltd Korea",
        0x0F: "Hynix / Hyundai, Korea", 0x10: "LG-Semiconductors Co. Ltd Korea",
        0x11: "Emosyn-EM Microelectronics USA",
        0x12: "Wisekey Semiconductors (previously INSIDE Technology) France",
        0x13: "ORGA Kartensysteme GmbH Germany", 0x14: "SHARP Corporation Japan", 0x15: "ATMEL France",
        0x16: "EM Microelectronic-Marin SA Switzerland",
        0x17: "SMARTRAC TECHNOLOGY GmbH Germany (KSW Microtec in older lists)",
        0x18: "ZMD AG Germany", 0x19: "XICOR, Inc. USA", 0x1A: "Sony Corporation Japan",
        0x1B: "Malaysia Microelectronic Solutions Sdn. Bhd Malaysia", 0x1C: "Emosyn USA",
        0x1D: "Shanghai Fudan Microelectronics Co. Ltd. P.R. China", 0x1E: "Magellan Technology Pty Limited Australia",
        0x1F: "Melexis NV BO Switzerland", 0x20: "Renesas Technology Corp. Japan", 0x21: "TAGSYS France",
        0x22: "Transcore USA", 0x23: "Shanghai Belling Corp., Ltd. China", 0x24: "Masktech Germany Gmbh",
        0x25: "Innovision Research and Technology Plc UK", 0x26: "Hitachi ULSI Systems Co., Ltd. Japan",
        0x27: "Yubico AB Sweden (Cypak AB in older lists)", 0x28: "Ricoh Japan", 0x29: "ASK France",
        0x2A: "Unicore Microsystems, LLC Russian Federation", 0x2B: "Dallas Semiconductor/Maxim USA",
        0x2C: "Impinj, Inc. USA", 0x2D: "RightPlug Alliance USA", 0x2E: "Broadcom Corporation USA",
        0x2F: "MStar Semiconductor, Inc Taiwan, ROC", 0x30: "BeeDar Technology Inc. USA", 0x31: "RFIDsec Denmark",
        0x32: "Schweizer Electronic AG Germany", 0x33: "AMIC Technology Corp Taiwan", 0x34: "Mikron JSC Russia",
        0x35: "Fraunhofer Institute for Photonic Microsystems Germany", 0x36: "IDS Microchip AG Switzerland",
        0x37: "Kovio USA", 0x38: "HMT Microelectronic Ltd Switzerland", 0x39: "Silicon Craft Technology Thailand",
        0x3A: "Advanced Film Device Inc. Japan", 0x3B: "Nitecrest Ltd UK", 0x3C: "Verayo Inc. USA",
        0x3D: "HID Global USA", 0x3E: "Productivity Engineering Gmbh Germany",
        0x3F: "Austriamicrosystems AG (reserved) Austria", 0x40: "Thales DIS (previously Gemalto SA) France",
        0x41: "Renesas Electronics Corporation Japan", 0x42: "3Alogics Inc Korea",
        0x43: "Top TroniQ Asia Limited Hong Kong", 0x44: "Gentag Inc. USA",
        0x45: "Invengo Information Technology Co.Ltd China", 0x46: "Guangzhou Sysur Microelectronics, Inc China",
        0x47: "CEITEC S.A. Brazil", 0x48: "Shanghai Quanray Electronics Co. Ltd. China", 0x49: "MediaTek Inc Taiwan",
        0x4A: "Angstrem PJSC Russia", 0x4B: "Celisic Semiconductor (Hong Kong) Limited China",
        0x4C: "LEGIC Identsystems AG Switzerland", 0x4D: "Balluff GmbH Germany",
        0x4E: "Oberthur Technologies France", 0x4F: "Silterra Malaysia Sdn. Bhd. Malaysia",
        0x50: "Presto Engineering Denmark", 0x51: "Giesecke & Devrient GmbH Germany",
        0x52: "Shenzhen China Vision Microelectronics Co., Ltd. China",
        0x53: "Shanghai Feiju Microelectronics Co. Ltd. China",
        0x54: "Intel Corporation USA", 0x55: "Microsensys GmbH Germany", 0x56: "Sonix Technology Co., Ltd. Taiwan",
        0x57: "Qualcomm Technologies Inc USA", 0x58: "Realtek Semiconductor Corp Taiwan",
        0x59: "Freevision Technologies Co. Ltd China", 0x5A: "Giantec Semiconductor Inc. China",
        0x5B: "JSC Angstrem-T Russia", 0x5C: "STARCHIP France", 0x5D: "SPIRTECH France",
        0x5E: "GANTNER Electronic GmbH Austria", 0x5F: "Nordic Semiconductor Norway",
        0x60: "Verisiti Inc USA", 0x61: "Wearlinks Technology Inc. China",
        0x62: "Userstar Information Systems Co., Ltd Taiwan", 0x63: "Pragmatic Printing Ltd. UK",
        0x64: "Associacao do Laboratorio de Sistemas Integraveis Tecnologico - LSI-TEC Brazil",
        0x65: "Tendyron Corporation China", 0x66: "MUTO Smart Co., Ltd. Korea", 0x67: "ON Semiconductor USA",
        0x68: "TUBITAK BILGEM Turkey", 0x69: "Huada Semiconductor Co., Ltd China", 0x6A: "SEVENEY France",
        0x6B: "THALES DIS Design Services SAS (previously ISSM) France", 0x6C: "Wisesec Ltd Israel",
        0x6D: "LTD \"NM-Teh\" Russia",
        0x70: "ifm electronic gmbh Germany", 0x71: "Sichuan Kiloway Technologies Co., Ltd. China",
        0x72: "Ford Motor Company US", 0x73: "Beijing Tsingteng MicroSystem Co.,Ltd China",
        0x74: "Huada EverCore Co., Ltd China", 0x75: "Smartchip Microelectronics Corporation Taiwan",
        0x76: "Tongxin Microelectronics Co., Ltd. China", 0x77: "Ningbo IOT Microelectronics Co Ltd China",
        0x78: "AU Optronics Taiwan", 0x79: "CUBIC USA", 0x7A: "Abbott Diabetes Care USA",
        0x7B: "Shenzen Nation RFID Technology Co Ltd China", 0x7C: "DB HiTek Co Ltd Korea",
        0x7D: "SATO Vicinity Australia", 0x7E: "Holtek Taiwan",
        // Legacy one-byte forms of what the current register lists as FF 00, FF 01, …
        0x7F: "Shenzhen Goodix Technology Co., Ltd. China (legacy code)", 0x80: "Panthronics AG Austria (legacy code)",
        0x81: "Beijing Huada Infosec Technology Co., Ltd China (legacy code)",
        0x82: "Shanghai Oriental Magnetic Card Engineering Co Ltd. China (legacy code)",
        0x83: "8ApeX Inc USA (legacy code)", 0x84: "Abbott Ireland (legacy code)",
        0x85: "Proqure Inc USA (legacy code)",
        0x86: "Schreiner Group GmbH & Co. KG Germany (legacy code)",
        0x87: "Beijing SmartChip Microelectronics Technology Co. Ltd China (legacy code)",
        0x88: "Datang Microelectronics Technology Co., Ltd China (legacy code)",
        0x89: "Wise Security Technology (Guangzhou) Co., Ltd China (legacy code)",
        0x8A: "CEC Huada Electronic Design Co., Ltd China (legacy code)",
        0x8B: "Shanghai Techsun RFID Technology Corp. China (legacy code)",
        0x8C: "North China Institute of Computing Technology China (legacy code)",
        0x8D: "Shanghai Huahong Integrated Circuit Co., Ltd China (legacy code)",
        0x8E: "Shanghai MintSilicon Microelectronics Co.,Ltd China (legacy code)",
        0x8F: "Xinsheng Technology Co., Ltd. China (legacy code)", 0x90: "IDEX Biometrics ASA Norway (legacy code)",
        0x91: "Novo Nordisk A/S Denmark (legacy code)",
        0x92: "Shandong Huayi Micro-Electronics Technology Co., Ltd China (legacy code)",
        0x93: "Abbott Heart Failure USA (legacy code)",
        0x94: "P&M Information Technology (Shenzhen) Co., Ltd China (legacy code)",
        0x95: "MARS TECHNOLOGY PTE. LTD. Singapore (legacy code)", 0x96: "Trovan Limited Isle of Man (legacy code)",
    ]
}
