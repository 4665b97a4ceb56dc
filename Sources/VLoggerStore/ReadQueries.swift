import Foundation
import GRDB
import ISO15693
import VLoggerModel

/// What a read of stored readings or events is limited to (the read API's query parameters).
public struct RowFilter: Sendable, Equatable {
    public var uid: UID?
    public var reader: String?
    /// From this time (inclusive) and up to this time (exclusive), in ms since the epoch.
    public var since: Millis?
    public var until: Millis?
    /// Events of this kind only.
    public var kind: String?

    public init(
        uid: UID? = nil, reader: String? = nil, since: Millis? = nil, until: Millis? = nil, kind: String? = nil
    ) {
        self.uid = uid
        self.reader = reader
        self.since = since
        self.until = until
        self.kind = kind
    }
}

/// A tag as the store's tags table has it.
public struct StoredTag: Sendable, Equatable {
    public var uid: UID
    public var firstSeen: Millis
    public var lastSeen: Millis
    public var manufacturer: String
    public var model: String?
    public var lastReader: String?
    public var lastLocation: String?
    /// The verdict on its originality signature, when a rule had it checked.
    public var originality: String?
}

extension Store {
    /// A page of `table` (readings or events) in id order, the rows after `afterID` that pass `filter`, at most
    /// `limit`: the rows as the outbox has them (the same JSON everywhere). `within`: a time limit (a query past it
    /// ends with `StoreError.isInterrupted`), so that no request can hold a reader connection for long.
    public func page(
        _ table: SyncTable, _ filter: RowFilter, afterID: Int64, limit: Int, within: Duration? = nil
    ) throws(StoreError) -> [OutboxRow] {
        let (statement, bound) = Self.pageSQL(table, select: table.selectSQL, filter, afterID: afterID, limit: limit)
        let deadline = within.map { ContinuousClock.now + $0 }
        return try withReader { db throws(StoreError) in
            let s = try db.prepare(statement)
            try s.bind(bound)
            guard let deadline else { return try Self.rows(s, table) }
            return try db.withDeadline(deadline) { () throws(StoreError) in try Self.rows(s, table) }
        }
    }

    /// The newest row of `table` (readings or events) of a tag.
    public func newest(_ table: SyncTable, uid: UID) throws(StoreError) -> OutboxRow? {
        let sql = table.selectSQL + " WHERE uid = ?1 ORDER BY id DESC LIMIT 1"
        return try withReader { db throws(StoreError) in
            let s = try db.prepare(sql)
            try s.bind([.text(uid.description)])
            return try Self.rows(s, table).first
        }
    }

