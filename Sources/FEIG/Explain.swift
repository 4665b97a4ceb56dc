import ISO15693

/// FEIG host commands (CONTROL byte) by name. Codes from FEIG system manuals (ID ISC.LRU3000: buffered read
/// mode pp. 174–177, reader info pp. 123–124; [0xB0] p. 151), as checked in Tests/FEIGTests/FEIG-FACTS.md.
public enum FEIGCommand {
    public static let isoHost: UInt8 = 0xB0
    public static let isoCustom: UInt8 = 0xB1
    public static let readBuffer: UInt8 = 0x22
    public static let readBufferInfo: UInt8 = 0x31
    public static let clearBuffer: UInt8 = 0x32
    public static let initializeBuffer: UInt8 = 0x33
    public static let baudRateDetection: UInt8 = 0x52
    public static let cpuReset: UInt8 = 0x63
    public static let softwareVersion: UInt8 = 0x65
    public static let readerInfo: UInt8 = 0x66
    public static let rfReset: UInt8 = 0x69
    public static let rfOnOff: UInt8 = 0x6A

    static let names: [UInt8: String] = [
        isoHost: "ISO host command",
        isoCustom: "ISO custom (manufacturer) host command",
        readBuffer: "Read Buffer",
        readBufferInfo: "Read Data Buffer Info",
        clearBuffer: "Clear Data Buffer",
        initializeBuffer: "Initialize Buffer",
        baudRateDetection: "Baud Rate Detection",
        cpuReset: "CPU Reset",
        softwareVersion: "Get Software Version",
        readerInfo: "Get Reader Info",
        rfReset: "RF Reset",
        rfOnOff: "RF On/Off",
    ]

    /// [0xB0] sub-commands are ISO/IEC 15693-3's command codes, except 0x22: FEIG's Lock Multiple Blocks
    /// (the manuals' [0xB0] tables; ISO's 0x22 locks one block).
    static func isoName(_ sub: UInt8) -> String {
        sub == 0x22 ? "Lock Multiple Blocks (0x22)" : CommandCode(sub).description
    }

    /// "ISO host command [0xB0]", or "host command [0x7E]" for a code not named here.
    public static func describe(_ code: UInt8) -> String {
        "\(names[code] ?? "host command") [0x\(Hex.format([code]))]"
    }
}

extension FEIGFrame {
    /// Lines that explain the frame: framing, address, command, status, and for [0xB0] the ISO 15693
    /// command it carries (its sub-command codes are ISO/IEC 15693-3's command codes) and the addressing
    /// mode; for STATUS 0x95 the tag's ISO error code.
    public var explanation: [String] {
        var lines = [
            "FEIG \(advanced ? "advanced" : "standard") \(direction.rawValue), \(encoded().count) bytes, COM-ADR 0x\(Hex.format([address]))"
                + (address == Self.anyReader ? " (any reader)" : "")
        ]
        lines.append("command: \(FEIGCommand.describe(command))")
        if let status {
            lines.append("status: \(FEIGStatus.describe(status))")
        }
        if command == FEIGCommand.isoHost, direction == .request, let sub = data.first {
            lines.append("ISO 15693 command: \(FEIGCommand.isoName(sub))")
            if data.count >= 2 {
                let mode = data[1]
                let addressing: String
                switch mode & 0x07 {
                case 0: addressing = "non-addressed"
                case 1: addressing = "addressed (the UID follows)"
                case 2: addressing = "selected"
                default: addressing = "addressing 0b\(String(mode & 0x07, radix: 2)) (not documented)"
                }
                var bits: [String] = []
                if sub == 0x01 {
                    if mode & FEIGISO.moreBit != 0 { bits.append("MORE (the records the last reply had no room for)") }
                } else {
                    if sub == 0x23, mode & FEIGISO.secBit != 0 {
                        bits.append("SEC (with each block's security status)")
                    }
                    if [0x22, 0x23, 0x24, 0x2C].contains(sub), mode & FEIGISO.extAdrBit != 0 {
                        let at = 2 + (mode & 0x07 == 1 ? 8 : 0)
                        if data.count >= at + 3 {
                            bits.append(
                                "EXT_ADR (BANK 0x\(Hex.format([data[at]])), block 0x\(Hex.format([data[at + 1], data[at + 2]]).filter { $0 != " " }))"
                            )
                        } else {
                            bits.append("EXT_ADR (BANK and a two-byte block number; missing here)")
                        }
                    }
                }
                lines.append("MODE 0x\(Hex.format([mode])): \(([addressing] + bits).joined(separator: ", "))")
            }
        }
        if status == FEIGStatus.iso15693Error.rawValue, let code = data.first {
            lines.append("tag's ISO error: 0x\(Hex.format([code])) \(ISOErrorCode(code).meaning)")
        }
        if !data.isEmpty { lines.append("data (\(data.count) bytes): \(Hex.format(data))") }
        return lines
    }
}
