import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import VLoggerConfig
import VLoggerOutbox
import VLoggerStore
import VLoggerModel

/// What went wrong with the central server, in words an operator can act on. It never carries the password
/// (PostgresNIO's own errors print a generic text; this takes the server's message and SQLSTATE from them).
public struct SyncError: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable {
        case connect, authentication, readOnly = "read-only", schema, server, configuration
        /// Another store already ships under this gateway id (`gateway_instances`).
        case conflict = "gateway-id-conflict"
    }
    public let kind: Kind
    public let message: String
    public var description: String { message }

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// From whatever PostgresNIO threw.
    public static func from(_ error: Error, url raw: String) -> SyncError {
        let url = URLRedaction.redact(raw)
        if let e = error as? SyncError { return e }
        // The outbox's own failures (the local store) are said as they are.
        if let f = error as? OutboxFailure { return SyncError(.configuration, f.message) }
        // withTransaction wraps what failed (and its description holds the query): the error inside decides.
        if let t = error as? PostgresTransactionError,
            let inner = t.closureError ?? t.beginError ?? t.commitError ?? t.rollbackError
        {
            return from(inner, url: url)
        }
        if let p = error as? PSQLError {
            let state = p.serverInfo?[.sqlState] ?? ""
            let text = p.serverInfo?[.message] ?? ""
            switch (p.code, state) {
            case (_, "28P01"), (_, "28000"):
                return SyncError(
                    .authentication,
                    "\(url): authentication failed (\(text)); check the user and the password file or variable")
            case (_, "25006"):
                return SyncError(
                    .readOnly,
                    "\(url): the server refuses writes (\(text)); the rows are sent when it takes them again"
                )
            case (_, "53100"):
                return SyncError(
                    .readOnly, "\(url): the server's disk is full (\(text))")
            case (.server, _):
                return SyncError(.server, "\(url): the server said: \(text) (SQLSTATE \(state))")
            case (.connectionError, _) where p.underlying is NIOSSLError:
                return SyncError(
                    .connect,
                    "\(url): TLS failed (\(p.underlying.map { "\($0)" } ?? "")); check sync.ca-file, and that the server's certificate names the host of the URL"
                )
            case (.sslUnsupported, _):
                return SyncError(
                    .connect,
                    "\(url): the server does not offer TLS; turn on ssl in its postgresql.conf (with a certificate) rather than sending the password and rows in clear"
                )
            default:
                return SyncError(
                    .connect, "\(url): cannot talk to the server (\(p.code)\(p.underlying.map { ": \($0)" } ?? ""))")
            }
        }
        if let e = error as? NIOSSLError { return SyncError(.connect, "\(url): TLS failed (\(e))") }
        if error is PostgresTransactionError { return SyncError(.server, "\(url): a transaction failed") }
        return SyncError(.connect, "\(url): \(error)")
    }
}

/// What one sync round sent: the outbox's round report.
public typealias SyncReport = OutboxRound

/// Ships the local store to the central PostgreSQL: rows after each table's cursor, in batches of
/// `batchSize`, each batch one server transaction of idempotent inserts keyed by (gateway, local id); the
/// local cursor moves only after the server's COMMIT. A crash, a lost acknowledgement or a server restart at
/// any point resends at most one batch, which the server then ignores row by row.
public final class Syncer: @unchecked Sendable {
    public let settings: SyncSettings
    public let store: Store
    public let gateway: String
    public let site: String?
    let logger: Logger
    /// Read again when its file changes: a rotated password is used from the next connection on.
    let rotating: RotatingSecret
    var password: String? { rotating.current }
    /// Conflicts already reported as events (by the other store's instance), and whether `gateway_instances` is
    /// known to exist.
    private var reportedConflicts: Set<String> = []
    private var instancesTableReady = false
    private let claimsLock = NSLock()
    /// Called after the server committed a batch and before the local cursor moves (tests: a crash there).
    public var afterServerCommit: (@Sendable (SyncTable, Int64) throws -> Void)?

