import ExportOracle
import Foundation
import ISO15693
import ISO15693Fuzzing
import Testing
import VLoggerModel

import GRDB

@testable import VLoggerStore

/// The export formats every value in Swift (`ValueText`, `RowWriter`) from the stored values, for the local and
/// the central export alike. Two checks that it says what it said before, when SQLite formatted the values:
///
/// - The tables the golden files of `ExportGoldenTests` do not cover (tags, writes, audits, audit results,
///   assets), byte for byte against files written by the export of commit fc6a776, where SQLite's `strftime`,
///   `printf` and `hex` formatted them (same rows).
/// - Generated rows (times from 1970 to 9999, every block number range, flags, empty and long data, decoded
///   fields with quotes, commas, line breaks, escapes, non-ASCII text, nesting and missing values) exported by
///   the Swift formats against the same rows through `Exporter.referenceSQL`, which formats them with SQLite's
///   own functions and takes the fields with `json_extract` (an implementation of the formats that is
///   SQLite's, not ours).
@Suite struct ExportFormatTests {
    /// A store with a row or more in each of the five tables.
    static func store() throws -> Store {
        let s = try Store(path: scratchPath("formats.db"))
        let t0: Millis = 1_763_800_000_000
        _ = try s.importAssets(
            [
                AssetRow(uid: try UID(parsing: "E008010000004212"), assetID: "CAGE-12", name: "Cold cage 12"),
                AssetRow(
                    uid: try UID(parsing: "E004015012345678"), assetID: "=PAL-7", name: "Pallet, \"seven\"",
                    location: "Dock 1", extra: ["block_F8": "6608C200"]),
            ], source: "assets.csv", now: t0 - 5000)
        var b = Batch()
        b.tags = [
            TagRecord(
                uid: try UID(parsing: "E008010000004212"), seen: t0, manufacturer: "Fujitsu", model: "MB89R118",
                blockCount: 250, blockSize: 8, memorySource: "system information", reader: "dock-0",
                location: "Dock door 0"),
            TagRecord(uid: try UID(parsing: "E004015012345678"), seen: t0 + 999, manufacturer: "NXP"),
        ]
        b.writes = [
            WriteRecord(
                time: t0 + 1, gateway: "gw-1", uid: try UID(parsing: "E008010000004212"), first: 0xF8,
                data: [0x66, 0x08, 0xC2, 0x00], flags: [.highDataRate, .option], result: "ok", verified: true,
                exchanges: 2),
            WriteRecord(
                time: t0 + 2, gateway: "gw-1", uid: try UID(parsing: "E004015012345678"), first: 0x100, data: [],
                flags: nil, result: "tag-error 0x12: block locked", verified: false, exchanges: 1),
        ]
        try s.write(b)
        _ = try s.saveAudit(
            AuditRecord(
                started: t0 + 10_000, finished: t0 + 12_500, gateway: "gw-1", location: "Dock 1",
                readers: ["dock-0", "dock-1"], rounds: 3, trigger: "manual",
                results: [
                    AuditResult(
                        uid: try UID(parsing: "E004015012345678"), assetID: "=PAL-7", status: .present,
                        registeredLocation: "Dock 1", seenLocation: "Dock 1", seenBy: "dock-1", seenRounds: 3,
                        firstSeen: t0 + 10_001, lastSeen: t0 + 12_499, failedChecks: ["block 0xF8: 00 ≠ 01"]),
                    AuditResult(
                        uid: try UID(parsing: "E008010000004212"), assetID: "CAGE-12", status: .missing,
                        registeredLocation: nil, seenLocation: nil, seenBy: nil, seenRounds: 0, firstSeen: nil,
                        lastSeen: nil),
                ]))
        return s
    }

