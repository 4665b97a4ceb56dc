import CSQLite
import Foundation
import VLoggerModel
import ISO15693

/// What `vlogger export` writes.
public struct ExportRequest: Sendable {
    public enum Table: String, Sendable, CaseIterable {
        case readings, events, tags, writes, assets, audits
        case auditResults = "audit_results"
    }
    public enum Format: String, Sendable, CaseIterable { case csv, jsonl }
    public var table = Table.readings
    public var since: Millis
    public var until: Millis?
    public var uid: UID?
    /// Only rows of this reader (readings, events; tags by the reader that saw them last).
    public var reader: String?
    public var format = Format.csv
    /// CSV line ending: CRLF (RFC 4180, the default) or LF.
    public var crlf = true
    /// Decoded fields whose values are JSON text (the NDEF records): nested as JSON in jsonl, not quoted.
    public var jsonFields: Set<String> = []

    public init(since: Millis) { self.since = since }
}

/// Streams rows from the store to a file descriptor: one SQL query, one row at a time through a 64 KiB
/// buffer, so memory stays flat however many rows there are.
///
/// CSV follows RFC 4180: a header row, cells with a comma, quote, CR or LF quoted, quotes doubled, CRLF
/// line ends. Text cells that begin with `=`, `+`, `-`, `@`, tab or CR get a leading `'` so spreadsheets
/// show them rather than run them (OWASP "CSV injection"); numbers (SQLite INTEGER/REAL) are left alone.
public enum Exporter {
    /// The SQL for a request, with its parameters: the same text `sqlite3 -csv` can run (the benchmark does).
    public static func query(_ r: ExportRequest, fields: [FieldInfo]) -> (sql: String, args: [SQLValue]) {
        let time = { (col: String) in
            "strftime('%Y-%m-%dT%H:%M:%S', \(col) / 1000, 'unixepoch') || printf('.%03dZ', \(col) % 1000)"
        }
        let block = "CASE WHEN block < 256 THEN printf('0x%02X', block) ELSE printf('0x%04X', block) END"
        // A described column as SQLite formats it for the export.
        func expression(_ c: ColumnDescription) -> String {
            switch c.export {
            case .time: return "\(time(c.name)) AS \(c.name)"
            case .block: return "\(block) AS \(c.name)"
            case .hex: return "hex(\(c.name)) AS \(c.name)"
            case .flags:
                return "CASE WHEN \(c.name) IS NULL THEN NULL ELSE printf('0x%02X', \(c.name)) END AS \(c.name)"
            case .text, .integer, nil: return c.name
            }
        }
        var columns: [String]
        let timeColumn: String
        var from = r.table.rawValue
        switch r.table {
        case .readings:
            let d = TableDescription.readings
            columns = d.exported.map(expression)
            let reserved = Set(d.names)
            for f in fields {
                let column = reserved.contains(f.name) ? "field_\(f.name)" : f.name
                columns.append(
                    "json_extract(decoded, '$.\"\(f.name.replacingOccurrences(of: "'", with: "''"))\"') AS \"\(column)\""
                )
            }
            timeColumn = "time"
        case .events:
            columns = TableDescription.events.exported.map(expression)
            timeColumn = "time"
        case .tags:
            columns = [
                "uid", "\(time("first_seen")) AS first_seen", "\(time("last_seen")) AS last_seen", "manufacturer",
                "model",
                "block_count", "block_size", "memory_source", "last_reader", "last_location",
            ]
            timeColumn = "last_seen"
        case .assets:
            columns = ["uid", "asset_id", "name", "location", "extra", "source", "\(time("updated_at")) AS updated_at"]
            timeColumn = "updated_at"
        case .audits:
            columns = [
                "id", "\(time("started")) AS started", "\(time("finished")) AS finished", "gateway", "location",
                "readers", "rounds", "trigger",
                "present", "missing", "wrong_location", "unexpected", "failed_checks",
            ]
            timeColumn = "started"
        case .auditResults:
            // Each result with its audit's id, time and location (the results have no time of their own).
            columns = [
                "r.audit AS audit", "\(time("a.started")) AS started", "a.location AS location", "r.uid AS uid",
                "r.asset_id AS asset_id",
                "r.status AS status", "r.registered_location AS registered_location",
                "r.seen_location AS seen_location",
                "r.seen_by AS seen_by", "r.seen_rounds AS seen_rounds",
                "CASE WHEN r.first_seen IS NULL THEN NULL ELSE \(time("r.first_seen")) END AS first_seen",
                "CASE WHEN r.last_seen IS NULL THEN NULL ELSE \(time("r.last_seen")) END AS last_seen",
                "r.failed_checks AS failed_checks",
            ]
            from = "audit_results r JOIN audits a ON a.id = r.audit"
            timeColumn = "a.started"
        case .writes:
            columns = [
                "\(time("time")) AS time", "gateway", "uid", "\(block) AS block", "hex(data) AS data",
                "CASE WHEN flags IS NULL THEN NULL ELSE printf('0x%02X', flags) END AS flags", "result", "verified",
                "exchanges",
            ]
            timeColumn = "time"
        }
        var sql = "SELECT " + columns.joined(separator: ", ") + " FROM \(from) WHERE \(timeColumn) >= ?1"
        var args: [SQLValue] = [.integer(r.since)]
        if let until = r.until {
            sql += " AND \(timeColumn) < ?\(args.count + 1)"
            args.append(.integer(until))
        }
        if let uid = r.uid, r.table != .audits {
            sql += " AND \(r.table == .auditResults ? "r.uid" : "uid") = ?\(args.count + 1)"
            args.append(.text(uid.description))
        }
        if let reader = r.reader {
            sql += " AND \(r.table == .tags ? "last_reader" : "reader") = ?\(args.count + 1)"
            args.append(.text(reader))
        }
        switch r.table {
        case .tags: sql += " ORDER BY last_seen, uid"
        case .assets: sql += " ORDER BY updated_at, uid"
        case .auditResults: sql += " ORDER BY a.started, r.audit, r.id"
        default: sql += " ORDER BY \(timeColumn), id"
        }
        return (sql, args)
    }

    /// Writes the export to `fd`; returns the number of data rows.
    @discardableResult
    public static func export(_ r: ExportRequest, store: Store, to fd: Int32) throws(StoreError) -> Int {
        // One read transaction: the fields and the rows of one snapshot, beside a running writer.
        try store.withReader { db throws(StoreError) in try export(r, db, to: fd) }
    }

    static func export(_ r: ExportRequest, _ db: SQLiteConnection, to fd: Int32) throws(StoreError) -> Int {
        let fields = r.table == .readings ? try Store.fields(db) : []
        let (sql, args) = query(r, fields: fields)
        let s = try db.prepare(sql)
        try s.bind(args)
        var out = OutputBuffer(fd: fd)
        let n = s.columnCount
        let names = (0..<n).map { s.columnName($0) }
        let eol: [UInt8] = r.crlf ? [0x0D, 0x0A] : [0x0A]
        if r.format == .csv {
            for (i, name) in names.enumerated() {
                if i > 0 { out.append(0x2C) }
                out.appendCSV(Array(name.utf8), neutralise: false)
            }
            out.append(eol)
        }
        let keys = names.map { name -> [UInt8] in
            var k: [UInt8] = []
            JSONText.appendQuoted(name, to: &k)
            return k + [0x3A]
        }
        // Fields that hold JSON (the NDEF records) go into jsonl as JSON, not as a string of it.
        let jsonColumns = Set(
            names.indices.filter { i in
                r.table == .readings && r.jsonFields.contains(names[i]) && fields.contains { $0.name == names[i] }
            })
        var rows = 0
        while try s.step() {
            rows += 1
            if r.format == .csv {
                for i in 0..<n {
                    if i > 0 { out.append(0x2C) }
                    let type = s.type(i)
                    if type == SQLStatement.nullType { continue }
                    s.withBytes(i) { bytes in
                        if type == SQLStatement.textType {
                            out.appendCSV(bytes, neutralise: true)
                        } else {
                            out.append(bytes)
                        }
                    }
                }
                out.append(eol)
            } else {
                out.append(0x7B)
                for i in 0..<n {
                    if i > 0 { out.append(0x2C) }
                    out.append(keys[i])
                    switch s.type(i) {
                    case SQLStatement.nullType: out.append(Array("null".utf8))
                    case SQLStatement.integerType: s.withBytes(i) { out.append($0) }
                    case SQLStatement.floatType:
                        let d = s.double(i)
                        out.append(Array((d.isFinite ? "\(d)" : "null").utf8))
                    default:
                        if jsonColumns.contains(i) {
                            s.withBytes(i) { out.append($0) }
                        } else {
                            JSONText.appendQuoted(s.text(i) ?? "", to: &out.bytes)
                        }
                    }
                }
                out.append(0x7D)
                out.append(0x0A)
            }
            if out.failed { break }
        }
        out.flush()
        if let e = out.error { throw StoreError("cannot write the export: \(String(cString: strerror(e)))") }
        return rows
    }
}

