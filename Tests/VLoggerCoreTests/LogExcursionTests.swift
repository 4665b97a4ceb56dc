import Foundation
import ISO15693
import Readers
import SensorTags
import TagImages
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import TagSimulator
@testable import VLoggerCore
import DriverSim

/// Range rules judge every logged record of a sensor tag (issue "Sensor and data-logger tags", item 3): a cold chain
/// that went above its limit on the truck becomes one violation event at the first record above, with the record
/// times of the excursion's start and end and its duration, and a `violation_ended` at the record back within —
/// once, however the log is split across visits.
@Suite(.serialized, .drivers) struct LogExcursionTests {
    static let uid = try! UID(parsing: "E01D7000AABBCC05")
    static let start: UInt32 = 1_764_000_000  // 2025-11-24T16:00:00Z
    static let rule = Rule(
        name: "cold chain", severity: .critical, match: TagMatch(),
        check: RangeRule(field: "temperature", min: nil, max: 8),
        line: 1)

    /// An FM13 logging every 5 minutes: 4 °C, then records 10…15 at 9…11.5 °C, then 5 °C again.
    static func rig(_ celsius: [Double]) throws -> (
        SimulatedField, SimulatedTag, ISO15693Client, Store, SensorLogCollector
    ) {
        let image = try TagImage(
            uid: uid, blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 256), profileID: "fm13ht160")
        let tag = SimulatedTag(image: image, profile: .fm13ht160)
        let logger = FM13Logger(startSeconds: start, intervalSeconds: 300)
        logger.take(celsius)
        tag.attach(logger)
        let field = SimulatedField()
        field.add(tag)
        let session = ReaderSession(reader: SimulatorReader.switchedOn(field))
        let store = try Store(path: scratchPath("excursion") + ".db")
        let writer = StoreWriter(store: store, gateway: "gw-dock", batchSize: 500, flushIntervalMs: 2000)
        return (field, tag, session.client, store, SensorLogCollector(store: store, writer: writer, gateway: "gw-dock"))
    }

    static let trip = Array(repeating: 4.0, count: 10) + [9, 10, 11.5, 11, 10, 9] + Array(repeating: 5.0, count: 14)

    func visit(_ r: (SimulatedField, SimulatedTag, ISO15693Client, Store, SensorLogCollector), pieces: Int = .max)
        throws
        -> SensorLogCollector.Outcome
    {
        try r.4.collect(
            r.2, Self.uid, kind: FM13Kind(), reader: "dock-3", location: "Dock 3", now: { 1_764_500_000_000 },
            maxPieces: pieces, rules: [Self.rule])
    }

    @Test func anExcursionIsOneViolationWithItsStartAndEnd() throws {
        let r = try Self.rig(Self.trip)
        defer { r.3.close() }
        let o = try visit(r)
        #expect(o.stored == 30)
        let violations = try r.3.events(kind: .violation), ended = try r.3.events(kind: .violationEnded)
        #expect(violations.count == 1 && ended.count == 1, "\(violations.map(\.detail)) \(ended.map(\.detail))")
        // Records 10 to 15 (start + 10 × 300 s … + 15 × 300 s); back within at record 16.
        let first = Millis(Self.start) * 1000 + 10 * 300_000, back = Millis(Self.start) * 1000 + 16 * 300_000
        let v = try #require(violations.first)
        #expect(v.time == first && v.name == "cold chain" && v.severity == .critical && v.uid == Self.uid)
        #expect(
            v.detail
                == "logged on the tag: temperature = 9 is above 8 from \(TimeSpec.format(first)) to \(TimeSpec.format(back)) on the tag (30m, 6 records from record 10)",
            "\(v.detail)")
        #expect(ended.first?.time == back && ended.first?.detail.contains("back within at record 16") == true)
        print("excursion: \(v.detail)")
    }

    @Test func anExcursionSplitOverVisitsIsReportedOnce() throws {
        // At the first dock the tag has logged 13 records (the excursion began at record 10 and goes on).
        let r = try Self.rig(Array(Self.trip.prefix(13)))
        defer { r.3.close() }
        _ = try visit(r)
        let open = try r.3.events(kind: .violation)
        #expect(open.count == 1 && open[0].detail.contains("still at the last record read"), "\(open.map(\.detail))")
        #expect(try r.3.events(kind: .violationEnded).isEmpty)
        // The truck goes on; the next dock reads the rest: the excursion ends, no second violation.
        let logger = try #require(r.1.fm13)
        logger.take(Array(Self.trip.dropFirst(13)))
        _ = try visit(r)
        #expect(try r.3.events(kind: .violation).count == 1)
        let ended = try r.3.events(kind: .violationEnded)
        #expect(ended.count == 1 && ended[0].detail.contains("6 records from record 10"), "\(ended.map(\.detail))")
        // A third visit with nothing new judges nothing again.
        _ = try visit(r)
        #expect(try r.3.events(kind: .violation).count == 1 && r.3.events(kind: .violationEnded).count == 1)
    }

    @Test func withinLimitsNothingIsReported() throws {
        let r = try Self.rig(Array(repeating: 4.0, count: 30))
        defer { r.3.close() }
        _ = try visit(r)
        #expect(try r.3.events().isEmpty)
    }
}

/// Audits can require a sensor tag's log read completely (register column `sensor_log = complete`): the tag's own
/// record count for its session, asked over the air, against the records the store holds of that session.
@Suite(.serialized, .drivers) struct SensorLogAuditTests {
    @Test func theAuditComparesTheTagsCountWithTheStore() throws {
        let r = try LogExcursionTests.rig(Array(repeating: 4.0, count: 200))
        defer { r.3.close() }
        let session = ReaderSession(reader: SimulatorReader.switchedOn(r.0))
        let asset = AssetRow(
            uid: LogExcursionTests.uid, assetID: "PAL-0042", location: "dock", extra: ["sensor_log": "complete"])
        // Nothing collected yet.
        #expect(
            Auditor.checks(asset, session, store: r.3) == [
                "sensor_log: 0 of 200 records of session fm13:1764000000:0:300 in the store, registered complete"
            ])
        // One piece of 63 records, then the rest.
        _ = try r.4.collect(
            r.2, LogExcursionTests.uid, kind: FM13Kind(), reader: nil, location: nil, now: { 1_764_500_000_000 },
            maxPieces: 1)
        #expect(Auditor.checks(asset, session, store: r.3).first?.contains("63 of 200 records") == true)
        _ = try r.4.collect(
            r.2, LogExcursionTests.uid, kind: FM13Kind(), reader: nil, location: nil, now: { 1_764_500_000_000 })
        #expect(Auditor.checks(asset, session, store: r.3).isEmpty)
        // A tag of no sensor kind fails the check with the reason.
        var other = asset
        other.uid = try UID(parsing: "E004010812345601")
        #expect(
            Auditor.checks(other, session, store: r.3) == [
                "sensor_log: not a sensor tag vlogger knows, registered complete"
            ])
    }
}
