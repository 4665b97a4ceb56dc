import VLoggerModel

extension SyncTable {
    /// The exported column whose value an outbox row carries as its `time` (nil: an audit result's time is its
    /// audit's, not one of its columns).
    var timeColumn: String? {
        switch self {
        case .readings, .events, .writes: return "time"
        case .audits: return "finished"
        case .tags: return "last_seen"
        case .auditResults: return nil
        }
    }

    /// What one row of the table is, in a topic or a message: `reading`, `event`, `write`, `audit`,
    /// `audit-result`, `tag`.
    public var kind: String {
        switch self {
        case .readings: return "reading"
        case .events: return "event"
        case .writes: return "write"
        case .audits: return "audit"
        case .auditResults: return "audit-result"
        case .tags: return "tag"
        }
    }
}

/// An outbox row as one JSON object, for the outputs that send JSON (MQTT, webhooks): `key` (gateway, table and
/// local id: the same row sent twice has the same key, for a consumer to de-duplicate on), `table`, then the
/// table's exported columns with the names, formats and units of `vlogger export --format jsonl` (a reading's
/// decoded fields at the top level, `field_<name>` where a fixed column has the name), and the gateway for the
/// tables that have no gateway column.
public enum OutboxJSON {
    /// Appends the object for `row` of `table`; `gateway` fills in where the row has none.
    public static func append(
        _ table: SyncTable, _ row: OutboxRow, gateway: String, jsonFields: Set<String> = [], to out: inout [UInt8]
    ) {
        let d = table.tableDescription
        let exported = d.exported
        let hasGateway = exported.contains { $0.name == "gateway" }
        var names = ["key", "table"]
        if !hasGateway { names.append("gateway") }
        if d.shape.exportsID { names.append("id") }
        names += exported.map(\.name)
        var w = RowWriter(format: .jsonl, names: names)
        let rowGateway = row.gateway.isEmpty ? gateway : row.gateway
        w.beginRow(&out)
        w.text(Array("\(rowGateway)/\(table.rawValue)/\(row.id)".utf8), &out)
        w.text(Array(table.rawValue.utf8), &out)
        if !hasGateway { w.text(Array(rowGateway.utf8), &out) }
        if d.shape.exportsID { w.integer(row.id, &out) }
        let columns = table.columns
        for c in exported {
            let value: OutboxValue
            if c.name == table.timeColumn {
                value = .integer(row.time)
            } else if c.name == "gateway" {
                value = .text(rowGateway)
            } else if let i = columns.firstIndex(where: { $0.name == c.name }), i < row.values.count {
                value = row.values[i]
            } else {
                value = .null
            }
            cell(value, c.export ?? .text, &w, &out)
        }
        if table == .readings, let decoded = row.value("decoded", in: table).text {
            let reserved = Set(d.names)
            _ = Array(decoded.utf8).withUnsafeBufferPointer { p in
                JSONMembers.scan(p) { key, value in
                    guard let name = JSONMembers.unescape(p, key).map({ String(decoding: $0, as: UTF8.self) }) else {
                        return
                    }
                    w.key(reserved.contains(name) || names.contains(name) ? "field_\(name)" : name)
                    w.decoded(p, value, nested: jsonFields.contains(name), &out)
                }
            }
        }
        out.append(0x7D)  // the object without the line end of JSON lines
    }

    static func cell(_ v: OutboxValue, _ format: ExportFormat, _ w: inout RowWriter, _ out: inout [UInt8]) {
        switch (v, format) {
        case (.null, .hex): w.hex(EmptyCollection(), &out)
        case (.null, _): w.null(&out)
        case (.integer(let n), .time): w.time(n, &out)
        case (.integer(let n), .block): w.block(n, &out)
        case (.integer(let n), .flags): w.flags(n, &out)
        case (.integer(let n), _): w.integer(n, &out)
        case (.blob(let b), _): w.hex(b, &out)
        case (.text(let s), _): w.text(Array(s.utf8), &out)
        }
    }
}
