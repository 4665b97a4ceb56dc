import Foundation
import Testing
import VLoggerModel
import VLoggerStore
import ISO15693

/// The CSV export read by the default CSV readers of the data tools plant engineers use — pandas, DuckDB and
/// Polars, from PyPI, none written here — cell for cell the same as the JSON-lines export of the same rows
/// (Tools/data_tools_check.py says what "the same" is). Issue 47 found them reading the hex of a tag's bytes as
/// numbers: `42494E3500000000` ("BIN5") became infinity, a hex field `55667788` the number 55,667,788 and a
/// security status `0100000000000000` 1e14. CSV bytes now start with `\x` (PostgreSQL's bytea hex form).
/// `.ci/run` installs the three and sets VLOGGER_REQUIRE_DATA_TOOLS=1; elsewhere the test is skipped without them.
@Suite struct DataToolsTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Tools/data_tools_check.py")
    static var required: Bool { ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_DATA_TOOLS"] == "1" }

    static func python(_ args: [String]) throws -> (code: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3"] + args
        // Two pipes: one Pipe for both streams makes Foundation close its write end twice after the launch, and
        // the second close can hit a descriptor another test's socket has taken meanwhile.
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // The script's error output is short (a traceback at most): read after stdout ends.
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data + errors, as: UTF8.self))
    }

    static var toolsPresent: Bool {
        (try? python(["-c", "import pandas, duckdb, polars"]).code) == 0
    }

    /// The readings issue 47 named: a tag whose blocks hold the text "BIN5", a hex field that is all digits and
    /// one that looks like a float in exponent form, a security status of a locked block, a text field, a number.
    static func issueStore() throws -> Store {
        let s = try Store(path: scratchPath("datatools.db"))
        try s.registerFields([
            FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "bin", unit: nil),
            FieldInfo(name: "serial", unit: nil, hex: true), FieldInfo(name: "lot", unit: nil, hex: true),
        ])
        var b = Batch()
        for i in 0..<4 {
            b.readings.append(
                Reading(
                    time: 1_764_230_400_000 + Millis(i) * 60_000, gateway: "gw-1", reader: "cage-room",
                    location: "Cold room", uid: try UID(parsing: "E00401501234567\(i)"), first: 0xF8, count: 2,
                    data: Array("BIN5".utf8) + [0, 0, 0, UInt8(i)], security: [1, 0, 0, 0, 0, 0, 0, 0],
                    decoded: [
                        ("temperature", .number(4.25 + Double(i))), ("bin", .text("BIN5")),
                        ("serial", .text(i == 0 ? "55667788" : "00\(i)1")), ("lot", .text("1E10")),
                    ]))
        }
        try s.write(b)
        return s
    }

    /// Exports `table` of `store` as CSV and as JSON lines and runs the check; its exit code and report.
    static func check(_ store: Store, _ table: ExportRequest.Table, plainHex: Bool = false) throws -> (Int32, String) {
        let csv = scratchPath("datatools-\(table.rawValue).csv"),
            jsonl = scratchPath("datatools-\(table.rawValue).jsonl")
        for (path, format) in [(csv, ExportRequest.Format.csv), (jsonl, .jsonl)] {
            var r = ExportRequest(since: 0)
            r.table = table
            r.format = format
            r.jsonFields = ["ndef"]
            r.plainHex = plainHex && format == .csv
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            try #require(fd >= 0)
            try Exporter.export(r, store: store, to: fd)
            close(fd)
        }
        return try python([script.path, csv, jsonl])
    }

    @Test func pandasDuckDBAndPolarsReadEveryCellAsTheJSONLinesHaveIt() throws {
        guard Self.toolsPresent else {
            #expect(!Self.required, "pandas, duckdb and polars are required here (VLOGGER_REQUIRE_DATA_TOOLS=1)")
            return
        }
        let issue = try Self.issueStore()
        let golden = try ExportGoldenTests.store()
        let format = try ExportFormatTests.store()
        let cases: [(Store, ExportRequest.Table)] =
            [(issue, .readings), (golden, .readings), (golden, .events)]
            + ExportFormatTests.tables.map { (format, $0) }
        for (store, table) in cases {
            let (code, report) = try Self.check(store, table)
            #expect(code == 0, "\(table): \(report)")
            #expect(report.components(separatedBy: "\nok ").count == 3 && report.hasPrefix("ok "), "\(report)")
        }
        // The check can fail: the bare hex of before (--plain-hex) is misread, as the issue found.
        let (code, report) = try Self.check(issue, .readings, plainHex: true)
        #expect(code == 1, "\(report)")
        #expect(report.contains("data: inf") || report.contains("data: inf (float)"), "\(report)")
        #expect(report.contains("serial: 55667788"), "\(report)")
    }
}
