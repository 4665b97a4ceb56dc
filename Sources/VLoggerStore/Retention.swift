import GRDB
import VLoggerModel
/// Local retention (`[store] keep`): rows older than the cutoff are deleted, a few thousand per transaction
/// (the store writer waits at most one such transaction), except rows an enabled consumer of the outbox (the
/// fleet sync, …) has not yet had acknowledged: nothing past the lowest of their cursors on a table is
/// deleted, however old. Tags (one row per tag) and the asset register are not pruned.
public struct PruneReport: Sendable, Equatable {
    /// Rows deleted, by table.
    public var deleted: [SyncTable: Int] = [:]
    /// Rows older than the cutoff kept because a consumer's destination has not acknowledged them yet.
    public var heldForConsumers: [SyncTable: Int] = [:]
    public init() {}

    public var totalDeleted: Int { deleted.values.reduce(0, +) }
    public var totalHeld: Int { heldForConsumers.values.reduce(0, +) }
}

extension Store {
    /// Deletes readings, events, writes and audits (with their results) from before `cutoff`. A row past the
    /// cursor of any consumer in `keepFor` on its table stays (and an audit stays while any of its results
    /// does); a consumer that never acknowledged anything holds every row. `chunk`: rows per transaction.
    public func prune(before cutoff: Millis, keepFor consumers: [String], chunk: Int = 5000) throws(StoreError)
        -> PruneReport
    {
        var report = PruneReport()
        func limit(_ t: SyncTable) throws(StoreError) -> Int64 {
            var upTo = Int64.max
            for c in consumers { upTo = min(upTo, try outboxCursor(c, t)) }
            return upTo
        }
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
