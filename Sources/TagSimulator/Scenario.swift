import TagImages
import Foundation
import ISO15693

/// A dynamic field: tags that leave and arrive at given times, sensor blocks whose value changes over
/// time, and faults injected at given times. Kept as `scenario.json` in a field folder (documented in
/// `Config/demo-field/README.md`); `vlogger run` plays it against its own clock.
public struct Scenario: Equatable, Sendable {
    public enum Action: Equatable, Sendable {
        case leave(UID)
        case arrive(UID)
        /// The tag leaves after this many more exchanges (mid-read).
        case leaveMidRead(UID, exchanges: Int)
        case noResponse(UID?, count: Int)
        case corruptCRC(UID?, count: Int)
        case collision(count: Int)
    }

    public struct Step: Equatable, Sendable {
        public var atMs: Int64
        public var action: Action
        public init(atMs: Int64, action: Action) {
            self.atMs = atMs
            self.action = action
        }
    }

    /// How a signal's value is stored in the block.
    public enum Encoding: String, Sendable, CaseIterable {
        case u8, i8, u16le, u16be, i16le, i16be, u32le, u32be, i32le, i32be

        var width: Int { [.u8, .i8].contains(self) ? 1 : [.u32le, .u32be, .i32le, .i32be].contains(self) ? 4 : 2 }
        var signed: Bool { [.i8, .i16le, .i16be, .i32le, .i32be].contains(self) }
        var littleEndian: Bool { ![.u16be, .i16be, .u32be, .i32be].contains(self) }

        /// The raw integer's bytes, clamped to the type's range.
        func encode(_ raw: Double) -> [UInt8] {
            let bits = width * 8
            let lo = signed ? -pow(2.0, Double(bits - 1)) : 0
            let hi = signed ? pow(2.0, Double(bits - 1)) - 1 : pow(2.0, Double(bits)) - 1
            let v = Int64(min(max(raw.rounded(), lo), hi))
            let u = UInt64(bitPattern: v)
            let le = (0..<width).map { UInt8(truncatingIfNeeded: u >> (8 * UInt64($0))) }
            return littleEndian ? le : le.reversed()
        }
    }

    /// A value written into a tag's block each time the scenario advances:
    /// `value(t) = start + slope·t + amplitude·sin(2πt / period)`, clamped to [min, max], stored as
    /// `round(value / scale)` in `encoding` at `block`/`byte`.
    public struct Signal: Equatable, Sendable {
        public var uid: UID
        public var block: Int
        public var byte: Int
        public var encoding: Encoding
        public var scale: Double
        public var start: Double
        public var slopePerHour: Double
        public var amplitude: Double
        public var periodMs: Int64
        public var min: Double?
        public var max: Double?
        /// The drift starts again from `start` every `repeatMs` (0: it never does): a cooler that catches up.
        public var repeatMs: Int64

        public init(
            uid: UID, block: Int, byte: Int, encoding: Encoding, scale: Double, start: Double, slopePerHour: Double,
            amplitude: Double, periodMs: Int64, min: Double?, max: Double?, repeatMs: Int64 = 0
        ) {
            self.repeatMs = repeatMs
            self.uid = uid
            self.block = block
            self.byte = byte
            self.encoding = encoding
            self.scale = scale
            self.start = start
            self.slopePerHour = slopePerHour
            self.amplitude = amplitude
            self.periodMs = periodMs
            self.min = min
            self.max = max
        }

        public func value(atMs t: Int64) -> Double {
            let drifting = repeatMs > 0 ? ((t % repeatMs) + repeatMs) % repeatMs : t
            let hours = Double(drifting) / 3_600_000
            var v = start + slopePerHour * hours
            if periodMs > 0 { v += amplitude * Foundation.sin(2 * Double.pi * Double(t) / Double(periodMs)) }
            if let min { v = Swift.max(v, min) }
            if let max { v = Swift.min(v, max) }
            return v
        }

