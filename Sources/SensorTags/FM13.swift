import ISO15693

/// Fudan FM13HT160-T5T / FM13DT160 temperature loggers (manufacturer 0x1D, UID byte 5 = 0x70): the custom
/// commands' parameters, the answers as Fudan's SDK parses them, and the normal-mode log record. Every fact and
/// its source is in docs/reference/sensor-tags.md ("Fudan FM13HT160-T5T / FM13DT160").
public enum FM13 {
    public static let manufacturer = ManufacturerCode(0x1D)
    /// UID byte 5 (counting from the least significant byte) of every FM13HT160-T5T.
    public static let uidByte5: UInt8 = 0x70
    /// Where the temperature log begins in the chip's address space.
    public static let logStart: UInt16 = 0x1000
    /// Records the log area holds in normal mode.
    public static let maxRecords = 4864
    /// Bytes of one normal-mode record.
    public static let recordSize = 4
    /// The most a Read Memory asks for: the SDK's `00 F8` (249 bytes), answered with 252.
    public static let maxReadLength = 249
    /// What the SDK waits between starting a one-shot measurement and reading its result.
    public static let measurementTime: Duration = .milliseconds(400)

    /// Custom command codes.
    public enum Code {
        public static let readMemory: UInt8 = 0xB1
        public static let writeMemory: UInt8 = 0xB3
        public static let measure: UInt8 = 0xC0
        public static let startStopLog: UInt8 = 0xC2
        public static let writeRegister: UInt8 = 0xC5
        public static let readRegister: UInt8 = 0xC6
        public static let status: UInt8 = 0xCF
    }

    /// Start and stop of logging (C2), as Fudan's `InstructMap.java` sends them (cases 7 and 8): `00` then four zero
    /// bytes starts the RTC log, `80` then four zero bytes stops it. (The Android demo app's own stop sends a
    /// password scrambled from a random number instead: which one a chip insists on is not settled.)
    public static let startLogParameters: [UInt8] = [0x00, 0, 0, 0, 0]
    public static let stopLogParameters: [UInt8] = [0x80, 0, 0, 0, 0]
    /// Where the SDK writes the planned number of records (16-bit little-endian).
    public static let plannedRecords: UInt16 = 0xB094

    /// Write Memory (B3) parameters: the address most significant byte first, length − 1, the bytes (1…4, as the
    /// SDK writes them: `InstructMap.java` cases 13, 19, 20, 22).
    public static func writeMemory(address: UInt16, bytes: [UInt8]) throws(SensorError) -> [UInt8] {
        guard (1...4).contains(bytes.count) else {
            throw SensorError.invalid("FM13 Write Memory of \(bytes.count) bytes: 1 to 4")
        }
        return [UInt8(address >> 8), UInt8(address & 0xFF), UInt8(bytes.count - 1)] + bytes
    }

    /// Write Register (C5) parameters: the register, then the value most significant byte first (`InstructMap.java`
    /// cases 3 and 5: the delay `C0 84 00 minutes`, the interval `C0 85 high low`).
    public static func writeRegister(_ register: UInt16, value: UInt16) -> [UInt8] {
        [UInt8(register >> 8), UInt8(register & 0xFF), UInt8(value >> 8), UInt8(value & 0xFF)]
    }

    /// Registers read with C6.
    public enum Register {
        /// Records so far while logging (little-endian).
        public static let recordCount: UInt16 = 0xC091
        /// Start delay, minutes.
        public static let startDelay: UInt16 = 0xC084
        /// Interval, seconds.
        public static let interval: UInt16 = 0xC085
    }

    /// Addresses the SDK's own bookkeeping uses in user memory (big-endian values).
    public enum UserArea {
        /// Start of logging, UNIX seconds, 32-bit big-endian.
        public static let startTime: UInt16 = 0x0140
        /// Start delay in minutes, 16-bit big-endian.
        public static let delayMinutes: UInt16 = 0x0110
        /// Interval in seconds, 16-bit big-endian.
        public static let intervalSeconds: UInt16 = 0x0114
    }

    /// Read Memory (B1) parameters: the address most significant byte first, then `00` and length − 1.
    /// `length` is 1…249.
    public static func readMemory(address: UInt16, length: Int) throws(SensorError) -> [UInt8] {
        guard (1...maxReadLength).contains(length) else {
            throw SensorError.invalid("FM13 Read Memory of \(length) bytes: 1 to \(maxReadLength)")
        }
        return [UInt8(address >> 8), UInt8(address & 0xFF), 0x00, UInt8(length - 1)]
    }

    /// Bytes a Read Memory of `length` answers with after its flags byte: rounded up to 4 ("B1 minimum unit is
    /// 4 bytes").
    public static func answerLength(forRead length: Int) -> Int { (length + 3) / 4 * 4 }

    /// Read Register (C6) parameters: the register most significant byte first.
    public static func readRegister(_ register: UInt16) -> [UInt8] { [UInt8(register >> 8), UInt8(register & 0xFF)] }

    /// A register's value from the C6 answer after its flags byte: low byte, high byte.
    public static func registerValue(_ answer: [UInt8]) throws(SensorError) -> UInt16 {
        guard answer.count >= 2 else { throw SensorError.malformed("FM13 register answer of \(answer.count) bytes") }
        return UInt16(answer[0]) | UInt16(answer[1]) << 8
    }

