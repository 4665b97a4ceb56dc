import Foundation
import Logging
import PostgresNIO
import VLoggerCore
import VLoggerStore
import VLoggerModel

/// `vlogger export --source postgres`: the same tables, options, columns and CSV/JSON-lines rules as the local
/// export (`Exporter`), across every gateway in the central database (or one, with `gateway`). Tags and audit
/// results gain a `gateway` column (locally they have none; across a fleet they need it). The asset register
/// is not synced, so it is not exported from here. Rows stream from the server a few at a time.
public enum CentralExport {
    /// How a column's text goes out: text (CSV-neutralised, quoted in JSON), a number (as is), or a decoded
    /// field's JSON value (a string as text, a number as is, true/false as 1/0 like the local export's
    /// json_extract, an object or array as JSON text).
    enum Kind { case text, number, json }

    struct Column {
        let name: String
        let sql: String
        let kind: Kind
    }

    static func iso(_ column: String) -> String {
        "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }

    static func hexBlock(_ column: String) -> String {
        "CASE WHEN \(column) < 256 THEN '0x' || lpad(upper(to_hex(\(column))), 2, '0') ELSE '0x' || lpad(upper(to_hex(\(column))), 4, '0') END"
    }

    /// A described column as PostgreSQL formats it for the export (the same text as the local export's).
    static func described(_ c: ColumnDescription) -> Column {
        switch c.export {
        case .time: return Column(name: c.name, sql: iso(c.name), kind: .text)
        case .block: return Column(name: c.name, sql: hexBlock(c.name), kind: .text)
        case .hex: return Column(name: c.name, sql: "upper(encode(\(c.name), 'hex'))", kind: .text)
        case .flags: return Column(name: c.name, sql: "'0x' || lpad(upper(to_hex(\(c.name))), 2, '0')", kind: .text)
        case .integer: return Column(name: c.name, sql: c.name, kind: .number)
        case .text, nil: return Column(name: c.name, sql: c.name, kind: .text)
        }
    }

    /// The query for a request: columns, FROM, the time column filtered on, the order.
    static func plan(_ r: ExportRequest, fields: [String]) throws -> (
        columns: [Column], from: String, time: String, uid: String?, reader: String?,
        gateway: String, order: String
    ) {
        func t(_ name: String, _ sql: String? = nil) -> Column { Column(name: name, sql: sql ?? name, kind: .text) }
        func n(_ name: String, _ sql: String? = nil) -> Column { Column(name: name, sql: sql ?? name, kind: .number) }
        switch r.table {
        case .readings:
            let d = TableDescription.readings
            var columns = d.exported.map(described)
            let reserved = Set(d.names)
            for f in fields {
                let literal = "'" + f.replacingOccurrences(of: "'", with: "''") + "'"
                columns.append(
                    Column(name: reserved.contains(f) ? "field_\(f)" : f, sql: "decoded -> \(literal)", kind: .json))
            }
            return (columns, "readings", "time", "uid", "reader", "gateway", "time, gateway, local_id")
        case .events:
            return (
                TableDescription.events.exported.map(described), "events", "time", "uid", "reader", "gateway",
                "time, gateway, local_id"
            )
        case .tags:
            return (
                [
                    t("uid"), t("gateway"), t("first_seen", iso("first_seen")), t("last_seen", iso("last_seen")),
                    t("manufacturer"), t("model"),
                    n("block_count"), n("block_size"), t("memory_source"), t("last_reader"), t("last_location"),
                ],
                "tags", "last_seen", "uid", "last_reader", "gateway", "last_seen, gateway, uid"
            )
        case .writes:
            return (
                [
                    t("time", iso("time")), t("gateway"), t("uid"), t("block", hexBlock("block")),
                    t("data", "upper(encode(data, 'hex'))"),
                    t("flags", "'0x' || lpad(upper(to_hex(flags)), 2, '0')"), t("result"),
                    n("verified", "verified::integer"), n("exchanges"),
                ],
                "writes", "time", "uid", nil, "gateway", "time, gateway, local_id"
            )
        case .audits:
            return (
                [
                    n("id", "local_id"), t("started", iso("started")), t("finished", iso("time")), t("gateway"),
                    t("location"), t("readers"),
                    n("rounds"), t("trigger"), n("present"), n("missing"), n("wrong_location"), n("unexpected"),
                    n("failed_checks"),
                ],
                "audits", "started", nil, nil, "gateway", "started, gateway, local_id"
            )
        case .auditResults:
            return (
                [
                    n("audit", "r.audit"), t("gateway", "r.gateway"), t("started", iso("a.started")),
                    t("location", "a.location"), t("uid", "r.uid"),
                    t("asset_id", "r.asset_id"), t("status", "r.status"),
                    t("registered_location", "r.registered_location"),
                    t("seen_location", "r.seen_location"), t("seen_by", "r.seen_by"), n("seen_rounds", "r.seen_rounds"),
                    t("first_seen", iso("r.first_seen")), t("last_seen", iso("r.last_seen")),
                    t("failed_checks", "r.failed_checks"),
                ],
                "audit_results r JOIN audits a ON a.gateway = r.gateway AND a.local_id = r.audit", "a.started", "r.uid",
                nil, "r.gateway",
                "a.started, r.gateway, r.audit, r.local_id"
            )
        case .assets:
            throw SyncError(
                .configuration,
                "the asset register is not synced to the central database; export it on a gateway (--table assets without --source)"
            )
        }
    }

    /// Writes the export to `fd`; returns the number of data rows. `fields`: the decoded fields to give columns
    /// (the configuration's, in order); fields the server has beyond them follow, by name.
    @discardableResult
    public static func export(
        _ r: ExportRequest, gateway: String?, fields configured: [String], settings: SyncSettings,
        logger: Logger = Logger(label: "vlogger.export"), to fd: Int32
    ) async throws -> Int {
        let password: String?
        do { password = try settings.password() } catch { throw SyncError(.configuration, "\(error)") }
        return try await Syncer.withConnection(settings, password: password, logger: logger) { conn in
            var fields = configured
            let ms = { (p: String) in "TIMESTAMPTZ 'epoch' + \(p)::bigint * INTERVAL '1 millisecond'" }
            if r.table == .readings {
                var binds = PostgresBindings()
                binds.append(r.since)
                var sql =
                    "SELECT DISTINCT json_object_keys(decoded) FROM readings WHERE decoded IS NOT NULL AND time >= \(ms("$1"))"
                if let gateway {
                    binds.append(gateway)
                    sql += " AND gateway = $2"
                }
                var extra: [String] = []
                for try await k in try await conn.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
                    .decode(String.self) where !fields.contains(k)
                {
                    extra.append(k)
                }
                fields += extra.sorted()
            }
            let p = try plan(r, fields: fields)
            var binds = PostgresBindings()
            var conditions: [String] = []
            func bind(_ value: some PostgresNonThrowingEncodable & Sendable) -> String {
                binds.append(value)
                return "$\(binds.count)"
            }
            conditions.append("\(p.time) >= \(ms(bind(r.since)))")
            if let until = r.until { conditions.append("\(p.time) < \(ms(bind(until)))") }
            if let uid = r.uid, let column = p.uid { conditions.append("\(column) = \(bind(uid.description))") }
            if let reader = r.reader, let column = p.reader { conditions.append("\(column) = \(bind(reader))") }
            if let gateway { conditions.append("\(p.gateway) = \(bind(gateway))") }
            let sql =
                "SELECT " + p.columns.map { "(\($0.sql))::text" }.joined(separator: ", ") + " FROM \(p.from) WHERE "
                + conditions.joined(separator: " AND ") + " ORDER BY \(p.order)"
            let rows = try await conn.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            return try await write(rows, columns: p.columns, request: r, to: fd)
        }
    }

    static func write(_ rows: PostgresRowSequence, columns: [Column], request r: ExportRequest, to fd: Int32)
        async throws -> Int
    {
        var out = OutputBuffer(fd: fd)
        let eol: [UInt8] = r.crlf ? [0x0D, 0x0A] : [0x0A]
        if r.format == .csv {
            for (i, c) in columns.enumerated() {
                if i > 0 { out.append(0x2C) }
                out.appendCSV(Array(c.name.utf8), neutralise: false)
            }
            out.append(eol)
        }
        let keys = columns.map { c -> [UInt8] in
            var k: [UInt8] = []
            JSONText.appendQuoted(c.name, to: &k)
            return k + [0x3A]
        }
        var count = 0
        for try await row in rows {
            count += 1
            if r.format == .jsonl { out.append(0x7B) }
            for (i, cell) in row.enumerated() where i < columns.count {
                if i > 0 { out.append(0x2C) }
                if r.format == .jsonl { out.append(keys[i]) }
                let value = cell.bytes.map { Array($0.readableBytesView) }
                cellOut(value, columns[i], rawJSON: r.jsonFields.contains(columns[i].name), csv: r.format == .csv, &out)
            }
            if r.format == .jsonl {
                out.append(0x7D)
                out.append(0x0A)
            } else {
                out.append(eol)
            }
            if out.failed { break }
        }
        out.flush()
        if let e = out.error {
            throw SyncError(.configuration, "cannot write the export: \(String(cString: strerror(e)))")
        }
        return count
    }

    /// One cell, by the column's kind (see `Kind`).
    static func cellOut(_ value: [UInt8]?, _ column: Column, rawJSON: Bool, csv: Bool, _ out: inout OutputBuffer) {
        enum Cell { case null, number([UInt8]), text(String), json([UInt8]) }
        let cell: Cell
        switch (value, column.kind) {
        case (nil, _): cell = .null
        case (let v?, .number): cell = .number(v)
        case (let v?, .text): cell = .text(String(decoding: v, as: UTF8.self))
        case (let v?, .json):
            switch v.first {
            case UInt8(ascii: "\""):
                let s = (try? JSONSerialization.jsonObject(with: Data(v), options: .fragmentsAllowed)) as? String
                cell = .text(s ?? String(decoding: v, as: UTF8.self))
            case UInt8(ascii: "t"): cell = .number(Array("1".utf8))
            case UInt8(ascii: "f"): cell = .number(Array("0".utf8))
            case UInt8(ascii: "n"): cell = .null
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                cell = rawJSON && !csv ? .json(v) : .text(String(decoding: v, as: UTF8.self))
            default: cell = .number(v)
            }
        }
        switch cell {
        case .null:
            if !csv { out.append(Array("null".utf8)) }
        case .number(let v), .json(let v):
            out.append(v)
        case .text(let s):
            if csv { out.appendCSV(Array(s.utf8), neutralise: true) } else { JSONText.appendQuoted(s, to: &out.bytes) }
        }
    }
}
