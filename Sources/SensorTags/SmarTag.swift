/// ST SmarTag (FP-SNS-SMARTAG1) on an ST25DV: the cell map behind the NDEF external record `st.com:smartag`, the
/// packing of its timestamps and values, and the ring buffer of samples, as ST's own app reads them. Facts and
/// sources: docs/reference/sensor-tags.md ("ST SmarTag on an ST25DV").
public enum SmarTag {
    /// The NDEF external type that marks a SmarTag (TNF 4).
    public static let recordType = "st.com:smartag"
    /// The first sample's cell, counted from the record payload's start.
    public static let firstSampleCell = 0x10

    /// A 32-bit little-endian cell from 4 bytes.
    public static func cell(_ bytes: ArraySlice<UInt8>) throws(SensorError) -> UInt32 {
        guard bytes.count == 4 else { throw SensorError.malformed("a SmarTag cell is 4 bytes, not \(bytes.count)") }
        let b = Array(bytes)
        return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
    }

    /// A timestamp cell: [5:0] second, [11:6] minute, [16:12] hour, [20:17] month, [25:21] day, [31:26] year − 2018.
    public struct Timestamp: Equatable, Sendable {
        public let year, month, day, hour, minute, second: Int
        public init(cell: UInt32) {
            second = Int(cell & 0x3F)
            minute = Int((cell >> 6) & 0x3F)
            hour = Int((cell >> 12) & 0x1F)
            month = Int((cell >> 17) & 0x0F)
            day = Int((cell >> 21) & 0x1F)
            year = 2018 + Int((cell >> 26) & 0x3F)
        }
        /// The cell for a date and time (the simulator writes these).
        public static func cell(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> UInt32 {
            UInt32(second & 0x3F) | UInt32(minute & 0x3F) << 6 | UInt32(hour & 0x1F) << 12
                | UInt32(month & 0x0F) << 17 | UInt32(day & 0x1F) << 21 | UInt32((year - 2018) & 0x3F) << 26
        }
        /// Whether the fields make a date (a cell of an empty ring slot does not).
        public var isValid: Bool {
            (1...12).contains(month) && (1...31).contains(day) && hour < 24 && minute < 60 && second < 60
        }
    }

    /// A value cell: [31:20] pressure = v / 10 + 810 mbar (0xFFF none), [19:13] temperature = v − 40 °C (0x7F none),
    /// [12:6] humidity % (0x7F none), [5:0] acceleration × 256 mg (0x3F none).
    public struct Value: Equatable, Sendable {
        public let temperature: Double?
        public let humidity: Double?
        public let pressure: Double?
        public let acceleration: Double?
        public init(cell: UInt32) {
            let t = (cell >> 13) & 0x7F, h = (cell >> 6) & 0x7F, p = (cell >> 20) & 0xFFF, a = cell & 0x3F
            temperature = t == 0x7F ? nil : Double(t) - 40
            humidity = h == 0x7F ? nil : Double(h)
            pressure = p == 0xFFF ? nil : Double(p) / 10 + 810
            acceleration = a == 0x3F ? nil : Double(a) * 256
        }
        /// The cell for a temperature in whole °C (−40…86), the other values absent.
        public static func cell(temperature: Int) -> UInt32 {
            0xFFF << 20 | UInt32((temperature + 40) & 0x7F) << 13 | 0x7F << 6 | 0x3F
        }
    }

    /// The header cells a log read needs.
    public struct Header: Equatable, Sendable {
        /// Cell 1: sampling interval in seconds (bits 15–0).
        public let intervalSeconds: Int
        /// Cell 1: mode (bits 23–16): 0 inactive, 1 sampling, 2 one-shot, 3 with threshold, 4 save next.
        public let mode: Int
        /// Cell 2: when acquisition started.
        public let start: Timestamp
        /// Cell 15: samples taken so far (bits 15–0) and the byte address of the next one (bits 31–16).
        public let sampleCount: Int
        public let nextSampleByte: Int
        /// Cell 10: the tag's own max and min temperature (bytes 0 and 1, each + 40).
        public let maxTemperature: Double, minTemperature: Double

        /// From the payload's first 16 cells (64 bytes).
        public init(payload: [UInt8]) throws(SensorError) {
            guard payload.count >= 64 else {
                throw SensorError.malformed("SmarTag header: \(payload.count) bytes, 64 needed")
            }
            func c(_ i: Int) throws(SensorError) -> UInt32 { try SmarTag.cell(payload[(i * 4)..<(i * 4 + 4)]) }
            let sampling = try c(1)
            intervalSeconds = Int(sampling & 0xFFFF)
            mode = Int((sampling >> 16) & 0xFF)
            start = Timestamp(cell: try c(2))
            let position = try c(15)
            sampleCount = Int(position & 0xFFFF)
            nextSampleByte = Int(position >> 16)
            let extremes = try c(10)
            maxTemperature = Double(extremes & 0xFF) - 40
            minTemperature = Double((extremes >> 8) & 0xFF) - 40
        }
    }

    /// The ring buffer's samples, oldest first: `payload` holds the cells from the record payload's start up to
    /// its last cell; `header` says how many samples there are and where the next goes.
    public static func samples(payload: [UInt8], header: Header) throws(SensorError) -> [(
        time: Timestamp, value: Value
    )] {
        let cells = payload.count / 4
        let slots = (cells - firstSampleCell) / 2
        guard slots > 0 else { return [] }
        let stored = min(header.sampleCount, slots)
        // The next sample's slot; the oldest is there too once the ring has wrapped.
        let nextCell = header.nextSampleByte / 4
        let next =
            nextCell >= firstSampleCell && nextCell < firstSampleCell + slots * 2
            ? (nextCell - firstSampleCell) / 2 : 0
        let first = header.sampleCount > slots ? next : 0
        var out: [(time: Timestamp, value: Value)] = []
        out.reserveCapacity(stored)
        for k in 0..<stored {
            let slot = (first + k) % slots
            let at = (firstSampleCell + slot * 2) * 4
            out.append(
                (
                    Timestamp(cell: try cell(payload[at..<(at + 4)])),
                    Value(cell: try cell(payload[(at + 4)..<(at + 8)]))
                ))
        }
        return out
    }
}
