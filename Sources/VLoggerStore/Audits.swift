import Foundation
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
        try withWriter { db throws(StoreError) in
            var id: Int64 = 0
            try Self.transaction(db) { () throws(StoreError) in
                let s = try db.prepare(
                    """
                    INSERT INTO audits(started, finished, gateway, location, readers, rounds, trigger, present, missing, wrong_location, unexpected, failed_checks)
                    VALUES(?,?,?,?,?,?,?,?,?,?,?,?)
                    """)
                try s.bind([
                    .integer(a.started), .integer(a.finished), .text(a.gateway), .text(a.location),
                    .text(a.readers.joined(separator: ",")),
                    .integer(Int64(a.rounds)), .text(a.trigger), .integer(Int64(a.count(.present))),
                    .integer(Int64(a.count(.missing))),
                    .integer(Int64(a.count(.wrongLocation))), .integer(Int64(a.count(.unexpected))),
                    .integer(Int64(a.failedChecks)),
                ])
                try s.step()
                id = db.lastInsertRowID
                let r = try db.prepare(
                    """
                    INSERT INTO audit_results(audit, uid, asset_id, status, registered_location, seen_location, seen_by, seen_rounds, first_seen, last_seen, failed_checks)
                    VALUES(?,?,?,?,?,?,?,?,?,?,?)
                    """)
                for x in a.results {
                    r.reset()
                    var checks: [UInt8] = [0x5B]
                    for (i, c) in x.failedChecks.enumerated() {
                        if i > 0 { checks.append(0x2C) }
                        JSONText.appendQuoted(c, to: &checks)
                    }
                    checks.append(0x5D)
                    try r.bind([
                        .integer(id), .text(x.uid.description), x.assetID.map(SQLValue.text) ?? .null,
                        .text(x.status.rawValue),
                        x.registeredLocation.map(SQLValue.text) ?? .null, x.seenLocation.map(SQLValue.text) ?? .null,
                        x.seenBy.map(SQLValue.text) ?? .null, .integer(Int64(x.seenRounds)),
                        x.firstSeen.map(SQLValue.integer) ?? .null,
                        x.lastSeen.map(SQLValue.integer) ?? .null,
                        x.failedChecks.isEmpty ? .null : .text(String(decoding: checks, as: UTF8.self)),
                    ])
                    try r.step()
                }
            }
            return id
        }
    }

    static let auditColumns =
        "id, started, finished, gateway, location, readers, rounds, trigger, present, missing, wrong_location, unexpected, failed_checks"

    static func auditRow(_ s: SQLStatement) -> AuditRecord {
        var a = AuditRecord(
            started: s.int64(1), finished: s.int64(2), gateway: s.text(3) ?? "", location: s.text(4) ?? "",
            readers: (s.text(5) ?? "").split(separator: ",").map(String.init), rounds: Int(s.int64(6)),
            trigger: s.text(7) ?? "", results: [])
        a.id = s.int64(0)
        a.counts = [
            .present: Int(s.int64(8)), .missing: Int(s.int64(9)), .wrongLocation: Int(s.int64(10)),
            .unexpected: Int(s.int64(11)),
        ]
        a.failedChecks = Int(s.int64(12))
        return a
    }

    /// The audits, newest first (their counts, not their results), optionally of one location.
    public func audits(location: String? = nil, limit: Int = 100) throws(StoreError) -> [AuditRecord] {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(
                "SELECT \(Self.auditColumns) FROM audits" + (location == nil ? "" : " WHERE location = ?2")
                    + " ORDER BY id DESC LIMIT ?1")
            try s.bind(location == nil ? [.integer(Int64(limit))] : [.integer(Int64(limit)), .text(location ?? "")])
            var out: [AuditRecord] = []
            while try s.step() { out.append(Self.auditRow(s)) }
            return out
        }
    }

    /// When the last audit with this trigger (and location, if given) started, or nil.
    public func lastAuditStart(trigger: String, location: String? = nil) throws(StoreError) -> Millis? {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(
                "SELECT max(started) FROM audits WHERE trigger = ?1" + (location == nil ? "" : " AND location = ?2"))
            try s.bind(location == nil ? [.text(trigger)] : [.text(trigger), .text(location ?? "")])
            guard try s.step(), s.type(0) != SQLStatement.nullType else { return nil }
            return s.int64(0)
        }
    }

    /// One audit with its results, or nil.
    public func audit(_ id: Int64) throws(StoreError) -> AuditRecord? {
        try withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT \(Self.auditColumns) FROM audits WHERE id = ?")
            try s.bind([.integer(id)])
            guard try s.step() else { return nil }
            var a = Self.auditRow(s)
            let r = try db.prepare(
                """
                SELECT uid, asset_id, status, registered_location, seen_location, seen_by, seen_rounds, first_seen, last_seen, failed_checks
                FROM audit_results WHERE audit = ? ORDER BY status, uid
                """)
            try r.bind([.integer(id)])
            while try r.step() {
                guard let uid = try? UID(parsing: r.text(0) ?? ""),
                    let st = AuditResult.Status(rawValue: r.text(2) ?? "")
                else { continue }
                let checks =
                    (r.text(9)).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String] } ?? []
                a.results.append(
                    AuditResult(
                        uid: uid, assetID: r.text(1), status: st, registeredLocation: r.text(3),
                        seenLocation: r.text(4),
                        seenBy: r.text(5), seenRounds: Int(r.int64(6)),
                        firstSeen: r.type(7) == SQLStatement.nullType ? nil : r.int64(7),
                        lastSeen: r.type(8) == SQLStatement.nullType ? nil : r.int64(8), failedChecks: checks))
            }
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
