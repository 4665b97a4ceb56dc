import Foundation
import GRDB
import VLoggerModel
import ISO15693

/// What the status page shows from the store: bounded, index-backed queries.
public struct StatusData: Sendable {
    public struct Row: Sendable {
        public var cells: [String]
        public init(cells: [String]) { self.cells = cells }
    }
    public var latest: [Row] = []
    public var events: [Row] = []
    public var series: [String: [(Millis, Double)]] = [:]
    public init() {}
}

extension Store {
    /// Through one of the store's reader connections (never waiting for the writer): the latest reading of
    /// each block of the tags seen since `since` (at most `maxTags` tags, by the
    /// tags table's last_seen, each through the readings_by_uid_time index), the last 25 events, and up to 2000
    /// points of `chartField` since `since`.
    public func statusData(since: Millis, chartField: String?, maxTags: Int = 50) throws(StoreError) -> StatusData {
        try read { db in try Self.statusData(db, since: since, chartField: chartField, maxTags: maxTags) }
    }

    static func statusData(_ db: Database, since: Millis, chartField: String?, maxTags: Int) throws -> StatusData {
        var d = StatusData()
        let uids = try Table("tags").filter(Column("last_seen") >= since).order(Column("uid")).limit(max(0, maxTags))
            .select(Column("uid"), as: String.self).fetchAll(db)
        let latest = try db.cachedStatement(
            sql: """
                SELECT time, block, data, decoded, coalesce(reader, '') FROM readings INDEXED BY readings_by_uid_time
                WHERE uid = ?1 AND time >= ?2 ORDER BY id DESC LIMIT 32
                """)
        for uid in uids {
            var seen = Set<Int64>()
            var rows: [(Int64, StatusData.Row)] = []
            for row in try Row.fetchAll(latest, arguments: [uid, since]) {
                let block: Int64 = row[1]
                guard seen.insert(block).inserted else { continue }
                var hex: [UInt8] = []
                ValueText.appendHex((row[2] as Data?) ?? Data(), to: &hex)
                rows.append(
                    (
                        block,
                        StatusData.Row(cells: [
                            uid, TimeSpec.format(row[0]), BlockNumber(exactly: Int(block))?.description ?? "?",
                            String(decoding: hex, as: UTF8.self), (row[3] as String?) ?? "", row[4],
                        ])
                    ))
            }
            d.latest += rows.sorted { $0.0 < $1.0 }.map(\.1)
        }
        let events = try Row.fetchAll(
            db,
            sql:
                "SELECT time, coalesce(reader, ''), coalesce(uid, ''), kind, name, severity, detail FROM events ORDER BY id DESC LIMIT 25"
        )
        for e in events {
            d.events.append(
                StatusData.Row(cells: [TimeSpec.format(e[0])] + (1..<7).map { (e[$0] as String?) ?? "" }))
        }
        if let f = chartField {
            let path = "$.\"\(f.replacingOccurrences(of: "\"", with: ""))\""
            let points = try Row.fetchCursor(
                db,
                sql: """
                    SELECT uid, time, json_extract(decoded, ?2) FROM readings
                    WHERE time >= ?1 AND json_type(decoded, ?2) IN ('integer', 'real') ORDER BY id DESC LIMIT 2000
                    """, arguments: [since, path])
            while let p = try points.next() {
                d.series[(p[0] as String?) ?? "", default: []].append((p[1], p[2]))
            }
        }
        return d
    }
}