        public func bytes(atMs t: Int64) -> [UInt8] { encoding.encode(value(atMs: t) / scale) }
    }

    public var steps: [Step]
    public var signals: [Signal]

    public init(steps: [Step] = [], signals: [Signal] = []) {
        self.steps = steps.sorted { $0.atMs < $1.atMs }
        self.signals = signals
    }

    /// Whether a JSON text is a scenario (has the `vlogger-scenario` key).
    public static func isScenario(_ text: String) -> Bool {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return false }
        return obj["vlogger-scenario"] != nil
    }

    public static func decode(_ text: String) throws(TagImageError) -> Scenario {
        guard let obj = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            throw TagImageError("not a JSON object")
        }
        guard (obj["vlogger-scenario"] as? Int) == 1 else {
            throw TagImageError("\"vlogger-scenario\" must be 1 (the only version)")
        }
        for k in obj.keys where !["vlogger-scenario", "description", "steps", "signals"].contains(k) {
            throw TagImageError("unknown key \"\(k)\"; expected vlogger-scenario, description, steps, signals")
        }
        func uid(_ any: Any?, _ ctx: String) throws(TagImageError) -> UID {
            guard let s = any as? String else { throw TagImageError("\(ctx): \"uid\" must be a UID string") }
            do { return try UID(parsing: s) } catch { throw TagImageError("\(ctx): \(error)") }
        }
        var steps: [Step] = []
        for (i, any) in ((obj["steps"] as? [Any]) ?? []).enumerated() {
            let ctx = "steps[\(i)]"
            guard let s = any as? [String: Any] else { throw TagImageError("\(ctx): expected an object") }
            let at = try time(s["at"], ctx + ".at")
            guard let what = s["do"] as? String else {
                throw TagImageError(
                    "\(ctx): \"do\" must be leave, arrive, leave-mid-read, no-response, corrupt-crc or collision")
            }
            let count = (s["count"] as? Int) ?? 1
            let action: Action
            switch what {
            case "leave": action = .leave(try uid(s["uid"], ctx))
            case "arrive": action = .arrive(try uid(s["uid"], ctx))
            case "leave-mid-read":
                action = .leaveMidRead(try uid(s["uid"], ctx), exchanges: (s["exchanges"] as? Int) ?? 2)
            case "no-response": action = .noResponse(s["uid"] == nil ? nil : try uid(s["uid"], ctx), count: count)
            case "corrupt-crc": action = .corruptCRC(s["uid"] == nil ? nil : try uid(s["uid"], ctx), count: count)
            case "collision": action = .collision(count: count)
            default: throw TagImageError("\(ctx): unknown \"do\": \"\(what)\"")
            }
            steps.append(Step(atMs: at, action: action))
        }
        var signals: [Signal] = []
        for (i, any) in ((obj["signals"] as? [Any]) ?? []).enumerated() {
            let ctx = "signals[\(i)]"
            guard let s = any as? [String: Any] else { throw TagImageError("\(ctx): expected an object") }
            let block: Int
            if let n = s["block"] as? Int, BlockNumber(exactly: n) != nil {
                block = n
            } else if let t = s["block"] as? String, let b = try? BlockNumber(parsing: t) {
                block = b.int
            } else {
                throw TagImageError("\(ctx): \"block\" must be a block number, 0…0xFFFF (\"0xF8\" or 248)")
            }
            let byte = (s["byte"] as? Int) ?? 0
            guard s["byte"] == nil || s["byte"] is Int, (0...255).contains(byte) else {
                throw TagImageError("\(ctx): \"byte\" must be a byte offset in the block, 0…255")
            }
            guard let encName = s["type"] as? String, let enc = Encoding(rawValue: encName) else {
                throw TagImageError(
                    "\(ctx): \"type\" must be one of \(Encoding.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            func num(_ k: String, _ d: Double?) throws(TagImageError) -> Double? {
                guard let v = s[k] else { return d }
                guard let n = v as? Double, n.isFinite else { throw TagImageError("\(ctx): \"\(k)\" must be a number") }
                return n
            }
            let scale = try num("scale", 1) ?? 1
            guard scale != 0 else { throw TagImageError("\(ctx): \"scale\" must not be 0") }
            signals.append(
                Signal(
                    uid: try uid(s["uid"], ctx), block: block, byte: byte, encoding: enc,
                    scale: scale, start: try num("start", 0) ?? 0, slopePerHour: try num("slope-per-hour", 0) ?? 0,
                    amplitude: try num("amplitude", 0) ?? 0,
                    periodMs: s["period"] == nil ? 0 : try time(s["period"], ctx + ".period"),
                    min: try num("min", nil), max: try num("max", nil),
                    repeatMs: s["repeat"] == nil ? 0 : try time(s["repeat"], ctx + ".repeat")))
        }
        return Scenario(steps: steps, signals: signals)
    }

    /// "90s", "500ms", "2m", "1h", or a number of seconds; at most 10 years (a larger number would not
    /// fit the milliseconds it becomes).
    static func time(_ any: Any?, _ ctx: String) throws(TagImageError) -> Int64 {
        let limit = 10 * 365.25 * 86_400_000.0
        func ms(_ v: Double) throws(TagImageError) -> Int64 {
            guard v.isFinite, v >= 0, v <= limit else {
                throw TagImageError("\(ctx): a time of 0 to 10 years, not \(v / 1000) s")
            }
            return Int64(v.rounded())
        }
        if let n = any as? Double { return try ms(n * 1000) }
        guard let s = any as? String else {
            throw TagImageError("\(ctx): expected a time (\"90s\", \"500ms\", \"2m\") or seconds")
        }
        for (suffix, f) in [("ms", 1.0), ("s", 1000.0), ("m", 60_000.0), ("h", 3_600_000.0)] where s.hasSuffix(suffix) {
            if let v = Double(s.dropLast(suffix.count)) { return try ms(v * f) }
        }
        throw TagImageError("\(ctx): '\(s)' is not a time; write 90s, 500ms, 2m or 1h")
    }
}

