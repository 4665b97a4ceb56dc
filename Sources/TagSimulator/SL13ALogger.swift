import ISO15693
import SensorTags

/// An ams SL13A temperature logger as the simulator plays it (docs/reference/sensor-tags.md, "ams / IDS SL13A"):
/// the custom commands FEIG's handler sends (A3, A6, A7, A8, AA, AD), answered in one chosen form — its byte order,
/// and whether it expects the manufacturer byte after the code — so that a reader using the other form hears
/// nothing, as a real chip that does not recognise the frame would stay silent. Its answers start `answerDelay` after
/// the request: later than a standard wait, inside ams's 30 ms window (a modelling assumption; ams's reader code
/// says only "~30ms needed for SL13A").
public final class SL13ALogger {
    public let options: SL13A.Options
    public var active: Bool
    public var measurements: Int
    public var pointer = 0x40
    public var limitCounts: [Int] = [0, 0, 0, 0]
    /// The start time word and the log mode's interval field (raw, as the chip keeps them).
    public var startWord: UInt32
    public var interval: Int
    public var batteryCode: UInt8 = 0x8A
    public var temperatureCode: UInt16 = 0x0215
    /// START LOG and SET PASSIVE received.
    public private(set) var controls: [String] = []
    public static let answerDelay: AirTime = .microseconds(24_000)

    public init(options: SL13A.Options, active: Bool, measurements: Int, startWord: UInt32, interval: Int) {
        self.options = options
        self.active = active
        self.measurements = measurements
        self.startWord = startWord
        self.interval = interval
    }

    /// The answer bytes after the flags byte, or an ISO error; nil: not a frame this chip recognises.
    func answer(to body: [UInt8], uid: UID) -> Result<[UInt8], ISOErrorCode>? {
        guard let (code, target, parameters) = SL13A.parse(body, options: options) else { return nil }
        if let target, target != uid { return nil }
        let order = options.byteOrder
        switch code {
        case SL13A.Code.getLogState:
            let status = UInt32(pointer & 0xFF) << 24 | UInt32(measurements & 0x3FF) << 14 | (active ? 1 : 0)
            let counters = limitCounts.enumerated().reduce(UInt32(0)) {
                $0 | UInt32($1.element & 0xFF) << (8 * $1.offset)
            }
            return .success(SL13A.bytes(status, order) + SL13A.bytes(counters, order))
        case SL13A.Code.getMeasurementSetup:
            let mode = UInt32(interval & 0x7FFF) << 10
            return .success(
                SL13A.bytes(startWord, order) + SL13A.bytes(0, order) + SL13A.bytes(mode, order)
                    + SL13A.bytes(0, order))
        case SL13A.Code.getBatteryLevel: return .success([batteryCode])
        case SL13A.Code.getTemperature:
            let c = [UInt8(temperatureCode >> 8), UInt8(temperatureCode & 0xFF)]
            return .success(order == .msb ? c : c.reversed())
        case SL13A.Code.startLog:
            guard parameters.count == 4 else { return .failure(.commandNotRecognized) }
            startWord = (try? SL13A.word(parameters[0..<4], order)) ?? 0
            active = true
            measurements = 0
            controls.append("start")
            return .success([])
        case SL13A.Code.setPassive:
            active = false
            controls.append("stop")
            return .success([])
        default: return nil
        }
    }
}

extension SL13ALogger: SimulatedPart {
    /// An image with a `sensorLog` of kind sl13a. The start word packs the start time as FEIG's handler reads it
    /// (year field raw: its base is unknown).
    public static func make(for tag: SimulatedTag) -> Self? {
        guard let l = tag.image.sensorLog, l.kind == "sl13a" else { return nil }
        return Self(
            options: SL13A.Options(byteOrder: l.byteOrder == "lsb" ? .lsb : .msb, manufacturerByte: l.manufacturerByte),
            active: l.logging, measurements: l.celsius.count, startWord: l.startSeconds,
            interval: Int(l.intervalSeconds))
    }

    /// Its custom commands in its own frame form and byte order, read before ISO decoding.
    public func rawAnswer(_ body: [UInt8], tag: SimulatedTag) -> [UInt8]? {
        switch answer(to: body, uid: tag.uid) {
        case .success(let bytes)?: return [0x00] + bytes
        case .failure(let e)?: return [0x01, e.rawValue]
        case nil: return nil
        }
    }

    public var rawAnswerDelay: AirTime { Self.answerDelay }
}

extension SimulatedTag {
    /// The tag's ams SL13A logger, if it is one.
    public var sl13a: SL13ALogger? { part(SL13ALogger.self) }
}