/// A 64 KiB output buffer over a file descriptor.
public struct OutputBuffer {
    let fd: Int32
    public var bytes: [UInt8] = []
    public var error: Int32?
    public var failed: Bool { error != nil }

    public init(fd: Int32) {
        self.fd = fd
        bytes.reserveCapacity(1 << 16)
    }

    public mutating func append(_ b: UInt8) {
        bytes.append(b)
    }

    public mutating func append<C: Collection>(_ c: C) where C.Element == UInt8 {
        bytes.append(contentsOf: c)
        if bytes.count >= 1 << 16 { flush() }
    }

    /// One CSV cell: quoted when it holds a comma, quote, CR or LF; a formula-like start neutralised.
    public mutating func appendCSV<C: Collection>(_ cell: C, neutralise: Bool) where C.Element == UInt8 {
        var needsQuotes = false
        for b in cell where b == 0x2C || b == 0x22 || b == 0x0D || b == 0x0A { needsQuotes = true; break }
        let formula = neutralise && cell.first.map { [0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D].contains($0) } == true
        if !needsQuotes && !formula { append(cell); return }
        if needsQuotes { append(0x22) }
        if formula { append(0x27) }
        if needsQuotes {
            for b in cell {
                if b == 0x22 { append(0x22) }
                append(b)
            }
            append(0x22)
        } else {
            append(cell)
        }
        if bytes.count >= 1 << 16 { flush() }
    }

    public mutating func flush() {
        guard error == nil, !bytes.isEmpty else { bytes.removeAll(keepingCapacity: true); return }
        var off = 0
        bytes.withUnsafeBytes { p in
            while off < p.count {
                let n = write(fd, p.baseAddress! + off, p.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    error = errno
                    return
                }
                off += n
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }
}
