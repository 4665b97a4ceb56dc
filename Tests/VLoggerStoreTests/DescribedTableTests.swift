import Foundation
import ISO15693
import Testing
@testable import VLoggerStore
import VLoggerModel

/// Every table the batch writes is written from its description (`TableDescription`): the statements, how a row
/// stored again merges, and the records' values by column name. These tests hold the records to the descriptions
/// and the merge rules to what the store promised before they were described (migration 010's tag change
/// numbers, 011's reader buffers, 018/019's sensor sessions; docs/json.md's tags table).
@Suite struct DescribedTableTests {
    static let uid = UID(manufacturer: .nxp, serial: 0x4212)

    /// Every column a record gives (not the store's own: an asset id from the register, a change number) has a
    /// value in a record with every optional set: a column added to a description without its record's `case`
    /// fails here, not silently as NULL in every row.
    @Test func everyRecordHoldsEveryColumnOfItsTable() {
        let tag = TagRecord(
            uid: Self.uid, seen: 5, manufacturer: "NXP", model: "SLIX2", blockCount: 80, blockSize: 4,
            memorySource: "get-system-info", reader: "dock-0", location: "Dock", originality: "genuine")
        let event = Event(
            time: 1, gateway: "gw", reader: "dock-0", location: "Dock", uid: Self.uid, kind: .arrival, name: "n",
            severity: .info, detail: "d", origin: "api:plc-7")
        let write = WriteRecord(
            time: 1, gateway: "gw", uid: Self.uid, first: BlockNumber(0xF8), data: [1, 2, 3, 4], flags: [.highDataRate],
            result: "ok", verified: true, exchanges: 2, origin: "cli")
        let progress = SensorProgress(uid: Self.uid, session: "s", kind: "fm13", records: 3, time: 1, excursions: "{}")
        let mark = BufferMark(reader: "r", records: 2, raw: [1], time: 1)
        let cases: [(TableDescription, any StoredRow)] = [
            (.tags, tag), (.events, event), (.writes, write), (.sensorSessions, progress), (.readerBuffers, mark),
        ]
        for (table, row) in cases {
            for c in table.parameterColumns where c.source != .register {
                #expect(row.column(c.name) != .null, "\(table.name).\(c.name)")
            }
        }
    }

    func tagRow(_ s: Store) throws -> [String] {
        try s.withReader { db throws(StoreError) in
            let q = try db.prepare(
                "SELECT first_seen, last_seen, manufacturer, model, last_reader, last_location, seq, originality FROM tags"
            )
            var out: [String] = []
            while try q.step() {
                out.append(
                    (0..<8).map { i in q.text(i) ?? "-" }.joined(separator: " "))
            }
            return out
        }
    }

    func tag(_ seen: Millis, reader: String, model: String?, originality: String? = nil) -> Batch {
        var b = Batch()
        b.tags = [
            TagRecord(
                uid: Self.uid, seen: seen, manufacturer: "NXP", model: model, reader: reader, location: reader + "-loc",
                originality: originality)
        ]
        return b
    }

    /// A tag seen again keeps its earliest first sighting and latest last one; reader and location are the
    /// latest sighting's (a late batch of an older sighting does not move them back); what a sighting does not
    /// know (the model, an originality verdict) is kept; every change takes the next change number (010).
    @Test func aTagSeenAgainMergesAsItsColumnsSay() throws {
        let s = try Store(path: scratchPath("tags.db"))
        try s.write(tag(1000, reader: "a", model: "SLIX2", originality: "genuine"))
        #expect(try tagRow(s) == ["1000 1000 NXP SLIX2 a a-loc 1 genuine"])
        // An older sighting, from another reader, without a model.
        try s.write(tag(500, reader: "b", model: nil))
        #expect(try tagRow(s) == ["500 1000 NXP SLIX2 a a-loc 2 genuine"])
        // A newer one.
        try s.write(tag(2000, reader: "c", model: "ICODE SLIX"))
        #expect(try tagRow(s) == ["500 2000 NXP ICODE SLIX c c-loc 3 genuine"])
    }

    /// A sensor session's count of stored records never goes back, its kind is its first, and a progress without
    /// excursions keeps the stored ones ('{}' when there never were any: 019's default).
    @Test func aSensorSessionMergesAsItsColumnsSay() throws {
        let s = try Store(path: scratchPath("sessions.db"))
        func progress(_ records: Int, kind: String = "fm13", excursions: String? = nil) throws {
            var b = Batch()
            b.sensorProgress = [
                SensorProgress(
                    uid: Self.uid, session: "t0", kind: kind, records: records, time: Millis(records),
                    excursions: excursions)
            ]
            try s.write(b)
        }
        try progress(4)
        #expect(try s.sensorRecords(uid: Self.uid, session: "t0") == 4)
        #expect(try s.sensorExcursions(uid: Self.uid, session: "t0") == "{}")
        try progress(9, excursions: #"{"cold":1}"#)
        try progress(6, kind: "sl13a")
        #expect(try s.sensorRecords(uid: Self.uid, session: "t0") == 9)
        #expect(try s.sensorExcursions(uid: Self.uid, session: "t0") == #"{"cold":1}"#)
        let kind = try s.withReader { db throws(StoreError) in
            let q = try db.prepare("SELECT kind, updated_at FROM sensor_sessions")
            return try q.step() ? "\(q.text(0) ?? "") \(q.int64(1))" : ""
        }
        #expect(kind == "fm13 6")
    }

    /// A reader's buffer mark is replaced by the next, and goes when the buffer is cleared, in the batch's order.
    @Test func aBufferMarkIsReplacedAndCleared() throws {
        let s = try Store(path: scratchPath("marks.db"))
        var b = Batch()
        b.bufferMarks = [BufferMark(reader: "r", records: 3, raw: [1, 2], time: 1)]
        try s.write(b)
        b.bufferMarks = [.cleared("r", time: 2), BufferMark(reader: "r", records: 5, raw: [3], time: 3)]
        try s.write(b)
        #expect(try s.bufferMark(reader: "r") == BufferMark(reader: "r", records: 5, raw: [3], time: 3))
        b.bufferMarks = [.cleared("r", time: 4)]
        try s.write(b)
        #expect(try s.bufferMark(reader: "r") == nil)
    }

    /// The outbox's queries come from the descriptions: each shipped table has one, the tags by change number.
    @Test func everyShippedTableHasItsOutboxQuery() throws {
        for t in SyncTable.allCases {
            #expect(TableDescription.named(t.rawValue) != nil, "\(t.rawValue)")
            #expect(!t.columns.isEmpty, "\(t.rawValue)")
            _ = try t.outboxSQL
            _ = try t.backlogSQL
        }
        #expect(try SyncTable.tags.outboxSQL.hasPrefix("SELECT seq, last_seen, '', uid, first_seen,"))
        #expect(SyncTable.tags.isUpserted && !SyncTable.readings.isUpserted)
        #expect(TableDescription.unknown("nope").outboxSQL == nil)
    }
}
