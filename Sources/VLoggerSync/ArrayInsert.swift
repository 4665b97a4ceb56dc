import Logging
import NIOCore
import PostgresNIO
import VLoggerStore

/// One column of a batch as a PostgreSQL array, in the binary form the server reads a bound array parameter in
/// (`array_recv`: the number of dimensions, a has-nulls flag, the element type's OID, each dimension's length and
/// lower bound, then each element as a 4-byte length, −1 for NULL, and its bytes; PostgreSQL's
/// src/backend/utils/adt/arrayfuncs.c, and docs/reference/fleet-engines.md §6). Elements are 8-byte big-endian
/// integers (int8), UTF-8 text, or bytes (bytea), each element's binary form as the server's `int8send`,
/// `textsend` and `byteasend` write it.
struct ColumnArray: PostgresDynamicTypeEncodable {
    enum Element {
        case int8, text, bytea, timestamptz, bool
        var oid: UInt32 {
            switch self {
            case .int8: return 20
            case .text: return 25
            case .bytea: return 17
            case .timestamptz: return 1184
            case .bool: return 16
            }
        }
        var sqlType: String {
            switch self {
            case .int8: return "int8[]"
            case .text: return "text[]"
            case .bytea: return "bytea[]"
            case .timestamptz: return "timestamptz[]"
            case .bool: return "bool[]"
            }
        }
    }
    let element: Element
    private(set) var elements = ByteBuffer()
    private(set) var count: Int32 = 0
    private(set) var hasNull = false

    init(_ element: Element, capacity: Int) {
        self.element = element
        elements.reserveCapacity(capacity * (element == .text || element == .bytea ? 24 : 12))
    }

    var psqlType: PostgresDataType {
        switch element {
        case .int8: return .int8Array
        case .text: return .textArray
        case .bytea: return .byteaArray
        case .timestamptz: return .timestamptzArray
        case .bool: return .boolArray
        }
    }
    var psqlFormat: PostgresFormat { .binary }

    mutating func null() {
        elements.writeInteger(Int32(-1))
        hasNull = true
        count += 1
    }
    mutating func integer(_ n: Int64?) {
        guard let n else { return null() }
        elements.writeInteger(Int32(8))
        elements.writeInteger(n)
        count += 1
    }
    /// Milliseconds since 1970 as timestamptz's binary form: microseconds since 2000-01-01 00:00 UTC
    /// (`timestamptz_send`; 946,684,800,000 ms lie between the two epochs).
    mutating func time(_ ms: Int64?) {
        guard let ms else { return null() }
        let (shifted, o1) = ms.subtractingReportingOverflow(946_684_800_000)
        let (micros, o2) = shifted.multipliedReportingOverflow(by: 1000)
        guard !o1, !o2 else { return null() }
        elements.writeInteger(Int32(8))
        elements.writeInteger(micros)
        count += 1
    }
    mutating func bool(_ n: Int64?) {
        guard let n else { return null() }
        elements.writeInteger(Int32(1))
        elements.writeInteger(UInt8(n != 0 ? 1 : 0))
        count += 1
    }
    mutating func text(_ s: String?) {
        guard let s else { return null() }
        let lengthAt = elements.writerIndex
        elements.writeInteger(Int32(0))
        let n = elements.writeString(s)
        elements.setInteger(Int32(n), at: lengthAt)
        count += 1
    }
    mutating func bytes(_ b: [UInt8]?) {
        guard let b else { return null() }
        elements.writeInteger(Int32(b.count))
        elements.writeBytes(b)
        count += 1
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeInteger(Int32(1))  // dimensions
        byteBuffer.writeInteger(Int32(hasNull ? 1 : 0))
        byteBuffer.writeInteger(element.oid)
        byteBuffer.writeInteger(count)  // the dimension's length
        byteBuffer.writeInteger(Int32(1))  // its lower bound
        var copy = elements
        byteBuffer.writeBuffer(&copy)
    }
}

