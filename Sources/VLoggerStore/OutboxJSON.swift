import VLoggerModel

extension SyncTable {
    /// The exported column whose value an outbox row carries as its `time` (nil: an audit result's time is its
    /// audit's, not one of its columns).
    var timeColumn: String? {
        tableDescription.outbox.flatMap { o in tableDescription.names.contains(o.time) ? o.time : nil }
    }

    /// What one row of the table is, in a topic or a message: `reading`, `event`, `write`, `audit`,
    /// `audit-result`, `tag`.
    public var kind: String { tableDescription.outbox?.kind ?? rawValue }
}

/// An outbox row as one JSON object, for the outputs that send JSON (MQTT, webhooks): `key` (gateway, table and
/// local id: the same row sent twice has the same key, for a consumer to de-duplicate on), `table`, then the
/// table's exported columns with the names and formats of `vlogger export --format jsonl` (a reading's
/// decoded fields at the top level, `field_<name>` where a fixed column has the name), the gateway for the
/// tables that have no gateway column, and `time` for the one whose time is not a column (audit results: their
/// audit's). `row(from:)` reads it back (OutboxJSONDecode.swift).
public enum OutboxJSON {
    /// What every row of a table needs, worked out once per table: the member names, where each exported
    /// column's value is in an outbox row, the names a decoded field may not take.
    struct Layout: Sendable {
        enum Source: Sendable { case time, gateway, value(Int), none }
        let hasGateway: Bool
        let exportsID: Bool
        /// The row's time as a member of its own: a table whose time is none of its exported columns (an audit
        /// result's is its audit's), so that a consumer (`vlogger central ingest`) has the time the central
        /// table keeps.
        let ownTime: Bool
        let writer: RowWriter
        let columns: [(format: ExportFormat, source: Source)]
        let taken: Set<String>

        init(_ table: SyncTable) {
            let d = table.tableDescription
            let exported = d.exported
            hasGateway = exported.contains { $0.name == "gateway" }
            exportsID = d.shape.exportsID
            var names = ["key", "table"]
            if !hasGateway { names.append("gateway") }
            if exportsID { names.append("id") }
            names += exported.map(\.name)
            ownTime = table.timeColumn == nil && !names.contains("time")
            if ownTime { names.append("time") }
            writer = RowWriter(format: .jsonl, names: names)
            let outbox = table.columns
            columns = exported.map { c in
                let source: Source
                if c.name == table.timeColumn {
                    source = .time
                } else if c.name == "gateway" {
                    source = .gateway
                } else if let i = outbox.firstIndex(where: { $0.name == c.name }) {
                    source = .value(i)
                } else {
                    source = .none
                }
                return (c.export ?? .text, source)
            }
            taken = Set(d.names + names)
        }
    }

    static let layouts = Dictionary(uniqueKeysWithValues: SyncTable.allCases.map { ($0, Layout($0)) })

    /// Appends the object for `row` of `table`; `gateway` fills in where the row has none. `keyed` false: `key`
    /// is null (a row of a scratch store, whose ids are not the gateway's).
    public static func append(
        _ table: SyncTable, _ row: OutboxRow, gateway: String, jsonFields: Set<String> = [], keyed: Bool = true,
        to out: inout [UInt8]
    ) {
        guard let layout = layouts[table] else { return }
        var w = layout.writer
        let rowGateway = row.gateway.isEmpty ? gateway : row.gateway
        w.beginRow(&out)
        if keyed {
            w.text(Array("\(rowGateway)/\(table.rawValue)/\(row.id)".utf8), &out)
        } else {
            w.null(&out)
        }
        w.text(Array(table.rawValue.utf8), &out)
        if !layout.hasGateway { w.text(Array(rowGateway.utf8), &out) }
        if layout.exportsID { w.integer(row.id, &out) }
        for (format, source) in layout.columns {
            let value: OutboxValue
            switch source {
            case .time: value = .integer(row.time)
            case .gateway: value = .text(rowGateway)
            case .value(let i) where i < row.values.count: value = row.values[i]
            default: value = .null
            }
            cell(value, format, &w, &out)
        }
        if layout.ownTime { w.time(row.time, &out) }
        if table == .readings, let decoded = row.value("decoded", in: table).text {
            _ = Array(decoded.utf8).withUnsafeBufferPointer { p in
                JSONMembers.scan(p) { key, value in
                    guard let name = JSONMembers.unescape(p, key).map({ String(decoding: $0, as: UTF8.self) }) else {
                        return
                    }
                    w.key(layout.taken.contains(name) ? "field_\(name)" : name)
                    w.decoded(p, value, nested: jsonFields.contains(name), &out)
                }
            }
        }
        out.append(0x7D)  // the object without the line end of JSON lines
    }

    static func cell(_ v: OutboxValue, _ format: ExportFormat, _ w: inout RowWriter, _ out: inout [UInt8]) {
        switch (v, format) {
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