    public init(
        settings: SyncSettings, store: Store, gateway: String, site: String?,
        logger: Logger = Logger(label: "vlogger.sync")
    ) throws {
        self.settings = settings
        self.store = store
        self.gateway = gateway
        self.site = site
        self.logger = logger
        do { rotating = try settings.rotatingPassword() } catch { throw SyncError(.configuration, "\(error)") }
    }

    func configuration() throws -> PostgresConnection.Configuration {
        try Self.configuration(settings, password: password)
    }

    static func configuration(_ settings: SyncSettings, password: String?) throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        do {
            switch settings.sslMode {
            case .disable:
                tls = .disable
            case .require:
                var t = TLSConfiguration.makeClientConfiguration()
                t.certificateVerification = .none
                tls = .require(try NIOSSLContext(configuration: t))
            case .verifyFull:
                var t = TLSConfiguration.makeClientConfiguration()
                if let ca = settings.caFile {
                    guard FileManager.default.isReadableFile(atPath: ca) else {
                        throw SyncError(.configuration, "sync.ca-file: cannot read \(ca)")
                    }
                    t.trustRoots = .file(ca)
                }
                t.certificateVerification = .fullVerification
                tls = .require(try NIOSSLContext(configuration: t))
            }
        } catch let e as SyncError { throw e } catch {
            throw SyncError(.configuration, "sync TLS settings: \(error)")
        }
        var c = PostgresConnection.Configuration(
            host: settings.host, port: settings.port, username: settings.user, password: password,
            database: settings.database, tls: tls)
        c.options.connectTimeout = .seconds(5)
        return c
    }

    /// Runs `body` on one connection made for it (a link that is down fails within the connect timeout,
    /// not after a pool's retries), and closes it after.
    func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await Self.withConnection(settings, password: password, logger: logger, body)
    }

    static func withConnection<T: Sendable>(
        _ settings: SyncSettings, password: String?, logger: Logger,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            let conn = try await PostgresConnection.connect(
                configuration: try configuration(settings, password: password), id: 1, logger: logger)
            do {
                let value = try await body(conn)
                try? await conn.close()
                return value
            } catch {
                try? await conn.close()
                throw error
            }
        } catch {
            throw SyncError.from(error, url: settings.url)
        }
    }

    // MARK: Schema

    /// The server's schema version; nil when it has none (a new database).
    static func serverVersion(_ conn: PostgresConnection, _ logger: Logger) async throws -> Int? {
        let exists = try await conn.query("SELECT to_regclass('vlogger_schema') IS NOT NULL", logger: logger)
        for try await e in exists.decode(Bool.self) where !e { return nil }
        let rows = try await conn.query("SELECT coalesce(max(version), 0) FROM vlogger_schema", logger: logger)
        for try await v in rows.decode(Int32.self) { return Int(v) }
        return 0
    }

    /// Creates or migrates the central schema to this vlogger's version; refuses a newer server schema.
    /// Returns the versions before and after.
    public func initSchema() async throws -> (from: Int, to: Int) {
        let logger = self.logger
        return try await withConnection { conn in
            try await conn.withTransaction(logger: logger) { conn in
                // One gateway at a time migrates (others wait), so two first starts cannot race.
                try await conn.query("SELECT pg_advisory_xact_lock(\(CentralSchema.lockKey))", logger: logger)
                let from = try await Self.serverVersion(conn, logger) ?? 0
                guard from <= CentralSchema.version else {
                    throw SyncError(
                        .schema,
                        "the server's schema is version \(from), newer than this vlogger's \(CentralSchema.version); upgrade vlogger on this gateway"
                    )
                }
                for (v, sql) in CentralSchema.migrations where v > from {
                    for statement in sql {
                        try await conn.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await conn.query("INSERT INTO vlogger_schema(version) VALUES (\(Int32(v)))", logger: logger)
                }
                try await conn.query(PostgresQuery(unsafeSQL: CentralSchema.instancesTable), logger: logger)
                return (from, CentralSchema.version)
            }
        }
    }

    /// Checks the server's schema before shipping rows.
    static func requireSchema(_ conn: PostgresConnection, _ logger: Logger) async throws {
        guard let v = try await serverVersion(conn, logger) else {
            throw SyncError(
                .schema, "the server has no vlogger schema; create it once with `vlogger sync --init-schema`")
        }
        if v > CentralSchema.version {
            throw SyncError(
                .schema,
                "the server's schema is version \(v), newer than this vlogger's \(CentralSchema.version); upgrade vlogger on this gateway"
            )
        }
        if v < CentralSchema.version {
            throw SyncError(
                .schema, "the server's schema is version \(v); migrate it with `vlogger sync --init-schema`")
        }
    }

    // MARK: Shipping

    /// Sends everything after the cursors, batch by batch, until nothing is left (or `maxBatches`): one round of
    /// the outbox pump with this consumer.
    public func syncOnce(maxBatches: Int = .max) async throws -> SyncReport {
        var pump = OutboxPump(store: store, consumer: self)
        pump.afterDelivery = afterServerCommit
        do { return try await pump.round(maxBatches: maxBatches) } catch {
            throw SyncError.from(error, url: settings.url)
        }
    }

    /// Monthly partitions of `readings` for the batch's months and the next month, created when missing (under
    /// a transaction-scoped advisory lock, so two gateways do not create the same one at once). `known` are the
    /// months this session has already seen on the server (a partition is never dropped by vlogger); returns the
    /// months that exist now.
    static func ensurePartitions(
        _ conn: PostgresConnection, times: [Millis], known: Set<CentralSchema.Month> = [], logger: Logger
    ) async throws -> Set<CentralSchema.Month> {
        var months = CentralSchema.months(of: times)
        let now = CentralSchema.month(of: Millis.now())
        months.insert(now)
        months.insert(CentralSchema.nextMonth(now))
        var missing: [CentralSchema.Month] = []
        for m in months.subtracting(known).sorted() {
            let rows = try await conn.query("SELECT to_regclass(\(m.tableName)) IS NULL", logger: logger)
            for try await absent in rows.decode(Bool.self) where absent { missing.append(m) }
        }
        guard !missing.isEmpty else { return months.union(known) }
        try await conn.withTransaction(logger: logger) { conn in
            try await conn.query("SELECT pg_advisory_xact_lock(\(CentralSchema.lockKey + 1))", logger: logger)
            for m in missing {
                try await conn.query(PostgresQuery(unsafeSQL: m.createStatement), logger: logger)
            }
        }
        return months.union(known)
    }

    /// One multi-row INSERT of the batch; returns how many rows were new (tags: new or changed). Rows keyed by
    /// (gateway, local id) are inserted once (ON CONFLICT DO NOTHING: a resent row is ignored); tags are
    /// upserted by (gateway, uid), a row only replacing one seen no later.
    static func insert(
        _ table: SyncTable, _ rows: [OutboxRow], gateway: String, _ conn: PostgresConnection, _ logger: Logger
    ) async throws -> Int {
        let columns = table.columns
        let upsert = table.isUpserted
        var names = ["gateway"] + (upsert ? ["last_seen"] : ["local_id", "time"]) + columns.map(\.name)
        names = names.map { "\"\($0)\"" }
        var binds = PostgresBindings(capacity: rows.count * names.count)
        var values: [String] = []
        values.reserveCapacity(rows.count)
        var n = 0
        func p(_ cast: String) -> String { n += 1; return "$\(n)\(cast)" }
        func time(_ parameter: String) -> String { "TIMESTAMPTZ 'epoch' + \(parameter) * INTERVAL '1 millisecond'" }
        for r in rows {
            var row = [p("::text")]
            binds.append(r.gateway.isEmpty ? gateway : r.gateway)
            if !upsert {
                row.append(p("::bigint"))
                binds.append(r.id)
            }
            row.append(time(p("::bigint")))
            binds.append(r.time)
            for (c, v) in zip(columns, r.values) {
                switch c.kind {
                case .integer:
                    row.append(p("::bigint"))
                    binds.append(v.integer)
                case .time:
                    row.append(time(p("::bigint")))
                    binds.append(v.integer)
                case .bool:
                    row.append(p("::boolean"))
                    binds.append(v.integer.map { $0 != 0 })
                case .text:
                    row.append(p("::text"))
                    binds.append(v.text)
                case .json:
                    row.append(p("::json"))
                    binds.append(v.text)
                case .blob:
                    row.append(p("::bytea"))
                    binds.append(v.blob.map { ByteBuffer(bytes: $0) })
                }
            }
            values.append("(" + row.joined(separator: ", ") + ")")
        }
        var sql =
            "INSERT INTO \(table.rawValue)(" + names.joined(separator: ", ") + ") VALUES "
            + values.joined(separator: ",")
        if upsert {
            // The newer row as the gateway merged it, but for the key and the earliest of a kept-smallest column
            // (a tag's first sighting), as the columns' merge rules say.
            let updates = table.tableDescription.columns.filter { $0.outbox != nil }.compactMap { c -> String? in
                let name = "\"\(c.name)\""
                switch c.merge {
                case .kept: return nil
                case .min: return "\(name) = least(\(table.rawValue).\(name), EXCLUDED.\(name))"
                default: return "\(name) = EXCLUDED.\(name)"
                }
            }
            sql +=
                " ON CONFLICT (gateway, uid) DO UPDATE SET last_seen = EXCLUDED.last_seen, "
                + updates.joined(separator: ", ")
                + " WHERE EXCLUDED.last_seen >= \(table.rawValue).last_seen RETURNING 1"
        } else {
            sql += " ON CONFLICT DO NOTHING RETURNING 1"
        }
        let result = try await conn.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        var inserted = 0
        for try await _ in result { inserted += 1 }
        return inserted
    }

    // MARK: Status

    /// Rows the server has of this gateway, by table.
    public func serverCounts() async throws -> [SyncTable: Int] {
        let (logger, gateway) = (self.logger, self.gateway)
        return try await withConnection { conn in
            var out: [SyncTable: Int] = [:]
            for t in SyncTable.allCases {
                let rows = try await conn.query(
                    "SELECT count(*) FROM \(unescaped: t.rawValue) WHERE gateway = \(gateway)", logger: logger)
                for try await n in rows.decode(Int64.self) { out[t] = Int(n) }
            }
            return out
        }
    }
}

