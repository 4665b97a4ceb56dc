import Foundation
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
    /// tags table's last_seen, each through the readings_by_uid index), the last 25 events, and up to 2000
    /// points of `chartField` since `since`.
    public func statusData(since: Millis, chartField: String?, maxTags: Int = 50) throws(StoreError) -> StatusData {
        try withReader { db throws(StoreError) in
            try Self.statusData(db, since: since, chartField: chartField, maxTags: maxTags)
        }
    }

    static func statusData(_ db: SQLiteConnection, since: Millis, chartField: String?, maxTags: Int) throws(StoreError)
        -> StatusData
    {
        var d = StatusData()
        let tags = try db.prepare("SELECT uid FROM tags WHERE last_seen >= ?1 ORDER BY uid LIMIT ?2")
        try tags.bind([.integer(since), .integer(Int64(maxTags))])
        var uids: [String] = []
        while try tags.step() { uids.append(tags.text(0) ?? "") }
        let latest = try db.prepare(
            """
            SELECT time, block, hex(data), decoded, coalesce(reader, '') FROM readings INDEXED BY readings_by_uid
            WHERE uid = ?1 AND time >= ?2 ORDER BY id DESC LIMIT 32
            """)
        for uid in uids {
            latest.reset()
            try latest.bind([.text(uid), .integer(since)])
            var seen = Set<Int64>()
            var rows: [(Int64, StatusData.Row)] = []
            while try latest.step() {
                let block = latest.int64(1)
                guard seen.insert(block).inserted else { continue }
                rows.append(
                    (
                        block,
                        StatusData.Row(cells: [
                            uid, TimeSpec.format(latest.int64(0)), BlockNumber(exactly: Int(block))?.description ?? "?",
                            latest.text(2) ?? "", latest.text(3) ?? "", latest.text(4) ?? "",
                        ])
                    ))
            }
            d.latest += rows.sorted { $0.0 < $1.0 }.map(\.1)
        }
        let events = try db.prepare(
            "SELECT time, coalesce(reader, ''), coalesce(uid, ''), kind, name, severity, detail FROM events ORDER BY id DESC LIMIT 25"
        )
        while try events.step() {
            d.events.append(
                StatusData.Row(cells: [
                    TimeSpec.format(events.int64(0)), events.text(1) ?? "", events.text(2) ?? "", events.text(3) ?? "",
                    events.text(4) ?? "", events.text(5) ?? "", events.text(6) ?? "",
                ]))
        }
        if let f = chartField {
            let path = "$.\"\(f.replacingOccurrences(of: "\"", with: ""))\""
            let s = try db.prepare(
                """
                SELECT uid, time, json_extract(decoded, ?2) FROM readings
                WHERE time >= ?1 AND json_type(decoded, ?2) IN ('integer', 'real') ORDER BY id DESC LIMIT 2000
                """)
            try s.bind([.integer(since), .text(path)])
            while try s.step() {
                d.series[s.text(0) ?? "", default: []].append((s.int64(1), s.double(2)))
            }
        }
        return d
    }
}
