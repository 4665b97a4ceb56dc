import Foundation
import VLoggerModel

/// The central PostgreSQL schema that vlogger creates and migrates (`vlogger sync --init-schema`), versioned in
/// `vlogger_schema` like the local store's migrations. Every row names its gateway and keeps the gateway's
/// local row id: (gateway, local_id) is the key a resent batch conflicts on. Readings are partitioned by month
/// of their time (native range partitioning; the sync job creates the partitions it needs, and the next
/// month's, ahead), and indexed for "one tag across the fleet" (uid, time) and "one gateway, a time range"
/// (gateway, time).
public enum CentralSchema {
    public static let version = 4
    /// pg_advisory_xact_lock keys: schema migration, partition creation.
    static let lockKey: Int64 = 0x766C_6F67_6765_7200

    static let migrations: [(Int, [String])] = [
        (
            1,
            [
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
            ]
        ),
        // Writes, audits and their results (one row per local row, like readings), and each gateway's tags
        // (one row per gateway and tag, updated as the tag is seen again). Decoded fields become json, which
        // keeps the gateway's text as it was (jsonb reorders keys and respaces, so a central export would
        // differ from the local one); the -> and ->> operators work the same.
        (
            2,
            [
                "ALTER TABLE readings ALTER COLUMN decoded TYPE json USING decoded::json",
                """
                CREATE TABLE writes(
                    gateway text NOT NULL,
                    local_id bigint NOT NULL,
                    time timestamptz NOT NULL,
                    uid text NOT NULL,
                    block integer NOT NULL,
                    data bytea NOT NULL,
                    flags integer,
                    result text NOT NULL,
                    verified boolean NOT NULL,
                    exchanges integer NOT NULL,
                    PRIMARY KEY (gateway, local_id)
                )
                """,
                "CREATE INDEX writes_by_uid ON writes(uid, time)",
                "CREATE INDEX writes_by_gateway ON writes(gateway, time)",
                """
                CREATE TABLE audits(
                    gateway text NOT NULL,
                    local_id bigint NOT NULL,
                    time timestamptz NOT NULL,
                    started timestamptz NOT NULL,
                    location text NOT NULL,
                    readers text NOT NULL,
                    rounds integer NOT NULL,
                    trigger text NOT NULL,
                    present integer NOT NULL,
                    missing integer NOT NULL,
                    wrong_location integer NOT NULL,
                    unexpected integer NOT NULL,
                    failed_checks integer NOT NULL,
                    PRIMARY KEY (gateway, local_id)
                )
                """,
                "CREATE INDEX audits_by_gateway ON audits(gateway, time)",
                "CREATE INDEX audits_by_location ON audits(location, time)",
                """
                CREATE TABLE audit_results(
                    gateway text NOT NULL,
                    local_id bigint NOT NULL,
                    time timestamptz NOT NULL,
                    audit bigint NOT NULL,
                    uid text NOT NULL,
                    asset_id text,
                    status text NOT NULL,
                    registered_location text,
                    seen_location text,
                    seen_by text,
                    seen_rounds integer NOT NULL,
                    first_seen timestamptz,
                    last_seen timestamptz,
                    failed_checks json,
                    PRIMARY KEY (gateway, local_id)
                )
                """,
                "CREATE INDEX audit_results_by_audit ON audit_results(gateway, audit)",
                "CREATE INDEX audit_results_by_uid ON audit_results(uid, time)",
                """
                CREATE TABLE tags(
                    gateway text NOT NULL,
                    uid text NOT NULL,
                    last_seen timestamptz NOT NULL,
                    first_seen timestamptz NOT NULL,
                    manufacturer text NOT NULL,
                    model text,
                    block_count integer,
                    block_size integer,
                    memory_source text,
                    last_reader text,
                    last_location text,
                    PRIMARY KEY (gateway, uid)
                )
                """,
                "CREATE INDEX tags_by_uid ON tags(uid, last_seen)",
            ]
        ),
        // The register's asset id of a reading's or an event's tag when the gateway stored it (NULL for a tag its
        // register does not list, and for rows synced before), indexed for "one asset across the fleet".
        (
            3,
            [
                "ALTER TABLE readings ADD COLUMN asset_id text",
                "ALTER TABLE events ADD COLUMN asset_id text",
                "CREATE INDEX readings_by_asset ON readings(asset_id, time)",
                "CREATE INDEX events_by_asset ON events(asset_id, time)",
            ]
        ),
        // Who asked for a write or for what an event reports (the local store's migration 022); NULL for rows
        // synced before.
        (4, ["ALTER TABLE writes ADD COLUMN origin text", "ALTER TABLE events ADD COLUMN origin text"]),
    ]

