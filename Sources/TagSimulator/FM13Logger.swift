import ISO15693
import SensorTags

/// A Fudan FM13HT160-T5T's temperature logger, answering the custom commands the way Fudan's SDK expects
/// (docs/reference/sensor-tags.md): Read Memory (B1) over user memory, the log area from 0x1000 and the record
/// format byte at 0xB040; Read Register (C6) for the record count, delay and interval; Status (CF); the one-shot
/// measurement (C0). The start time, delay and interval are also where the SDK keeps them in user memory. Tests drive
/// it: records added while the tag is in the field, a logging restart, a low battery.
public final class FM13Logger {
    /// The records taken so far, as the chip stores them (normal mode, 4 bytes each).
    public private(set) var records: [FM13.Record] = []
    public private(set) var logging: Bool
    public var batteryOK = true
    /// UNIX seconds of the START command; delay in minutes; interval in seconds.
    public private(set) var startSeconds: UInt32
    public private(set) var delayMinutes: UInt16
    public private(set) var intervalSeconds: UInt16
    /// What the next one-shot measurement gives, °C.
    public var currentCelsius: Double = 21.25
    /// A one-shot measurement started (C0 06 00) and not read yet.
    var measuring = false
    /// The delay and interval written to the registers (C5), taken by the next START (C2 00).
    var nextDelay: UInt16?, nextInterval: UInt16?
    /// START and STOP commands received (a test counts them).
    public private(set) var controls: [String] = []

    public init(startSeconds: UInt32, intervalSeconds: UInt16, delayMinutes: UInt16 = 0, logging: Bool = true) {
        self.startSeconds = startSeconds
        self.intervalSeconds = intervalSeconds
        self.delayMinutes = delayMinutes
        self.logging = logging
    }

    /// The 10-bit code of a temperature (quarter degrees, two's complement).
    public static func code(celsius: Double) -> UInt16 {
        let q = Int((celsius * 4).rounded())
        return UInt16(truncatingIfNeeded: q < 0 ? q + 0x400 : q) & 0x3FF
    }

    /// Takes more records (the chip's RTC at work), up to the log's capacity.
    public func take(_ temperatures: [Double], fieldPresent: Bool = false) {
        for t in temperatures where records.count < FM13.maxRecords {
            let n = UInt32(records.count & 0x7FFF)
            records.append(
                FM13.Record(word: n << 16 | (fieldPresent ? 0x2000 : 0) | UInt32(Self.code(celsius: t))))
        }
    }

    /// A new logging session (the START command again): the log is empty, the start time new.
    public func restart(startSeconds: UInt32, intervalSeconds: UInt16? = nil) {
        records = []
        self.startSeconds = startSeconds
        if let i = intervalSeconds { self.intervalSeconds = i }
        logging = true
    }

