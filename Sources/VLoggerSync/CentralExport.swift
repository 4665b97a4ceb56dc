import Foundation
import Logging
import PostgresNIO
import VLoggerStore
import VLoggerModel

/// `vlogger export --source postgres`: the same tables, options, columns and CSV/JSON-lines rules as the local
/// export (`Exporter`), across every gateway in the central database (or one, with `gateway`). Tags and audit
/// results gain a `gateway` column (locally they have none; across a fleet they need it). The asset register
/// is not synced, so it is not exported from here. Rows stream from the server a few at a time.
public enum CentralExport {
    /// The PostgreSQL text of a planned column's stored value, for `RowWriter` to format: a time as milliseconds
    /// since 1970, bytes as hex, a boolean as 0 or 1, anything else as its text.
    static func select(_ c: ExportColumn) -> String {
        switch c.format {
        case .time: return "floor(extract(epoch FROM \(c.sql)) * 1000)::bigint::text"
        case .hex: return "encode(\(c.sql), 'hex')"
        case _ where c.postgres == "boolean": return "\(c.sql)::integer::text"
        default: return "\(c.sql)::text"
        }
    }

    /// The plan of a request's table centrally.
    static func plan(_ r: ExportRequest) throws -> ExportPlan {
        guard let plan = ExportPlan.of(Exporter.table(r.table), central: true) else {
            throw SyncError(
                .configuration,
                "the asset register is not synced to the central database; export it on a gateway (--table assets without --source)"
            )
        }
        return plan
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
            var fields = r.table == .readings ? configured : []
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
            let p = try plan(r)
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
            if let gateway, let column = p.gateway { conditions.append("\(column) = \(bind(gateway))") }
            var columns = p.columns.map(select)
            for f in fields {
                columns.append("(decoded -> '" + f.replacingOccurrences(of: "'", with: "''") + "')::text")
            }
            let sql =
                "SELECT " + columns.joined(separator: ", ") + " FROM \(p.from) WHERE "
                + conditions.joined(separator: " AND ") + " ORDER BY \(p.order)"
            let rows = try await conn.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            return try await write(rows, plan: p, fields: fields, request: r, to: fd)
        }
    }

    static func write(
        _ rows: PostgresRowSequence, plan: ExportPlan, fields: [String], request r: ExportRequest, to fd: Int32
    ) async throws -> Int {
        var out = OutputBuffer(fd: fd)
        var w = RowWriter(
            format: r.format == .csv ? .csv : .jsonl, names: Exporter.names(plan, fields: fields), crlf: r.crlf,
            plainHex: r.plainHex, zone: r.zone)
        w.header(to: &out.bytes)
        let formats = plan.columns.map(\.format)
        let nested = fields.map { r.jsonFields.contains($0) }
        let hex = fields.map { r.hexFields.contains($0) }
        var count = 0
        for try await row in rows {
            count += 1
            w.beginRow(&out.bytes)
            for (i, cell) in row.enumerated() {
                let value = cell.bytes.map { Array($0.readableBytesView) }
                if i < formats.count {
                    Self.cell(value, formats[i], &w, &out.bytes)
                } else if i - formats.count < nested.count {
                    // A decoded field: the JSON text of its value, or nothing when the reading has none.
                    if let value {
                        value.withUnsafeBufferPointer {
                            w.decoded(
                                $0, 0..<$0.count, nested: nested[i - formats.count], hex: hex[i - formats.count],
                                &out.bytes)
                        }
                    } else {
                        w.null(&out.bytes)
                    }
                }
            }
            w.endRow(&out.bytes)
            out.flushIfFull()
            if out.failed { break }
        }
        out.flush()
        if let e = out.error {
            throw SyncError(.configuration, "cannot write the export: \(String(cString: strerror(e)))")
        }
        return count
    }

    /// One planned column's value, as `select` gave its text, formatted like the local export's.
    static func cell(_ value: [UInt8]?, _ format: ExportFormat, _ w: inout RowWriter, _ out: inout [UInt8]) {
        guard let value else {
            w.null(&out)
            return
        }
        let number = { Int64(String(decoding: value, as: UTF8.self)) }
        switch format {
        case .time: if let ms = number() { w.time(ms, &out) } else { w.text(value, &out) }
        case .block: if let n = number() { w.block(n, &out) } else { w.text(value, &out) }
        case .flags: if let n = number() { w.flags(n, &out) } else { w.text(value, &out) }
        case .integer: w.number(value, &out)
        case .hex:
            // encode(…, 'hex') gives lower-case pairs; the bytes go out in the one hex format.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(value.count / 2)
            var i = 0
            while i + 1 < value.count, let hi = hexDigit(value[i]), let lo = hexDigit(value[i + 1]) {
                bytes.append(hi << 4 | lo)
                i += 2
            }
            w.hex(bytes, &out)
        case .text: w.text(value, &out)
        }
    }

    static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x57
        case 0x41...0x46: return c - 0x37
        default: return nil
        }
    }
}