    /// The tags table's row of a tag; nil when the store has never seen it.
    public func storedTag(_ uid: UID) throws(StoreError) -> StoredTag? {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(
                "SELECT first_seen, last_seen, manufacturer, model, last_reader, last_location, originality FROM tags WHERE uid = ?1"
            )
            try s.bind([.text(uid.description)])
            guard try s.step() else { return nil }
            return StoredTag(
                uid: uid, firstSeen: s.int64(0), lastSeen: s.int64(1), manufacturer: s.text(2) ?? "",
                model: s.text(3), lastReader: s.text(4), lastLocation: s.text(5), originality: s.text(6))
        }
    }

    /// The asset register's row of a tag.
    public func asset(_ uid: UID) throws(StoreError) -> AssetRow? {
        try read { db in try StoredAsset.filter(Column("uid") == uid.description).fetchOne(db)?.row }
    }

    /// Audits as the outbox has them (newest first, at most `limit`, of one location when given).
    public func auditRows(location: String? = nil, limit: Int) throws(StoreError) -> [OutboxRow] {
        var sql =
            "SELECT id, finished, gateway, " + SyncTable.audits.columns.map(\.name).joined(separator: ", ")
            + " FROM audits"
        var args: [SQLValue] = []
        if let location {
            sql += " WHERE location = ?1"
            args.append(.text(location))
        }
        args.append(.integer(Int64(max(1, limit))))
        sql += " ORDER BY id DESC LIMIT ?\(args.count)"
        let (statement, bound) = (sql, args)
        return try withReader { db throws(StoreError) in
            let s = try db.prepare(statement)
            try s.bind(bound)
            return try Self.rows(s, .audits)
        }
    }

    /// One audit and its results as the outbox has them; nil when there is no such audit.
    public func auditRows(_ id: Int64) throws(StoreError) -> (audit: OutboxRow, results: [OutboxRow])? {
        try withReader { db throws(StoreError) in
            let a = try db.prepare(
                "SELECT id, finished, gateway, " + SyncTable.audits.columns.map(\.name).joined(separator: ", ")
                    + " FROM audits WHERE id = ?1")
            try a.bind([.integer(id)])
            guard let audit = try Self.rows(a, .audits).first else { return nil }
            let r = try db.prepare(
                "SELECT r.id, a.finished, a.gateway, "
                    + SyncTable.auditResults.columns.map { "r.\($0.name)" }.joined(separator: ", ")
                    + " FROM audit_results r JOIN audits a ON a.id = r.audit WHERE r.audit = ?1 ORDER BY r.id")
            try r.bind([.integer(id)])
            return (audit, try Self.rows(r, .auditResults))
        }
    }

    /// Reads the rows of an outbox-shaped statement (id, time, gateway, then the table's outbox columns).
    static func rows(_ s: SQLStatement, _ table: SyncTable) throws(StoreError) -> [OutboxRow] {
        let columns = table.columns
        var out: [OutboxRow] = []
        while try s.step() {
            var values: [OutboxValue] = []
            values.reserveCapacity(columns.count)
            for (i, c) in columns.enumerated() {
                let k = i + 3
                if s.type(k) == SQLStatement.nullType {
                    values.append(.null)
                    continue
                }
                switch c.kind {
                case .integer, .time, .bool: values.append(.integer(s.int64(k)))
                case .text, .json: values.append(.text(s.text(k) ?? ""))
                case .blob: values.append(.blob(s.blob(k)))
                }
            }
            out.append(OutboxRow(id: s.int64(0), time: s.int64(1), gateway: s.text(2) ?? "", values: values))
        }
        return out
    }
}

extension SyncTable {
    /// `SELECT id, time, gateway, <outbox columns> FROM <table>` of readings, events or writes.
    var selectSQL: String {
        "SELECT id, time, gateway, " + columns.map(\.name).joined(separator: ", ") + " FROM \(rawValue)"
    }
}

/// Rows' JSON by row id, for a table whose rows do not change once stored (readings, events): a page of the read
/// API asks the store for ids only and writes the rows it has written before from here. Bounded (the oldest
/// entries go first); shared by the request threads.
public final class RowJSONCache: @unchecked Sendable {
    private let lock = NSLock()
    private var rows: [Int64: [UInt8]] = [:]
    private var order: [Int64] = []
    private var head = 0
    public let capacity: Int
    public private(set) var hits = 0
    public private(set) var misses = 0

    public init(capacity: Int = 20_000) {
        self.capacity = max(1, capacity)
        order.reserveCapacity(self.capacity)
    }

    func get(_ id: Int64) -> [UInt8]? {
        lock.withLock {
            let r = rows[id]
            if r == nil { misses += 1 } else { hits += 1 }
            return r
        }
    }

    func put(_ id: Int64, _ json: [UInt8]) {
        lock.withLock {
            guard rows.updateValue(json, forKey: id) == nil else { return }
            if order.count < capacity {
                order.append(id)
            } else {
                rows[order[head]] = nil
                order[head] = id
                head = (head + 1) % capacity
            }
        }
    }
}

extension Store {
    /// A page of `table` (readings or events) as `page` has it, each row's JSON from `cache` when it was written
    /// before, else by `render` (and kept). The query reads ids only; the rows not in the cache are read by id.
    public func pageJSON(
        _ table: SyncTable, _ filter: RowFilter, afterID: Int64, limit: Int, within: Duration? = nil,
        cache: RowJSONCache, render: @escaping (OutboxRow) -> [UInt8]
    ) throws(StoreError) -> [(id: Int64, json: [UInt8])] {
        let (statement, bound) = Self.pageSQL(
            table, select: "SELECT id FROM \(table.rawValue)", filter, afterID: afterID, limit: limit)
        let deadline = within.map { ContinuousClock.now + $0 }
        return try withReader { db throws(StoreError) in
            func run() throws(StoreError) -> [(id: Int64, json: [UInt8])] {
                let s = try db.prepare(statement)
                try s.bind(bound)
                var ids: [Int64] = []
                while try s.step() { ids.append(s.int64(0)) }
                var rows = CachedRows(db: db, table: table, cache: cache, render: render)
                var out: [(id: Int64, json: [UInt8])] = []
                out.reserveCapacity(ids.count)
                for id in ids {
                    if let json = try rows.json(id) { out.append((id, json)) }
                }
                return out
            }
            guard let deadline else { return try run() }
            return try db.withDeadline(deadline) { () throws(StoreError) in try run() }
        }
    }
}