    static func export(_ s: Store, _ r: ExportRequest) throws -> [UInt8] {
        let path = scratchPath("format.out")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        try Exporter.export(r, store: s, to: fd)
        close(fd)
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static let tables: [ExportRequest.Table] = [.tags, .writes, .audits, .auditResults, .assets]

    @Test(arguments: tables)
    func theOtherTablesAreAsSQLiteFormattedThem(table: ExportRequest.Table) throws {
        let s = try Self.store()
        for format in [ExportRequest.Format.csv, .jsonl] {
            var r = ExportRequest(since: 0)
            r.table = table
            r.format = format
            // The goldens were written before CSV bytes had their `\x` prefix: --plain-hex gives that form still.
            r.plainHex = true
            // As before but for the column added since (`ExportGoldenTests.addedSince`; these goldens have `asset_id`).
            let out = Array(
                ExportGoldenTests.withoutAddedColumns(
                    String(decoding: try Self.export(s, r), as: UTF8.self), format, ["origin"]
                ).0.utf8)
            let golden = ExportGoldenTests.fixtures.appendingPathComponent(
                "export-\(table.rawValue).\(format.rawValue)")
            if ProcessInfo.processInfo.environment["VLOGGER_WRITE_GOLDEN"] == "1" {
                try Data(out).write(to: golden)
            }
            let before = try String(contentsOf: golden, encoding: .utf8)
            // JSON lines as before, without the members of missing values (they are left out now).
            let expected = Array((format == .csv ? before : ExportGoldenTests.withoutNulls(jsonl: before)).utf8)
            #expect(out == expected, "\(table) \(format):\n\(String(decoding: out, as: UTF8.self))")
            #expect(out.count > 100)
        }
    }

    /// The rows of `referenceSQL` as the export wrote them when SQLite formatted the values: a text cell as text,
    /// a number as a number, NULL as no value; a nested field (JSON text) as JSON in JSON lines.
    static func reference(_ s: Store, _ r: ExportRequest) throws -> [UInt8] {
        try s.withReader { db throws(StoreError) in
            let fields = try Store.fields(db)
            let (sql, args) = Exporter.referenceSQL(r, fields: fields)
            let q = try db.prepare(sql)
            try q.bind(args)
            let names = (0..<q.columnCount).map { q.columnName($0) }
            var w = RowWriter(format: r.format == .csv ? .csv : .jsonl, names: names, crlf: r.crlf)
            var out: [UInt8] = []
            w.header(to: &out)
            while try q.step() {
                w.beginRow(&out)
                for i in 0..<q.columnCount {
                    switch q.type(i) {
                    case SQLStatement.nullType: w.null(&out)
                    case SQLStatement.integerType: q.withBytes(i) { w.number($0, &out) }
                    case SQLStatement.floatType: w.number(Array("\(q.double(i))".utf8), &out)
                    default:
                        if r.jsonFields.contains(names[i]) {
                            q.withBytes(i) { w.json($0, &out) }
                        } else {
                            q.withBytes(i) { w.text($0, &out) }
                        }
                    }
                }
                w.endRow(&out)
            }
            return out
        }
    }

    @Test func generatedRowsAreFormattedAsSQLiteFormatsThem() throws {
        let s = try Store(path: scratchPath("generated.db"))
        try s.registerFields([
            FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "note", unit: nil),
            FieldInfo(name: "ndef", unit: nil), FieldInfo(name: "count", unit: nil), FieldInfo(name: "é x", unit: nil),
        ])
        var g = DecoderFuzzer.Random(seed: 0x7615_6930)
        let pieces = [
            "a", ",", "\"", "\n", "\r", "\\", "é", "€", "😀", "\u{1}", "\t", "=", "-", "+", "@", " ", "0", "null",
        ]
        func text() -> String {
            (0..<Int.random(in: 0...6, using: &g)).map { _ in pieces.randomElement(using: &g)! }.joined()
        }
        var b = Batch()
        let times: [Millis] = [0, 1, 999, 86_399_999, 951_782_400_000, 4_102_444_800_000, 253_402_300_799_999]
        for i in 0..<600 {
            let time = i < times.count ? times[i] : Millis.random(in: 0...253_402_300_799_999, using: &g)
            let block = [0, 0xF8, 0xFF, 0x100, 0xFFFF, Int.random(in: 0...0xFFFF, using: &g)][i % 6]
            var decoded: [(name: String, value: FieldValue)] = []
            if i % 7 != 0 {
                decoded.append(("temperature", .number(Double(Int.random(in: -99_999...99_999, using: &g)) / 100)))
            }
            if i % 5 != 1 { decoded.append(("note", .text(text()))) }
            if i % 3 == 0 {
                decoded.append(("ndef", .json(#"[{"type":"T","text":"h\"i","ok":true,"n":null},{"type":"U"}]"#)))
            }
            decoded.append(("count", .integer(Int64.random(in: Int64.min...Int64.max, using: &g))))
            if i % 4 == 0 { decoded.append(("é x", .text(text()))) }
            let count = 1 + i % 3
            b.readings.append(
                Reading(
                    time: time, gateway: "gw-\(i % 2)", reader: i % 9 == 0 ? nil : text(),
                    location: i % 11 == 0 ? nil : text(), uid: UID(manufacturer: .nxp, serial: UInt64(i)),
                    first: BlockNumber(UInt16(block)), count: count,
                    data: (0..<(4 * count)).map { _ in UInt8.random(in: 0...255, using: &g) },
                    security: i % 4 == 1 ? nil : (0..<count).map { _ in UInt8.random(in: 0...1, using: &g) },
                    decoded: decoded))
            b.writes.append(
                WriteRecord(
                    time: time, gateway: "gw", uid: UID(manufacturer: .fujitsu, serial: UInt64(i)),
                    first: BlockNumber(UInt16(block)), data: (0..<(i % 9)).map { UInt8($0 * 37 % 256) },
                    flags: i % 3 == 0 ? nil : RequestFlags(rawValue: UInt8.random(in: 0...255, using: &g)),
                    result: text(), verified: i % 2 == 0, exchanges: i % 4))
        }
        try s.write(b)
        for table in [ExportRequest.Table.readings, .writes] {
            for format in [ExportRequest.Format.csv, .jsonl] {
                for crlf in [true, false] {
                    var r = ExportRequest(since: 0)
                    r.table = table
                    r.format = format
                    r.crlf = crlf
                    r.jsonFields = ["ndef"]
                    let ours = try Self.export(s, r), sqlite = try Self.reference(s, r)
                    #expect(ours.count > 10_000)
                    if ours != sqlite {
                        let a = String(decoding: ours, as: UTF8.self).split(separator: "\n")
                        let b = String(decoding: sqlite, as: UTF8.self).split(separator: "\n")
                        let k = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
                        Issue.record(
                            "\(table) \(format): line \(k + 1) differs:\n\(k < a.count ? a[k] : "-")\n\(k < b.count ? b[k] : "-")"
                        )
                    }
                }
            }
        }
    }
}

/// The record types of the cold paths write and read the columns their tables' descriptions list, no more and no
/// fewer (the description is the one list; a record's coding keys must agree with it).
@Suite struct StoredRecordTests {
    @Test func eachRecordHasItsTablesDescribedColumns() throws {
        let uid = try UID(parsing: "E004015012345678")
        let audit = AuditRecord(
            started: 1, finished: 2, gateway: "gw", location: "Dock 1", readers: ["a", "b"], rounds: 3,
            trigger: "manual",
            results: [
                AuditResult(
                    uid: uid, assetID: "PAL-7", status: .wrongLocation, registeredLocation: "Dock 2",
                    seenLocation: "Dock 1", seenBy: "a", seenRounds: 2, firstSeen: 1, lastSeen: 2,
                    failedChecks: ["model: \"x\""])
            ])
        let records: [(any EncodableRecord, TableDescription)] = [
            (StoredAudit(audit), .audits), (StoredAuditResult(audit.results[0], audit: 1), .auditResults),
            (StoredAsset(AssetRow(uid: uid, assetID: "PAL-7"), source: "a.csv", updatedAt: 5), .assets),
        ]
        // The write queue is not exported or synced (no description): its record is held to the migrated table.
        let queued = StoredQueuedWrite(
            QueuedWrite(created: 1, uid: uid, first: 0xF8, data: [1, 2, 3, 4], flags: [.highDataRate]),
            idempotencyKey: "k")
        let s0 = try Store(path: scratchPath("queue-shape.db"))
        let queueColumns = try s0.read { db in try db.columns(in: "write_queue").map(\.name) }
        #expect(Set(try queued.databaseDictionary.keys) == Set(queueColumns))
        for (record, table) in records {
            let keys = Set(try record.databaseDictionary.keys)
            #expect(keys == Set(table.names + (table.hasRowID ? ["id"] : [])), "\(table.name)")
        }
        // And what goes in comes out: an audit and its results through the records and a store.
        let s = try Store(path: scratchPath("records.db"))
        let id = try s.saveAudit(audit)
        let back = try #require(try s.audit(id))
        #expect(back.results == audit.results)
        #expect(back.readers == ["a", "b"] && back.count(.wrongLocation) == 1 && back.failedChecks == 1)
        #expect(try s.audits(location: "Dock 1").map(\.id) == [id] && s.audits(location: "Dock 9").isEmpty)
        #expect(try s.lastAuditStart(trigger: "manual") == 1 && s.lastAuditStart(trigger: "schedule") == nil)
    }
}

/// The pages' data from the store: a tag's latest values (the newest of each field), the recent events, where it
/// was read, and the chart's points of a numeric field.
@Suite struct PageDataTests {
    @Test func latestValuesEventsPlacesAndChartPoints() throws {
        let s = try Store(path: scratchPath("status.db"))
        let uid = try UID(parsing: "E008010000004212")
        var b = Batch()
        b.tags = [TagRecord(uid: uid, seen: 2000, manufacturer: "Fujitsu")]
        for (i, t) in [1000, 2000].enumerated() {
            b.readings.append(
                Reading(
                    time: Millis(t), gateway: "gw", reader: "dock-0", uid: uid, first: 0xF8, count: 1,
                    data: [0x66, 0x08, 0xC2, UInt8(i)], decoded: [("temperature", .number(20.5 + Double(i)))]))
        }
        b.readings.append(
            Reading(time: 1500, gateway: "gw", uid: uid, first: 0x100, count: 1, data: [0xAB], decoded: []))
        b.events = [
            Event(time: 1500, gateway: "gw", uid: uid, kind: .arrival, name: "arrival", severity: .info, detail: "in")
        ]
        try s.write(b)
        let values = try #require(try s.latestValues([uid], since: 0)[uid])
        // The newest reading (by id: the block 0x0100 one, stored last, at 1.5 s) gives the time; the fields come from
        // the newest reading that has each.
        #expect(values.time == 1500 && values.reader == nil)
        #expect(values.fields.map(\.name) == ["temperature"] && values.fields.first?.value == .number(21.5))
        let events = try s.recentEvents(limit: 25)
        #expect(events.count == 1 && events[0].uid == uid && events[0].kind == "arrival" && events[0].detail == "in")
        #expect(try s.recentEvents(limit: 25, uid: try UID(parsing: "E004015012345678")).isEmpty)
        let places = try s.places(uid, since: 0)
        #expect(places.map(\.readings) == [2, 1] && places.first?.reader == "dock-0" && places.first?.last == 2000)
        #expect(try s.series(field: "temperature", since: 0, uids: [uid])[uid]?.map(\.1) == [20.5, 21.5])
        #expect(try s.latestValues([uid], since: 2001).isEmpty)
    }
}