/// Plays a scenario against a field: `advance(toMs:)` applies every step due by then and rewrites signal
/// blocks with their value at that time.
public final class ScenarioPlayer {
    public let scenario: Scenario
    public let field: SimulatedField
    private var next = 0
    private var away: [UID: SimulatedTag] = [:]

    /// Tags whose first step is an arrival start out of the field.
    public init(scenario: Scenario, field: SimulatedField) {
        self.scenario = scenario
        self.field = field
        var firstStep: [UID: Scenario.Action] = [:]
        for s in scenario.steps {
            switch s.action {
            case let .arrive(u), let .leave(u), let .leaveMidRead(u, _):
                if firstStep[u] == nil { firstStep[u] = s.action }
            default: break
            }
        }
        for (u, a) in firstStep { if case .arrive = a, let t = field.remove(u) { away[u] = t } }
    }

    public func advance(toMs t: Int64) {
        while next < scenario.steps.count, scenario.steps[next].atMs <= t {
            switch scenario.steps[next].action {
            case let .leave(u): if let tag = field.remove(u) { away[u] = tag }
            case let .arrive(u):
                if let tag = away.removeValue(forKey: u) { field.add(tag); if field.isOn { field.powerOn() } }
            case let .leaveMidRead(u, n):
                if let tag = field.tag(u) { away[u] = tag }
                field.inject(.leaveAfter(uid: u, exchanges: n))
            case let .noResponse(u, n): field.inject(.noResponse(uid: u, count: n))
            case let .corruptCRC(u, n): field.inject(.corruptCRC(uid: u, count: n))
            case let .collision(n): field.inject(.collision(count: n))
            }
            next += 1
        }
        for s in scenario.signals {
            let tag = field.tag(s.uid) ?? away[s.uid]
            tag?.sense(block: s.block, byte: s.byte, bytes: s.bytes(atMs: t))
        }
    }
}
