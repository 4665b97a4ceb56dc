import VLoggerModel

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
    /// The central PostgreSQL type.
    public let postgres: String
    /// Whether the column may be NULL (in both databases).
    public let nullable: Bool
    /// How it is exported; nil for a column that is not exported as one (`decoded`: a column per field).
    public let export: ExportFormat?
    /// How it goes through the outbox; nil for the columns every outbox row has anyway (time, gateway).
    public let outbox: OutboxColumn.Kind?

    init(
        _ name: String, _ sqlite: String, _ postgres: String, nullable: Bool = false, export: ExportFormat?,
        outbox: OutboxColumn.Kind?
    ) {
        self.name = name
        self.sqlite = sqlite
        self.postgres = postgres
        self.nullable = nullable
        self.export = export
        self.outbox = outbox
    }
}

/// A table's columns (besides its row id), in export order. From it come the columns of the batch insert,
/// the export's column plan (local and central), the outbox's columns and the central table's shape; the
/// migrations, local and central, are checked against it by the tests (a migration is history, this is the
/// shape it must end at).
public struct TableDescription: Sendable {
    public let name: String
    public let columns: [ColumnDescription]

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

    /// The columns that go through the outbox after (id, time, gateway), in order.
    public var outboxColumns: [OutboxColumn] {
        columns.compactMap { c in c.outbox.map { OutboxColumn(c.name, $0) } }
    }

    /// The columns exported as they are (not `decoded`), in order.
    public var exported: [ColumnDescription] { columns.filter { $0.export != nil } }

    /// One read of consecutive blocks of one tag.
    public static let readings = TableDescription(
        name: "readings",
        columns: [
            .init("time", "INTEGER", "timestamptz", export: .time, outbox: nil),
            .init("gateway", "TEXT", "text", export: .text, outbox: nil),
            .init("reader", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("location", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("uid", "TEXT", "text", export: .text, outbox: .text),
            .init("asset_id", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("block", "INTEGER", "integer", export: .block, outbox: .integer),
            .init("count", "INTEGER", "integer", export: .integer, outbox: .integer),
            .init("data", "BLOB", "bytea", export: .hex, outbox: .blob),
            .init("security", "BLOB", "bytea", nullable: true, export: .hex, outbox: .blob),
            .init("decoded", "TEXT", "json", nullable: true, export: nil, outbox: .json),
        ])

    /// Something worth an operator's attention.
    public static let events = TableDescription(
        name: "events",
        columns: [
            .init("time", "INTEGER", "timestamptz", export: .time, outbox: nil),
            .init("gateway", "TEXT", "text", export: .text, outbox: nil),
            .init("reader", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("location", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("uid", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("asset_id", "TEXT", "text", nullable: true, export: .text, outbox: .text),
            .init("kind", "TEXT", "text", export: .text, outbox: .text),
            .init("name", "TEXT", "text", export: .text, outbox: .text),
            .init("severity", "TEXT", "text", export: .text, outbox: .text),
            .init("detail", "TEXT", "text", export: .text, outbox: .text),
        ])
}
