/// How a column's value goes out in an export (CSV and JSON lines, local and central alike).
public enum ExportFormat: Sendable, Equatable {
    /// Text as stored (CSV-neutralised, a JSON string).
    case text
    /// A number as stored.
    case integer
    /// Bytes as upper-case hex without separators.
    case hex
    /// A block number in hex: `0xF8` below 256, `0x0100` from there on.
    case block
    /// Milliseconds since 1970 as ISO 8601 UTC with milliseconds (`2026-11-22T08:30:00.250Z`).
    case time
    /// Request flags as one hex byte (`0x22`).
    case flags
}

/// One stored column of a table: the only place its name, its types in the local store and in the central
/// database, how it is exported and how it goes through the outbox are written.
public struct ColumnDescription: Sendable, Equatable {
    public let name: String
    /// The SQLite type, as the migrations declare it (`INTEGER`, `TEXT`, `BLOB`).
    public let sqlite: String
    /// The central PostgreSQL type; nil for a column the central database does not have.
    public let postgres: String?
    /// The column's name in the central table when it differs (an audit's `finished` is its row's `time` there).
    public let centralName: String
    /// Whether the column may be NULL (in both databases).
    public let nullable: Bool
    /// How it is exported; nil for a column that is not exported as one (`decoded`: a column per field).
    public let export: ExportFormat?
    /// How it goes through the outbox; nil for the columns every outbox row has anyway (time, gateway).
    public let outbox: OutboxColumn.Kind?
    /// Where a new row's value comes from: the record's, or the store's own (see `ColumnSource`).
    public let source: ColumnSource
    /// How a row stored again under its key keeps or replaces the stored value (tables with an `upsertKey`).
    public let merge: ColumnMerge

    init(
        _ name: String, _ sqlite: String, _ postgres: String?, nullable: Bool = false, export: ExportFormat?,
        outbox: OutboxColumn.Kind?, centralName: String? = nil, source: ColumnSource = .record,
        merge: ColumnMerge = .replace
    ) {
        self.name = name
        self.sqlite = sqlite
        self.postgres = postgres
        self.centralName = centralName ?? name
        self.nullable = nullable
        self.export = export
        self.outbox = outbox
        self.source = source
        self.merge = merge
    }
}

/// Where a new row's value of a column comes from.
public enum ColumnSource: Sendable, Equatable {
    /// The record's value of the column (`StoredRow.column(_:)`).
    case record
    /// The asset register's asset id of the row's `uid` (NULL for a tag it does not list).
    case register
    /// The table's next change number: one more than the highest stored (a tag's `seq`, see migration 010).
    case changeNumber
    /// The record's value, or this SQL literal when the record has none (and, stored again, the stored value).
    case recordOr(String)
}

/// How a row stored again under its table's key (`TableDescription.upsertKey`) merges with the stored row. Every
/// rule reads the stored row as it was before the statement (SQLite's `UPDATE … SET` does).
public enum ColumnMerge: Sendable, Equatable {
    /// The new value.
    case replace
    /// The stored value (the key's columns, and what a row says once: a sensor session's kind).
    case kept
    /// The new value when there is one, the stored value otherwise.
    case newOrKept
    /// The larger, or the smaller, of the two.
    case max, min
    /// The new value when the new row's value of the named time column is no older than the stored row's.
    case ifNewer(String)
}

/// A table's columns (besides its row id), in export order. From it come the columns of the batch insert,
/// the export's column plan (local and central), the outbox's columns and the central table's shape; the
/// migrations, local and central, are checked against it by the tests (a migration is history, this is the
/// shape it must end at).
public struct TableDescription: Sendable {
    public let name: String
    /// Whether rows have an `id INTEGER PRIMARY KEY` (`local_id` centrally); tags and assets are keyed by UID.
    public let hasRowID: Bool
    public let columns: [ColumnDescription]
    /// Central columns the local table does not have (a tag's gateway; an audit result's gateway and time, which
    /// are its audit's locally).
    public let centralOnly: [ColumnDescription]
    /// How the export reads the table (see `ExportShape`).
    let shape: ExportShape
    /// The columns a row is stored again under (`upsertSQL`, `deleteSQL`); nil for a table that only appends.
    public let upsertKey: [String]?
    /// How the outbox reads the table (see `OutboxSource`); nil for a table that is not shipped.
    let outbox: OutboxSource?

