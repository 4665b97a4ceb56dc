import Foundation
import GRDB
import VLoggerModel
import ISO15693

/// One asset's (or one unexpected tag's) line in an audit.
public struct AuditResult: Equatable, Sendable {
    public enum Status: String, Sendable, CaseIterable {
        case present, missing
        case wrongLocation = "wrong-location"
        case unexpected
    }
    public var uid: UID
    public var assetID: String?
    public var status: Status
    public var registeredLocation: String?
    /// Where it was seen during the audit (or, for a missing asset, nowhere).
    public var seenLocation: String?
    public var seenBy: String?
    /// In how many of the audit's inventory rounds it answered.
    public var seenRounds: Int
    public var firstSeen: Millis?
    public var lastSeen: Millis?
    /// What did not match on a present asset ("model: …", "block 0xF8: …", "block 0x00 not locked").
    public var failedChecks: [String]

    public init(
        uid: UID, assetID: String?, status: Status, registeredLocation: String?, seenLocation: String?, seenBy: String?,
        seenRounds: Int, firstSeen: Millis?, lastSeen: Millis?, failedChecks: [String] = []
    ) {
        self.uid = uid
        self.assetID = assetID
        self.status = status
        self.registeredLocation = registeredLocation
        self.seenLocation = seenLocation
        self.seenBy = seenBy
        self.seenRounds = seenRounds
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.failedChecks = failedChecks
    }
}

/// An audit of one location, with its results.
public struct AuditRecord: Sendable {
    public var id: Int64 = 0
    public var started: Millis
    public var finished: Millis
    public var gateway: String
    public var location: String
    public var readers: [String]
    public var rounds: Int
    public var trigger: String
    public var results: [AuditResult]

    public init(
        started: Millis, finished: Millis, gateway: String, location: String, readers: [String], rounds: Int,
        trigger: String, results: [AuditResult]
    ) {
        self.started = started
        self.finished = finished
        self.gateway = gateway
        self.location = location
        self.readers = readers
        self.rounds = rounds
        self.trigger = trigger
        self.results = results
        summarise()
    }

    /// How many results of each status, and failed checks in all: from the results, or as stored.
    public var counts: [AuditResult.Status: Int] = [:]
    public var failedChecks = 0

    public func count(_ s: AuditResult.Status) -> Int { counts[s] ?? 0 }

    /// What it found, in one line: `3 present, 1 missing, 0 wrong location, 0 unexpected, 0 failed checks (2
    /// rounds, readers dock-3; schedule nightly)`.
    public var summary: String {
        "\(count(.present)) present, \(count(.missing)) missing, \(count(.wrongLocation)) wrong location, "
            + "\(count(.unexpected)) unexpected, \(failedChecks) failed check\(failedChecks == 1 ? "" : "s") "
            + "(\(rounds) round\(rounds == 1 ? "" : "s"), reader\(readers.count == 1 ? "" : "s") "
            + "\(readers.joined(separator: ", ")), \(trigger))"
    }

    /// Sets the counts from the results.
    public mutating func summarise() {
        counts = Dictionary(grouping: results, by: \.status).mapValues(\.count)
        failedChecks = results.reduce(0) { $0 + $1.failedChecks.count }
    }
}

extension Store {
    /// Stores an audit and its results in one transaction; returns its id.
    @discardableResult
    public func saveAudit(_ a: AuditRecord) throws(StoreError) -> Int64 {
        try write { db in
            var audit = StoredAudit(a)
            try audit.insert(db)
            let id = audit.id ?? db.lastInsertedRowID
            for x in a.results {
                var r = StoredAuditResult(x, audit: id)
                try r.insert(db)
            }
            // The audit's event, in the same transaction: outputs that follow events learn of it.
            let e = Event(
                time: a.finished, gateway: a.gateway, reader: nil, location: a.location, uid: nil, kind: .auditFinished,
                name: "\(id)",
                severity: a.count(.missing) + a.count(.wrongLocation) + a.count(.unexpected) + a.failedChecks > 0
                    ? .warning : .info,
                detail: a.summary)
            // The event as the batch stores one (an audit's names no tag: no asset id from the register).
            let values = TableDescription.events.names.map { SQLValue(e.column($0)).databaseValue }
            try db.execute(sql: TableDescription.events.insertSQL, arguments: StatementArguments(values))
            return id
        }
    }

    /// The audits, newest first (their counts, not their results), optionally of one location.
    public func audits(location: String? = nil, limit: Int = 100) throws(StoreError) -> [AuditRecord] {
        try read { db in
            var q = StoredAudit.order(Column("id").desc)
            if let location { q = q.filter(Column("location") == location) }
            return try q.limit(max(0, limit)).fetchAll(db).map(\.record)
        }
    }

    /// When the last audit with this trigger (and location, if given) started, or nil.
    public func lastAuditStart(trigger: String, location: String? = nil) throws(StoreError) -> Millis? {
        try read { db in
            var q = StoredAudit.filter(Column("trigger") == trigger)
            if let location { q = q.filter(Column("location") == location) }
            return try q.select(max(Column("started")), as: Int64?.self).fetchOne(db) ?? nil
        }
    }

    /// One audit with its results, or nil.
    public func audit(_ id: Int64) throws(StoreError) -> AuditRecord? {
        try read { db in
            guard var a = try StoredAudit.fetchOne(db, key: id)?.record else { return nil }
            a.results = try StoredAuditResult.filter(Column("audit") == id).order(Column("status"), Column("uid"))
                .fetchAll(db).compactMap(\.result)
            return a
        }
    }

    /// Where each tag was last seen, and when (the tags table), for telling a missing asset from one at
    /// another location.
    public func lastSeen(_ uids: [UID]) throws(StoreError) -> [UID: (time: Millis, reader: String?, location: String?)]
    {
        try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT last_seen, last_reader, last_location FROM tags WHERE uid = ?")
            var out: [UID: (Millis, String?, String?)] = [:]
            for u in uids {
                s.reset()
                try s.bind([.text(u.description)])
                if try s.step() { out[u] = (s.int64(0), s.text(1), s.text(2)) }
            }
            return out
        }
    }
}

/// What changed from one audit to another, tag by tag.
public struct AuditChange: Equatable, Sendable {
    public var uid: UID
    public var assetID: String?
    /// nil: not in that audit.
    public var before: AuditResult.Status?
    public var after: AuditResult.Status?
    public var checksBefore: [String]
    public var checksAfter: [String]

    /// The changes between `a` and `b` (statuses, failed checks; a tag in one audit only), by UID.
    public static func between(_ a: AuditRecord, _ b: AuditRecord) -> [AuditChange] {
        let before = Dictionary(a.results.map { ($0.uid, $0) }, uniquingKeysWith: { x, _ in x })
        let after = Dictionary(b.results.map { ($0.uid, $0) }, uniquingKeysWith: { x, _ in x })
        var out: [AuditChange] = []
        for uid in Set(before.keys).union(after.keys).sorted(by: { $0.description < $1.description }) {
            let x = before[uid], y = after[uid]
            guard x?.status != y?.status || (x?.failedChecks ?? []) != (y?.failedChecks ?? []) else { continue }
            out.append(
                AuditChange(
                    uid: uid, assetID: y?.assetID ?? x?.assetID, before: x?.status, after: y?.status,
                    checksBefore: x?.failedChecks ?? [], checksAfter: y?.failedChecks ?? []))
        }
        return out
    }
}
