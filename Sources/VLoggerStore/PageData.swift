import Foundation
import GRDB
import ISO15693
import VLoggerModel

/// What the operator's pages read from the store (the status page, a tag's page, the audit report), through the
/// store's reader connections: never waiting for the writer, nothing changed.
public enum PageData {
    /// A tag's latest decoded values: the newest value of each field among its latest readings.
    public struct Values: Sendable {
        public var uid: UID
        /// When the newest of those readings was taken, and by which reader where.
        public var time: Millis
        public var reader: String?
        public var location: String?
        /// Field name and value, in the order the fields were first met (newest reading first).
        public var fields: [(name: String, value: FieldValue)]
    }

    /// One stored event.
    public struct EventRow: Sendable {
        public var time: Millis
        public var reader: String?
        public var location: String?
        public var uid: UID?
        public var kind: String
        public var name: String
        public var severity: String
        public var detail: String
    }

    /// Where a tag was read: one row per reader and location, with the first and last time in the range.
    public struct Place: Sendable {
        public var reader: String?
        public var location: String?
        public var first: Millis
        public var last: Millis
        public var readings: Int
    }

    /// A tag in an audit.
    public struct AuditMention: Sendable {
        public var audit: Int64
        public var started: Millis
        public var location: String
        public var status: String
    }

    /// The fields of a reading's decoded JSON object, in the order they were written (numbers as numbers, strings
    /// as text, anything else as its JSON text); nil when it is not a JSON object.
    public static func fields(_ json: String) -> [(name: String, value: FieldValue)]? {
        let bytes = Array(json.utf8)
        var out: [(name: String, value: FieldValue)] = []
        let ok = bytes.withUnsafeBufferPointer { p in
            JSONMembers.scan(p) { key, value in
                guard let name = JSONMembers.unescape(p, key).map({ String(decoding: $0, as: UTF8.self) }) else {
                    return
                }
                let text = p[value]
                if text.first == 0x22 {
                    let inner = (value.lowerBound + 1)..<(value.upperBound - 1)
                    out.append(
                        (name, .text(JSONMembers.unescape(p, inner).map { String(decoding: $0, as: UTF8.self) } ?? "")))
                } else if let d = Double(String(decoding: text, as: UTF8.self)), d.isFinite {
                    out.append((name, .number(d)))
                } else {
                    out.append((name, .json(String(decoding: text, as: UTF8.self))))
                }
            }
        }
        return ok ? out : nil
    }
}

extension Store {
    /// The latest values of each of `uids` seen since `since` (from at most its 32 newest readings, through the
    /// `(uid, id, time)` index).
    public func latestValues(_ uids: [UID], since: Millis) throws(StoreError) -> [UID: PageData.Values] {
        try read { db in
            let s = try db.cachedStatement(
                sql: """
                    SELECT time, decoded, reader, location FROM readings INDEXED BY readings_by_uid_time
                    WHERE uid = ?1 AND time >= ?2 ORDER BY id DESC LIMIT 32
                    """)
            var out: [UID: PageData.Values] = [:]
            for uid in uids {
                var v: PageData.Values?
                var names = Set<String>()
                for row in try Row.fetchAll(s, arguments: [uid.description, since]) {
                    if v == nil {
                        v = PageData.Values(uid: uid, time: row[0], reader: row[2], location: row[3], fields: [])
                    }
                    guard let json = row[1] as String?, let fields = PageData.fields(json) else { continue }
                    for f in fields where names.insert(f.name).inserted { v?.fields.append(f) }
                }
                if let v { out[uid] = v }
            }
            return out
        }
    }

    /// The tags seen since `since`, newest first (at most `limit`).
    public func tagsSeen(since: Millis, limit: Int = 200) throws(StoreError) -> [UID] {
        try read { db in
            try String.fetchAll(
                db, sql: "SELECT uid FROM tags WHERE last_seen >= ?1 ORDER BY last_seen DESC LIMIT ?2",
                arguments: [since, max(0, limit)]
            ).compactMap { try? UID(parsing: $0) }
        }
    }

