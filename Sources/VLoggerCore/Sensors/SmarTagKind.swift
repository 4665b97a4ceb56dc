import ISO15693
import Readers
import SensorTags

/// ST SmarTag (FP-SNS-SMARTAG1) on an ST25DV (docs/reference/sensor-tags.md): found by its NDEF external record
/// `st.com:smartag`, whose payload is the cell map — the sampling configuration, the start, the sample counter and
/// next-sample pointer, and the ring of (timestamp, value) samples — read with plain block reads, as ST's app
/// does. Record `i` is the i-th sample since the start; once the ring has wrapped, the samples before the oldest
/// kept are gone from the tag.
public struct SmarTagKind: SensorKind {
    public let id = "smartag"
    public let name = "ST SmarTag (ST25DV) data logger"
    public var fields: [(name: String, unit: String)] {
        [("temperature", "°C"), ("humidity", "%"), ("pressure", "mbar"), ("acceleration", "mg")]
    }
    public var valueFields: [(name: String, unit: String)] {
        [("temperature_max", "°C"), ("temperature_min", "°C")]
    }
    /// Sample slots read per piece (two blocks each).
    public var slotsPerPiece = 64
    public init() {}

    public func recognises(_ uid: UID) -> Bool { STSecurity.hasAreas(ICModel.identify(uid: uid)) }

    struct Layout {
        var origin: Int
        var header: SmarTag.Header
        var slots: Int
    }

    func layout(_ client: ISO15693Client, _ uid: UID) throws -> Layout {
        do {
            let memory = try client.memory(of: uid)
            let head = try client.readBlocks(uid, first: 0, count: min(16, memory.blockCount)).flatMap(\.data)
            let origin = try SmarTag.origin(memory: head)
            guard origin + SmarTag.firstSampleCell < memory.blockCount, let first = BlockNumber(exactly: origin) else {
                throw SensorFailure("SmarTag: the cell map at block \(origin) does not fit \(memory.blockCount) blocks")
            }
            let cells = try client.readBlocks(uid, first: first, count: SmarTag.firstSampleCell).flatMap(\.data)
            return Layout(
                origin: origin, header: try SmarTag.Header(payload: cells),
                slots: SmarTag.ringSlots(cells: memory.blockCount - 1 - origin))
        } catch let e as SensorFailure { throw e } catch let e as SensorError {
            throw SensorFailure("SmarTag: \(e) (is this ST25DV a SmarTag?)")
        } catch { throw SensorFailure("SmarTag: \(error)") }
    }

    public func info(_ client: ISO15693Client, _ uid: UID, measure: Bool, wait: (Duration) -> Void) throws
        -> SensorInfo
    {
        let l = try layout(client, uid)
        var info = SensorInfo(kind: id, name: name)
        info.logging = l.header.mode != 0
        info.intervalSeconds = l.header.intervalSeconds
        info.recordCount = l.header.sampleCount
        info.start = l.header.start.isValid ? l.header.start.unixSeconds * 1000 : nil
        let startCell = SmarTag.Timestamp.cell(
            year: l.header.start.year, month: l.header.start.month, day: l.header.start.day,
            hour: l.header.start.hour, minute: l.header.start.minute, second: l.header.start.second)
        info.session = "smartag:\(String(startCell, radix: 16)):\(l.header.intervalSeconds)"
        info.current = [
            SensorValue("temperature_max", l.header.maxTemperature, unit: "°C"),
            SensorValue("temperature_min", l.header.minTemperature, unit: "°C"),
        ]
        return info
    }

    public func log(
        _ client: ISO15693Client, _ uid: UID, info: SensorInfo, from: Int, piece: ([SensorRecord]) throws -> Bool
    ) throws {
        let l = try layout(client, uid)
        // A header is believed only as far as the memory it describes holds (issue 46): a count or pointer that does
        // not fit the ring is refused before a sample is read.
        if let why = SmarTag.problem(header: l.header, origin: l.origin, slots: l.slots) {
            throw SensorFailure("SmarTag header not believed: \(why); no sample read")
        }
        guard l.slots > 0 else { return }
        let count = l.header.sampleCount
        let kept = min(count, l.slots)
        let lost = count - kept
        let oldest = SmarTag.oldestSlot(header: l.header, origin: l.origin, slots: l.slots)
        var k = max(0, from - lost)
        while k < kept {
            // The next run of slots, contiguous in memory (the ring wraps at most once), at most a piece.
            let slot = (oldest + k) % l.slots
            let n = min(slotsPerPiece, kept - k, l.slots - slot)
            let firstBlock = l.origin + SmarTag.firstSampleCell + slot * 2
            guard let first = BlockNumber(exactly: firstBlock) else { return }
            let data: [UInt8]
            do { data = try client.readBlocks(uid, first: first, count: n * 2).flatMap(\.data) } catch {
                throw SensorFailure("SmarTag samples at block \(firstBlock): \(error)")
            }
            var records: [SensorRecord] = []
            for j in 0..<n {
                let raw = Array(data[(j * 8)..<(j * 8 + 8)])
                // A slot never written (erased, or no valid time) is never a reading.
                if SmarTag.isErased(raw) { continue }
                let time = SmarTag.Timestamp(cell: try SmarTag.cell(raw[0..<4]))
                let v = SmarTag.Value(cell: try SmarTag.cell(raw[4..<8]))
                var values: [SensorValue] = []
                if let t = v.temperature { values.append(SensorValue("temperature", t, unit: "°C")) }
                if let h = v.humidity { values.append(SensorValue("humidity", h, unit: "%")) }
                if let p = v.pressure { values.append(SensorValue("pressure", p, unit: "mbar")) }
                if let a = v.acceleration { values.append(SensorValue("acceleration", a, unit: "mg")) }
                records.append(
                    SensorRecord(
                        index: lost + k + j, time: time.isValid ? time.unixSeconds * 1000 : nil, values: values,
                        raw: raw, block: firstBlock + j * 2))
            }
            k += n
            if !(try piece(records)) { return }
        }
    }
}
