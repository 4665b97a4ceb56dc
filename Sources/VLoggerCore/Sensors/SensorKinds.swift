import ISO15693
import Readers
import SensorTags
import VLoggerModel

/// One value a sensor tag reports, with its unit.
public struct SensorValue: Equatable, Sendable {
    public let name: String
    public let value: Double
    public let unit: String
    public init(_ name: String, _ value: Double, unit: String) {
        self.name = name
        self.value = value
        self.unit = unit
    }
}

/// What a sensor tag says about itself and its log.
public struct SensorInfo: Equatable, Sendable {
    public var kind: String
    public var name: String
    /// Whether it is logging now (nil: the kind cannot tell).
    public var logging: Bool?
    public var intervalSeconds: Int?
    /// Records in its log.
    public var recordCount: Int?
    public var batteryOK: Bool?
    /// When its logging session began, ms since 1970.
    public var start: Millis?
    /// The logging session's key: a tag whose logging restarted has a new one (FM13: start and interval).
    public var session: String?
    /// A value measured now (only when asked for: a measurement takes the chip's time).
    public var current: [SensorValue] = []
    /// Answers kept as the tag gave them (after the flags byte), by command, where their reading is not settled.
    public var raw: [String: [UInt8]] = [:]
    /// What the kind cannot say, for people ("log: the memory layout is in no public source").
    public var notes: [String] = []
    public init(kind: String, name: String) {
        self.kind = kind
        self.name = name
    }
}

/// One record of a tag's log: its time on the tag (nil when the tag does not say), the decoded values and the
/// bytes as the tag stores them (so that a decoder fixed later can decode them again).
public struct SensorRecord: Equatable, Sendable {
    public let index: Int
    public let time: Millis?
    public let values: [SensorValue]
    public let raw: [UInt8]
    /// Where the record is in the chip's memory, as a block number of its size (a reading's block).
    public let block: Int
}

/// A kind of sensor or logger tag: how it is recognised, and the commands that get its state and its log. Each
/// kind is one type, registered once in `SensorKinds.builtIn`.
public protocol SensorKind: Sendable {
    /// The name configurations and commands use (`fm13`).
    var id: String { get }
    /// What an operator calls it.
    var name: String { get }
    /// The values its records carry, with their units (the store's export columns).
    var fields: [(name: String, unit: String)] { get }
    func recognises(_ uid: UID) -> Bool
    /// The tag's state; `measure`: also take a value now (`wait` sleeps the chip's measurement time).
    func info(_ client: ISO15693Client, _ uid: UID, measure: Bool, wait: (Duration) -> Void) throws -> SensorInfo
    /// The log's records from `from` on (`info`: the tag's state as `info` just read it), read in the largest pieces
    /// the chip allows: `piece(records)` gets each piece as it is read and returns false to stop (the tag's turn
    /// is over; the rest waits for the next visit).
    func log(
        _ client: ISO15693Client, _ uid: UID, info: SensorInfo, from: Int, piece: ([SensorRecord]) throws -> Bool
    ) throws
    /// What of its logging vlogger can change (default: nothing), and how; only operators' commands call these.
    var controls: Set<SensorControl> { get }
    var logCapacity: Int? { get }
    /// Whether `info(measure: true)` only reads and measures (true), or writes to the tag (the RF430's sample
    /// configuration): a poll measures only the first kind.
    var measuresWithoutWriting: Bool { get }
    /// The values `info(measure: true)` gives, with their units (the store's export columns).
    var valueFields: [(name: String, unit: String)] { get }
    /// Whether vlogger reads its log (false: no public source gives the layout; `sensor-log` skips it).
    var readsLog: Bool { get }
    func startLog(_ client: ISO15693Client, _ uid: UID, _ settings: LogSettings) throws -> [String]
    func stopLog(_ client: ISO15693Client, _ uid: UID) throws
}

/// How an operator starts a tag's logging (`vlogger sensor start`): never from a poll.
public struct LogSettings: Sendable, Equatable {
    public var intervalSeconds: Int
    public var delayMinutes: Int
    public var records: Int
    /// The session's start, as the kind keeps it (an FM13: UNIX seconds in user memory).
    public var start: Millis
    public init(intervalSeconds: Int, delayMinutes: Int = 0, records: Int, start: Millis) {
        self.intervalSeconds = intervalSeconds
        self.delayMinutes = delayMinutes
        self.records = records
        self.start = start
    }
}

/// What a kind lets an operator do to its logging.
public enum SensorControl: String, Sendable, CaseIterable {
    case start, stop
}