    /// The SDK's bookkeeping in user memory (big-endian): delay at 0x0110, interval at 0x0114, start at 0x0140.
    func bookkeeping(into tag: SimulatedTag) {
        tag.sense(
            block: 0, byte: Int(FM13.UserArea.delayMinutes),
            bytes: [UInt8(delayMinutes >> 8), UInt8(delayMinutes & 0xFF)])
        tag.sense(
            block: 0, byte: Int(FM13.UserArea.intervalSeconds),
            bytes: [UInt8(intervalSeconds >> 8), UInt8(intervalSeconds & 0xFF)])
        tag.sense(
            block: 0, byte: Int(FM13.UserArea.startTime),
            bytes: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: startSeconds >> $0) })
    }

    /// The answer bytes after the flags byte to one of Fudan's commands, or an ISO error; nil: not this logger's.
    func answer(code: UInt8, parameters: [UInt8], userMemory: [UInt8]) -> Result<[UInt8], ISOErrorCode>? {
        switch code {
        case FM13.Code.status:
            guard parameters == FM13.statusParameters else { return .failure(.commandNotRecognized) }
            // The SDK tests resp[2] (docs/reference/sensor-tags.md): after the flags byte, one byte, then the status.
            return .success([0x00, (logging ? 0x10 : 0) | (batteryOK ? 0x01 : 0)])
        case FM13.Code.readRegister:
            guard parameters.count == 2 else { return .failure(.commandNotRecognized) }
            let value: UInt16
            switch UInt16(parameters[0]) << 8 | UInt16(parameters[1]) {
            // The SDK counts count + 1 records in normal mode.
            case FM13.Register.recordCount: value = UInt16(max(0, records.count - 1))
            case FM13.Register.startDelay: value = delayMinutes
            case FM13.Register.interval: value = intervalSeconds
            default: return .failure(.blockNotAvailable)
            }
            return .success([UInt8(value & 0xFF), UInt8(value >> 8)])
        case FM13.Code.readMemory:
            guard parameters.count == 4, parameters[2] == 0 else { return .failure(.commandNotRecognized) }
            let address = Int(parameters[0]) << 8 | Int(parameters[1])
            let length = FM13.answerLength(forRead: Int(parameters[3]) + 1)
            return read(address: address, length: length, userMemory: userMemory)
        case FM13.Code.writeRegister:
            guard parameters.count == 4 else { return .failure(.commandNotRecognized) }
            let value = UInt16(parameters[2]) << 8 | UInt16(parameters[3])
            switch UInt16(parameters[0]) << 8 | UInt16(parameters[1]) {
            case FM13.Register.startDelay: nextDelay = value
            case FM13.Register.interval: nextInterval = value
            default: return .failure(.blockNotAvailable)
            }
            return .success([])
        case FM13.Code.startStopLog:
            switch parameters {
            case FM13.startLogParameters:
                // START: a new session from the time the SDK wrote at 0x0140 (big-endian), with the registers' delay
                // and interval.
                let at = Int(FM13.UserArea.startTime)
                guard userMemory.count >= at + 4 else { return .failure(.unknownError) }
                let start = FM13.bigEndian(userMemory[at..<(at + 4)])
                controls.append("start")
                restart(startSeconds: start, intervalSeconds: nextInterval)
                if let d = nextDelay { delayMinutes = d }
                return .success([])
            case FM13.stopLogParameters:
                controls.append("stop")
                logging = false
                return .success([])
            default: return .failure(.commandNotRecognized)
            }
        case FM13.Code.measure:
            switch parameters {
            case FM13.Measure.startTemperature:
                measuring = true
                return .success([0xFA, 0xFF])
            case FM13.Measure.readTemperature:
                guard measuring else { return .failure(.unknownError) }
                measuring = false
                let c = Self.code(celsius: currentCelsius)
                return .success([UInt8(c & 0xFF), UInt8(c >> 8)])
            default: return .failure(.commandNotRecognized)
            }
        default:
            return nil
        }
    }

    func read(address: Int, length: Int, userMemory: [UInt8]) -> Result<[UInt8], ISOErrorCode> {
        let end = address + length
        if end <= userMemory.count { return .success(Array(userMemory[address..<end])) }
        let logStart = Int(FM13.logStart)
        let logEnd = logStart + FM13.maxRecords * FM13.recordSize
        if address >= logStart && end <= logEnd {
            var out: [UInt8] = []
            out.reserveCapacity(length)
            var a = address
            while a < end {
                let i = (a - logStart) / 4
                // Past the last record the area reads as erased EEPROM.
                let word = i < records.count ? records[i].bytes : [0xFF, 0xFF, 0xFF, 0xFF]
                out.append(word[(a - logStart) % 4])
                a += 1
            }
            return .success(out)
        }
        // user_cfg0: normal-mode records (temp_format 011 in bits 4–2).
        if address == 0xB040 && length <= 4 { return .success([0x0C, 0, 0, 0].prefix(length).map { $0 }) }
        // The planned number of records, little-endian.
        if address == 0xB094 && length <= 4 {
            let n = UInt16(FM13.maxRecords)
            return .success([UInt8(n & 0xFF), UInt8(n >> 8), 0, 0].prefix(length).map { $0 })
        }
        return .failure(.blockNotAvailable)
    }
}

extension FM13Logger: SimulatedPart {
    /// An image with a `sensorLog` of kind fm13.
    public static func make(for tag: SimulatedTag) -> Self? {
        guard let l = tag.image.sensorLog, l.kind == "fm13" else { return nil }
        let logger = Self(
            startSeconds: l.startSeconds, intervalSeconds: l.intervalSeconds, delayMinutes: l.delayMinutes,
            logging: l.logging)
        logger.batteryOK = l.batteryOK
        logger.currentCelsius = l.currentCelsius
        logger.take(l.celsius)
        return logger
    }

    /// The SDK's bookkeeping written into user memory.
    public func attached(to tag: SimulatedTag) { bookkeeping(into: tag) }

    /// Fudan's custom commands: Write Memory (user memory, the SDK's bookkeeping, or the planned record count) and
    /// the logger's own (read memory and registers, status, start and stop, a one-shot measurement).
    public func answer(_ request: Request, tag: SimulatedTag) -> PartAnswer? {
        guard case let .custom(code, manufacturer, parameters) = request.command, manufacturer == FM13.manufacturer
        else { return nil }
        if code == FM13.Code.writeMemory {
            guard parameters.count >= 4, Int(parameters[2]) + 1 == parameters.count - 3 else {
                return .answer(.error(.commandNotRecognized))
            }
            let address = Int(parameters[0]) << 8 | Int(parameters[1])
            let bytes = Array(parameters[3...])
            // Answered at once, like Fudan's other commands here (the chip's EEPROM time is in no source read).
            if address + bytes.count <= tag.image.blockCount * tag.image.blockSize {
                tag.sense(block: 0, byte: address, bytes: bytes)
                return .answer(.done)
            }
            if address == Int(FM13.plannedRecords) { return .answer(.done) }
            return .answer(.error(.blockNotAvailable))
        }
        switch answer(code: code, parameters: parameters, userMemory: tag.image.blocks.flatMap { $0 }) {
        case .success(let bytes)?: return .answer(.data(bytes))
        case .failure(let error)?: return .answer(.error(error))
        case nil: return .unsupported
        }
    }
}

extension SimulatedTag {
    /// The tag's Fudan FM13 temperature logger, if it is one.
    public var fm13: FM13Logger? { part(FM13Logger.self) }

    /// The FM13 log started again (a new session): the SDK's bookkeeping follows.
    public func restartLog(startSeconds: UInt32, intervalSeconds: UInt16? = nil) {
        guard let fm13 else { return }
        fm13.restart(startSeconds: startSeconds, intervalSeconds: intervalSeconds)
        fm13.bookkeeping(into: self)
    }
}
