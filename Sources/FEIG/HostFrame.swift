import ISO15693

/// FEIG OBID ID ISC host protocol: the frames a host and a reader exchange over serial or TCP (port 10001).
/// Facts checked in Tests/FEIGTests/FEIG-FACTS.md (FEIG system manuals: ID ISC.MR102 p. 18, ID ISC.LRU3000
/// p. 20, ID ISC.MR101 p. 17, ID CPR30 p. 15, ID ISC.MU02 pp. 16–17):
///
/// - standard frame: `LEN COM-ADR CONTROL [STATUS] [DATA…] CRC-LSB CRC-MSB`, LEN counting the whole frame
///   (at most 255); STATUS in replies only;
/// - advanced frame: `0x02 ALEN-MSB ALEN-LSB COM-ADR CONTROL [STATUS] [DATA…] CRC-LSB CRC-MSB`, ALEN counting
///   the whole frame (up to 65,535 bytes); the host may send any request advanced, and the reader then answers
///   advanced; a reply to a standard request that would pass 255 bytes comes advanced too;
/// - COM-ADR: the reader's bus address; 0xFF reaches any reader on a point-to-point link (which answers with
///   its own address);
/// - CRC16 over every byte before it: polynomial 0x8408 (0x1021 reflected), preset 0xFFFF, no final XOR
///   (CRC-16/MCRF4XX), least-significant byte first.
public struct FEIGFrame: Equatable, Sendable {
    public enum Direction: String, Sendable { case request, reply }

    public var direction: Direction
    /// COM-ADR.
    public var address: UInt8
    /// CONTROL: the host command (0xB0 ISO host command, 0x22 read buffer, …).
    public var command: UInt8
    /// STATUS (replies only).
    public var status: UInt8?
    public var data: [UInt8]
    /// Advanced (0x02, two length bytes) rather than standard framing.
    public var advanced: Bool

    /// The broadcast address: any reader on a point-to-point link answers.
    public static let anyReader: UInt8 = 0xFF
    /// The longest standard frame (LEN is one byte).
    public static let maxStandardLength = 255

    public init(request command: UInt8, data: [UInt8] = [], address: UInt8 = anyReader, advanced: Bool = false) {
        direction = .request
        self.address = address
        self.command = command
        status = nil
        self.data = data
        self.advanced = advanced
    }

    public init(
        reply command: UInt8, status: UInt8, data: [UInt8] = [], address: UInt8 = anyReader, advanced: Bool = false
    ) {
        direction = .reply
        self.address = address
        self.command = command
        self.status = status
        self.data = data
        self.advanced = advanced
    }

    /// The frame's bytes, its length and CRC included. A standard frame longer than 255 bytes cannot be
    /// written: it is sent advanced.
    public func encoded() -> [UInt8] {
        let body = [address, command] + (status.map { [$0] } ?? []) + data
        let standardLength = 1 + body.count + 2
        var out: [UInt8]
        if advanced || standardLength > Self.maxStandardLength {
            let n = 3 + body.count + 2
            out = [0x02, UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)] + body
        } else {
            out = [UInt8(standardLength)] + body
        }
        let crc = CRC16.mcrf4xx(out)
        return out + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }

    /// The whole length of the frame that starts with `prefix`, once enough of it has arrived to tell
    /// (1 byte for a standard frame, 3 for an advanced one); nil until then. Readers of a serial line or a
    /// socket read this many bytes.
    public static func expectedLength(_ prefix: ArraySlice<UInt8>) -> Int? {
        guard let first = prefix.first else { return nil }
        if first == 0x02 {
            guard prefix.count >= 3 else { return nil }
            let i = prefix.startIndex
            return Int(prefix[i + 1]) << 8 | Int(prefix[i + 2])
        }
        return Int(first)
    }

    /// Parses one whole frame. A first byte of 0x02 starts an advanced frame: a standard frame is never 2
    /// bytes long (its shortest, a request without data, is 5).
    public static func decode(_ bytes: [UInt8], direction: Direction) throws(FEIGFrameError) -> FEIGFrame {
        guard let first = bytes.first else { throw .tooShort(got: 0, need: 5) }
        let advanced = first == 0x02
        let header = advanced ? 3 : 1
        let minimum = header + 2 + (direction == .reply ? 1 : 0) + 2
        guard bytes.count >= (advanced ? 3 : 1) else { throw .tooShort(got: bytes.count, need: minimum) }
        let declared = expectedLength(bytes[...]) ?? 0
        guard declared >= minimum else { throw .badLength(declared: declared, minimum: minimum) }
        guard bytes.count == declared else {
            throw bytes.count < declared
                ? .truncated(got: bytes.count, declared: declared)
                : .trailingBytes(got: bytes.count, declared: declared)
        }
        let expected = CRC16.mcrf4xx(bytes[..<(bytes.count - 2)])
        let got = UInt16(bytes[bytes.count - 2]) | UInt16(bytes[bytes.count - 1]) << 8
        guard expected == got else { throw .badCRC(expected: expected, got: got) }
        let address = bytes[header], command = bytes[header + 1]
        switch direction {
        case .request:
            return FEIGFrame(
                request: command, data: Array(bytes[(header + 2)..<(bytes.count - 2)]), address: address,
                advanced: advanced)
        case .reply:
            return FEIGFrame(
                reply: command, status: bytes[header + 2], data: Array(bytes[(header + 3)..<(bytes.count - 2)]),
                address: address, advanced: advanced)
        }
    }
}