extension SensorKind {
    /// What of its logging vlogger can change: nothing unless the kind says.
    public var controls: Set<SensorControl> { [] }
    /// How many records its log holds (nil: not known).
    public var logCapacity: Int? { nil }
    public var measuresWithoutWriting: Bool { true }
    public var readsLog: Bool { true }
    public var valueFields: [(name: String, unit: String)] { fields }
    /// Starts a new logging session (the tag's current log is ended); returns the steps, in words.
    public func startLog(_ client: ISO15693Client, _ uid: UID, _ settings: LogSettings) throws -> [String] {
        throw SensorFailure("\(name): vlogger cannot start its logging")
    }
    public func stopLog(_ client: ISO15693Client, _ uid: UID) throws {
        throw SensorFailure("\(name): vlogger cannot stop its logging")
    }

    /// The whole log from `from` on, at once (`progress(read, total)` after each piece).
    public func log(_ client: ISO15693Client, _ uid: UID, from: Int, progress: (Int, Int) -> Void) throws -> (
        info: SensorInfo, records: [SensorRecord]
    ) {
        let info = try self.info(client, uid, measure: false, wait: { _ in })
        var out: [SensorRecord] = []
        try log(client, uid, info: info, from: from) { records in
            out += records
            progress(max(0, from) + out.count, info.recordCount ?? 0)
            return true
        }
        return (info, out)
    }
}

/// The sensor kinds vlogger knows.
public enum SensorKinds {
    public static let builtIn: [any SensorKind] = [FM13Kind(), RF430Kind(), SmarTagKind(), SL13AKind()]

    /// The kind of a tag, by its UID.
    public static func kind(for uid: UID) -> (any SensorKind)? { builtIn.first { $0.recognises(uid) } }

    public static func named(_ id: String) -> (any SensorKind)? { builtIn.first { $0.id == id } }
}

/// A sensor command that failed: what the tag answered, or that it did not.
public struct SensorFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Fudan FM13HT160-T5T (docs/reference/sensor-tags.md): status, record count and session from Fudan's commands and
/// the SDK's bookkeeping in user memory; the log by Read Memory from 0x1000 in the SDK's 252-byte pieces.
public struct FM13Kind: SensorKind {
    public let id = "fm13"
    public let name = "Fudan FM13HT160-T5T temperature logger"
    public var fields: [(name: String, unit: String)] { [("temperature", "°C")] }
    public init() {}

    public func recognises(_ uid: UID) -> Bool {
        uid.manufacturer == FM13.manufacturer && UInt8(truncatingIfNeeded: uid.value >> 40) == FM13.uidByte5
    }

    func custom(_ client: ISO15693Client, _ uid: UID, _ code: UInt8, _ parameters: [UInt8]) throws -> [UInt8] {
        do {
            return try client.custom(uid, code: code, manufacturer: FM13.manufacturer, parameters: parameters)
        } catch {
            throw SensorFailure(
                "FM13 command 0x\(Hex.format([code])) \(Hex.format(parameters, separator: " ")): \(error)")
        }
    }

    func readMemory(_ client: ISO15693Client, _ uid: UID, _ address: UInt16, _ length: Int) throws -> [UInt8] {
        let answer = try custom(
            client, uid, FM13.Code.readMemory, try FM13.readMemory(address: address, length: length))
        let expected = FM13.answerLength(forRead: length)
        guard answer.count >= min(length, expected) else {
            throw SensorFailure(
                "FM13 Read Memory at 0x\(String(address, radix: 16, uppercase: true)): \(answer.count) bytes, \(expected) expected"
            )
        }
        return answer
    }

    public func info(_ client: ISO15693Client, _ uid: UID, measure: Bool, wait: (Duration) -> Void) throws
        -> SensorInfo
    {
        var info = SensorInfo(kind: id, name: name)
        let status = try FM13.Status(answer: [0x00] + custom(client, uid, FM13.Code.status, FM13.statusParameters))
        info.logging = status.logging
        info.batteryOK = status.batteryOK
        // The SDK counts count + 1 records in normal mode (register C091 while logging).
        let count = try FM13.registerValue(
            custom(client, uid, FM13.Code.readRegister, FM13.readRegister(FM13.Register.recordCount)))
        info.recordCount = min(FM13.maxRecords, Int(count) + 1)
        // The SDK's bookkeeping: delay (0x0110), interval (0x0114), start (0x0140), all big-endian.
        let book = try readMemory(client, uid, FM13.UserArea.delayMinutes, 0x34)
        let delay = UInt16(FM13.bigEndian(book[0..<2]))
        let interval = UInt16(FM13.bigEndian(book[4..<6]))
        let start = FM13.bigEndian(book[0x30..<0x34])
        info.intervalSeconds = Int(interval)
        info.start = FM13.recordTime(startSeconds: start, delayMinutes: delay, intervalSeconds: interval, index: 0)
        info.session = "fm13:\(start):\(delay):\(interval)"
        if measure {
            _ = try custom(client, uid, FM13.Code.measure, FM13.Measure.startTemperature)
            wait(FM13.measurementTime)
            let t = try FM13.oneShotCelsius(custom(client, uid, FM13.Code.measure, FM13.Measure.readTemperature))
            info.current = [SensorValue("temperature", t, unit: "°C")]
        }
        return info
    }

