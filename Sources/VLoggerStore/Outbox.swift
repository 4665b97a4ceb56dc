/// The local store as the outbox of fleet sync: rows after the acknowledged cursor, oldest first, and the
/// cursor itself, which moves only after the central server committed a batch (so it is never ahead of the
/// server, and a batch resent after a crash is the same rows with the same ids).
public enum SyncTable: String, CaseIterable, Sendable {
    case readings, events
}

/// One local row to ship: its id and its columns, in the central schema's order.
public struct OutboxRow: Sendable, Equatable {
    public var id: Int64
    public var time: Millis
    public var reader: String?
    public var location: String?
    public var uid: String?
    /// readings: block, count, data, security, decoded; events: kind, name, severity, detail.
    public var block: Int64 = 0
    public var count: Int64 = 0
    public var data: [UInt8] = []
    public var security: [UInt8]?
    public var decoded: String?
    public var kind = "", name = "", severity = "", detail = ""
    public var gateway: String
}

extension Store {
    /// Up to `limit` rows of `table` with ids above `after`, by id.
    public func outbox(_ table: SyncTable, after: Int64, limit: Int) throws(StoreError) -> [OutboxRow] {
        try withReader { db throws(StoreError) in
            let sql: String
            switch table {
            case .readings:
                sql = "SELECT id, time, gateway, reader, location, uid, block, count, data, security, decoded FROM readings WHERE id > ? ORDER BY id LIMIT ?"
            case .events:
                sql = "SELECT id, time, gateway, reader, location, uid, kind, name, severity, detail FROM events WHERE id > ? ORDER BY id LIMIT ?"
            }
            let s = try db.prepare(sql)
            try s.bind([.integer(after), .integer(Int64(max(1, limit)))])
            var out: [OutboxRow] = []
            while try s.step() {
                var r = OutboxRow(id: s.int64(0), time: s.int64(1), reader: s.text(3), location: s.text(4), uid: s.text(5), gateway: s.text(2) ?? "")
                switch table {
                case .readings:
                    r.block = s.int64(6)
                    r.count = s.int64(7)
                    r.data = s.blob(8)
                    r.security = s.type(9) == 5 ? nil : s.blob(9)   // 5: SQLITE_NULL
                    r.decoded = s.text(10)
                case .events:
                    r.kind = s.text(6) ?? ""
                    r.name = s.text(7) ?? ""
                    r.severity = s.text(8) ?? ""
                    r.detail = s.text(9) ?? ""
                }
                out.append(r)
            }
            return out
        }
    }

    /// The highest local id of `table` the central server has committed (0: none yet).
    public func syncCursor(_ table: SyncTable) throws(StoreError) -> Int64 {
        try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT last_id FROM sync_cursor WHERE tbl = ?")
            try s.bind([.text(table.rawValue)])
            return try s.step() ? s.int64(0) : 0
        }
    }

    /// Moves the cursor after the server committed rows up to `id`; it never moves back.
    public func advanceSyncCursor(_ table: SyncTable, to id: Int64, now: Millis = Millis.now()) throws(StoreError) {
        try withWriter { db throws(StoreError) in
            let s = try db.prepare("""
                INSERT INTO sync_cursor(tbl, last_id, updated_at) VALUES (?, ?, ?)
                ON CONFLICT(tbl) DO UPDATE SET last_id = max(last_id, excluded.last_id), updated_at = excluded.updated_at
                """)
            try s.bind([.text(table.rawValue), .integer(id), .integer(now)])
            while try s.step() {}
        }
    }

    /// Rows not yet acknowledged by the server, and the time of the oldest of them (the sync backlog).
    public func syncBacklog(_ table: SyncTable) throws(StoreError) -> (rows: Int, oldest: Millis?) {
        let after = try syncCursor(table)
        return try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT count(*), min(time) FROM \(table.rawValue) WHERE id > ?")
            try s.bind([.integer(after)])
            guard try s.step() else { return (0, nil) }
            let n = Int(s.int64(0))
            return (n, n == 0 ? nil : s.int64(1))
        }
    }
}
