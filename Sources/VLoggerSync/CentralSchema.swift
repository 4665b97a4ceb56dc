import Foundation
import VLoggerStore

/// The central PostgreSQL schema that vlogger creates and migrates (`vlogger sync --init-schema`), versioned in
/// `vlogger_schema` like the local store's migrations. Every row names its gateway and keeps the gateway's
/// local row id: (gateway, local_id) is the key a resent batch conflicts on. Readings are partitioned by month
/// of their time (native range partitioning; the sync job creates the partitions it needs, and the next
/// month's, ahead), and indexed for "one tag across the fleet" (uid, time) and "one gateway, a time range"
/// (gateway, time).
public enum CentralSchema {
    public static let version = 1
    /// pg_advisory_xact_lock keys: schema migration, partition creation.
    static let lockKey: Int64 = 0x766C_6F67_6765_7200

    static let migrations: [(Int, [String])] = [
        (1, [
            "CREATE TABLE vlogger_schema(version integer NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
            """
            CREATE TABLE gateways(
                id text PRIMARY KEY,
                site text,
                first_sync timestamptz NOT NULL DEFAULT now(),
                last_sync timestamptz NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE TABLE readings(
                gateway text NOT NULL,
                local_id bigint NOT NULL,
                time timestamptz NOT NULL,
                reader text,
                location text,
                uid text NOT NULL,
                block integer NOT NULL,
                count integer NOT NULL,
                data bytea NOT NULL,
                security bytea,
                decoded jsonb,
                PRIMARY KEY (gateway, local_id, time)
            ) PARTITION BY RANGE (time)
            """,
            "CREATE INDEX readings_by_uid ON readings(uid, time)",
            "CREATE INDEX readings_by_gateway ON readings(gateway, time)",
            """
            CREATE TABLE events(
                gateway text NOT NULL,
                local_id bigint NOT NULL,
                time timestamptz NOT NULL,
                reader text,
                location text,
                uid text,
                kind text NOT NULL,
                name text NOT NULL,
                severity text NOT NULL,
                detail text NOT NULL,
                PRIMARY KEY (gateway, local_id)
            )
            """,
            "CREATE INDEX events_by_gateway ON events(gateway, time)",
            "CREATE INDEX events_by_uid ON events(uid, time)",
        ]),
    ]

    /// A calendar month (UTC) of readings' partitions.
    struct Month: Hashable, Comparable {
        let year: Int, month: Int
        static func < (a: Month, b: Month) -> Bool { (a.year, a.month) < (b.year, b.month) }
        var tableName: String { String(format: "readings_y%04dm%02d", year, month) }
        var createStatement: String {
            let next = CentralSchema.nextMonth(self)
            return String(format: "CREATE TABLE IF NOT EXISTS %@ PARTITION OF readings FOR VALUES FROM ('%04d-%02d-01 00:00:00+00') TO ('%04d-%02d-01 00:00:00+00')",
                          tableName, year, month, next.year, next.month)
        }
    }

    static func month(of ms: Millis) -> Month {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC")!
        let c = cal.dateComponents([.year, .month], from: Date(timeIntervalSince1970: Double(ms) / 1000))
        return Month(year: c.year ?? 1970, month: c.month ?? 1)
    }

    static func nextMonth(_ m: Month) -> Month { m.month == 12 ? Month(year: m.year + 1, month: 1) : Month(year: m.year, month: m.month + 1) }
}
