import ISO15693

/// ams / IDS SL13A temperature logger (manufacturer 0x36): command codes and the packing of its 32-bit fields as
/// FEIG's SDK has them. The byte order of those fields on air, and whether the manufacturer byte follows the
/// command code, are not settled by any public source (docs/reference/sensor-tags.md, "ams / IDS SL13A"): both
/// are options here, and every decoded value keeps the raw answer.
public enum SL13A {
    public static let manufacturer = ManufacturerCode(0x36)
    /// ams's reader code waits about 30 ms for an SL13A's answer ("~ 30ms needed for SL13A").
    public static let responseWindow: Duration = .milliseconds(30)

    public enum Code {
        public static let setPassive: UInt8 = 0xA6
        public static let startLog: UInt8 = 0xA7
        public static let getMeasurementSetup: UInt8 = 0xA3
        public static let getLogState: UInt8 = 0xA8
        public static let getBatteryLevel: UInt8 = 0xAA
        public static let getTemperature: UInt8 = 0xAD
    }

    /// How multi-byte fields travel on air.
    public enum ByteOrder: String, Sendable, CaseIterable {
        /// Most significant byte first, as FEIG's handler hands the words over (the default).
        case msb
        /// Least significant byte first, as ams's code for the successor chip AS39513 reads its 32-bit words.
        case lsb
    }

    /// The options a configuration chooses between.
    public struct Options: Equatable, Sendable {
        public var byteOrder: ByteOrder = .msb
        /// Whether 0x36 follows the command code (ISO 15693's rule for custom commands, ams's AS39513 code) or
        /// not (a Stack Overflow answer's frame).
        public var manufacturerByte = true
        public init(byteOrder: ByteOrder = .msb, manufacturerByte: Bool = true) {
            self.byteOrder = byteOrder
            self.manufacturerByte = manufacturerByte
        }
    }

    /// A 32-bit word of 4 answer bytes in `order`.
    public static func word(_ bytes: ArraySlice<UInt8>, _ order: ByteOrder) throws(SensorError) -> UInt32 {
        guard bytes.count == 4 else { throw SensorError.malformed("an SL13A word is 4 bytes, not \(bytes.count)") }
        let b = Array(bytes)
        switch order {
        case .msb: return UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
        case .lsb: return UInt32(b[3]) << 24 | UInt32(b[2]) << 16 | UInt32(b[1]) << 8 | UInt32(b[0])
        }
    }

