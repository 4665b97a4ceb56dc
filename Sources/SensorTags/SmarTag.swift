import VLoggerModel

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
        /// The date and time as UNIX seconds, reading the fields as UTC (the tag keeps no zone: it counts from the time
        /// its configuring phone gave it).
        public var unixSeconds: Int64 {
            Int64(TimeSpec.daysFromCivil(year, month, day)) * 86_400 + Int64(hour) * 3600 + Int64(minute) * 60
                + Int64(second)
        }

        /// The cell for a UNIX time (UTC), as the simulator writes samples.
        public static func cell(unixSeconds t: Int64) -> UInt32 {
            let days = TimeSpec.floorDiv(t, 86_400)
            let secs = t - days * 86_400
            let (y, m, d) = TimeSpec.civilFromDays(Int(days))
            return cell(
                year: y, month: m, day: d, hour: Int(secs / 3600), minute: Int(secs % 3600 / 60),
                second: Int(secs % 60))
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

    /// The ring buffer's samples, oldest first: `payload` holds the cells from the record payload's start (cell 0,
    /// at block `origin` of the tag) up to the cell before the tag's last (ST: "the last cell is used for the TLV");
    /// `header` says how many samples there are and where the next goes. The next-sample pointer is a byte address
    /// of the whole memory, as the tag's I²C side writes it: ÷ 4 for the RF block (`SamplePositionCell.kt`
    /// `unpackSamplePosition`).
    public static func samples(payload: [UInt8], header: Header, origin: Int = 0) throws(SensorError) -> [(
        time: Timestamp, value: Value
    )] {
        let slots = ringSlots(cells: payload.count / 4)
        guard slots > 0 else { return [] }
        let stored = min(header.sampleCount, slots)
        let first = oldestSlot(header: header, origin: origin, slots: slots)
        var out: [(time: Timestamp, value: Value)] = []
        out.reserveCapacity(stored)
        for k in 0..<stored {
            let at = (firstSampleCell + ((first + k) % slots) * 2) * 4
            out.append(
                (
                    Timestamp(cell: try cell(payload[at..<(at + 4)])),
                    Value(cell: try cell(payload[(at + 4)..<(at + 8)]))
                ))
        }
        return out
    }

    /// Sample slots in a ring of `cells` cells from the payload's start: two cells each from cell 0x10 (ST:
    /// `maxSample = (lastDataSample − firstDataSamplePtr) / 2`).
    public static func ringSlots(cells: Int) -> Int { max(0, (cells - firstSampleCell) / 2) }

    /// Why a header cannot be believed with this ring, or nil (issue 46: a corrupt header counting more samples than
    /// were ever written made phantom readings). The firmware moves its next-sample pointer one slot (8 bytes) per
    /// sample from the ring's first slot and wraps it at the end (ST's `SamplePositionCell`), so the pointer must name
    /// a slot of the ring, and, before the ring has wrapped, the slot after the last sample counted.
    public static func problem(header: Header, origin: Int, slots: Int) -> String? {
        guard header.sampleCount > 0 else { return nil }
        guard slots > 0 else { return "the header counts \(header.sampleCount) samples, but the memory holds no ring" }
        let byte = header.nextSampleByte
        let cell = byte / 4 - origin - firstSampleCell
        guard byte % 8 == (origin * 4) % 8, cell >= 0, cell < slots * 2, cell % 2 == 0 else {
            return
                "its next-sample pointer 0x\(String(byte, radix: 16, uppercase: true)) is not a slot of the ring (blocks \(origin + firstSampleCell)…\(origin + firstSampleCell + slots * 2 - 1))"
        }
        let next = cell / 2
        if header.sampleCount < slots, next != header.sampleCount {
            return
                "it counts \(header.sampleCount) samples of a ring of \(slots), but its next-sample pointer is at slot \(next)"
        }
        // Once the ring is full (ST's app reads it so from `sampleCounter ≥ maxSample` on, and a firmware may stop its
        // counter at the ring's size) the pointer may be any slot of the ring.
        return nil
    }

    /// Whether a sample slot was never written: its cells erased (all 0x00 or all 0xFF), or no valid time in it.
    public static func isErased(_ raw: [UInt8]) -> Bool {
        guard raw.count == 8 else { return true }
        let time = raw[0..<4], value = raw[4..<8]
        if time.allSatisfy({ $0 == 0 }) && value.allSatisfy({ $0 == 0 }) { return true }
        if raw.allSatisfy({ $0 == 0xFF }) { return true }
        guard let t = try? cell(time) else { return true }
        return !Timestamp(cell: t).isValid
    }

    /// The slot of the oldest sample: the next sample's slot once the ring is full (`sampleCounter ≥ maxSample`, as
    /// ST's `readDataSample` tests it: a firmware may stop its counter at the ring's size), else slot 0.
    public static func oldestSlot(header: Header, origin: Int, slots: Int) -> Int {
        guard header.sampleCount >= slots, slots > 0 else { return 0 }
        let next = header.nextSampleByte / 4 - origin - firstSampleCell
        return next >= 0 && next < slots * 2 ? next / 2 : 0
    }

    /// The block where the SmarTag record's payload starts (the origin of the cell map), found as ST's app walks the
    /// NDEF area (`SmarTag.kt` `findSmarTagRecord`): records from cell 2 (cell 3 after an 8-byte capability
    /// container), each record's size in whole cells; the payload of the `st.com:smartag` external record starts at
    /// its cell plus (header + type + id length) ÷ 4. `memory`: the tag's first blocks (4 bytes each).
    public static func origin(memory: [UInt8]) throws(SensorError) -> Int {
        guard memory.count >= 8, memory[0] == 0xE1 || memory[0] == 0xE2 else {
            throw SensorError.malformed("no NDEF capability container in block 0")
        }
        var offset = memory[2] == 0 ? 3 : 2
        while offset * 4 + 3 <= memory.count {
            let at = offset * 4
            let flags = memory[at]
            let short = flags & 0x10 != 0, hasID = flags & 0x08 != 0
            let headerLength = 2 + (short ? 1 : 4) + (hasID ? 1 : 0)
            guard at + headerLength <= memory.count else { break }
            let typeLength = Int(memory[at + 1])
            var payloadLength = Int(memory[at + 2])
            if !short {
                payloadLength = (2...5).reduce(0) { $0 << 8 | Int(memory[at + $1]) }
            }
            let idLength = hasID ? Int(memory[at + headerLength - 1]) : 0
            let typeAt = at + headerLength
            if flags & 0x07 == 0x04, typeAt + typeLength <= memory.count,
                String(decoding: memory[typeAt..<(typeAt + typeLength)], as: UTF8.self) == recordType
            {
                return offset + (headerLength + typeLength + idLength) / 4
            }
            let size = headerLength + typeLength + idLength + payloadLength
            guard flags & 0x40 == 0, size >= 4 else { break }  // the last record (ME), or no progress
            offset += size / 4
        }
        throw SensorError.malformed("no \(recordType) record in the NDEF message")
    }

    /// A SmarTag's memory as ST's firmware lays it out, for the simulator and tests: an ST25DV's 8-byte capability
    /// container, the NDEF TLV with a 3-byte length, one external record `st.com:smartag` with a 4-byte payload length
    /// (its 20-byte header and type end on a cell: the payload, the cell map, starts at block 8), the header cells and
    /// the ring of samples; the TLV terminator in the last block. `samples`: (UNIX seconds, °C) oldest first; more
    /// than the ring holds wrap round, as the firmware's do.
    public static func memory(blockCount: Int, intervalSeconds: Int, start: Int64, samples: [(Int64, Int)]) -> [UInt8] {
        var m = [UInt8](repeating: 0, count: blockCount * 4)
        func put(_ block: Int, _ v: UInt32) {
            for k in 0..<4 { m[block * 4 + k] = UInt8(truncatingIfNeeded: v >> (8 * k)) }
        }
        let blocksOfMemory = UInt16(clamping: blockCount * 4 / 8)
        m.replaceSubrange(
            0..<8, with: [0xE2, 0x40, 0x00, 0x01, 0x00, 0x00, UInt8(blocksOfMemory >> 8), UInt8(blocksOfMemory & 0xFF)])
        let origin = 8
        let payloadLength = (blockCount - 1 - origin) * 4
        let tlvLength = 20 + payloadLength
        m.replaceSubrange(8..<12, with: [0x03, 0xFF, UInt8(tlvLength >> 8 & 0xFF), UInt8(tlvLength & 0xFF)])
        let header: [UInt8] =
            [0xC4, UInt8(recordType.utf8.count)]
            + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: payloadLength >> $0) }
            + Array(recordType.utf8)
        m.replaceSubrange(12..<(12 + header.count), with: header)
        m[(blockCount - 1) * 4] = 0xFE
        // Cell 0: firmware version; 1: interval, mode 1 (sampling), temperature enabled; 2: the start.
        put(origin + 0, 0x0001_0200)
        put(origin + 1, UInt32(intervalSeconds & 0xFFFF) | 1 << 16 | 1 << 24)
        put(origin + 2, Timestamp.cell(unixSeconds: start))
        let slots = ringSlots(cells: blockCount - 1 - origin)
        var next = 0
        var hi = Int.min, lo = Int.max
        for (t, c) in samples where slots > 0 {
            put(origin + firstSampleCell + next * 2, Timestamp.cell(unixSeconds: t))
            put(origin + firstSampleCell + next * 2 + 1, Value.cell(temperature: c))
            next = (next + 1) % slots
            hi = max(hi, c)
            lo = min(lo, c)
        }
        if !samples.isEmpty { put(origin + 10, UInt32((hi + 40) & 0xFF) | UInt32((lo + 40) & 0xFF) << 8) }
        let nextByte = (origin + firstSampleCell + next * 2) * 4
        put(origin + 15, UInt32(min(samples.count, 0xFFFF)) | UInt32(nextByte & 0xFFFF) << 16)
        return m
    }
}
