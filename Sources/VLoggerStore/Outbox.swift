import VLoggerModel
/// The local store as the outbox: rows after a consumer's acknowledged cursor, oldest first, and the cursors
/// themselves, one per (consumer, table), each moved only after that consumer's destination acknowledged a batch
/// (so it is never ahead of the destination, and a batch resent after a crash is the same rows with the same ids).
/// The fleet sync to PostgreSQL is the consumer named "postgres"; `OutboxConsumer` (VLoggerCore) is the seam.
///
/// Append-only tables (readings, events, writes, audits, audit results) are shipped by local row id. Tags are
/// one row per tag that changes as it is seen again: they are shipped by change number (`seq`, which every
/// insert or update of a tag takes anew) and upserted centrally by (gateway, uid).
public enum SyncTable: String, CaseIterable, Sendable {
    // Audits before their results, so a round ships an audit before the results that name it.
    case readings, events, writes, audits, auditResults = "audit_results", tags

    /// The table's description: what is shipped of it, and how (its `outbox` facts), comes from there.
    public var tableDescription: TableDescription { Self.described[self]?.table ?? .unknown(rawValue) }

    /// The central columns after (gateway, local_id, time), in order, as the local store has them.
    public var columns: [OutboxColumn] { Self.described[self]?.columns ?? [] }

    /// Tags are upserted by (gateway, uid) (a tag seen again changes its row, and takes a new change number); the
    /// others are inserted once by (gateway, local id).
    public var isUpserted: Bool { tableDescription.upsertKey != nil }

    /// Each table's description, outbox columns and queries, worked out once (every row's `value(_:in:)` asks).
    private static let described:
        [SyncTable: (table: TableDescription, columns: [OutboxColumn], sql: String?, backlog: String?)] = Dictionary(
            uniqueKeysWithValues: allCases.compactMap { t in
                TableDescription.named(t.rawValue).map { (t, ($0, $0.outboxColumns, $0.outboxSQL, $0.backlogSQL)) }
            })

    /// The local query: cursor, time, gateway, then `columns`; rows after the cursor (`?1`), in its order, at most
    /// `?2` (see `TableDescription.outboxSQL`).
    var outboxSQL: String {
        get throws(StoreError) {
            guard let sql = Self.described[self]?.sql else { throw StoreError("the table \(rawValue) is not shipped") }
            return sql
        }
    }

    /// Rows after the cursor and the oldest one's time.
    var backlogSQL: String {
        get throws(StoreError) {
            guard let sql = Self.described[self]?.backlog else {
                throw StoreError("the table \(rawValue) is not shipped")
            }
            return sql
        }
    }
}

/// One column of an outbox row and how it goes to the server.
public struct OutboxColumn: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// integer: a number; bool: 0/1 locally, boolean centrally; time: ms since 1970 UTC locally, timestamptz
        /// centrally; json: JSON text locally, json centrally (the text as it was).
        case integer, text, blob, json, time, bool
    }
    public let name: String
    public let kind: Kind
    init(_ name: String, _ kind: Kind) {
        self.name = name
        self.kind = kind
    }
}

/// One value of an outbox row.
public enum OutboxValue: Sendable, Equatable {
    case null, integer(Int64), text(String), blob([UInt8])

    public var text: String? { if case .text(let s) = self { return s } else { return nil } }
    public var integer: Int64? { if case .integer(let n) = self { return n } else { return nil } }
    public var blob: [UInt8]? { if case .blob(let b) = self { return b } else { return nil } }
}

/// One local row to ship: its id (tags: its change number), its time, its gateway and the table's `columns`.
public struct OutboxRow: Sendable, Equatable {
    public var id: Int64
    public var time: Millis
    /// The row's gateway column (empty where the table has none: tags, which are the store's own gateway's).
    public var gateway: String
    public var values: [OutboxValue]

    public init(id: Int64, time: Millis, gateway: String, values: [OutboxValue]) {
        self.id = id
        self.time = time
        self.gateway = gateway
        self.values = values
    }

    /// The value of the named column of `table` (.null when it has none of that name).
    public func value(_ name: String, in table: SyncTable) -> OutboxValue {
        guard let i = table.columns.firstIndex(where: { $0.name == name }), i < values.count else { return .null }
        return values[i]
    }
}

