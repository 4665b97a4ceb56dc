import Foundation
import ISO15693
import Testing
import VLoggerModel

@testable import VLoggerStore

/// The exports of readings and events, byte for byte, against files written by the export as it was before
/// `asset_id` (commit 9b10772, the same rows): one description per table changed where the columns come from,
/// not what an export says (issue "One description per table, and outputs as consumers of the store's
/// outbox", checks). The new `asset_id` column is taken out before comparing, and checked on its own: a
/// registered tag's rows carry its asset id, an unregistered tag's none.
@Suite struct ExportGoldenTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// A store with the cases an export must get right: decoded numbers, text with a comma and a quote, a
    /// formula-like text, NDEF JSON, no security bytes, a block past 255, no reader, an event without a UID.
    static func store() throws -> Store {
        let s = try Store(path: scratchPath("golden.db"))
        try s.registerFields([
            FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "note", unit: nil),
            FieldInfo(name: "ndef", unit: nil),
        ])
        _ = try s.importAssets(
            [AssetRow(uid: try UID(parsing: "E008010000004212"), assetID: "CAGE-12", name: "Cold cage 12")],
            source: "assets.csv", now: 1_763_799_000_000)
        var b = Batch()
        for i in 0..<6 {
            let registered = i % 2 == 0
            b.readings.append(
                Reading(
                    time: 1_763_800_000_000 + Millis(i) * 1234, gateway: "gw-1", reader: i == 5 ? nil : "dock-\(i % 2)",
                    location: i == 5 ? nil : "Dock door \(i % 2)",
                    uid: try UID(parsing: registered ? "E008010000004212" : "E004015012345678"),
                    first: i == 3 ? 0x100 : 0xF8, count: 1 + i % 2,
                    data: [0x66, 0x08, 0xC2, UInt8(i)] + (i % 2 == 1 ? [1, 2, 3, 4] : []),
                    security: i == 4 ? nil : [UInt8(i & 1)] + (i % 2 == 1 ? [0] : []),
                    decoded: [
                        ("temperature", .number(20.5 + Double(i))),
                        ("note", .text(i == 1 ? "a \"quoted\", text" : i == 2 ? "=SUM(A1)" : "plain")),
                        ("ndef", .json(#"[{"type":"T","text":"hi"}]"#)),
                    ]))
        }
        b.events = [
            Event(
                time: 1_763_800_000_100, gateway: "gw-1", reader: "dock-0", location: "Dock door 0",
                uid: try UID(parsing: "E008010000004212"), kind: .arrival, name: "arrival", severity: .info,
                detail: "arrived"),
            Event(
                time: 1_763_800_000_200, gateway: "gw-1", uid: nil, kind: .error, name: "store", severity: .warning,
                detail: "line one\nline two"),
            Event(
                time: 1_763_800_000_300, gateway: "gw-1", reader: "dock-1", location: "Dock door 1",
                uid: try UID(parsing: "E004015012345678"), kind: .violation, name: "too-warm", severity: .critical,
                detail: "temperature is 25.5"),
        ]
        try s.write(b)
        return s
    }

    static func export(_ s: Store, _ table: ExportRequest.Table, _ format: ExportRequest.Format) throws -> String {
        let path = scratchPath("export.out")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        var r = ExportRequest(since: 0)
        r.table = table
        r.format = format
        r.jsonFields = ["ndef"]
        // The goldens were written before CSV bytes had their `\x` prefix: --plain-hex gives that form still.
        r.plainHex = true
        try Exporter.export(r, store: s, to: fd)
        close(fd)
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    /// The columns added since the goldens were written: each is taken out before comparing, and checked on its
    /// own (`asset_id` here, `origin` by `OriginTests`).
    static let addedSince = ["asset_id", "origin"]

    /// The export without the columns added since (`addedSince`), and the `asset_id` values taken out.
    static func withoutAddedColumns(_ out: String, _ format: ExportRequest.Format, _ columns: [String] = addedSince)
        -> (String, [String])
    {
        var (rest, ids) = (out, [String]())
        for c in columns {
            let (r, values) = format == .csv ? without(c, csv: rest) : without(c, jsonl: rest)
            rest = r
            if c == "asset_id" { ids = values }
        }
        return (rest, ids)
    }

    /// The CSV without the named column (a plain split works: the fixtures put no comma in a quoted cell).
    static func without(_ column: String, csv: String) -> (String, [String]) {
        var lines = csv.components(separatedBy: "\r\n")
        guard let header = lines.first?.components(separatedBy: ","), let k = header.firstIndex(of: column)
        else { return (csv, []) }
        var ids: [String] = []
        for i in lines.indices where !lines[i].isEmpty {
            var cells = lines[i].components(separatedBy: ",")
            if i > 0 { ids.append(cells[k]) }
            cells.remove(at: k)
            lines[i] = cells.joined(separator: ",")
        }
        return (lines.joined(separator: "\r\n"), ids)
    }

    /// The JSON lines without their member of the named column.
    static func without(_ column: String, jsonl: String) -> (String, [String]) {
        var ids: [String] = []
        let member = try! Regex(#",""# + column + #"":("[^"]*"|null)"#, as: (Substring, Substring).self)
        let lines = jsonl.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let m = line.firstMatch(of: member) else { return String(line) }
            ids.append(String(m.1))
            return line.replacingCharacters(in: m.range, with: "")
        }
        return (lines.joined(separator: "\n"), ids)
    }

    /// JSON lines as written before a missing value left its member out (docs/json.md): the same lines without
    /// their `"name":null` members (a quoted "null" is text and stays), and without a security status that was not
    /// read (an empty text before, no member now).
    static func withoutNulls(jsonl: String) -> String {
        jsonl.replacing(#/,"security":""/#, with: "").replacing(/,"[^"\\]+":null(?=[,}])/, with: "").replacing(
            /\{"[^"\\]+":null,/, with: "{")
    }

    @Test(arguments: [ExportRequest.Table.readings, .events])
    func exportsAreAsBeforeExceptTheAssetIDColumn(table: ExportRequest.Table) throws {
        let s = try Self.store()
        let registered = table == .readings ? 3 : 1
        for format in [ExportRequest.Format.csv, .jsonl] {
            let out = try Self.export(s, table, format)
            let (rest, ids) = Self.withoutAddedColumns(out, format)
            let golden = Self.fixtures.appendingPathComponent("export-\(table.rawValue).\(format.rawValue)")
            if ProcessInfo.processInfo.environment["VLOGGER_WRITE_GOLDEN"] == "1" {
                try rest.write(to: golden, atomically: true, encoding: .utf8)
            }
            let before = try String(contentsOf: golden, encoding: .utf8)
            #expect(rest == (format == .csv ? before : Self.withoutNulls(jsonl: before)), "\(table) \(format):\n\(out)")
            // A registered tag's rows carry its asset id; an unregistered tag's (and a row without a UID) none.
            let expected = format == .csv ? "CAGE-12" : "\"CAGE-12\""
            #expect(ids.filter { $0 == expected }.count == registered, "\(ids)")
            // In CSV every row has the column; in JSON lines only the rows that have an asset id.
            #expect(ids.count == (format == .jsonl ? registered : table == .readings ? 6 : 3), "\(ids)")
        }
    }
}