    /// The column names, in order.
    public var names: [String] { columns.map(\.name) }

    /// The 1-based bind position of `name` in `insertSQL`.
    public func position(_ name: String) -> Int32 {
        Int32((columns.firstIndex { $0.name == name } ?? columns.count) + 1)
    }

    /// `INSERT INTO name(columns…) VALUES(?,…)`, one parameter per column in order.
    public var insertSQL: String {
        "INSERT INTO \(name)(\(names.joined(separator: ", "))) VALUES("
            + Array(repeating: "?", count: columns.count).joined(separator: ",") + ")"
    }

    /// The columns whose values a statement binds (`insertSQL`, `upsertSQL`), in order of their parameters: all
    /// but those the table numbers itself.
    public var parameterColumns: [ColumnDescription] { columns.filter { $0.source != .changeNumber } }

    /// `INSERT … ON CONFLICT(key) DO UPDATE SET …`: a new row, or the stored row under the same key merged with it
    /// by each column's `merge`. Parameters `?1…` are `parameterColumns`, in order. Nil for an append-only table.
    public var upsertSQL: String? {
        guard let key = upsertKey else { return nil }
        var parameter: [String: String] = [:]
        for (i, c) in parameterColumns.enumerated() { parameter[c.name] = "?\(i + 1)" }
        let values = columns.map { c -> String in
            switch c.source {
            case .changeNumber: return "(SELECT coalesce(max(\(c.name)), 0) + 1 FROM \(name))"
            case .recordOr(let fallback): return "coalesce(\(parameter[c.name] ?? "NULL"), \(fallback))"
            case .record, .register: return parameter[c.name] ?? "NULL"
            }
        }
        let updates = columns.compactMap { c -> String? in
            let new = "excluded.\(c.name)"
            let value: String
            switch c.merge {
            case .kept: return nil
            case .replace:
                // A fallback is for a new row: stored again without a value, the row keeps its own.
                if case .recordOr = c.source {
                    value = "coalesce(\(parameter[c.name] ?? "NULL"), \(c.name))"
                } else {
                    value = new
                }
            case .newOrKept: value = "coalesce(\(new), \(c.name))"
            case .max: value = "max(\(c.name), \(new))"
            case .min: value = "min(\(c.name), \(new))"
            case .ifNewer(let time):
                value = "CASE WHEN excluded.\(time) >= \(time) THEN \(new) ELSE \(c.name) END"
            }
            return "\(c.name) = \(value)"
        }
        return "INSERT INTO \(name)(\(names.joined(separator: ", "))) VALUES(\(values.joined(separator: ", ")))"
            + " ON CONFLICT(\(key.joined(separator: ", "))) DO UPDATE SET \(updates.joined(separator: ", "))"
    }

    /// `DELETE FROM name WHERE key = ?…` (parameters in the key's order); nil for an append-only table.
    public var deleteSQL: String? {
        upsertKey.map { key in
            "DELETE FROM \(name) WHERE " + key.map { "\($0) = ?" }.joined(separator: " AND ")
        }
    }

    /// A table of no columns, neither exported nor shipped: what a name no description has stands for.
    static func unknown(_ name: String) -> TableDescription {
        TableDescription(name, [], shape: .init(time: "time", uid: nil, reader: nil, central: false))
    }

    /// The description of the table named `name` (the stored tables, then the store's own).
    public static func named(_ name: String) -> TableDescription? {
        (all + internalTables).first { $0.name == name }
    }

    /// The columns that go through the outbox after (id, time, gateway), in order.
    public var outboxColumns: [OutboxColumn] {
        columns.compactMap { c in c.outbox.map { OutboxColumn(c.name, $0) } }
    }

    /// The columns exported as they are (not `decoded`), in order.
    public var exported: [ColumnDescription] { columns.filter { $0.export != nil } }

    /// The central table's columns besides its key (`local_id`, or a tag's `uid`… which is described), by name.
    public var centralColumns: [(name: String, postgres: String, nullable: Bool)] {
        (columns + centralOnly).compactMap { c in c.postgres.map { (c.centralName, $0, c.nullable) } }
    }

