import VLoggerModel
import VLoggerStore

/// The test oracle of the export (not shipped: the tests and the store benchmark use it).
extension Exporter {
    /// The same export as one SQLite query that formats every value in SQL (`strftime`, `printf`, `hex`,
    /// `json_extract`): not what the export runs, but an implementation of its formats that is SQLite's, not
    /// ours. The store benchmark runs it with `sqlite3 -csv` as the baseline, and the tests compare the export
    /// with it.
    public static func referenceSQL(_ r: ExportRequest, fields: [FieldInfo]) -> (sql: String, args: [SQLValue]) {
        let fields = r.table == .readings ? fields : []
        let plan = ExportPlan.of(Exporter.table(r.table), central: false)!
        let names = Exporter.names(plan, fields: fields.map(\.name))
        // CSV's bytes prefix, `\x` (RowWriter.bytesPrefix), as SQL text.
        let prefix = r.format == .csv && !r.plainHex ? "'\\x' || " : ""
        var columns: [String] = []
        for (i, c) in plan.columns.enumerated() {
            let v = c.sql
            let time = "strftime('%Y-%m-%dT%H:%M:%S', \(v) / 1000, 'unixepoch') || printf('.%03dZ', \(v) % 1000)"
            let expression: String
            switch c.format {
            case .time: expression = "CASE WHEN \(v) IS NULL THEN NULL ELSE \(time) END"
            case .block: expression = "CASE WHEN \(v) < 256 THEN printf('0x%02X', \(v)) ELSE printf('0x%04X', \(v)) END"
            case .hex: expression = "CASE WHEN \(v) IS NULL THEN NULL ELSE \(prefix)hex(\(v)) END"
            case .flags: expression = "CASE WHEN \(v) IS NULL THEN NULL ELSE printf('0x%02X', \(v)) END"
            case .text, .integer: expression = v
            }
            columns.append("\(expression) AS \"\(names[i].replacingOccurrences(of: "\"", with: "\"\""))\"")
        }
        for (i, f) in fields.enumerated() {
            let path = f.name.replacingOccurrences(of: "'", with: "''")
            let name = names[plan.columns.count + i].replacingOccurrences(of: "\"", with: "\"\"")
            let value = "json_extract(decoded, '$.\"\(path)\"')"
            // As RowWriter.hexText: the prefix only before hex digits (a value stored before its field was hex is text).
            let hexPrefixed =
                "CASE WHEN \(value) IS NULL OR \(value) = '' OR \(value) GLOB '*[^0-9A-Fa-f]*' THEN \(value) ELSE \(prefix)\(value) END"
            columns.append("\(f.hex && !prefix.isEmpty ? hexPrefixed : value) AS \"\(name)\"")
        }
        return Exporter.where_(r, plan, select: columns)
    }
}