    public var controls: Set<SensorControl> { [.start, .stop] }
    public var logCapacity: Int? { FM13.maxRecords }

    /// Limits of the settings: the delay register takes one byte of minutes, the interval 16 bits of seconds, the
    /// log 4,864 records (docs/reference/sensor-tags.md).
    public static func check(_ s: LogSettings) throws(SensorFailure) {
        guard (1...0xFFFF).contains(s.intervalSeconds) else {
            throw SensorFailure("FM13: the interval is 1 to 65535 seconds, not \(s.intervalSeconds)")
        }
        guard (0...0xFF).contains(s.delayMinutes) else {
            throw SensorFailure("FM13: the start delay is 0 to 255 minutes, not \(s.delayMinutes)")
        }
        guard (1...FM13.maxRecords).contains(s.records) else {
            throw SensorFailure("FM13: the log holds 1 to \(FM13.maxRecords) records, not \(s.records)")
        }
        guard s.start >= 0, s.start / 1000 <= Millis(UInt32.max) else {
            throw SensorFailure("FM13: the start time does not fit the chip's 32-bit seconds")
        }
    }

    /// Fudan's sequence (`InstructMap.java`): the delay and interval registers (C5), the planned record count at
    /// 0xB094 and the SDK's bookkeeping (delay 0x0110, interval 0x0114, start 0x0140, big-endian) by Write Memory
    /// (B3), then START (C2 00). The start time is the moment of the command, as the Android SDK writes it.
    public func startLog(_ client: ISO15693Client, _ uid: UID, _ s: LogSettings) throws -> [String] {
        try Self.check(s)
        let interval = UInt16(s.intervalSeconds), delay = UInt16(s.delayMinutes), records = UInt16(s.records)
        let start = UInt32(s.start / 1000)
        var done: [String] = []
        _ = try custom(client, uid, FM13.Code.writeRegister, FM13.writeRegister(FM13.Register.startDelay, value: delay))
        _ = try custom(
            client, uid, FM13.Code.writeRegister, FM13.writeRegister(FM13.Register.interval, value: interval))
        done.append("registers: delay \(delay) min, interval \(interval) s")
        for (address, bytes) in [
            (FM13.plannedRecords, [UInt8(records & 0xFF), UInt8(records >> 8)]),
            (FM13.UserArea.delayMinutes, [UInt8(delay >> 8), UInt8(delay & 0xFF)]),
            (FM13.UserArea.intervalSeconds, [UInt8(interval >> 8), UInt8(interval & 0xFF)]),
            (FM13.UserArea.startTime, [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: start >> $0) }),
        ] {
            _ = try custom(client, uid, FM13.Code.writeMemory, try FM13.writeMemory(address: address, bytes: bytes))
        }
        done.append("planned records \(records), start \(TimeSpec.format(Millis(start) * 1000)) written")
        _ = try custom(client, uid, FM13.Code.startStopLog, FM13.startLogParameters)
        done.append("logging started")
        return done
    }

    public func stopLog(_ client: ISO15693Client, _ uid: UID) throws {
        _ = try custom(client, uid, FM13.Code.startStopLog, FM13.stopLogParameters)
    }

    public func log(
        _ client: ISO15693Client, _ uid: UID, info: SensorInfo, from: Int, piece: ([SensorRecord]) throws -> Bool
    ) throws {
        let total = info.recordCount ?? 0
        let interval = Millis(info.intervalSeconds ?? 0) * 1000
        var index = max(0, from)
        for read in FM13.logReads(from: index, to: total) {
            let bytes = try readMemory(client, uid, read.address, read.length)
            var records: [SensorRecord] = []
            var erased = false
            for r in try FM13.records(Array(bytes.prefix(read.records * FM13.recordSize))) {
                // Erased EEPROM past the last record (0xFFFFFFFF) is not a record.
                if r.word == 0xFFFF_FFFF {
                    erased = true
                    break
                }
                records.append(
                    SensorRecord(
                        index: index, time: info.start.map { $0 + Millis(index) * interval },
                        values: [SensorValue("temperature", r.celsius, unit: "°C")], raw: r.bytes,
                        block: (Int(FM13.logStart) + index * FM13.recordSize) / FM13.recordSize))
                index += 1
            }
            if !(try piece(records)) || erased { return }
        }
    }
}