    init(
        _ name: String, rowID: Bool = true, _ columns: [ColumnDescription], centralOnly: [ColumnDescription] = [],
        upsertKey: [String]? = nil, shape: ExportShape, outbox: OutboxSource? = nil
    ) {
        self.name = name
        self.hasRowID = rowID
        self.columns = columns
        self.centralOnly = centralOnly
        self.upsertKey = upsertKey
        self.shape = shape
        self.outbox = outbox
    }

    /// Every stored table that is described, in the order a store lists them.
    public static let all: [TableDescription] = [readings, events, tags, writes, audits, auditResults, assets]

    /// The store's own tables that the batch writes (not exported, not shipped).
    public static let internalTables: [TableDescription] = [sensorSessions, readerBuffers]

    /// One read of consecutive blocks of one tag.
    public static let readings = TableDescription(
        "readings",
        [
            .init("time", "INTEGER", "timestamptz", export: .time, outbox: nil),
            .init("gateway", "TEXT", "text", export: .text, outbox: nil),
            .init("reader", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("location", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("uid", "TEXT", "text", export: .text, outbox: .text),
            .init("asset_id", "TEXT", "text", nullable: true, export: .text, outbox: .text, source: .register),
            .init("block", "INTEGER", "integer", export: .block, outbox: .integer),
            .init("count", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("data", "BLOB", "bytea", export: .hex, outbox: .blob),
            .init("security", "BLOB", "bytea", nullable: true, export: .hex, outbox: .blob),
            .init("decoded", "TEXT", "json", nullable: true, export: nil, outbox: .json),
        ],
        shape: .init(time: "time", uid: "uid", reader: "reader"), outbox: .init(kind: "reading"))

    /// Something worth an operator's attention.
    public static let events = TableDescription(
        "events",
        [
            .init("time", "INTEGER", "timestamptz", export: .time, outbox: nil),
            .init("gateway", "TEXT", "text", export: .text, outbox: nil),
            .init("reader", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("location", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("uid", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("asset_id", "TEXT", "text", nullable: true, export: .text, outbox: .text, source: .register),
            .init("kind", "TEXT", "text", export: .text, outbox: .text),
            .init("name", "TEXT", "text", export: .text, outbox: .text),
            .init("severity", "TEXT", "text", export: .text, outbox: .text),
            .init("detail", "TEXT", "text", export: .text, outbox: .text),
            .init("origin", "TEXT", "text", nullable: true, export: .text, outbox: .text),
        ],
        shape: .init(time: "time", uid: "uid", reader: "reader"), outbox: .init(kind: "event"))

    /// Each tag seen, one row per tag, changed as it is seen again (each change takes the next `seq`).
    public static let tags = TableDescription(
        "tags", rowID: false,
        [
            .init("uid", "TEXT", "text", export: .text, outbox: .text, merge: .kept),
            .init("first_seen", "INTEGER", "timestamptz", export: .time, outbox: .time, merge: .min),
            .init("last_seen", "INTEGER", "timestamptz", export: .time, outbox: nil, merge: .max),
            .init("manufacturer", "TEXT", "text", export: .text, outbox: .text),
            .init("model", "TEXT", "text", nullable: true, export: .text, outbox: .text, merge: .newOrKept),
            .init(
                "block_count", "INTEGER", "integer", nullable: true, export: .integer, outbox: .integer,
                merge: .newOrKept),
            .init(
                "block_size", "INTEGER", "integer", nullable: true, export: .integer, outbox: .integer,
                merge: .newOrKept),
            .init("memory_source", "TEXT", "text", nullable: true, export: .text, outbox: .text, merge: .newOrKept),
            .init(
                "last_reader", "TEXT", "text", nullable: true, export: .text, outbox: .text,
                merge: .ifNewer("last_seen")),
            .init(
                "last_location", "TEXT", "text", nullable: true, export: .text, outbox: .text,
                merge: .ifNewer("last_seen")),
            .init("seq", "INTEGER", nil, export: nil, outbox: nil, source: .changeNumber),
            .init("originality", "TEXT", nil, nullable: true, export: nil, outbox: nil, merge: .newOrKept),
        ],
        centralOnly: [.init("gateway", "", "text", export: .text, outbox: nil)],
        upsertKey: ["uid"],
        shape: .init(
            time: "last_seen", uid: "uid", reader: "last_reader", localOrder: "last_seen, uid",
            centralOrder: "last_seen, gateway, uid", centralGatewayAfter: "uid"),
        // Shipped by change number (every insert or update takes the next); the row is this store's gateway's.
        outbox: .init(kind: "tag", cursor: "seq", time: "last_seen", gateway: nil))

    /// Blocks written (directly or from the write queue), with the outcome.
    public static let writes = TableDescription(
        "writes",
        [
            .init("time", "INTEGER", "timestamptz", export: .time, outbox: nil),
            .init("gateway", "TEXT", "text", export: .text, outbox: nil),
            .init("uid", "TEXT", "text", export: .text, outbox: .text),
            .init("block", "INTEGER", "integer", export: .block, outbox: .integer),
            .init("data", "BLOB", "bytea", export: .hex, outbox: .blob),
            .init("flags", "INTEGER", "integer", nullable: true, export: .flags, outbox: .integer),
            .init("result", "TEXT", "text", export: .text, outbox: .text),
            .init("verified", "INTEGER", "boolean", export: .integer, outbox: .bool),
            .init("exchanges", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("origin", "TEXT", "text", nullable: true, export: .text, outbox: .text),
        ],
        shape: .init(time: "time", uid: "uid", reader: nil), outbox: .init(kind: "write"))

    /// One audit of a location against the register (its results are `auditResults`).
    public static let audits = TableDescription(
        "audits",
        [
            .init("started", "INTEGER", "timestamptz", export: .time, outbox: .time),
            .init("finished", "INTEGER", "timestamptz", export: .time, outbox: nil, centralName: "time"),
            .init("gateway", "TEXT", "text", export: .text, outbox: nil),
            .init("location", "TEXT", "text", export: .text, outbox: .text),
            .init("readers", "TEXT", "text", export: .text, outbox: .text),
            .init("rounds", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("trigger", "TEXT", "text", export: .text, outbox: .text),
            .init("present", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("missing", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("wrong_location", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("unexpected", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("failed_checks", "INTEGER", "integer", export: .integer, outbox: .integer),
        ],
        shape: .init(time: "started", uid: nil, reader: nil, exportsID: true),
        // Shipped when finished: its row's time centrally.
        outbox: .init(kind: "audit", time: "finished"))

    /// One asset or unexpected tag of an audit. Exported with its audit's start and location after `audit`.
    public static let auditResults = TableDescription(
        "audit_results",
        [
            .init("audit", "INTEGER", "bigint", export: .integer, outbox: .integer),
            .init("uid", "TEXT", "text", export: .text, outbox: .text),
            .init("asset_id", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("status", "TEXT", "text", export: .text, outbox: .text),
            .init("registered_location", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("seen_location", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("seen_by", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("seen_rounds", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("first_seen", "INTEGER", "timestamptz", nullable: true, export: .time, outbox: .time),
            .init("last_seen", "INTEGER", "timestamptz", nullable: true, export: .time, outbox: .time),
            .init("failed_checks", "TEXT", "json", nullable: true, export: .text, outbox: .json),
        ],
        centralOnly: [
            .init("gateway", "", "text", export: .text, outbox: nil),
            .init("time", "", "timestamptz", export: nil, outbox: nil),
        ],
        shape: .init(
            time: "a.started", uid: "uid", reader: nil, localOrder: "a.started, r.audit, r.id",
            centralOrder: "a.started, r.gateway, r.audit, r.local_id", centralGatewayAfter: "audit",
            alias: "r",
            joined: (
                after: "audit",
                columns: [
                    .init("started", "", nil, export: .time, outbox: nil),
                    .init("location", "", nil, export: .text, outbox: nil),
                ],
                local: "audit_results r JOIN audits a ON a.id = r.audit",
                central: "audit_results r JOIN audits a ON a.gateway = r.gateway AND a.local_id = r.audit"
            )),
        // A result's time and gateway are its audit's.
        outbox: .init(kind: "audit-result", time: "a.finished", gateway: "a.gateway"))

    /// The asset register, as imported (not synced).
    public static let assets = TableDescription(
        "assets", rowID: false,
        [
            .init("uid", "TEXT", nil, export: .text, outbox: nil),
            .init("asset_id", "TEXT", nil, export: .text, outbox: nil),
            .init("name", "TEXT", nil, nullable: true, export: .text, outbox: nil),
            .init("location", "TEXT", nil, nullable: true, export: .text, outbox: nil),
            .init("extra", "TEXT", nil, nullable: true, export: .text, outbox: nil),
            .init("source", "TEXT", nil, export: .text, outbox: nil),
            .init("updated_at", "INTEGER", nil, export: .time, outbox: nil),
        ],
        shape: .init(time: "updated_at", uid: "uid", reader: nil, localOrder: "updated_at, uid", central: false))

    /// How far the gateway has read each sensor tag's log, by logging session (migrations 018, 019): stored again
    /// as more records are read, never back.
    public static let sensorSessions = TableDescription(
        "sensor_sessions", rowID: false,
        [
            .init("uid", "TEXT", nil, export: nil, outbox: nil, merge: .kept),
            .init("session", "TEXT", nil, export: nil, outbox: nil, merge: .kept),
            .init("kind", "TEXT", nil, export: nil, outbox: nil, merge: .kept),
            .init("records", "INTEGER", nil, export: nil, outbox: nil, merge: .max),
            .init("updated_at", "INTEGER", nil, export: nil, outbox: nil),
            // The excursions still open ('{}' for none); a progress without them keeps the stored ones.
            .init("excursions", "TEXT", nil, export: nil, outbox: nil, source: .recordOr("'{}'")),
        ],
        upsertKey: ["uid", "session"],
        shape: .init(time: "updated_at", uid: "uid", reader: nil, central: false))

    /// The records a drain of a reader's buffer committed and the reader has not cleared yet (migration 011).
    public static let readerBuffers = TableDescription(
        "reader_buffers", rowID: false,
        [
            .init("reader", "TEXT", nil, export: nil, outbox: nil, merge: .kept),
            .init("records", "INTEGER", nil, export: nil, outbox: nil),
            .init("raw", "BLOB", nil, export: nil, outbox: nil),
            .init("time", "INTEGER", nil, export: nil, outbox: nil),
        ],
        upsertKey: ["reader"],
        shape: .init(time: "time", uid: nil, reader: "reader", central: false))
}

/// How the outbox reads a table: the column its cursor follows, and where a row's time and gateway come from
/// (`TableDescription.outboxSQL`).
struct OutboxSource: Sendable {
    /// What one row is, in a topic or a message (`reading`, `audit-result`).
    var kind: String
    /// The row id, or (a table whose rows change) the change number every insert or update takes.
    var cursor = "id"
    var time = "time"
    /// The row's gateway; nil where the table has none (tags: the store's own gateway's).
    var gateway: String? = "gateway"
}

/// How a table is exported: the time column a window filters on, the UID and reader columns a filter uses, the
/// order, and where a row's other columns come from (an audit result's audit).
struct ExportShape: Sendable {
    var time: String
    var uid: String?
    var reader: String?
    var localOrder: String?
    var centralOrder: String?
    /// Central exports add the gateway after this column when the local table has none.
    var centralGatewayAfter: String?
    /// The row id goes out first as `id` (an audit's, which its results name).
    var exportsID = false
    /// Whether the central database has the table.
    var central = true
    /// The table's alias in a join.
    var alias: String?
    /// Columns of another table exported after one of this table's.
    var joined: (after: String, columns: [ColumnDescription], local: String, central: String)?

    init(
        time: String, uid: String?, reader: String?, localOrder: String? = nil, centralOrder: String? = nil,
        centralGatewayAfter: String? = nil, exportsID: Bool = false, central: Bool = true, alias: String? = nil,
        joined: (after: String, columns: [ColumnDescription], local: String, central: String)? = nil
    ) {
        self.time = time
        self.uid = uid
        self.reader = reader
        self.localOrder = localOrder
        self.centralOrder = centralOrder
        self.centralGatewayAfter = centralGatewayAfter
        self.exportsID = exportsID
        self.central = central
        self.alias = alias
        self.joined = joined
    }
}

/// One exported column: its header, the expression that selects its stored value, and how it is formatted.
public struct ExportColumn: Sendable {
    public let name: String
    /// SQL selecting the stored value (SQLite locally; PostgreSQL centrally, see `ExportPlan.central`).
    public let sql: String
    public let format: ExportFormat
    /// The stored type centrally (a `boolean` goes out as 0/1), nil locally.
    public let postgres: String?
}

/// The export of one table as a query: its columns (then, for readings, one per decoded field), the FROM, and
/// the columns a request filters and orders on. The same plan serves the local store and the central database;
/// `RowWriter` formats the values, so both give the same text.
public struct ExportPlan: Sendable {
    public let table: TableDescription
    public let columns: [ExportColumn]
    public let from: String
    public let time: String
    public let uid: String?
    public let reader: String?
    /// The gateway column (centrally; locally rows have one gateway).
    public let gateway: String?
    public let order: String

    /// The plan for `table` in the local store (`central` false) or the central database.
    public static func of(_ table: TableDescription, central: Bool) -> ExportPlan? {
        let shape = table.shape
        if central && !shape.central { return nil }
        let prefix = shape.alias.map { "\($0)." } ?? ""
        var columns: [ExportColumn] = []
        if shape.exportsID {
            columns.append(.init(name: "id", sql: central ? "local_id" : "id", format: .integer, postgres: nil))
        }
        for c in table.exported {
            let source = central ? c.centralName : c.name
            columns.append(
                .init(
                    name: c.name, sql: prefix + source, format: c.export ?? .text, postgres: central ? c.postgres : nil)
            )
            if central, shape.centralGatewayAfter == c.name {
                columns.append(.init(name: "gateway", sql: prefix + "gateway", format: .text, postgres: "text"))
            }
            if let joined = shape.joined, joined.after == c.name {
                for j in joined.columns {
                    columns.append(.init(name: j.name, sql: "a." + j.name, format: j.export ?? .text, postgres: nil))
                }
            }
        }
        let from = shape.joined.map { central ? $0.central : $0.local } ?? table.name
        let order =
            central
            ? (shape.centralOrder ?? "\(shape.time), gateway, local_id")
            : (shape.localOrder ?? "\(shape.time), id")
        return ExportPlan(
            table: table, columns: columns, from: from, time: shape.time, uid: shape.uid.map { prefix + $0 },
            reader: shape.reader.map { prefix + $0 }, gateway: central ? prefix + "gateway" : nil, order: order)
    }
}

extension TableDescription {
    /// The outbox's query: cursor, time, gateway, then `outboxColumns`; rows after the cursor (`?1`) in its
    /// order, at most `?2`. Nil for a table that is not shipped.
    var outboxSQL: String? {
        guard let o = outbox else { return nil }
        let p = shape.alias.map { "\($0)." } ?? ""
        let cols = outboxColumns.map { p + $0.name }.joined(separator: ", ")
        return
            "SELECT \(p)\(o.cursor), \(o.time), \(o.gateway ?? "''"), \(cols) FROM \(shape.joined?.local ?? name) WHERE \(p)\(o.cursor) > ?1 ORDER BY \(p)\(o.cursor) LIMIT ?2"
    }

    /// How many rows follow the cursor (`?`), and the oldest one's time.
    var backlogSQL: String? {
        guard let o = outbox else { return nil }
        let p = shape.alias.map { "\($0)." } ?? ""
        return "SELECT count(*), min(\(o.time)) FROM \(shape.joined?.local ?? name) WHERE \(p)\(o.cursor) > ?"
    }

    /// The decoded field that holds a tag's NDEF records as a JSON document (a plan with `ndef = true`).
    public static let ndefRecordsField = "ndef"
    /// Decoded fields whose values are JSON documents: JSON rows (the outbox's, the API's, exports) nest them
    /// rather than quote them.
    public static let jsonFields: Set<String> = [ndefRecordsField]
}