extension Syncer {
    /// An append-only batch as one statement: each column bound as an array (`ColumnArray`: times as
    /// timestamptz, flags as bool, in their binary forms, so the server converts nothing but JSON text), the rows
    /// made by `unnest` on the server. A plain INSERT first (all its rows or none); `skipExisting` (the batch
    /// was refused for a key the central has: sent again after a lost acknowledgement) adds `ON CONFLICT DO
    /// NOTHING`, which keeps only the rows the central lacks and costs the server a check per row. Returns how
    /// many rows were new.
    ///
    /// This replaces `COPY … FROM STDIN` for the fleet sync: PostgresNIO 1.33.2 stops the process (a precondition
    /// in its connection state machine) when the server ends the connection with an error while a COPY is in copy
    /// mode and the client then writes or ends the COPY, and it can lose the COPY's continuation when the
    /// connection dies before the server's CopyInResponse (both seen here, killing a cluster's leader under 20
    /// syncing gateways). An ordinary statement has neither problem: it fails with the connection.
    package static func arrayInsert(
        _ table: SyncTable, _ rows: [OutboxRow], gateway: String, _ conn: PostgresConnection, _ logger: Logger,
        skipExisting: Bool
    ) async throws -> Int {
        let columns = table.columns
        var ids = ColumnArray(.int8, capacity: rows.count)
        var times = ColumnArray(.timestamptz, capacity: rows.count)
        var gateways = ColumnArray(.text, capacity: rows.count)
        var arrays = columns.map { c -> ColumnArray in
            switch c.kind {
            case .integer: return ColumnArray(.int8, capacity: rows.count)
            case .time: return ColumnArray(.timestamptz, capacity: rows.count)
            case .bool: return ColumnArray(.bool, capacity: rows.count)
            case .text, .json: return ColumnArray(.text, capacity: rows.count)
            case .blob: return ColumnArray(.bytea, capacity: rows.count)
            }
        }
        for r in rows {
            ids.integer(r.id)
            times.time(r.time)
            gateways.text(r.gateway.isEmpty ? gateway : r.gateway)
            for i in columns.indices {
                let v = i < r.values.count ? r.values[i] : .null
                switch (arrays[i].element, v) {
                case (_, .null): arrays[i].null()
                case (.int8, .integer(let n)): arrays[i].integer(n)
                case (.timestamptz, .integer(let n)): arrays[i].time(n)
                case (.bool, .integer(let n)): arrays[i].bool(n)
                case (.text, .text(let t)): arrays[i].text(t)
                case (.bytea, .blob(let b)): arrays[i].bytes(b)
                // A value of another kind than its column's (not made by the store): as text where the column
                // takes text, else NULL, which a NOT NULL column refuses with the server's own error.
                case (.text, .integer(let n)): arrays[i].text(String(n))
                default: arrays[i].null()
                }
            }
        }
        var binds = PostgresBindings(capacity: 3 + columns.count)
        binds.append(gateways)
        binds.append(ids)
        binds.append(times)
        for a in arrays { binds.append(a) }
        let types = [gateways, ids, times].map(\.element.sqlType) + arrays.map(\.element.sqlType)
        let parameters = types.enumerated().map { "$\($0.offset + 1)::\($0.element)" }
        let aliases = ["g", "i", "t"] + columns.indices.map { "c\($0)" }
        let selected = columns.enumerated().map { (i, c) -> String in
            c.kind == .json ? "u.c\(i)::json" : "u.c\(i)"
        }
        let names = (["gateway", "local_id", "time"] + columns.map(\.name)).map { "\"\($0)\"" }
        let insert = """
            INSERT INTO \(table.rawValue)(\(names.joined(separator: ", ")))
            SELECT u.g, u.i, u.t, \(selected.joined(separator: ", "))
            FROM unnest(\(parameters.joined(separator: ", "))) AS u(\(aliases.joined(separator: ", ")))
            """
        guard skipExisting else {
            try await conn.query(PostgresQuery(unsafeSQL: insert, binds: binds), logger: logger)
            return rows.count
        }
        let sql = "WITH new AS (\(insert) ON CONFLICT DO NOTHING RETURNING 1) SELECT count(*) FROM new"
        var inserted = 0
        for try await n in try await conn.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).decode(
            Int64.self)
        {
            inserted = Int(n)
        }
        return inserted
    }
}
