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
    /// Only rows after this local id, in id order (commit order), for a program that polls: `lastID` of the
    /// export is where its next call starts. Readings, events and writes.
    public var afterID: Int64?
    /// For people: the register's `asset_name` beside the UID (readings, events, tags: the name in the store's asset
    /// register now), decoded fields' units in the CSV header (`temperature [°C]`) and, in JSON lines, a reading's
    /// `units` object (`{"temperature":"°C"}`).
    public var labels = false
    /// CSV bytes without the `\x` prefix (the form before it was there); for scripts that split the hex
    /// themselves. The prefix keeps data tools from reading hex as numbers (docs/json.md, "CSV and data tools").
    public var plainHex = false
    /// Decoded fields whose values are hex bytes, where the store does not say (the central export: the
    /// configuration's `hex` fields). The local export takes them from the store's fields table.
    public var hexFields: Set<String> = []
    /// Times in this zone with their offset (`--local-time`, for people); nil: ISO 8601 UTC.
    public var zone: LocalTime?

    /// The tables `afterID` applies to.
    public static let afterIDTables: [Table] = [.readings, .events, .writes]

    public init(since: Millis) { self.since = since }
}

/// Streams rows from the store to a file descriptor: one SQL query of the stored values, one row at a time
/// through a 64 KiB buffer, so memory stays flat however many rows there are. The columns come from the table's
/// description (`ExportPlan`), the values are formatted by `RowWriter` (the same as the central export's), and a
/// reading's decoded fields are taken from its stored JSON in one pass per row.
public enum Exporter {
    /// The description of an exported table.
    public static func table(_ t: ExportRequest.Table) -> TableDescription {
        TableDescription.named(t.rawValue) ?? .unknown(t.rawValue)
    }

    /// The column names of an export, header order (decoded fields named `field_<name>` where a fixed column has
    /// their name).
    public static func names(_ plan: ExportPlan, fields: [String]) -> [String] {
        let reserved = Set(plan.table.names)
        return plan.columns.map(\.name) + fields.map { reserved.contains($0) ? "field_\($0)" : $0 }
    }

    /// Whether the request adds `asset_name` (a table with a UID column, asked for labels).
    static func assetName(_ r: ExportRequest, _ plan: ExportPlan) -> String? {
        guard r.labels, [.readings, .events, .tags].contains(r.table), let uid = plan.uid else { return nil }
        // Qualified by its table: inside the subquery a bare `uid` would be the register's own.
        let outer = uid.contains(".") ? uid : "\(table(r.table).name).\(uid)"
        return "(SELECT name FROM assets AS register WHERE register.uid = \(outer))"
    }

    /// The query of stored values for a request, with its parameters (`asset_name` after the plan's columns when
    /// asked, then `decoded` for readings).
    static func query(_ r: ExportRequest, _ plan: ExportPlan) -> (sql: String, args: [SQLValue]) {
        var columns = plan.columns.map(\.sql)
        if let name = assetName(r, plan) { columns.append(name) }
        if r.table == .readings { columns.append("decoded") }
        if r.afterID != nil { columns.append("id") }
        return where_(r, plan, select: columns)
    }

    /// `SELECT columns FROM … WHERE` the request's window and filters `ORDER BY` the plan's order.
    /// The WHERE and ORDER BY of a request over `plan`, after `select` (the export's and its test oracle's).
    package static func where_(_ r: ExportRequest, _ plan: ExportPlan, select columns: [String]) -> (
        sql: String, args: [SQLValue]
    ) {
        var sql = "SELECT " + columns.joined(separator: ", ") + " FROM \(plan.from) WHERE \(plan.time) >= ?1"
        var args: [SQLValue] = [.integer(r.since)]
        if let until = r.until {
            sql += " AND \(plan.time) < ?\(args.count + 1)"
            args.append(.integer(until))
        }
        if let uid = r.uid, let column = plan.uid {
            sql += " AND \(column) = ?\(args.count + 1)"
            args.append(.text(uid.description))
        }
        if let reader = r.reader, let column = plan.reader {
            sql += " AND \(column) = ?\(args.count + 1)"
            args.append(.text(reader))
        }
        if let after = r.afterID {
            sql += " AND id > ?\(args.count + 1)"
            args.append(.integer(after))
            return (sql + " ORDER BY id", args)
        }
        return (sql + " ORDER BY \(plan.order)", args)
    }

    /// Writes the export to `fd`; returns the number of data rows.
    @discardableResult
    public static func export(_ r: ExportRequest, store: Store, to fd: Int32) throws(StoreError) -> Int {
        try exportWithLastID(r, store: store, to: fd).rows
    }