/// The fleet sync as the outbox's consumer "postgres": every table, in batches of `[sync] batch-size`, one
/// connection per round (a link that is down fails within the connect timeout), the server's schema checked
/// before the first batch, each batch one server transaction.
extension Syncer: OutboxConsumer {
    public static let consumerName = "postgres"
    public var name: String { Self.consumerName }
    public var title: String { "Fleet sync to PostgreSQL" }
    public var legacyName: String? { "sync" }
    public var tables: [SyncTable] { SyncTable.allCases }
    public var batchSize: Int { settings.batchSize }
    /// A gateway back after a day offline sends its live rows at least every second (or every interval, when
    /// shorter) while the backlog goes at full speed in between: rows are keyed, so order does not matter.
    public var liveEvery: Duration? { .milliseconds(min(1000, max(1, settings.intervalMs))) }

    public func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
        let (logger, gateway, site) = (self.logger, self.gateway, self.site)
        return try await withConnection { conn in
            try await Self.requireSchema(conn, logger)
            try await claim(conn)
            return try await body(Session(conn: conn, gateway: gateway, site: site, logger: logger))
        }
    }

    /// `outputs status`: the server answers and has the schema; nothing is written (not even the claim).
    public func probe() async throws {
        let logger = self.logger
        try await withConnection { conn in try await Self.requireSchema(conn, logger) }
    }

    /// This machine's name, as the claim records it (for the message a second gateway gets).
    static let hostName = HostName.current

    /// Claims this gateway id for this store on the central (`gateway_instances`), or refuses the round when
    /// another store has it: its rows carry the same keys (gateway, local id), and the central would drop this
    /// store's rows as already there. The first refusal is also an event (`gateway-id-conflict`) in the local store;
    /// the rows wait there.
    func claim(_ conn: PostgresConnection) async throws {
        if !claimsLock.withLock({ instancesTableReady }) {
            // Two gateways creating it at once: one waits for the other's transaction (the advisory lock), then
            // finds it there.
            try await conn.withTransaction(logger: logger) { conn in
                try await conn.query("SELECT pg_advisory_xact_lock(\(CentralSchema.lockKey))", logger: logger)
                try await conn.query(PostgresQuery(unsafeSQL: CentralSchema.instancesTable), logger: logger)
            }
            claimsLock.withLock { instancesTableReady = true }
        }
        let instance: String
        do { instance = try store.instance() } catch {
            throw OutboxFailure(kind: "store", message: "the local store: \(error)")
        }
        let host = Self.hostName
        let claimed = try await conn.query(
            """
            INSERT INTO gateway_instances(gateway, instance, host) VALUES (\(gateway), \(instance), \(host))
            ON CONFLICT (gateway) DO UPDATE SET last_seen = now(), host = EXCLUDED.host
            WHERE gateway_instances.instance = EXCLUDED.instance
            RETURNING 1
            """, logger: logger
        ).collect()
        if !claimed.isEmpty { return }
        var other = "another store"
        var otherInstance = ""
        for try await (theirs, theirHost, seen) in try await conn.query(
            """
            SELECT instance, coalesce(host, ''), to_char(last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
            FROM gateway_instances WHERE gateway = \(gateway)
            """, logger: logger
        ).decode((String, String, String).self) {
            otherInstance = theirs
            other = "the store \(theirs)\(theirHost.isEmpty ? "" : " on \(theirHost)"), last seen \(seen)"
        }
        let message =
            "the central store already takes gateway '\(gateway)' from \(other); this store is \(instance). Their rows would share keys (gateway, local id) and this gateway's would be dropped, so nothing is sent: give one of the gateways another [gateway] id (or, if this store replaces that one for good, remove its row: DELETE FROM gateway_instances WHERE gateway = '\(gateway)'). The rows wait in the local store"
        let first = claimsLock.withLock { reportedConflicts.insert(otherInstance).inserted }
        if first {
            let e = Event(
                time: Millis.now(), gateway: gateway, uid: nil, kind: .error, name: "gateway-id-conflict",
                severity: .critical, detail: "output \(name): \(message)")
            var b = Batch()
            b.events.append(e)
            _ = try? store.write(b)
        }
        throw SyncError(.conflict, message)
    }

    public func describe(_ error: any Error) -> OutboxFailure {
        let e = SyncError.from(error, url: settings.url)
        return OutboxFailure(kind: e.kind.rawValue, message: e.message)
    }

    /// One round's connection, with what it has learnt of the server: the readings partitions that exist, and
    /// whether this gateway's row in `gateways` was touched this round (once per round, not per batch).
    final class Session: OutboxSession, @unchecked Sendable {
        let conn: PostgresConnection
        let gateway: String
        let site: String?
        let logger: Logger
        private var months: Set<CentralSchema.Month> = []
        private var gatewayRecorded = false

        init(conn: PostgresConnection, gateway: String, site: String?, logger: Logger) {
            self.conn = conn
            self.gateway = gateway
            self.site = site
            self.logger = logger
        }

        /// One batch, in as few round trips as the server allows: an append-only batch is one `COPY` straight
        /// into its table, a statement that commits on its own (all its rows or none). When a key of the batch is
        /// already there (a batch sent again after a lost acknowledgement or a crash before the local cursor
        /// moved), the server refuses that COPY whole (unique_violation) and the batch goes through the staging
        /// table instead, where ON CONFLICT DO NOTHING drops what is already there. Tags are one upsert.
        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            if !gatewayRecorded {
                try await conn.query(
                    """
                    INSERT INTO gateways(id, site) VALUES (\(gateway), \(site))
                    ON CONFLICT (id) DO UPDATE SET site = EXCLUDED.site, last_sync = now()
                    """, logger: logger)
                gatewayRecorded = true
            }
            if table == .readings {
                months = try await Syncer.ensurePartitions(conn, times: rows.map(\.time), known: months, logger: logger)
            }
            if table.isUpserted { return try await Syncer.insert(table, rows, gateway: gateway, conn, logger) }
            do {
                try await Syncer.copyDirect(table, rows, gateway: gateway, conn, logger)
                return rows.count
            } catch let e as PSQLError where e.serverInfo?[.sqlState] == "23505" {
                let (gateway, logger) = (self.gateway, self.logger)
                return try await conn.withTransaction(logger: logger) { conn in
                    try await Syncer.copyInsert(table, rows, gateway: gateway, conn, logger)
                }
            }
        }
    }
}