extension Store {
    /// For each UID: its register entry and the JSON of its newest reading (from `cache`, else read and rendered),
    /// in two reads for all of them (the read API's tags in the field, and one tag).
    public func fieldTags(_ uids: [UID], cache: RowJSONCache, render: @escaping (OutboxRow) -> [UInt8])
        throws(StoreError)
        -> [UID: (asset: AssetRow?, lastReading: [UInt8]?)]
    {
        guard !uids.isEmpty else { return [:] }
        let assets = try read { db in
            try StoredAsset.filter(uids.map(\.description).contains(Column("uid"))).fetchAll(db).compactMap(\.row)
        }
        let byUID = Dictionary(assets.map { ($0.uid, $0) }, uniquingKeysWith: { a, _ in a })
        return try withReader { db throws(StoreError) in
            let newest = try db.prepare("SELECT max(id) FROM readings WHERE uid = ?1")
            var rows = CachedRows(db: db, table: .readings, cache: cache, render: render)
            var out: [UID: (asset: AssetRow?, lastReading: [UInt8]?)] = [:]
            for uid in uids {
                newest.reset()
                try newest.bind([.text(uid.description)])
                var json: [UInt8]?
                if try newest.step(), newest.type(0) != SQLStatement.nullType { json = try rows.json(newest.int64(0)) }
                out[uid] = (byUID[uid], json)
            }
            return out
        }
    }
}

extension Store {
    /// `select` (the row's columns, or its id) of the page of `table` after `afterID` that passes `filter`, at most
    /// `limit` rows in id order, and its parameters: the one query of the read API's pages.
    static func pageSQL(_ table: SyncTable, select: String, _ filter: RowFilter, afterID: Int64, limit: Int) -> (
        String, [SQLValue]
    ) {
        precondition(table == .readings || table == .events, "pages of readings or events")
        var sql = select + " WHERE id > ?1"
        var args: [SQLValue] = [.integer(afterID)]
        func add(_ clause: String, _ value: SQLValue) {
            args.append(value)
            sql += " AND \(clause) ?\(args.count)"
        }
        if let uid = filter.uid { add("uid =", .text(uid.description)) }
        if let reader = filter.reader { add("reader =", .text(reader)) }
        if let since = filter.since { add("time >=", .integer(since)) }
        if let until = filter.until { add("time <", .integer(until)) }
        if let kind = filter.kind, table == .events { add("kind =", .text(kind)) }
        args.append(.integer(Int64(max(1, limit))))
        return (sql + " ORDER BY id LIMIT ?\(args.count)", args)
    }
}

/// Rows' JSON by id on one reader connection: from the cache, else read (one statement, prepared once) and
/// rendered, and kept.
struct CachedRows {
    let db: SQLiteConnection
    let table: SyncTable
    let cache: RowJSONCache
    let render: (OutboxRow) -> [UInt8]
    private var byID: SQLStatement?

    init(db: SQLiteConnection, table: SyncTable, cache: RowJSONCache, render: @escaping (OutboxRow) -> [UInt8]) {
        self.db = db
        self.table = table
        self.cache = cache
        self.render = render
    }

    /// Nil when there is no such row.
    mutating func json(_ id: Int64) throws(StoreError) -> [UInt8]? {
        if let json = cache.get(id) { return json }
        let q: SQLStatement
        if let byID {
            q = byID
        } else {
            q = try db.prepare(table.selectSQL + " WHERE id = ?1")
            byID = q
        }
        q.reset()
        try q.bind([.integer(id)])
        guard let row = try Store.rows(q, table).first else { return nil }
        let json = render(row)
        cache.put(id, json)
        return json
    }
}
