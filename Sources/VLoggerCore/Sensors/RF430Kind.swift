import ISO15693
import Readers
import SensorTags

/// TI RF430FRL152H (docs/reference/sensor-tags.md): a temperature taken as TI's SLOA233 reader takes it —
/// configuration blocks 1–7, then block 0 (which starts the sample), block 0 polled until ready, block 9 read — and
/// converted by TI's formula for its sensor patch. It has no log vlogger reads: the ROM firmware's log table is not
/// in any source here.
public struct RF430Kind: SensorKind {
    public let id = "rf430"
    public let name = "TI RF430FRL152H sensor transponder"
    public var fields: [(name: String, unit: String)] { [("temperature", "°C")] }
    /// How often block 0 is read for the sample's status before giving up, and the wait between two reads.
    public var polls = 20
    public var pollWait: Duration = .milliseconds(10)
    public init() {}

    public func recognises(_ uid: UID) -> Bool { ICModel.identify(uid: uid) == .rf430frl15xh }
    /// A sample writes TI's configuration (blocks 1–7, then 0): not from a poll.
    public var measuresWithoutWriting: Bool { false }
    /// Its log is not read (no public source gives its layout).
    public var readsLog: Bool { false }

    public func info(_ client: ISO15693Client, _ uid: UID, measure: Bool, wait: (Duration) -> Void) throws
        -> SensorInfo
    {
        var info = SensorInfo(kind: id, name: name)
        guard measure else {
            // Nothing of a log's state to read; block 0 is read so that a tag not there is an error, not a blank.
            do {
                info.raw["block0"] = try client.readBlocks(uid, first: 0, count: 1)[0].data
            } catch { throw SensorFailure("RF430: \(error)") }
            info.notes = [
                "no logging state, interval, record count or battery to read; its log is not read (no public source gives its layout); --measure takes a temperature now (it writes TI's sample configuration to blocks 0–7)"
            ]
            return info
        }
        do {
            // TI's order: blocks 1–7, block 0 last (it starts the sample). Not read back: block 0 changes.
            for (block, data) in RF430.configuration {
                _ = try client.writeBlocks(uid, first: BlockNumber(UInt16(block)), blocks: [data], verify: false)
            }
            var status = RF430.SampleStatus.busy
            for attempt in 0..<polls {
                status = try RF430.SampleStatus(block0: client.readBlocks(uid, first: 0, count: 1)[0].data)
                if status != .busy { break }
                if attempt + 1 < polls { wait(pollWait) }
            }
            switch status {
            case .error: throw SensorFailure("RF430: the sample failed (block 0 status 11)")
            case .busy: throw SensorFailure("RF430: no sample after \(polls) reads of block 0")
            case .ready: break
            }
            let block9 = try client.readBlocks(uid, first: BlockNumber(UInt16(RF430.resultBlock)), count: 1)[0].data
            let sample = try RF430.Sample(block9: block9)
            info.current = [
                SensorValue("adc_reference", Double(sample.reference), unit: ""),
                SensorValue("adc_thermistor", Double(sample.thermistor), unit: ""),
            ]
            if let c = sample.celsius { info.current.insert(SensorValue("temperature", c, unit: "°C"), at: 0) }
        } catch let e as SensorFailure { throw e } catch let e as SensorError {
            throw SensorFailure("RF430: \(e)")
        } catch { throw SensorFailure("RF430: \(error)") }
        return info
    }

    /// No log: nothing is read.
    public func log(
        _ client: ISO15693Client, _ uid: UID, info: SensorInfo, from: Int, piece: ([SensorRecord]) throws -> Bool
    ) throws {}
}