extension Syncer {
    /// An append-only batch by `COPY … FROM STDIN` (text format) into a temporary staging table of this
    /// connection (emptied at each commit), then one `INSERT … SELECT … ON CONFLICT DO NOTHING` into the central
    /// table, in the caller's transaction: PostgreSQL's bulk path instead of one bound parameter per value.
    /// Returns how many rows were new. The staging table keeps times as milliseconds and booleans as 0/1, as the
    /// local store has them; the INSERT converts them (timestamptz, boolean) and casts JSON text to json.
    static func copyInsert(
        _ table: SyncTable, _ rows: [OutboxRow], gateway: String, _ conn: PostgresConnection, _ logger: Logger
    ) async throws -> Int {
        let columns = table.columns
        let stage = "vlogger_stage_\(table.rawValue)"
        func stageType(_ k: OutboxColumn.Kind) -> String {
            switch k {
            case .integer, .time, .bool: return "bigint"
            case .text, .json: return "text"
            case .blob: return "bytea"
            }
        }
        let stageColumns =
            ["gateway text", "local_id bigint", "time_ms bigint"]
            + columns.map { "\"\($0.name)\" \(stageType($0.kind))" }
        try await conn.query(
            PostgresQuery(
                unsafeSQL:
                    "CREATE TEMP TABLE IF NOT EXISTS \(stage)(\(stageColumns.joined(separator: ", "))) ON COMMIT DELETE ROWS"
            ),
            logger: logger)
        var out = CopyText(capacity: rows.count * 160)
        for r in rows { out.row(r, gateway: gateway, columns: columns, converted: false) }
        try await conn.copyFrom(
            table: stage, columns: ["gateway", "local_id", "time_ms"] + columns.map(\.name), logger: logger
        ) { writer in try await writer.write(out.buffer) }
        func time(_ expr: String) -> String { "TIMESTAMPTZ 'epoch' + \(expr) * INTERVAL '1 millisecond'" }
        let selected = columns.map { c -> String in
            let name = "\"\(c.name)\""
            switch c.kind {
            case .time: return time(name)
            case .bool: return "\(name) <> 0"
            case .json: return "\(name)::json"
            case .integer, .text, .blob: return name
            }
        }
        let names = (["gateway", "local_id", "time"] + columns.map(\.name)).map { "\"\($0)\"" }
        let sql = """
            WITH new AS (
                INSERT INTO \(table.rawValue)(\(names.joined(separator: ", ")))
                SELECT gateway, local_id, \(time("time_ms")), \(selected.joined(separator: ", ")) FROM \(stage)
                ON CONFLICT DO NOTHING RETURNING 1
            ) SELECT count(*) FROM new
            """
        let result = try await conn.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        var inserted = 0
        for try await n in result.decode(Int64.self) { inserted = Int(n) }
        return inserted
    }
}

