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

/// A Fudan FM13's log collected into the store over visits (issue "Sensor and data-logger tags", item 2): a full
/// log of 4,864 records (the chip's capacity in normal mode, docs/reference/sensor-tags.md) is read in three
/// visits — the tag leaves twice in the middle of a read — and every record is stored exactly once, each with its
/// time on the tag (start + index × interval, Fudan's SDK); a fourth visit after 10 more records stores those 10;
/// a restarted log is a new session read from its first record.
@Suite(.serialized, .drivers) struct SensorLogTests {
    static let uid = try! UID(parsing: "E01D7000AABBCC02")
    static let start: UInt32 = 1_764_000_000

    struct Rig {
        let field: SimulatedField
        let tag: SimulatedTag
        let logger: FM13Logger
        let client: ISO15693Client
        let store: Store
        let writer: StoreWriter
        let collector: SensorLogCollector
    }

    static func rig(records: Int) throws -> Rig {
        try rig(celsius: (0..<records).map { Double($0 % 40) / 4 - 2 })
    }

    /// A simulated FM13 (`uid`) logging from `start` every `interval` seconds, with the records `celsius`, and a
    /// store and collector of gateway gw-dock.
    static func rig(celsius: [Double], uid: UID = uid, interval: UInt16 = 60) throws -> Rig {
        let image = try TagImage(
            uid: uid, blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 256), profileID: "fm13ht160")
        let tag = SimulatedTag(image: image, profile: .fm13ht160)
        let logger = FM13Logger(startSeconds: start, intervalSeconds: interval)
        logger.take(celsius)
        tag.attach(logger)
        let field = SimulatedField()
        field.add(tag)
        let session = ReaderSession(reader: SimulatorReader.switchedOn(field))
        let store = try Store(path: scratchPath("sensor-log") + ".db")
        let writer = StoreWriter(store: store, gateway: "gw-dock", batchSize: 500, flushIntervalMs: 2000)
        return Rig(
            field: field, tag: tag, logger: logger, client: session.client, store: store, writer: writer,
            collector: SensorLogCollector(store: store, writer: writer, gateway: "gw-dock"))
    }

    func visit(_ r: Rig, leavingAfter exchanges: Int? = nil) -> (SensorLogCollector.Outcome?, Error?) {
        if r.field.tag(Self.uid) == nil { r.field.add(r.tag) }
        if let exchanges { r.field.inject(.leaveAfter(uid: Self.uid, exchanges: exchanges)) }
        do {
            let o = try r.collector.collect(
                r.client, Self.uid, kind: FM13Kind(), reader: "dock-3", location: "Dock 3", now: { 1_764_500_000_000 })
            return (o, nil)
        } catch { return (nil, error) }
    }

    /// The readings of the log: (record index, time, raw bytes), in id order.
    func stored(_ store: Store) throws -> [(index: Int, time: Millis, raw: [UInt8])] {
        try store.outbox(.readings, after: 0, limit: 100_000).map { row in
            let decoded = row.value("decoded", in: .readings).text ?? ""
            let json = try JSONSerialization.jsonObject(with: Data(decoded.utf8)) as? [String: Any]
            return ((json?["log_record"] as? Int) ?? -1, row.time, row.value("data", in: .readings).blob ?? [])
        }
    }

    @Test func threeVisitsStoreEveryRecordOnce() throws {
        let r = try Self.rig(records: 4864)
        defer { r.store.close() }
        // Visit 1 and 2: the tag leaves in the middle of the log (after 30 and after 25 exchanges).
        let (first, e1) = visit(r, leavingAfter: 30)
        #expect(first == nil && e1 != nil)
        let afterFirst = try r.store.sensorRecords(uid: Self.uid, session: "fm13:\(Self.start):0:60")
        #expect(afterFirst > 0 && afterFirst < 4864 && afterFirst % 63 == 0, "\(afterFirst)")
        let (second, e2) = visit(r, leavingAfter: 25)
        #expect(second == nil && e2 != nil)
        let afterSecond = try r.store.sensorRecords(uid: Self.uid, session: "fm13:\(Self.start):0:60")
        #expect(afterSecond > afterFirst && afterSecond < 4864, "\(afterSecond)")
        // Visit 3: the rest.
        let (third, e3) = visit(r)
        #expect(e3 == nil && third?.complete == true && third?.have == 4864)
        #expect(third?.stored == 4864 - afterSecond)
        let rows = try stored(r.store)
        #expect(rows.count == 4864)
        print(
            "sensor log, three visits: \(afterFirst) records stored in the first (the tag left after 30 exchanges), \(afterSecond - afterFirst) in the second (left after 25), \(third?.stored ?? 0) in the third; \(rows.count) readings, \(Set(rows.map(\.index)).count) distinct records"
        )
        #expect(rows.map(\.index) == Array(0..<4864))
        for (i, row) in rows.enumerated() where i % 97 == 0 || i == 4863 {
            #expect(row.time == (Millis(Self.start) + Millis(i) * 60) * 1000)
            #expect(row.raw == r.logger.records[i].bytes)
        }
        // A fourth visit to the full log (4,864 is the chip's capacity: it cannot grow) stores nothing; a log
        // that grows is the next test's.
        let (again, e4) = visit(r)
        #expect(e4 == nil && again?.stored == 0 && again?.complete == true)
        #expect(try stored(r.store).count == 4864)
    }

    /// A fourth visit after 10 more records stores those 10 (a log of 4,000 records, with room to grow).
    @Test func aFourthVisitAfterTenMoreRecordsStoresTen() throws {
        let r = try Self.rig(records: 4000)
        defer { r.store.close() }
        let (first, _) = visit(r)
        #expect(first?.stored == 4000)
        r.logger.take(Array(repeating: 6.5, count: 10))
        let (second, e) = visit(r)
        #expect(e == nil && second?.stored == 10 && second?.have == 4010)
        let rows = try stored(r.store)
        #expect(rows.count == 4010 && Set(rows.map(\.index)).count == 4010)
        #expect(rows.suffix(10).allSatisfy { $0.raw[0] == 26 })  // 6.5 °C = 26 quarter degrees
    }

    @Test func aRestartedLogIsANewSessionFromItsFirstRecord() throws {
        let r = try Self.rig(records: 100)
        defer { r.store.close() }
        _ = visit(r)
        r.tag.restartLog(startSeconds: Self.start + 86_400)
        r.logger.take([1, 2, 3])
        let (o, e) = visit(r)
        #expect(e == nil && o?.session == "fm13:\(Self.start + 86_400):0:60" && o?.stored == 3)
        let rows = try stored(r.store)
        #expect(rows.count == 103 && rows.suffix(3).map(\.index) == [0, 1, 2])
        #expect(rows.last?.time == (Millis(Self.start) + 86_400 + 2 * 60) * 1000)
    }
}