    /// Measure (C0) parameters.
    public enum Measure {
        public static let startTemperature: [UInt8] = [0x06, 0x00]
        public static let readTemperature: [UInt8] = [0x84, 0x00]
        public static let startBattery: [UInt8] = [0x12, 0x00]
        public static let readBattery: [UInt8] = [0x92, 0x00]
    }

    /// Status (CF) parameters.
    public static let statusParameters: [UInt8] = [0x01, 0x00, 0x00]

    /// The CF answer, as the SDK reads `resp[2]` (counting the flags byte as byte 0: see the reference page,
    /// unverified).
    public struct Status: Equatable, Sendable {
        public let logging: Bool
        public let batteryOK: Bool
        public let raw: [UInt8]
        /// `answer`: the whole answer, flags byte first.
        public init(answer: [UInt8]) throws(SensorError) {
            guard answer.count >= 3 else { throw SensorError.malformed("FM13 status answer of \(answer.count) bytes") }
            logging = answer[2] & 0x10 != 0
            batteryOK = answer[2] & 0x01 != 0
            raw = answer
        }
    }

    /// The temperature of a 10-bit two's complement code, ÷ 4 (÷ 8 in the chip's 3-decimal mode).
    public static func celsius(code: UInt16, threeDecimals: Bool = false) -> Double {
        let c = Int(code & 0x3FF)
        let signed = c >= 0x200 ? c - 0x400 : c
        return Double(signed) / (threeDecimals ? 8 : 4)
    }

    /// The one-shot temperature from the answer to `C0 84 00` after its flags byte: its last two bytes,
    /// little-endian.
    public static func oneShotCelsius(_ answer: [UInt8]) throws(SensorError) -> Double {
        guard answer.count >= 2 else {
            throw SensorError.malformed("FM13 temperature answer of \(answer.count) bytes")
        }
        let n = answer.count
        return celsius(code: UInt16(answer[n - 2]) | UInt16(answer[n - 1]) << 8)
    }

    /// One normal-mode record: a little-endian 32-bit word.
    public struct Record: Equatable, Sendable {
        public let word: UInt32
        public init(word: UInt32) { self.word = word }
        /// The record's 4 bytes as the chip stores them.
        public init(bytes: ArraySlice<UInt8>) throws(SensorError) {
            guard bytes.count == 4 else { throw SensorError.malformed("an FM13 record is 4 bytes, not \(bytes.count)") }
            let b = Array(bytes)
            word = UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
        }
        /// Bits 9–0.
        public var code: UInt16 { UInt16(word & 0x3FF) }
        public var celsius: Double { FM13.celsius(code: code) }
        /// Bit 13: the RF field was present when the record was taken.
        public var fieldPresent: Bool { word & 0x2000 != 0 }
        /// Bits 30–16.
        public var timeNumber: Int { Int((word >> 16) & 0x7FFF) }
        public var bytes: [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }

    /// The records in a run of log bytes (a multiple of 4).
    public static func records(_ bytes: [UInt8]) throws(SensorError) -> [Record] {
        guard bytes.count % recordSize == 0 else {
            throw SensorError.malformed("FM13 log bytes: \(bytes.count) is not a multiple of \(recordSize)")
        }
        var out: [Record] = []
        out.reserveCapacity(bytes.count / recordSize)
        var i = 0
        while i < bytes.count {
            out.append(try Record(bytes: bytes[i..<(i + 4)]))
            i += 4
        }
        return out
    }

    /// When record `index` was taken: start + delay × 60 + index × interval seconds (the Android SDK's start: the
    /// moment of the START command), in milliseconds since 1970; nil when it does not fit.
    public static func recordTime(startSeconds: UInt32, delayMinutes: UInt16, intervalSeconds: UInt16, index: Int)
        -> Int64?
    {
        guard index >= 0, index <= maxRecords * 16 else { return nil }
        let seconds = Int64(startSeconds) + Int64(delayMinutes) * 60 + Int64(index) * Int64(intervalSeconds)
        return seconds * 1000
    }

    /// The Read Memory requests that cover records `from..<to` of the log, as the SDK makes them: 63 records (252
    /// bytes, asked as 249) at most per request; `length` is what to ask, `records` what the answer holds.
    public static func logReads(from: Int, to: Int) -> [(address: UInt16, length: Int, records: Int)] {
        guard from < to, from >= 0, to <= maxRecords else { return [] }
        var out: [(UInt16, Int, Int)] = []
        var r = from
        let perRead = answerLength(forRead: maxReadLength) / recordSize
        while r < to {
            let n = min(perRead, to - r)
            out.append((logStart + UInt16(r * recordSize), min(maxReadLength, n * recordSize), n))
            r += n
        }
        return out
    }

    /// Big-endian unsigned value of the bytes (the SDK's user-area bookkeeping).
    public static func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}

/// What a sensor tag's answer or a request to it got wrong.
public enum SensorError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An answer that does not have the shape the vendor's code expects.
    case malformed(String)
    /// A request this code will not build (a length or a value out of range).
    case invalid(String)

    public var description: String {
        switch self {
        case .malformed(let m): return "malformed sensor answer: \(m)"
        case .invalid(let m): return m
        }
    }
}