extension Syncer {
    /// An append-only batch by `COPY … FROM STDIN` (text format) straight into its central table (readings: the
    /// partitioned table, which routes each row to its month): times as ISO 8601 UTC text, booleans t/f, JSON
    /// text as it is (the server checks it), bytea in hex. One statement: all rows or none. The text goes in
    /// pieces of about 32 KiB as it is made, so the server parses the first while the rest is written.
    static func copyDirect(
        _ table: SyncTable, _ rows: [OutboxRow], gateway: String, _ conn: PostgresConnection, _ logger: Logger
    ) async throws {
        let columns = table.columns
        try await conn.copyFrom(
            table: table.rawValue, columns: ["gateway", "local_id", "time"] + columns.map(\.name), logger: logger
        ) { writer in
            var out = CopyText(capacity: 40 * 1024)
            for r in rows {
                out.row(r, gateway: gateway, columns: columns, converted: true)
                if out.count >= 32 * 1024 {
                    try await writer.write(out.buffer)
                    out = CopyText(capacity: 40 * 1024)
                }
            }
            if out.count > 0 { try await writer.write(out.buffer) }
        }
    }
}

/// Rows in `COPY`'s text format (PostgreSQL, COPY, "Text Format"): a tab between values, a newline after each
/// row, `\N` for NULL, backslash escapes for backslash, tab, newline and carriage return; bytea in its hex form
/// (`\x…`), whose backslash is itself escaped.
struct CopyText {
    private(set) var bytes: [UInt8] = []
    var buffer: ByteBuffer { ByteBuffer(bytes: bytes) }
    var count: Int { bytes.count }

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func tab() { bytes.append(0x09) }
    mutating func newline() { bytes.append(0x0A) }
    mutating func null() { bytes.append(0x5C); bytes.append(0x4E) }
    mutating func integer(_ n: Int64) { ValueText.appendInteger(n, to: &bytes) }
    mutating func bool(_ b: Bool) { bytes.append(b ? UInt8(ascii: "t") : UInt8(ascii: "f")) }