    /// Writes the export to `fd`; returns the number of data rows and, with `afterID`, the id of the last row
    /// written (`afterID` itself when there was none).
    public static func exportWithLastID(_ r: ExportRequest, store: Store, to fd: Int32) throws(StoreError) -> (
        rows: Int, lastID: Int64?
    ) {
        // One read transaction: the fields and the rows of one snapshot, beside a running writer.
        try store.withReader { db throws(StoreError) in try export(r, db, to: fd) }
    }

    static func export(_ r: ExportRequest, _ db: SQLiteConnection, to fd: Int32) throws(StoreError) -> (
        rows: Int, lastID: Int64?
    ) {
        let infos = r.table == .readings ? try Store.fields(db) : []
        let fields = infos.map(\.name)
        let plan = ExportPlan.of(table(r.table), central: false)!
        let (sql, args) = query(r, plan)
        let s = try db.prepare(sql)
        try s.bind(args)
        var out = OutputBuffer(fd: fd)
        let withName = assetName(r, plan) != nil
        var names = names(plan, fields: fields)
        if withName { names.insert("asset_name", at: plan.columns.count) }
        var header: [String]?
        if r.labels {
            header = names
            for (k, f) in infos.enumerated() {
                if let u = f.unit, !u.isEmpty { header?[names.count - infos.count + k] += " [\(u)]" }
            }
        }
        var w = RowWriter(
            format: r.format == .csv ? .csv : .jsonl, names: names, crlf: r.crlf, header: header, plainHex: r.plainHex,
            zone: r.zone)
        w.header(to: &out.bytes)
        var formats = plan.columns.map(\.format)
        if withName { formats.append(.text) }
        let fieldNames = fields.map { Array($0.utf8) }
        let nested = fields.map { r.jsonFields.contains($0) }
        let hex = infos.map(\.hex)
        let units = infos.map { f in f.unit.flatMap { $0.isEmpty ? nil : $0 } }
        let jsonUnits = r.labels && r.format == .jsonl && units.contains { $0 != nil }
        var found = [Range<Int>?](repeating: nil, count: fields.count)
        var rows = 0
        var lastID = r.afterID
        let idColumn = formats.count + (r.table == .readings ? 1 : 0)
        while try s.step() {
            rows += 1
            if r.afterID != nil { lastID = s.int64(idColumn) }
            w.beginRow(&out.bytes)
            for (i, format) in formats.enumerated() {
                let type = s.type(i)
                if type == SQLStatement.nullType {
                    // NULL (a field that does not apply): an empty CSV cell, no member in JSON lines.
                    w.null(&out.bytes)
                    continue
                }
                switch format {
                case .time where type == SQLStatement.integerType: w.time(s.int64(i), &out.bytes)
                case .block where type == SQLStatement.integerType: w.block(s.int64(i), &out.bytes)
                case .flags where type == SQLStatement.integerType: w.flags(s.int64(i), &out.bytes)
                case .hex: s.withBytes(i) { w.hex($0, &out.bytes) }
                case .integer where type == SQLStatement.integerType: w.integer(s.int64(i), &out.bytes)
                default:
                    // Text, or a value SQLite keeps in another type than the column's (it allows that): numbers
                    // as numbers, anything else as text.
                    s.withBytes(i) { b in
                        if type == SQLStatement.integerType || type == SQLStatement.floatType {
                            w.number(b, &out.bytes)
                        } else {
                            w.text(b, &out.bytes)
                        }
                    }
                }
            }
            if !fields.isEmpty {
                s.withBytes(formats.count) { raw in
                    let p = raw.bindMemory(to: UInt8.self)
                    for k in found.indices { found[k] = nil }
                    JSONMembers.scan(p) { key, value in
                        for k in fieldNames.indices where found[k] == nil && JSONMembers.key(p, key, is: fieldNames[k])
                        {
                            found[k] = value
                            break
                        }
                    }
                    for k in fieldNames.indices {
                        w.decoded(p, found[k], nested: nested[k], hex: hex[k], &out.bytes)
                    }
                    if jsonUnits {
                        // The units of the fields this reading has.
                        var object: [UInt8] = [0x7B]
                        for k in fieldNames.indices where found[k] != nil {
                            guard let u = units[k] else { continue }
                            if object.count > 1 { object.append(0x2C) }
                            JSONText.appendQuoted(fields[k], to: &object)
                            object.append(0x3A)
                            JSONText.appendQuoted(u, to: &object)
                        }
                        if object.count > 1 {
                            object.append(0x7D)
                            w.key("units")
                            w.json(object, &out.bytes)
                        }
                    }
                }
            }
            w.endRow(&out.bytes)
            out.flushIfFull()
            if out.failed { break }
        }
        out.flush()
        if let e = out.error { throw StoreError("cannot write the export: \(String(cString: strerror(e)))") }
        return (rows, lastID)
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

    /// Writes the buffer out once it holds 64 KiB.
    public mutating func flushIfFull() {
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