extension Store {
    /// Up to `limit` rows of `table` after the cursor `after`, in commit order.
    public func outbox(_ table: SyncTable, after: Int64, limit: Int) throws(StoreError) -> [OutboxRow] {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(try table.outboxSQL)
            try s.bind([.integer(after), .integer(Int64(max(1, limit)))])
            return try Self.rows(s, table)
        }
    }

    /// The cursor of `consumer` on `table`: the highest local id (tags: change number) the consumer's destination
    /// has acknowledged; 0 when none yet.
    public func outboxCursor(_ consumer: String, _ table: SyncTable) throws(StoreError) -> Int64 {
        try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT last_id FROM outbox_cursor WHERE consumer = ? AND tbl = ?")
            try s.bind([.text(consumer), .text(table.rawValue)])
            return try s.step() ? s.int64(0) : 0
        }
    }

    /// Every cursor of every consumer, by consumer and table (a consumer no longer configured keeps its row, and
    /// it is not counted by retention: see `prune`).
    public func outboxCursors() throws(StoreError) -> [String: [SyncTable: Int64]] {
        try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT consumer, tbl, last_id FROM outbox_cursor")
            var out: [String: [SyncTable: Int64]] = [:]
            while try s.step() {
                guard let c = s.text(0), let t = s.text(1).flatMap(SyncTable.init(rawValue:)) else { continue }
                out[c, default: [:]][t] = s.int64(2)
            }
            return out
        }
    }

    /// Moves `consumer`'s cursor on `table` after its destination acknowledged rows up to `id`; it never moves
    /// back. Without a disk sync of its own (`synchronous=NORMAL` for this one statement; the next batch's
    /// commit syncs it): a power cut can lose the latest moves, and the batches after the cursor on disk are then
    /// sent again, which every consumer takes (the fleet sync drops keys it has, MQTT and webhook subscribers
    /// de-duplicate on `key`). A crashed process loses nothing: the WAL has the write.
    public func advanceOutboxCursor(_ consumer: String, _ table: SyncTable, to id: Int64, now: Millis = Millis.now())
        throws(StoreError)
    {
        try withWriter { db throws(StoreError) in
            try db.execute("PRAGMA synchronous=NORMAL")
            defer { try? db.execute("PRAGMA synchronous=FULL") }
            let s = try db.prepare(
                """
                INSERT INTO outbox_cursor(consumer, tbl, last_id, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT(consumer, tbl) DO UPDATE SET last_id = max(last_id, excluded.last_id),
                    updated_at = excluded.updated_at
                """)
            try s.bind([.text(consumer), .text(table.rawValue), .integer(id), .integer(now)])
            while try s.step() {}
            // Where it stood, at most one sample every five minutes (retention's safety window reads them).
            let h = try db.prepare(
                """
                INSERT OR IGNORE INTO outbox_cursor_history(consumer, tbl, at, last_id)
                SELECT ?1, ?2, ?3, last_id FROM outbox_cursor WHERE consumer = ?1 AND tbl = ?2
                AND NOT EXISTS (SELECT 1 FROM outbox_cursor_history
                                WHERE consumer = ?1 AND tbl = ?2 AND at > ?3 - \(Self.cursorSampleMs))
                """)
            try h.bind([.text(consumer), .text(table.rawValue), .integer(now)])
            while try h.step() {}
        }
    }

    /// The newest event named `name` (its time and detail), nil when there is none.
    public func latestEvent(named name: String) throws(StoreError) -> (time: Millis, detail: String)? {
        try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT time, detail FROM events WHERE name = ? ORDER BY id DESC LIMIT 1")
            try s.bind([.text(name)])
            guard try s.step() else { return nil }
            return (s.int64(0), s.text(1) ?? "")
        }
    }

    /// How often a cursor's position is sampled for `outbox_cursor_history`, at most.
    public static let cursorSampleMs: Millis = 300_000

    /// Moves `consumer`'s cursor on `table` back to `id` (the destination lost rows it had acknowledged: a central
    /// cluster that failed over with asynchronous replication); its samples follow, so that retention does not take
    /// the rows to be sent again for delivered ones. A cursor at or below `id` stays.
    public func rewindOutboxCursor(_ consumer: String, _ table: SyncTable, to id: Int64, now: Millis = Millis.now())
        throws(StoreError)
    {
        try withWriter { db throws(StoreError) in
            let s = try db.prepare(
                "UPDATE outbox_cursor SET last_id = ?3, updated_at = ?4 WHERE consumer = ?1 AND tbl = ?2 AND last_id > ?3"
            )
            try s.bind([.text(consumer), .text(table.rawValue), .integer(id), .integer(now)])
            while try s.step() {}
            let h = try db.prepare(
                "UPDATE outbox_cursor_history SET last_id = ?3 WHERE consumer = ?1 AND tbl = ?2 AND last_id > ?3")
            try h.bind([.text(consumer), .text(table.rawValue), .integer(id)])
            while try h.step() {}
        }
    }

    /// Where `consumer`'s cursor on `table` stood at `time` or before, from its samples (0 when none is that old):
    /// every row up to it was acknowledged by then.
    public func outboxCursor(_ consumer: String, _ table: SyncTable, asOf time: Millis) throws(StoreError) -> Int64 {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(
                "SELECT COALESCE(MAX(last_id), 0) FROM outbox_cursor_history WHERE consumer = ? AND tbl = ? AND at <= ?"
            )
            try s.bind([.text(consumer), .text(table.rawValue), .integer(time)])
            return try s.step() ? s.int64(0) : 0
        }
    }

    /// The rows of `table` the store still holds with ids in `after + 1 ... through`: how many, and the lowest id
    /// (nil: none). An append-only table's ids count up without holes until retention deletes the oldest.
    public func heldRows(_ table: SyncTable, after: Int64, through: Int64) throws(StoreError) -> (
        count: Int, lowest: Int64?
    ) {
        guard table.tableDescription.hasRowID else { return (0, nil) }
        return try withReader { db throws(StoreError) in
            let s = try db.prepare(
                "SELECT COUNT(*), MIN(id) FROM \(table.tableDescription.name) WHERE id > ? AND id <= ?")
            try s.bind([.integer(after), .integer(through)])
            guard try s.step() else { return (0, nil) }
            let n = Int(s.int64(0))
            return (n, n == 0 ? nil : s.int64(1))
        }
    }

    /// Rows `consumer` has not had acknowledged yet, and the time of the oldest of them (its backlog).
    /// The newest row's local id of `table` (0 when it is empty): where a live stream that resumes nothing starts.
    /// This store's identity (32 hex digits, made with the store; `020-store-instance`): what tells two gateways
    /// configured with the same id apart.
    public func instance() throws(StoreError) -> String {
        try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT instance FROM store_instance WHERE one = 1")
            guard try s.step(), let text = s.text(0) else {
                throw StoreError("the store has no instance id (its table store_instance is empty)")
            }
            return text
        }
    }

    public func newestID(_ table: SyncTable) throws(StoreError) -> Int64 {
        guard table.tableDescription.hasRowID else { return 0 }
        return try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT COALESCE(MAX(id), 0) FROM \(table.tableDescription.name)")
            guard try s.step() else { return 0 }
            return s.int64(0)
        }
    }

    public func outboxBacklog(_ consumer: String, _ table: SyncTable) throws(StoreError) -> (
        rows: Int, oldest: Millis?
    ) {
        let after = try outboxCursor(consumer, table)
        return try withReader { db throws(StoreError) in
            let s = try db.prepare(try table.backlogSQL)
            try s.bind([.integer(after)])
            guard try s.step() else { return (0, nil) }
            let n = Int(s.int64(0))
            return (n, n == 0 ? nil : s.int64(1))
        }
    }
}

extension OutboxRow {
    /// Readings and events, each in its own id order, merged into one sequence by time (a reading first at the
    /// same millisecond): the order the live stream, `run --emit` and `run --once` print them in.
    public static func mergedByTime(readings: [OutboxRow], events: [OutboxRow]) -> [(table: SyncTable, row: OutboxRow)]
    {
        var out: [(table: SyncTable, row: OutboxRow)] = []
        out.reserveCapacity(readings.count + events.count)
        var i = 0, j = 0
        while i < readings.count || j < events.count {
            if j >= events.count || (i < readings.count && readings[i].time <= events[j].time) {
                out.append((.readings, readings[i]))
                i += 1
            } else {
                out.append((.events, events[j]))
                j += 1
            }
        }
        return out
    }
}