    mutating func text(_ s: String) {
        var s = s
        s.withUTF8 { u in
            // Most values need no escape: one copy.
            if !u.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
                bytes.append(contentsOf: u)
                return
            }
            for b in u {
                switch b {
                case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
                case 0x09: bytes.append(0x5C); bytes.append(0x74)
                case 0x0A: bytes.append(0x5C); bytes.append(0x6E)
                case 0x0D: bytes.append(0x5C); bytes.append(0x72)
                default: bytes.append(b)
                }
            }
        }
    }

    mutating func blob(_ b: [UInt8]) {
        bytes.append(contentsOf: [0x5C, 0x5C, 0x78])
        ValueText.appendHex(b, to: &bytes)
    }

    /// Milliseconds since 1970 as ISO 8601 UTC (`2026-11-22T08:30:00.250Z`), which timestamptz reads.
    mutating func time(_ ms: Millis) { ValueText.appendTime(ms, to: &bytes) }

    /// One row: gateway, local id, time, then the table's columns, and its newline. `converted`: times as ISO 8601
    /// text and booleans as t/f, for the central table's own types (COPY straight into it); otherwise as the local
    /// store has them, milliseconds and 0/1 (the staging table's bigints).
    mutating func row(_ r: OutboxRow, gateway: String, columns: [OutboxColumn], converted: Bool) {
        text(r.gateway.isEmpty ? gateway : r.gateway)
        tab()
        integer(r.id)
        tab()
        if converted { time(r.time) } else { integer(r.time) }
        for (c, v) in zip(columns, r.values) {
            tab()
            switch (converted, c.kind, v) {
            case (true, .time, .integer(let ms)): time(ms)
            case (true, .bool, .integer(let n)): bool(n != 0)
            default: raw(v)
            }
        }
        newline()
    }

    /// A value as the local store has it (integers as numbers, text escaped, blobs in hex).
    mutating func raw(_ v: OutboxValue) {
        switch v {
        case .null: null()
        case .integer(let n): integer(n)
        case .text(let t): text(t)
        case .blob(let b): blob(b)
        }
    }
}