/// What is wrong with bytes that should be a FEIG host frame.
public enum FEIGFrameError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooShort(got: Int, need: Int)
    case badLength(declared: Int, minimum: Int)
    case truncated(got: Int, declared: Int)
    case trailingBytes(got: Int, declared: Int)
    case badCRC(expected: UInt16, got: UInt16)

    public var description: String {
        switch self {
        case .tooShort(let got, let need): return "FEIG frame too short: \(got) bytes, at least \(need) needed"
        case .badLength(let declared, let minimum):
            return "FEIG frame length field says \(declared) bytes, less than the \(minimum) of the shortest frame"
        case .truncated(let got, let declared):
            return "FEIG frame truncated: \(got) of the \(declared) bytes its length field announces"
        case .trailingBytes(let got, let declared):
            return "FEIG frame has \(got - declared) bytes past the \(declared) its length field announces"
        case .badCRC(let expected, let got):
            return
                "FEIG frame CRC mismatch: the frame carries \(Hex.format([UInt8(got & 0xFF), UInt8(got >> 8)])), its bytes give \(Hex.format([UInt8(expected & 0xFF), UInt8(expected >> 8)]))"
        }
    }
}

/// The reader's STATUS byte: FEIG's own status text table (libfeisc in FEIG's Linux SDK) and the system
/// manuals' status chapters (ID ISC.MR200, MR101, LRU3000), as checked in Tests/FEIGTests/FEIG-FACTS.md.
public enum FEIGStatus: UInt8, Sendable, CaseIterable {
    case ok = 0x00
    case noTransponder = 0x01
    case dataFalse = 0x02
    case writeError = 0x03
    case addressError = 0x04
    case wrongTransponderType = 0x05
    case readError = 0x06
    case selectError = 0x07
    case authenticationError = 0x08
    case transponderChanged = 0x0A
    case collision = 0x0B
    case weakCollision = 0x0C
    case noHalt = 0x0D
    case generalError = 0x0E
    case busy = 0x0F
    case eepromFailure = 0x10
    case parameterRangeError = 0x11
    case parameterAuthenticationError = 0x12
    case loginRequest = 0x13
    case loginError = 0x14
    case readProtect = 0x15
    case writeProtect = 0x16
    case firmwareActivationRequired = 0x17
    case wrongFirmware = 0x18
    case cryptoProcessingError = 0x19
    case externalDeviceError = 0x20
    case unknownCommand = 0x80
    case lengthError = 0x81
    case commandNotAvailable = 0x82
    case rfCommunicationError = 0x83
    case rfWarning = 0x84
    case synchronizationError = 0x85
    case unsupportedCommandOption = 0x86
    case dataTableOverrun = 0x90
    case noValidData = 0x92
    case bufferOverflow = 0x93
    case moreData = 0x94
    case iso15693Error = 0x95
    case iso14443Error = 0x96
    case cryptoRFError = 0x97
    case hardwareWarning = 0xF1
    case initializationWarning = 0xF2
    case processCancelled = 0xF8

    public var meaning: String {
        switch self {
        case .ok: return "OK"
        case .noTransponder: return "no transponder in the field"
        case .dataFalse: return "data false (a CRC or framing error from the transponder)"
        case .writeError: return "write error"
        case .addressError: return "address error (a block outside the transponder's memory)"
        case .wrongTransponderType: return "wrong transponder type for this command"
        case .readError: return "read error"
        case .selectError: return "select error"
        case .authenticationError: return "authentication error"
        case .transponderChanged: return "the transponder changed"
        case .collision: return "collision"
        case .weakCollision: return "weak collision"
        case .noHalt: return "no halt"
        case .generalError: return "general error"
        case .busy: return "busy"
        case .eepromFailure: return "the reader's EEPROM failed"
        case .parameterRangeError: return "a parameter is out of range"
        case .parameterAuthenticationError: return "authentication error (parameters)"
        case .loginRequest: return "login required"
        case .loginError: return "login error"
        case .readProtect: return "read protected"
        case .writeProtect: return "write protected"
        case .firmwareActivationRequired: return "firmware activation required"
        case .wrongFirmware: return "wrong firmware"
        case .cryptoProcessingError: return "crypto processing error"
        case .externalDeviceError: return "communication error with an external device"
        case .unknownCommand: return "unknown command"
        case .lengthError: return "length error (the request's data does not fit the command)"
        case .commandNotAvailable:
            return "command not available (e.g. while scan, buffered read or notification mode runs)"
        case .rfCommunicationError: return "RF communication error"
        case .rfWarning: return "RF warning (antenna or power)"
        case .synchronizationError: return "synchronization error"
        case .unsupportedCommandOption: return "unsupported command option"
        case .dataTableOverrun: return "data table overrun"
        case .noValidData: return "no valid data (the buffer is empty)"
        case .bufferOverflow: return "data table (buffer) overflow"
        case .moreData: return "more data (more records than one reply holds)"
        case .iso15693Error: return "ISO 15693 error (the tag's error code follows)"
        case .iso14443Error: return "ISO 14443 error"
        case .cryptoRFError: return "crypto error in the RF communication"
        case .hardwareWarning: return "hardware warning"
        case .initializationWarning: return "initialization warning"
        case .processCancelled: return "internal process cancelled"
        }
    }

    /// Replies carry data only with these statuses (manuals: "response data only with STATUS 0x00, 0x83,
    /// 0x94, 0x95").
    public var carriesData: Bool { [.ok, .rfCommunicationError, .moreData, .iso15693Error].contains(self) }

    /// "0x01 no transponder in the field", or "0x7A (not a FEIG status)".
    public static func describe(_ byte: UInt8) -> String {
        FEIGStatus(rawValue: byte).map { "0x\(Hex.format([byte])) \($0.meaning)" }
            ?? "0x\(Hex.format([byte])) (not a status FEIG documents)"
    }
}
