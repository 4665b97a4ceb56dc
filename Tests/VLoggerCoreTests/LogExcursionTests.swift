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
    static let start = SensorLogTests.start  // 2025-11-24T16:00:00Z
    static let rule = Rule(
        name: "cold chain", severity: .critical, match: TagMatch(),
        check: RangeRule(field: "temperature", min: nil, max: 8),
        line: 1)

    /// An FM13 logging every 5 minutes from `SensorLogTests.start` (1764000000).
    static func rig(_ celsius: [Double]) throws -> SensorLogTests.Rig {
        try SensorLogTests.rig(celsius: celsius, uid: uid, interval: 300)
    }

    static let trip = Array(repeating: 4.0, count: 10) + [9, 10, 11.5, 11, 10, 9] + Array(repeating: 5.0, count: 14)

    func visit(_ r: SensorLogTests.Rig, pieces: Int = .max) throws -> SensorLogCollector.Outcome {
        try r.collector.collect(
            r.client, Self.uid, kind: FM13Kind(), reader: "dock-3", location: "Dock 3", now: { 1_764_500_000_000 },
            maxPieces: pieces, rules: [Self.rule])
    }

    @Test func anExcursionIsOneViolationWithItsStartAndEnd() throws {
        let r = try Self.rig(Self.trip)
        defer { r.store.close() }
        let o = try visit(r)
        #expect(o.stored == 30)
        let violations = try r.store.events(kind: .violation), ended = try r.store.events(kind: .violationEnded)
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
        defer { r.store.close() }
        _ = try visit(r)
        let open = try r.store.events(kind: .violation)
        #expect(open.count == 1 && open[0].detail.contains("still at the last record read"), "\(open.map(\.detail))")
        #expect(try r.store.events(kind: .violationEnded).isEmpty)
        // The truck goes on; the next dock reads the rest: the excursion ends, no second violation.
        let logger = try #require(r.tag.fm13)
        logger.take(Array(Self.trip.dropFirst(13)))
        _ = try visit(r)
        #expect(try r.store.events(kind: .violation).count == 1)
        let ended = try r.store.events(kind: .violationEnded)
        #expect(ended.count == 1 && ended[0].detail.contains("6 records from record 10"), "\(ended.map(\.detail))")
        // A third visit with nothing new judges nothing again.
        _ = try visit(r)
        #expect(try r.store.events(kind: .violation).count == 1 && r.store.events(kind: .violationEnded).count == 1)
    }

    @Test func withinLimitsNothingIsReported() throws {
        let r = try Self.rig(Array(repeating: 4.0, count: 30))
        defer { r.store.close() }
        _ = try visit(r)
        #expect(try r.store.events().isEmpty)
    }
}

/// Audits can require a sensor tag's log read completely (register column `sensor_log = complete`): the tag's own
/// record count for its session, asked over the air, against the records the store holds of that session.
@Suite(.serialized, .drivers) struct SensorLogAuditTests {
    @Test func theAuditComparesTheTagsCountWithTheStore() throws {
        let r = try LogExcursionTests.rig(Array(repeating: 4.0, count: 200))
        defer { r.store.close() }
        let session = ReaderSession(reader: SimulatorReader.switchedOn(r.field))
        let asset = AssetRow(
            uid: LogExcursionTests.uid, assetID: "PAL-0042", location: "dock", extra: ["sensor_log": "complete"])
        // Nothing collected yet.
        #expect(
            Auditor.checks(asset, session, store: r.store) == [
                "sensor_log: 0 of 200 records of session fm13:1764000000:0:300 in the store, registered complete"
            ])
        // One piece of 63 records, then the rest.
        _ = try r.collector.collect(
            r.client, LogExcursionTests.uid, kind: FM13Kind(), reader: nil, location: nil, now: { 1_764_500_000_000 },
            maxPieces: 1)
        #expect(Auditor.checks(asset, session, store: r.store).first?.contains("63 of 200 records") == true)
        _ = try r.collector.collect(
            r.client, LogExcursionTests.uid, kind: FM13Kind(), reader: nil, location: nil, now: { 1_764_500_000_000 })
        #expect(Auditor.checks(asset, session, store: r.store).isEmpty)
        // A tag of no sensor kind fails the check with the reason.
        var other = asset
        other.uid = try UID(parsing: "E004010812345601")
        #expect(
            Auditor.checks(other, session, store: r.store) == [
                "sensor_log: not a sensor tag vlogger knows, registered complete"
            ])
    }
}
