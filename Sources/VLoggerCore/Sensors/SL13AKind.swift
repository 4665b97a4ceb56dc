import ISO15693
import Readers
import SensorTags

/// ams (IDS) SL13A temperature logger (docs/reference/sensor-tags.md, "ams / IDS SL13A"): its state from Get Log
/// State (A8), Get Measurement Setup (A3), Get Battery Level (AA) and, with `measure`, Get Temperature (AD), as
/// FEIG's SDK packs the fields. Two facts no public source settles are options: the byte order of the multi-byte
/// fields on air (`msb`, the default, as FEIG's handler hands the words over; or `lsb`) and whether the manufacturer
/// byte follows the command code (sent by default: ISO 15693's rule for custom commands). Every answer is kept raw
/// beside what is read from it; the temperature stays a raw code (no public formula), and the log is not read (its
/// memory layout is in no public source). Answers are awaited for 30 ms (ams's "~30ms needed for SL13A").
public struct SL13AKind: SensorKind {
    public let id = "sl13a"
    public let name = "ams SL13A temperature logger"
    public var fields: [(name: String, unit: String)] { [("temperature_code", "")] }
    public var valueFields: [(name: String, unit: String)] { [("battery_code", ""), ("temperature_code", "")] }
    /// Its log is not read (no public source gives its layout).
    public var readsLog: Bool { false }
    public var options: SL13A.Options
    public init(options: SL13A.Options = SL13A.Options()) { self.options = options }
    /// `lsb`: least significant byte first; `manufacturerByte`: 0x36 after the command code.
    public init(lsb: Bool, manufacturerByte: Bool) {
        options = SL13A.Options(byteOrder: lsb ? .lsb : .msb, manufacturerByte: manufacturerByte)
    }

    public func recognises(_ uid: UID) -> Bool { uid.manufacturer == SL13A.manufacturer }

    func command(_ client: ISO15693Client, _ uid: UID, _ code: UInt8, _ parameters: [UInt8] = []) throws -> [UInt8] {
        let frame = SL13A.request(
            code, uid: uid, parameters: parameters, options: options, flags: client.baseFlags.rawValue)
        let answer: [UInt8]
        do { answer = try client.raw(frame, wait: .window(.microseconds(30_000))) } catch {
            throw SensorFailure(
                "SL13A command 0x\(Hex.format([code])) (\(options.byteOrder.rawValue) first, manufacturer byte \(options.manufacturerByte ? "sent" : "not sent")): \(error); if the tag never answers, try the other frame form (--sl13a-manufacturer-byte) "
            )
        }
        guard let flags = answer.first else {
            throw SensorFailure("SL13A command 0x\(Hex.format([code])): an empty answer")
        }
        if flags & 0x01 != 0 {
            throw SensorFailure(
                "SL13A command 0x\(Hex.format([code])): \(ISOErrorCode(answer.count > 1 ? answer[1] : 0x0F)); if the tag is an SL13A, try the other frame form (--sl13a-manufacturer-byte)"
            )
        }
        return Array(answer.dropFirst())
    }

    public func info(_ client: ISO15693Client, _ uid: UID, measure: Bool, wait: (Duration) -> Void) throws
        -> SensorInfo
    {
        var info = SensorInfo(kind: id, name: name)
        let order = options.byteOrder
        do {
            let stateBytes = try command(client, uid, SL13A.Code.getLogState)
            let state = try SL13A.LogState(answer: stateBytes, order: order)
            info.raw["log_state"] = state.raw
            info.logging = state.active
            info.recordCount = state.measurements
            let setupBytes = try command(client, uid, SL13A.Code.getMeasurementSetup)
            let setup = try SL13A.MeasurementSetup(answer: setupBytes, order: order)
            info.raw["measurement_setup"] = setup.raw
            info.intervalSeconds = setup.interval
            let startWord = try SL13A.word(setupBytes[0..<4], order)
            info.session = "sl13a:\(String(startWord, radix: 16)):\(setup.interval)"
            let battery = try SL13A.batteryCode(try command(client, uid, SL13A.Code.getBatteryLevel))
            info.raw["battery_level"] = [battery]
            info.current.append(SensorValue("battery_code", Double(battery), unit: ""))
            if measure {
                let t = try command(client, uid, SL13A.Code.getTemperature)
                info.raw["temperature"] = t
                info.current.append(
                    SensorValue("temperature_code", Double(try SL13A.temperatureCode(t, order: order)), unit: ""))
            }
            let s = setup.start
            info.notes = [
                "start fields (raw): year field \(s.yearField), month \(s.month), day \(s.day), \(s.hour):\(s.minute):\(s.second) (the year's base is in no public source)",
                "interval: the log mode's field \(setup.interval) (its unit, probably seconds, is not settled)",
                "log: not read (the SL13A's log memory layout and °C formula are in no public source)",
                "frame form: \(order.rawValue) first, manufacturer byte \(options.manufacturerByte ? "sent" : "not sent")",
            ]
        } catch let e as SensorFailure { throw e } catch { throw SensorFailure("SL13A: \(error)") }
        return info
    }

    /// No log: its layout is in no public source.
    public func log(
        _ client: ISO15693Client, _ uid: UID, info: SensorInfo, from: Int, piece: ([SensorRecord]) throws -> Bool
    ) throws {}
}