    /// Which store (its instance id, the local `store_instance`) ships as each gateway id: the rows of two stores
    /// under one gateway id would share keys (gateway, local id), and the second store's rows would be dropped as
    /// already there. A gateway claims its id when it connects; another store under the same id is refused
    /// (`SyncError.Kind.conflict`). Not a migration: a new schema version would stop every gateway of the release
    /// before (they refuse a newer schema), so the gateways that claim create the table when it is missing.
    static let instancesTable = """
        CREATE TABLE IF NOT EXISTS gateway_instances(
            gateway text PRIMARY KEY,
            instance text NOT NULL,
            host text,
            claimed timestamptz NOT NULL DEFAULT now(),
            last_seen timestamptz NOT NULL DEFAULT now()
        )
        """

    /// How far the central has every row of each gateway and table: the cursor a batch moved the gateway to,
    /// written in the batch's own transaction. A cluster that fails over with asynchronous replication loses its
    /// last commits, marks included, so a mark below the gateway's cursor says what was lost; the gateway sends it
    /// again (`Syncer.reconcile`). Like `gateway_instances`, created by the gateways when missing, not by a
    /// migration (older gateways go on syncing without it).
    static let marksTable = """
        CREATE TABLE IF NOT EXISTS gateway_marks(
            gateway text NOT NULL,
            tbl text NOT NULL,
            last_id bigint NOT NULL,
            updated timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (gateway, tbl)
        )
        """

    /// A calendar month (UTC) of readings' partitions.
    package struct Month: Hashable, Comparable, Sendable {
        let year: Int, month: Int
        package static func < (a: Month, b: Month) -> Bool { (a.year, a.month) < (b.year, b.month) }
        /// Its first millisecond.
        var start: Millis { Millis(TimeSpec.daysFromCivil(year, month, 1)) * 86_400_000 }
        var tableName: String { String(format: "readings_y%04dm%02d", year, month) }
        var createStatement: String {
            let next = CentralSchema.nextMonth(self)
            return String(
                format:
                    "CREATE TABLE IF NOT EXISTS %@ PARTITION OF readings FOR VALUES FROM ('%04d-%02d-01 00:00:00+00') TO ('%04d-%02d-01 00:00:00+00')",
                tableName, year, month, next.year, next.month)
        }
    }

    static func month(of ms: Millis) -> Month {
        let (y, m, _) = TimeSpec.civilFromDays(Int(TimeSpec.floorDiv(ms, 86_400_000)))
        return Month(year: y, month: m)
    }

    /// The months the times fall in (one calendar computation per change of month, not per time: rows come
    /// mostly in time order).
    static func months(of times: some Sequence<Millis>) -> Set<Month> {
        var out = Set<Month>()
        var range: Range<Millis> = 0..<0
        for t in times where !range.contains(t) {
            let m = month(of: t)
            out.insert(m)
            range = m.start..<nextMonth(m).start
        }
        return out
    }

    static func nextMonth(_ m: Month) -> Month {
        m.month == 12 ? Month(year: m.year + 1, month: 1) : Month(year: m.year, month: m.month + 1)
    }
}
