import GRDB
import VLoggerModel
/// Local retention (`[store] keep`): rows older than the cutoff are deleted, a few thousand per transaction
/// (the store writer waits at most one such transaction), except rows an enabled consumer of the outbox (the
/// fleet sync, …) has not yet had acknowledged: nothing past the lowest of their cursors on a table is
/// deleted, however old. Tags (one row per tag) and the asset register are not pruned.
public struct PruneReport: Sendable, Equatable {
    /// Rows deleted, by table.
    public var deleted: [SyncTable: Int] = [:]
    /// Rows older than the cutoff kept because a consumer's destination has not acknowledged them yet, or did
    /// so less than its safety window ago.
    public var heldForConsumers: [SyncTable: Int] = [:]
    public init() {}

    public var totalDeleted: Int { deleted.values.reduce(0, +) }
    public var totalHeld: Int { heldForConsumers.values.reduce(0, +) }
}

extension Store {
    /// Deletes readings, events, writes and audits (with their results) from before `cutoff`. A row past the
    /// cursor of any consumer in `keepFor` on its table stays (and an audit stays while any of its results
    /// does); a consumer that never acknowledged anything holds every row. `chunk`: rows per transaction.
    ///
    /// `safetyWindows`: consumers whose destination may lose what it acknowledged (the fleet sync to a cluster
    /// with asynchronous replication) keep their rows this long after the acknowledgement (the cursor's position
    /// `window` ago, from its samples, bounds what goes).
    public func prune(
        before cutoff: Millis, keepFor consumers: [String], safetyWindows: [String: Millis] = [:],
        now: Millis = Millis.now(), chunk: Int = 5000
    ) throws(StoreError) -> PruneReport {
        var report = PruneReport()
        func limit(_ t: SyncTable) throws(StoreError) -> Int64 {
            // The newest row of a table always stays: SQLite gives a row of an empty table id 1 (sqlite.org,
            // "ROWIDs and the INTEGER PRIMARY KEY"), which would put new rows behind every consumer's cursor.
            var upTo = try newestID(t) - 1
            for c in consumers {
                upTo = min(upTo, try outboxCursor(c, t))
                if let w = safetyWindows[c], w > 0 {
                    upTo = min(upTo, try outboxCursor(c, t, asOf: now - w))
                }
            }
            return upTo
        }
        try pruneCursorHistory(consumers: consumers, safetyWindows: safetyWindows, now: now)
        let chunk = max(1, chunk)
        for table in [SyncTable.readings, .events, .writes] {
            let upTo = try limit(table)
            let old = Table(table.rawValue).filter(Column("time") < cutoff)
            var deleted = 0
            while true {
                let n = try write { db in
                    try old.filter(Column("id") <= upTo).order(Column("id")).limit(chunk).deleteAll(db)
                }
                deleted += n
                if n < chunk { break }
            }
            report.deleted[table] = deleted
            report.heldForConsumers[table] = try read { db in try old.filter(Column("id") > upTo).fetchCount(db) }
        }
        // Audits: an audit and its results go together, once the audit and every one of its results are synced.
        let audits = try limit(.audits), results = try limit(.auditResults)
        var deletedAudits = 0, deletedResults = 0
        while true {
            let (a, r) = try write { db -> (Int, Int) in
                let audit = TableAlias()
                let unsynced = StoredAuditResult.filter(Column("audit") == audit[Column("id")])
                    .filter(Column("id") > results)
                let ids = try StoredAudit.aliased(audit).filter(Column("finished") < cutoff && Column("id") <= audits)
                    .filter(!unsynced.exists()).order(Column("id")).limit(max(1, chunk / 100))
                    .select(Column("id"), as: Int64.self).fetchAll(db)
                guard !ids.isEmpty else { return (0, 0) }
                let r = try StoredAuditResult.filter(ids.contains(Column("audit"))).deleteAll(db)
                return (try StoredAudit.deleteAll(db, keys: ids), r)
            }
            deletedAudits += a
            deletedResults += r
            if a == 0 { break }
        }
        report.deleted[.audits] = deletedAudits
        report.deleted[.auditResults] = deletedResults
        report.heldForConsumers[.audits] = try read { db in
            try StoredAudit.filter(Column("finished") < cutoff).fetchCount(db)
        }
        return report
    }
}

extension Store {
    /// Drops the cursor samples no safety window needs: for each consumer, those older than its window except the
    /// newest of them (the bound retention reads); every sample of a consumer no longer configured.
    func pruneCursorHistory(consumers: [String], safetyWindows: [String: Millis], now: Millis) throws(StoreError) {
        try withWriter { db throws(StoreError) in
            let names = Set(consumers)
            let all = try db.prepare("SELECT DISTINCT consumer FROM outbox_cursor_history")
            var present: [String] = []
            while try all.step() { if let c = all.text(0) { present.append(c) } }
            for c in present {
                guard names.contains(c) else {
                    let d = try db.prepare("DELETE FROM outbox_cursor_history WHERE consumer = ?")
                    try d.bind([.text(c)])
                    while try d.step() {}
                    continue
                }
                let before = now - max(0, safetyWindows[c] ?? 0)
                let s = try db.prepare(
                    """
                    DELETE FROM outbox_cursor_history AS h WHERE consumer = ?1 AND at < (
                        SELECT MAX(at) FROM outbox_cursor_history AS k
                        WHERE k.consumer = ?1 AND k.tbl = h.tbl AND k.at <= ?2)
                    """)
                try s.bind([.text(c), .integer(before)])
                while try s.step() {}
            }
        }
    }
}