    /// The 4 bytes of a word in `order` (the simulator answers with these).
    public static func bytes(_ word: UInt32, _ order: ByteOrder) -> [UInt8] {
        let msb = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: word >> $0) }
        return order == .msb ? msb : msb.reversed()
    }

    /// Get Log State (A8): measurement status and limit counters.
    public struct LogState: Equatable, Sendable {
        /// b0.
        public let active: Bool
        /// [23:14], at most 1023.
        public let measurements: Int
        /// [31:24]: the block the next measurement goes to.
        public let pointer: Int
        /// [13:11].
        public let memoryReplacements: Int
        /// Second word: extreme-lower, lower, higher, extreme-higher counts ([7:0], [15:8], [23:16], [31:24]).
        public let limitCounts: [Int]
        public let raw: [UInt8]
        /// `answer`: the 8 bytes after the flags byte.
        public init(answer: [UInt8], order: ByteOrder) throws(SensorError) {
            guard answer.count >= 8 else {
                throw SensorError.malformed("SL13A log state of \(answer.count) bytes, 8 needed")
            }
            let status = try word(answer[0..<4], order)
            let counters = try word(answer[4..<8], order)
            active = status & 1 != 0
            measurements = Int((status >> 14) & 0x3FF)
            pointer = Int(status >> 24)
            memoryReplacements = Int((status >> 11) & 0x7)
            limitCounts = [0, 8, 16, 24].map { Int((counters >> $0) & 0xFF) }
            raw = Array(answer.prefix(8))
        }
    }

    /// A start time word: [5:0] second, [11:6] minute, [16:12] hour, [21:17] day, [25:22] month, [31:26] year (its
    /// base is not known: the raw 6-bit value is kept).
    public struct StartTime: Equatable, Sendable {
        public let yearField, month, day, hour, minute, second: Int
        public init(word w: UInt32) {
            second = Int(w & 0x3F)
            minute = Int((w >> 6) & 0x3F)
            hour = Int((w >> 12) & 0x1F)
            day = Int((w >> 17) & 0x1F)
            month = Int((w >> 22) & 0x0F)
            yearField = Int(w >> 26)
        }
    }

    /// Get Measurement Setup (A3): start time, log limits, log mode, delay (4 bytes each).
    public struct MeasurementSetup: Equatable, Sendable {
        public let start: StartTime
        /// Log mode [24:10]: the interval (unit not known; probably seconds).
        public let interval: Int
        /// Log limits: extreme lower [9:0], lower [19:10], upper [29:20]; log mode [9:0]: extreme upper.
        public let limits: [Int]
        public let raw: [UInt8]
        public init(answer: [UInt8], order: ByteOrder) throws(SensorError) {
            guard answer.count >= 16 else {
                throw SensorError.malformed("SL13A measurement setup of \(answer.count) bytes, 16 needed")
            }
            start = StartTime(word: try word(answer[0..<4], order))
            let limitWord = try word(answer[4..<8], order)
            let mode = try word(answer[8..<12], order)
            interval = Int((mode >> 10) & 0x7FFF)
            limits = [limitWord & 0x3FF, (limitWord >> 10) & 0x3FF, (limitWord >> 20) & 0x3FF, mode & 0x3FF].map {
                Int($0)
            }
            raw = Array(answer.prefix(16))
        }
    }

    /// Get Temperature (AD): the raw 2-byte code in `order` (no °C: no public formula).
    public static func temperatureCode(_ answer: [UInt8], order: ByteOrder) throws(SensorError) -> UInt16 {
        guard answer.count >= 2 else { throw SensorError.malformed("SL13A temperature of \(answer.count) bytes") }
        return order == .msb
            ? UInt16(answer[0]) << 8 | UInt16(answer[1]) : UInt16(answer[1]) << 8 | UInt16(answer[0])
    }

    /// A request frame as it goes on air, CRC included: flags, the code, 0x36 when `options.manufacturerByte`, the
    /// UID in wire order when addressed, the parameters. `flags` 0x20 (addressed, low data rate) as in the Stack
    /// Overflow answer; 0x22 for the high data rate.
    public static func frame(
        _ code: UInt8, uid: UID?, parameters: [UInt8] = [], options: Options, flags: UInt8 = 0x20
    ) -> [UInt8] {
        CRC16.appending(to: request(code, uid: uid, parameters: parameters, options: options, flags: flags))
    }

    /// `frame` without its CRC (what a reader's transceive takes).
    public static func request(
        _ code: UInt8, uid: UID?, parameters: [UInt8] = [], options: Options, flags: UInt8 = 0x20
    ) -> [UInt8] {
        var f: [UInt8] = [uid == nil ? flags & ~0x20 : flags | 0x20, code]
        if options.manufacturerByte { f.append(manufacturer.rawValue) }
        if let uid { f += uid.onAirBytes }
        f += parameters
        return f
    }

    /// A request's parts as a chip that expects `options` reads them: the command code, the UID when addressed,
    /// the parameters; nil when the frame is not of that form (a chip would not recognise it).
    public static func parse(_ body: [UInt8], options: Options) -> (code: UInt8, uid: UID?, parameters: [UInt8])? {
        guard body.count >= 2 else { return nil }
        var at = 2
        if options.manufacturerByte {
            guard body.count >= 3, body[2] == manufacturer.rawValue else { return nil }
            at = 3
        }
        var uid: UID?
        if body[0] & 0x20 != 0 {
            guard body.count >= at + 8, let u = try? UID(onAir: body[at..<(at + 8)]) else { return nil }
            uid = u
            at += 8
        }
        return (body[1], uid, Array(body[at...]))
    }

    /// Get Battery Level (AA): the raw level byte (no threshold in any source read).
    public static func batteryCode(_ answer: [UInt8]) throws(SensorError) -> UInt8 {
        guard let b = answer.first else { throw SensorError.malformed("SL13A battery level: no byte") }
        return b
    }
}
