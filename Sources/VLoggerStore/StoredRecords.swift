import Foundation
import GRDB
import ISO15693
import VLoggerModel

// The cold paths' rows as GRDB record types (GRDB's guide: "Persistable Record Types are Responsible for Their
// Tables"): an audit, its results and the asset register are read and written through these, not through
// hand-prepared statements. Their coding keys are the columns of the table's description (`TableDescription`);
// a test holds each record to its description. The hot paths (the batch insert, the export's row stream) bind
// by hand, which the ingest and export benchmarks justify.

/// A row of `audits`.
struct StoredAudit: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "audits"
    var id: Int64?
    var started: Int64
    var finished: Int64
    var gateway: String
    var location: String
    /// The reader ids that took part, comma-separated.
    var readers: String
    var rounds: Int
    var trigger: String
    var present: Int
    var missing: Int
    var wrongLocation: Int
    var unexpected: Int
    var failedChecks: Int

    enum CodingKeys: String, CodingKey {
        case id, started, finished, gateway, location, readers, rounds, trigger, present, missing
        case wrongLocation = "wrong_location"
        case unexpected
        case failedChecks = "failed_checks"
    }

    init(_ a: AuditRecord) {
        id = nil
        started = a.started
        finished = a.finished
        gateway = a.gateway
        location = a.location
        readers = a.readers.joined(separator: ",")
        rounds = a.rounds
        trigger = a.trigger
        present = a.count(.present)
        missing = a.count(.missing)
        wrongLocation = a.count(.wrongLocation)
        unexpected = a.count(.unexpected)
        failedChecks = a.failedChecks
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// The audit with its counts as stored (its results are read apart).
    var record: AuditRecord {
        var a = AuditRecord(
            started: started, finished: finished, gateway: gateway, location: location,
            readers: readers.split(separator: ",").map(String.init), rounds: rounds, trigger: trigger, results: [])
        a.id = id ?? 0
        a.counts = [.present: present, .missing: missing, .wrongLocation: wrongLocation, .unexpected: unexpected]
        a.failedChecks = failedChecks
        return a
    }
}

/// A row of `audit_results`.
struct StoredAuditResult: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "audit_results"
    var id: Int64?
    var audit: Int64
    var uid: String
    var assetID: String?
    var status: String
    var registeredLocation: String?
    var seenLocation: String?
    var seenBy: String?
    var seenRounds: Int
    var firstSeen: Int64?
    var lastSeen: Int64?
    /// A JSON array of strings, or NULL when every check passed.
    var failedChecks: String?

    enum CodingKeys: String, CodingKey {
        case id, audit, uid
        case assetID = "asset_id"
        case status
        case registeredLocation = "registered_location"
        case seenLocation = "seen_location"
        case seenBy = "seen_by"
        case seenRounds = "seen_rounds"
        case firstSeen = "first_seen"
        case lastSeen = "last_seen"
        case failedChecks = "failed_checks"
    }

    init(_ r: AuditResult, audit: Int64) {
        id = nil
        self.audit = audit
        uid = r.uid.description
        assetID = r.assetID
        status = r.status.rawValue
        registeredLocation = r.registeredLocation
        seenLocation = r.seenLocation
        seenBy = r.seenBy
        seenRounds = r.seenRounds
        firstSeen = r.firstSeen
        lastSeen = r.lastSeen
        if r.failedChecks.isEmpty {
            failedChecks = nil
        } else {
            var checks: [UInt8] = [0x5B]
            for (i, c) in r.failedChecks.enumerated() {
                if i > 0 { checks.append(0x2C) }
                JSONText.appendQuoted(c, to: &checks)
            }
            checks.append(0x5D)
            failedChecks = String(decoding: checks, as: UTF8.self)
        }
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// The result, or nil for a row whose UID or status this vlogger cannot read.
    var result: AuditResult? {
        guard let u = try? UID(parsing: uid), let s = AuditResult.Status(rawValue: status) else { return nil }
        let checks = failedChecks.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String] } ?? []
        return AuditResult(
            uid: u, assetID: assetID, status: s, registeredLocation: registeredLocation, seenLocation: seenLocation,
            seenBy: seenBy, seenRounds: seenRounds, firstSeen: firstSeen, lastSeen: lastSeen, failedChecks: checks)
    }
}

/// A row of `assets` (the register).
struct StoredAsset: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "assets"
    var uid: String
    var assetID: String
    var name: String?
    var location: String?
    /// The file's other columns as one JSON object, keys sorted.
    var extra: String?
    /// The file it was last imported from.
    var source: String
    var updatedAt: Int64

    enum CodingKeys: String, CodingKey {
        case uid
        case assetID = "asset_id"
        case name, location, extra, source
        case updatedAt = "updated_at"
    }

    init(_ a: AssetRow, source: String, updatedAt: Millis) {
        uid = a.uid.description
        assetID = a.assetID
        name = a.name
        location = a.location
        extra = a.extraJSON
        self.source = source
        self.updatedAt = updatedAt
    }

    /// The asset, or nil for a row whose UID this vlogger cannot read.
    var row: AssetRow? {
        guard let u = try? UID(parsing: uid) else { return nil }
        return AssetRow(
            uid: u, assetID: assetID, name: name, location: location, extra: AssetRow.extra(fromJSON: extra))
    }
}

/// A row of `write_queue`: a write waiting for its tag, and what became of it.
struct StoredQueuedWrite: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "write_queue"
    var id: Int64?
    var created: Int64
    var uid: String
    /// The first block.
    var block: Int64
    /// Whole blocks.
    var data: Data
    /// The request flags asked for, or NULL.
    var flags: Int64?
    /// Only this reader, or NULL for any.
    var reader: String?
    var expires: Int64?
    var state: String
    var result: String?
    var finished: Int64?
    var operation: String
    var idempotencyKey: String?
    var origin: String?

    enum CodingKeys: String, CodingKey {
        case id, created, uid, block, data, flags, reader, expires, state, result, finished, operation, origin
        case idempotencyKey = "idempotency_key"
    }

    init(_ w: QueuedWrite, idempotencyKey: String?) {
        id = nil
        created = w.created
        uid = w.uid.description
        block = Int64(w.first.int)
        data = Data(w.data)
        flags = w.flags.map { Int64($0.rawValue) }
        reader = w.reader
        expires = w.expires
        state = QueuedWrite.State.queued.rawValue
        result = nil
        finished = nil
        operation = w.operation.rawValue
        self.idempotencyKey = idempotencyKey
        origin = w.origin
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// The write, or nil for a row whose UID or block this vlogger cannot read.
    var write: QueuedWrite? {
        guard let u = try? UID(parsing: uid), let first = BlockNumber(exactly: Int(clamping: block)) else {
            return nil
        }
        var w = QueuedWrite(
            created: created, uid: u, first: first, data: Array(data),
            flags: flags.map { RequestFlags(rawValue: UInt8(truncatingIfNeeded: $0)) }, reader: reader,
            expires: expires, operation: QueuedWrite.Operation(rawValue: operation) ?? .write, origin: origin)
        w.id = id ?? 0
        w.state = QueuedWrite.State(rawValue: state) ?? .failed
        w.result = result
        w.finished = finished
        return w
    }
}

extension SQLValue {
    /// The value as GRDB binds it (the cold paths that write a described row through GRDB: an audit's event).
    var databaseValue: DatabaseValue {
        switch self {
        case .null: return .null
        case .integer(let n): return n.databaseValue
        case .real(let d): return d.databaseValue
        case .text(let t): return t.databaseValue
        case .blob(let b): return Data(b).databaseValue
        }
    }
}