    /// The newest `limit` events, of one tag when `uid` is given.
    public func recentEvents(limit: Int, uid: UID? = nil) throws(StoreError) -> [PageData.EventRow] {
        try read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT time, reader, location, uid, kind, name, severity, detail FROM events"
                    + (uid == nil ? "" : " WHERE uid = ?2") + " ORDER BY id DESC LIMIT ?1",
                arguments: uid == nil ? [max(0, limit)] : [max(0, limit), uid?.description])
            return rows.map { r in
                PageData.EventRow(
                    time: r[0], reader: r[1], location: r[2], uid: (r[3] as String?).flatMap { try? UID(parsing: $0) },
                    kind: r[4], name: r[5], severity: r[6], detail: r[7])
            }
        }
    }

    /// The numeric values of `field` since `since` of each tag in `uids`, oldest first, at most `maxPoints` per tag
    /// (a longer range is thinned evenly). Bounded work on any store: each tag's readings are found through the
    /// `(uid, id, time)` index (ids only), and only the chosen rows are read and their JSON looked at.
    public func series(field: String, since: Millis, uids: [UID], maxPoints: Int = 600) throws(StoreError)
        -> [UID: [(Millis, Double)]]
    {
        try read { db in
            let path = "$.\"\(field.replacingOccurrences(of: "\"", with: ""))\""
            let ids = try db.cachedStatement(
                sql: """
                    SELECT id FROM readings INDEXED BY readings_by_uid_time WHERE uid = ?1 AND time >= ?2 ORDER BY id
                    """)
            var out: [UID: [(Millis, Double)]] = [:]
            for uid in uids {
                let all = try Int64.fetchAll(ids, arguments: [uid.description, since])
                guard !all.isEmpty else { continue }
                let step = max(1, (all.count + maxPoints - 1) / max(1, maxPoints))
                var chosen = stride(from: 0, to: all.count, by: step).map { all[$0] }
                // The newest reading always: the chart ends where the tag is now.
                if chosen.last != all.last, let last = all.last {
                    if chosen.count >= maxPoints { chosen[chosen.count - 1] = last } else { chosen.append(last) }
                }
                var points: [(Millis, Double)] = []
                for chunk in stride(from: 0, to: chosen.count, by: 500) {
                    let part = Array(chosen[chunk..<min(chosen.count, chunk + 500)])
                    let rows = try Row.fetchAll(
                        db,
                        sql: """
                            SELECT time, json_extract(decoded, ?) FROM readings
                            WHERE id IN (\(part.map { _ in "?" }.joined(separator: ","))) AND json_type(decoded, ?) IN ('integer', 'real')
                            ORDER BY id
                            """,
                        arguments: StatementArguments([path] + part.map { $0 as DatabaseValueConvertible } + [path]))
                    for r in rows { points.append((r[0], r[1])) }
                }
                if !points.isEmpty { out[uid] = points }
            }
            return out
        }
    }

    /// Where `uid` was read since `since`: per reader and location, first and last time, newest first.
    public func places(_ uid: UID, since: Millis) throws(StoreError) -> [PageData.Place] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT reader, location, min(time), max(time), count(*) FROM readings INDEXED BY readings_by_uid_time
                    WHERE uid = ?1 AND time >= ?2 GROUP BY reader, location ORDER BY max(time) DESC LIMIT 50
                    """, arguments: [uid.description, since]
            ).map { r in PageData.Place(reader: r[0], location: r[1], first: r[2], last: r[3], readings: r[4]) }
        }
    }

    /// The audits that name `uid`, newest first.
    public func auditMentions(_ uid: UID, limit: Int = 20) throws(StoreError) -> [PageData.AuditMention] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT a.id, a.started, a.location, r.status FROM audit_results r JOIN audits a ON a.id = r.audit
                    WHERE r.uid = ?1 ORDER BY a.id DESC LIMIT ?2
                    """, arguments: [uid.description, max(0, limit)]
            ).map { r in PageData.AuditMention(audit: r[0], started: r[1], location: r[2], status: r[3]) }
        }
    }
}
