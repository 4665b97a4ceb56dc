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
        let chunk = Int64(max(1, chunk))
        for table in [SyncTable.readings, .events, .writes] {
            let upTo = try limit(table)
            var deleted = 0
            while true {
                let n = try withWriter { db throws(StoreError) -> Int in
                    let s = try db.prepare(
                        "DELETE FROM \(table.rawValue) WHERE id IN (SELECT id FROM \(table.rawValue) WHERE time < ?1 AND id <= ?2 ORDER BY id LIMIT ?3)"
                    )
                    try s.bind([.integer(cutoff), .integer(upTo), .integer(chunk)])
                    while try s.step() {}
                    return db.changes
                }
                deleted += n
                if n < chunk { break }
            }
            report.deleted[table] = deleted
            report.heldForConsumers[table] = try withReader { db throws(StoreError) -> Int in
                let s = try db.prepare("SELECT count(*) FROM \(table.rawValue) WHERE time < ?1 AND id > ?2")
                try s.bind([.integer(cutoff), .integer(upTo)])
                return try s.step() ? Int(s.int64(0)) : 0
            }
        }
        // Audits: an audit and its results go together, once the audit and every one of its results are synced.
        let audits = try limit(.audits), results = try limit(.auditResults)
        var deletedAudits = 0, deletedResults = 0
        while true {
            let (a, r) = try withWriter { db throws(StoreError) -> (Int, Int) in
                var out = (0, 0)
                try Self.transaction(db) { () throws(StoreError) in
                    try db.execute("CREATE TEMP TABLE IF NOT EXISTS prune_audits(id INTEGER PRIMARY KEY)")
                    try db.execute("DELETE FROM prune_audits")
                    let pick = try db.prepare(
                        """
                        INSERT INTO prune_audits(id) SELECT id FROM audits a WHERE finished < ?1 AND id <= ?2
                            AND NOT EXISTS (SELECT 1 FROM audit_results r WHERE r.audit = a.id AND r.id > ?3)
                        ORDER BY id LIMIT ?4
                        """)
                    try pick.bind([
                        .integer(cutoff), .integer(audits), .integer(results), .integer(max(1, chunk / 100)),
                    ])
                    while try pick.step() {}
                    try db.execute("DELETE FROM audit_results WHERE audit IN (SELECT id FROM prune_audits)")
                    out.1 = db.changes
                    try db.execute("DELETE FROM audits WHERE id IN (SELECT id FROM prune_audits)")
                    out.0 = db.changes
                }
                return out
            }
            deletedAudits += a
            deletedResults += r
            if a == 0 { break }
        }
        report.deleted[.audits] = deletedAudits
        report.deleted[.auditResults] = deletedResults
        report.heldForConsumers[.audits] = try withReader { db throws(StoreError) -> Int in
            let s = try db.prepare("SELECT count(*) FROM audits WHERE finished < ?1")
            try s.bind([.integer(cutoff)])
            return try s.step() ? Int(s.int64(0)) : 0
        }
        return report
    }
}
