import ISO15693

/// NXP PN5180's host interface as values (no I/O): its command frames, registers, IRQ bits and RF configurations,
/// and the reading of its answers. The driver builds and reads them; the fake chip of the tests (`PN5180Emulator`)
/// parses and answers them. Facts, with how sure each is: docs/reference/pn5180.md.
public enum PN5180 {
    /// Host command codes (the first byte of a command frame).
    public enum Command: UInt8, Sendable, CaseIterable {
        case writeRegister = 0x00, writeRegisterOrMask = 0x01, writeRegisterAndMask = 0x02
        case readRegister = 0x04, writeEEPROM = 0x06, readEEPROM = 0x07
        case sendData = 0x09, readData = 0x0A, loadRFConfig = 0x11, rfOn = 0x16, rfOff = 0x17
    }

    /// Register addresses.
    public enum Register: UInt8, Sendable, CaseIterable {
        case systemConfig = 0x00, irqEnable = 0x01, irqStatus = 0x02, irqClear = 0x03, transceiveControl = 0x04
        case rxStatus = 0x13, txConfig = 0x18, crcTxConfig = 0x19, crcRxConfig = 0x12, rfStatus = 0x1D
    }

    /// IRQ_STATUS bits.
    public struct IRQ: OptionSet, Sendable, Equatable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// End of a reception.
        public static let rx = IRQ(rawValue: 1 << 0)
        /// End of a transmission.
        public static let tx = IRQ(rawValue: 1 << 1)
        /// The chip is idle (after reset, after a command).
        public static let idle = IRQ(rawValue: 1 << 2)
        public static let txRFOff = IRQ(rawValue: 1 << 8)
        /// The RF field is on.
        public static let txRFOn = IRQ(rawValue: 1 << 9)
        /// The field could not be switched on (another field present).
        public static let rfActiveError = IRQ(rawValue: 1 << 10)
        /// A start of frame was received: a tag began to answer.
        public static let rxSOF = IRQ(rawValue: 1 << 14)
        /// A command's parameters were wrong.
        public static let generalError = IRQ(rawValue: 1 << 17)
        /// Every bit (IRQ_CLEAR's value to clear them all).
        public static let all = IRQ(rawValue: 0x000F_FFFF)
    }

    /// SYSTEM_CONFIG's COMMAND field (bits 0–2): Idle and Transceive.
    public static let commandMask: UInt32 = 0xFFFF_FFF8, transceive: UInt32 = 0x0000_0003
    /// TX_CONFIG AND this: the next SEND_DATA of no bytes sends only an EOF (a slot marker); LOAD_RF_CONFIG restores
    /// the register.
    public static let eofOnly: UInt32 = 0xFFFF_FB3F
    /// TX_CONFIG bit 10, TX_DATA_ENABLE.
    public static let txDataEnable: UInt32 = 1 << 10

    /// LOAD_RF_CONFIG's ISO 15693 configurations: 26 kbit/s (1-out-of-4 coding), ASK 100 % or 10 %, received at
    /// 26 kbit/s.
    public enum Modulation: String, Sendable, CaseIterable {
        case ask100 = "100", ask10 = "10"
        public var tx: UInt8 { self == .ask100 ? 0x0D : 0x0E }
        public static let rx: UInt8 = 0x8D
    }

    /// EEPROM addresses of the version numbers (2 bytes each, minor then major).
    public static let productVersion: UInt8 = 0x10, firmwareVersion: UInt8 = 0x12, eepromVersion: UInt8 = 0x14

    // MARK: Command frames

    public static func writeRegister(_ r: Register, _ value: UInt32) -> [UInt8] {
        [Command.writeRegister.rawValue, r.rawValue] + bytes(value)
    }
    public static func orMask(_ r: Register, _ mask: UInt32) -> [UInt8] {
        [Command.writeRegisterOrMask.rawValue, r.rawValue] + bytes(mask)
    }
    public static func andMask(_ r: Register, _ mask: UInt32) -> [UInt8] {
        [Command.writeRegisterAndMask.rawValue, r.rawValue] + bytes(mask)
    }
    public static func readRegister(_ r: Register) -> [UInt8] { [Command.readRegister.rawValue, r.rawValue] }
    public static func readEEPROM(_ address: UInt8, count: UInt8) -> [UInt8] {
        [Command.readEEPROM.rawValue, address, count]
    }
    /// SEND_DATA: the bits valid in the last byte (0: all), then the frame without CRC (no bytes: symbols only).
    public static func sendData(_ frame: [UInt8], validBits: UInt8 = 0) -> [UInt8] {
        [Command.sendData.rawValue, validBits] + frame
    }
    public static let readData: [UInt8] = [Command.readData.rawValue, 0x00]
    public static func loadRFConfig(_ m: Modulation) -> [UInt8] {
        [Command.loadRFConfig.rawValue, m.tx, Modulation.rx]
    }
    public static let rfOn: [UInt8] = [Command.rfOn.rawValue, 0x00]
    public static let rfOff: [UInt8] = [Command.rfOff.rawValue, 0x00]

    /// A register value as the chip sends it: 4 bytes, least significant first.
    public static func bytes(_ v: UInt32) -> [UInt8] {
        [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8(v >> 24)]
    }

    /// A register's value from READ_REGISTER's answer.
    public static func value(_ answer: [UInt8]) throws(FrameError) -> UInt32 {
        guard answer.count == 4 else {
            throw .wrongLength(what: "PN5180 register value", expected: "4", got: answer.count)
        }
        return answer.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// RX_STATUS read: the bytes received (bits 0–8) and whether a collision was detected (bit 18).
    public struct RXStatus: Equatable, Sendable {
        public var length: Int
        public var collision: Bool
        public init(_ v: UInt32) {
            length = Int(v & 0x1FF)
            collision = (v >> 18) & 1 == 1
        }
    }

    /// A version pair from READ_EEPROM (minor, major) as "major.minor"; nil for what no chip answers (a bus with
    /// nothing on it reads all ones or all zeros).
    public static func version(_ answer: [UInt8]) -> String? {
        guard answer.count == 2, answer != [0xFF, 0xFF], answer != [0x00, 0x00] else { return nil }
        return "\(answer[1]).\(answer[0])"
    }
}
