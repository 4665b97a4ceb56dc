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
        /// The central did not answer a step within `answer-timeout` (the connection was closed).
        case timeout
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

    static func configuration(
        _ settings: SyncSettings, _ endpoint: SyncSettings.Endpoint, password: String?
    ) throws -> PostgresConnection.Configuration {
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
            host: endpoint.host, port: endpoint.port, username: settings.user, password: password,
            database: settings.database, tls: tls)
        c.options.connectTimeout = .seconds(5)
        return c
    }

    /// Runs `body` on one connection made for it (a link that is down fails within the connect timeout,
    /// not after a pool's retries), and closes it after.
    func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await Self.withConnection(settings, password: password, logger: logger, start: hostPicker, body)
    }

    /// Which host answered last as wanted: the next connection tries it first (after a failover, the new leader
    /// is found once, not at every round).
    let hostPicker = HostPicker()

    package final class HostPicker: @unchecked Sendable {
        package init() {}
        private let lock = NSLock()
        private var last = 0
        var first: Int { lock.withLock { last } }
        func worked(_ i: Int) { lock.withLock { last = i } }
    }

    static func withConnection<T: Sendable>(
        _ settings: SyncSettings, password: String?, logger: Logger, start: HostPicker? = nil,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let conn = try await connect(settings, password: password, logger: logger, start: start)
        do {
            let value = try await body(conn)
            await close(conn)
            return value
        } catch {
            await close(conn)
            throw SyncError.from(error, url: settings.url)
        }
    }

    /// Closes a connection; one already closed is let go without waiting (PostgresNIO may have a lost statement queued
    /// on it, behind which a goodbye would wait for ever).
    package static func close(_ conn: PostgresConnection) async {
        if conn.isClosed {
            Task { try? await conn.close() }
        } else {
            try? await conn.close()
        }
    }

    /// A connection to the first host that takes it and, for `read-write`, whose sessions may write (libpq's
    /// `target_session_attrs=read-write`: `SHOW transaction_read_only` is `off`; PostgresNIO has no multi-host
    /// form, so vlogger tries the hosts itself). Hosts are tried in the URL's order from the one that worked last.
    /// When none will do, the error names each host's answer.
    package static func connect(
        _ settings: SyncSettings, password: String?, logger: Logger, start: HostPicker? = nil
    ) async throws -> PostgresConnection {
        let hosts = settings.endpoints
        let wantWrites = settings.effectiveTargetSession == .readWrite
        let first = min(start?.first ?? 0, hosts.count - 1)
        var answers: [String] = []
        var lastError: SyncError?
        var timeouts = 0
        for k in 0..<hosts.count {
            let i = (first + k) % hosts.count
            let endpoint = hosts[i]
            let conn: PostgresConnection
            let limit = Duration.milliseconds(settings.connectLimitMs)
            do {
                let configuration = try configuration(settings, endpoint, password: password)
                conn = try await within(limit, "\(URLRedaction.redact(settings.url)): connecting to \(endpoint)") {
                    try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
                } late: { late in
                    try? await late.close()
                }
            } catch {
                let e = SyncError.from(error, url: settings.url)
                // A wrong password or TLS setting is the same on every node: said at once.
                if hosts.count == 1 || e.kind == .authentication || e.kind == .configuration { throw e }
                lastError = e
                if e.kind == .timeout { timeouts += 1 }
                answers.append("\(endpoint): \(Self.brief(error))")
                continue
            }
            if wantWrites {
                do {
                    let readOnly = try await untilClosed(conn, limit: limit) {
                        var on = false
                        for try await v in try await conn.query("SHOW transaction_read_only", logger: logger).decode(
                            String.self)
                        {
                            on = v == "on"
                        }
                        return on
                    }
                    if readOnly {
                        try? await conn.close()
                        answers.append("\(endpoint): read-only (a replica, or a server that refuses writes)")
                        lastError = SyncError(.readOnly, "")
                        continue
                    }
                } catch {
                    try? await conn.close()
                    lastError = SyncError.from(error, url: settings.url)
                    if lastError?.kind == .timeout { timeouts += 1 }
                    answers.append("\(endpoint): \(Self.brief(error))")
                    continue
                }
            }
            start?.worked(i)
            return conn
        }
        if hosts.count == 1, let e = lastError, e.kind != .readOnly { throw e }
        // Every host silent past the limit: a timeout (as one host alone says it), not a refusal.
        let kind: SyncError.Kind =
            lastError?.kind == .readOnly ? .readOnly : timeouts == hosts.count ? .timeout : .connect
        throw SyncError(
            kind,
            "\(URLRedaction.redact(settings.url)): no host \(wantWrites ? "takes writes" : "answers") (\(answers.joined(separator: "; "))); a cluster that is failing over has none for a few seconds: the rows wait and are sent when one does"
        )
    }

    /// How connections to the central are pooled, as `doctor` says it. Two clients connect; the second runs a
    /// statement and ends it; the first then asks for its server process in a transaction. Under transaction
    /// pooling (PgBouncer's `pool_mode = transaction`) the first is handed the server connection the second just
    /// released (PgBouncer reuses the most recent idle one unless `server_round_robin` is set), so both name the
    /// same process; a direct connection or session pooling gives each client its own. Transaction pooling is
    /// what the sync is built for (no session state, unnamed statements, each batch one statement); the check says
    /// so either way.
    static func poolingMode(_ settings: SyncSettings, password: String?, logger: Logger) async throws -> String {
        func pid(_ conn: PostgresConnection) async throws -> Int32 {
            var out: Int32 = -1
            for try await p in try await conn.query("SELECT pg_backend_pid()", logger: logger).decode(Int32.self) {
                out = p
            }
            return out
        }
        return try await withConnection(settings, password: password, logger: logger) { first in
            try await withConnection(settings, password: password, logger: logger) { second in
                var shared = 0
                for _ in 0..<3 {
                    let theirs = try await pid(second)
                    let mine = try await first.withTransaction(logger: logger) { conn in try await pid(conn) }
                    if mine == theirs { shared += 1 }
                }
                return shared > 0
                    ? "transaction pooling (two clients took turns on one server connection: PgBouncer's pool_mode = transaction, which the sync works through)"
                    : "no transaction pooling found (a direct connection, HAProxy, or session pooling: one server connection per gateway)"
            }
        }
    }

    /// A connection failure in a few words (the host is said by the caller).
    package static func brief(_ error: any Error) -> String {
        var text = "\(error)"
        if let p = error as? PSQLError {
            if let m = p.serverInfo?[.message] { return m }
            text = p.underlying.map { "\($0)" } ?? "\(p.code)"
        }
        // NIO's connect errors name every address tried; the cause is what an operator needs.
        for (needle, said) in [
            ("Connection refused", "connection refused"), ("timed out", "timed out"),
            ("No route to host", "no route to host"), ("Network is unreachable", "network unreachable"),
        ] where text.contains(needle) {
            return said
        }
        return text
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
        try await Self.initSchema(settings, password: password, logger: logger, start: hostPicker)
    }

    /// `initSchema` without a gateway (`vlogger central ingest --init-schema`).
    package static func initSchema(
        _ settings: SyncSettings, password: String?, logger: Logger = Logger(label: "vlogger.sync"),
        start: HostPicker? = nil
    ) async throws -> (from: Int, to: Int) {
        // Bounded by answer-timeout as a whole: the advisory lock waits for another gateway's migration.
        try await bounded(settings, "creating or migrating the schema", limitMs: settings.answerTimeoutMs) {
            try await initSchemaUnbounded(settings, password: password, logger: logger, start: start)
        }
    }

    static func initSchemaUnbounded(
        _ settings: SyncSettings, password: String?, logger: Logger, start: HostPicker?
    ) async throws -> (from: Int, to: Int) {
        try await withConnection(settings, password: password, logger: logger, start: start) { conn in
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
                try await conn.query(PostgresQuery(unsafeSQL: CentralSchema.marksTable), logger: logger)
                return (from, CentralSchema.version)
            }
        }
    }

    /// Checks the server's schema before shipping rows.
    package static func requireSchema(_ conn: PostgresConnection, _ logger: Logger) async throws {
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
    package static func ensurePartitions(
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
    package static func insert(
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
        return try await Self.bounded(settings, "the central's counts") {
            try await self.withConnection { conn in
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

    /// A command's short exchange with the central (`sync --status`, `outputs status`, `doctor`), bounded as a
    /// whole by 30 s (or `answer-timeout`, if shorter): past it, the kind `timeout`. What it still holds is let go
    /// when it ends, or with the process.
    package static func bounded<T: Sendable>(
        _ settings: SyncSettings, _ what: String, limitMs: Millis? = nil,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await within(
            .milliseconds(limitMs ?? settings.connectLimitMs), "\(URLRedaction.redact(settings.url)): \(what)", body,
            late: { _ in })
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
            // Each step on the connection gives up 2 s after the connection closes (`untilClosed`).
            let limit = Duration.milliseconds(settings.answerTimeoutMs)
            let marks = try await Self.untilClosed(conn, limit: limit) {
                try await Self.requireSchema(conn, logger)
                try await self.claim(conn)
                return try await self.reconcile(conn)
            }
            return try await body(
                Session(conn: conn, gateway: gateway, site: site, marks: marks, limit: limit, logger: logger))
        }
    }

    public var safetyWindowMs: Millis? { settings.safetyWindowMs > 0 ? settings.safetyWindowMs : nil }

    public func statusNotes() -> [String] {
        var out: [String] = []
        if let w = safetyWindowMs {
            out.append(
                "safety window: rows stay \(DurationText.format(w)) in the local store after the central has them (sent again if a failover loses them)"
            )
        } else {
            out.append("safety window: none (rows may go as soon as the central has them and [store] keep allows)")
        }
        if let g = try? store.latestEvent(named: "central-gap") {
            out.append("last gap: \(TimeSpec.format(g.time)): \(g.detail)")
        }
        return out
    }

    /// `outputs status`: the server answers and has the schema; nothing is written (not even the claim).
    public func probe() async throws {
        let logger = self.logger
        try await Self.bounded(settings, "the schema check") {
            try await self.withConnection { conn in try await Self.requireSchema(conn, logger) }
        }
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
                try await conn.query(PostgresQuery(unsafeSQL: CentralSchema.marksTable), logger: logger)
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
        /// `answer-timeout`: each step's limit (nil: none).
        let limit: Duration?
        private var months: Set<CentralSchema.Month> = []
        private var gatewayRecorded = false
        /// Each table's mark as this session last set it (from `reconcile` at first): a batch moves the mark
        /// only from there, so that rows a failover took from under an open session (PgBouncer keeps the
        /// gateway's connection while the server behind it changes) are not covered by a later batch's mark.
        private var marks: [SyncTable: Int64]

        init(
            conn: PostgresConnection, gateway: String, site: String?, marks: [SyncTable: Int64] = [:],
            limit: Duration? = nil, logger: Logger
        ) {
            self.conn = conn
            self.limit = limit
            self.gateway = gateway
            self.site = site
            self.marks = marks
            self.logger = logger
        }

        /// One batch, one statement: an append-only batch is one `INSERT … SELECT … FROM unnest(arrays)`
        /// (`arrayInsert`: all its rows or none; a batch sent again after a lost acknowledgement or a crash is
        /// refused for its keys, and goes again with `ON CONFLICT DO NOTHING`, keeping only what the central
        /// lacks); tags are one upsert. With the batch's mark, both in one transaction.
        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            try await deliver(table, rows, mark: nil)
        }

        /// A batch after which the gateway's cursor is `cursorAfter`: the rows and the mark in one transaction.
        func deliver(_ table: SyncTable, _ rows: [OutboxRow], cursorAfter: Int64) async throws -> Int {
            try await deliver(table, rows, mark: cursorAfter)
        }

        /// Rows up to `id` were all delivered (by live passes and the backlog, each batch committed): the mark
        /// follows, in a statement of its own committed after theirs.
        func acknowledged(_ table: SyncTable, through id: Int64) async throws {
            let (conn, gateway, logger, from) = (self.conn, self.gateway, self.logger, marks[table] ?? 0)
            try await Syncer.untilClosed(conn, limit: limit) {
                try await Syncer.moveMark(table, from: from, to: id, gateway: gateway, conn, logger)
            }
            marks[table] = max(from, id)
        }

        func deliver(_ table: SyncTable, _ rows: [OutboxRow], mark: Int64?) async throws -> Int {
            try await Syncer.untilClosed(conn, limit: limit) {
                try await self.deliverOnConnection(table, rows, mark: mark)
            }
        }

        func deliverOnConnection(_ table: SyncTable, _ rows: [OutboxRow], mark: Int64?) async throws -> Int {
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
            let (gateway, logger) = (self.gateway, self.logger)
            func write(skipExisting: Bool) async throws -> Int {
                table.isUpserted
                    ? try await Syncer.insert(table, rows, gateway: gateway, conn, logger)
                    : try await Syncer.arrayInsert(
                        table, rows, gateway: gateway, conn, logger, skipExisting: skipExisting)
            }
            let from = marks[table] ?? 0
            func attempt(skipExisting: Bool) async throws -> Int {
                guard let mark else { return try await write(skipExisting: skipExisting) }
                return try await Syncer.transaction(conn, logger) {
                    let n = try await write(skipExisting: skipExisting)
                    try await Syncer.moveMark(table, from: from, to: mark, gateway: gateway, conn, logger)
                    return n
                }
            }
            // Plain first; a key the central has (a batch sent again) refuses it whole, and it goes again skipping
            // the keys there.
            let n: Int
            do { n = try await attempt(skipExisting: false) } catch let e as PSQLError
                where e.serverInfo?[.sqlState] == "23505"
            {
                n = try await attempt(skipExisting: true)
            }
            if let mark { marks[table] = max(from, mark) }
            return n
        }
    }
}

extension Syncer {
    /// BEGIN, `body`, COMMIT; on an error, ROLLBACK, unless the connection has closed (nothing is sent on a
    /// connection PostgresNIO has given up; see `untilClosed`). Errors come out as they were thrown, not wrapped.
    package static func transaction<T: Sendable>(
        _ conn: PostgresConnection, _ logger: Logger, _ body: () async throws -> T
    ) async throws -> T {
        try await conn.query("BEGIN", logger: logger)
        let value: T
        do { value = try await body() } catch {
            if !conn.isClosed && !(error is SyncError) { _ = try? await conn.query("ROLLBACK", logger: logger) }
            throw error
        }
        try await conn.query("COMMIT", logger: logger)
        return value
    }
}

extension Syncer {
    /// Runs `operation` (statements on `conn`), and gives up on it when the connection closes and it has not
    /// returned 2 s later, instead of waiting for ever on something PostgresNIO lost when its connection died under
    /// it (seen with its `copyFrom`, whose continuation leaked when a cluster's leader was killed while COPYs were
    /// starting: "SWIFT TASK CONTINUATION MISUSE"). Awaited directly, a lost statement would hold the sync's round
    /// for ever, and no row would leave the gateway until a restart. The operation runs in a task of its own, so
    /// that the round goes on to its error and the next round; a lost one stays suspended (the memory of one task
    /// per such incident).
    ///
    /// With a `limit`, a step the server has not answered by then is given up too: the connection is closed
    /// (which fails whatever PostgresNIO still waits for on it) and the step throws `SyncError(.timeout)`. A live
    /// server that never answers (a commit waiting for a synchronous standby that is gone, a link that drops
    /// packets without a reset) keeps a connection open for ever; only a limit ends that. A caller cancelled
    /// (the last round at shutdown, past its time) closes the connection the same way and gets CancellationError:
    /// PostgresNIO's statements do not answer to task cancellation.
    ///
    /// Whether the connection closed is looked at every second while the step runs (a timer cancelled when it
    /// ends), not by a callback on the connection's close: a connection the ingest keeps for days would gather one
    /// such callback per batch.
    package static func untilClosed<T: Sendable>(
        _ conn: PostgresConnection, limit: Duration? = nil, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let once = ResumeOnce<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (k: CheckedContinuation<T, any Error>) in
                once.set(k)
                // Cancelled before it began: nothing to start.
                guard !once.isDone else { return }
                Task {
                    do { once.resume(.success(try await operation())) } catch { once.resume(.failure(error)) }
                }
                let loop = conn.eventLoop
                let closedAt = LockedBox<NIODeadline?>(nil)
                let watch = loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                    guard conn.isClosed else { return }
                    guard let at = closedAt.get() else { return closedAt.set(.now()) }
                    if .now() - at >= .seconds(2) {
                        once.resume(.failure(SyncError(.connect, "the connection closed under a statement")))
                    }
                }
                once.onDone { watch.cancel() }
                if let limit {
                    let timer = loop.scheduleTask(in: .nanoseconds(Self.nanoseconds(limit))) {
                        // Said first, then the connection closed: what the close makes the step throw is not it.
                        if once.resume(.failure(Self.noAnswer(limit))) { conn.close().whenComplete { _ in } }
                    }
                    once.onDone { timer.cancel() }
                }
            }
        } onCancel: {
            if once.resume(.failure(CancellationError())) { conn.close().whenComplete { _ in } }
        }
    }

    static func noAnswer(_ limit: Duration) -> SyncError {
        SyncError(
            .timeout,
            "the central did not answer within \(DurationText.format(Self.millis(limit))) (sync.answer-timeout): the connection was closed; the rows stay in the local store and go in the next round"
        )
    }

    static func nanoseconds(_ d: Duration) -> Int64 {
        let (s, atto) = d.components
        return s >= Int64.max / 1_000_000_000 ? Int64.max : s * 1_000_000_000 + atto / 1_000_000_000
    }

    static func millis(_ d: Duration) -> Millis { Millis(nanoseconds(d) / 1_000_000) }

    /// Runs `operation` (which makes something that must be let go: a connection) for at most `limit`; past it
    /// (or when the caller is cancelled), throws `SyncError(.timeout)` (CancellationError), cancels `operation`,
    /// and hands what it still makes to `late`. PostgresNIO 1.33.2's own connect timeout (5 s here) covers the
    /// startup too; this bound is vlogger's own, for a library that has lost a continuation under a failover
    /// before (see above) and for a shorter `answer-timeout`.
    package static func within<T: Sendable>(
        _ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T,
        late: @escaping @Sendable (T) async -> Void
    ) async throws -> T {
        let once = ResumeOnce<T>()
        let work = LockedBox<Task<Void, Never>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (k: CheckedContinuation<T, any Error>) in
                once.set(k)
                guard !once.isDone else { return }
                work.set(
                    Task {
                        do {
                            let value = try await operation()
                            if !once.resume(.success(value)) { await late(value) }
                        } catch { once.resume(.failure(error)) }
                    })
                let timer = Task {
                    try await Task.sleep(for: limit)
                    if once.resume(
                        .failure(
                            SyncError(.timeout, "\(what): no answer within \(DurationText.format(Self.millis(limit)))"))
                    ) {
                        work.get()?.cancel()
                    }
                }
                once.onDone { timer.cancel() }
            }
        } onCancel: {
            if once.resume(.failure(CancellationError())) { work.get()?.cancel() }
        }
    }

    /// A value shared between tasks and event-loop closures.
    final class LockedBox<V: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: V
        init(_ value: V) { self.value = value }
        func set(_ v: V) { lock.withLock { value = v } }
        func get() -> V { lock.withLock { value } }
    }

    /// A continuation resumed by whichever comes first. A result that comes before the continuation is set (a
    /// caller cancelled before it began) is kept and given to it when it is.
    final class ResumeOnce<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var k: CheckedContinuation<T, any Error>?
        private var early: Result<T, any Error>?
        private var done = false
        private var finish: [@Sendable () -> Void] = []

        func set(_ k: CheckedContinuation<T, any Error>) {
            let early: Result<T, any Error>? = lock.withLock {
                if let e = self.early {
                    self.early = nil
                    return e
                }
                self.k = k
                return nil
            }
            if let early { k.resume(with: early) }
        }

        var isDone: Bool { lock.withLock { done } }

        /// True when this call was the first (the continuation is resumed with `r`, now or when it is set).
        @discardableResult
        func resume(_ r: Result<T, any Error>) -> Bool {
            let (first, k, finish): (Bool, CheckedContinuation<T, any Error>?, [@Sendable () -> Void]) = lock.withLock {
                guard !done else { return (false, nil, []) }
                done = true
                let out = (true, self.k, self.finish)
                if self.k == nil { early = r }
                self.k = nil
                self.finish = []
                return out
            }
            guard first else { return false }
            for f in finish { f() }
            k?.resume(with: r)
            return true
        }

        /// Runs `f` once resumed (at once if it already was): a timer cancelled when no longer needed.
        func onDone(_ f: @escaping @Sendable () -> Void) {
            let now: Bool = lock.withLock {
                if done { return true }
                finish.append(f)
                return false
            }
            if now { f() }
        }
    }
}

extension Syncer {
    /// Records that the central has every row of `table` of this gateway up to `to` (in the caller's transaction,
    /// with the batch that brought the last of them, or in a statement of its own committed after theirs), but
    /// only where the central's mark is still at least `from`, where this session left it. A lower or missing mark
    /// means the central lost rows since (a failover under a connection PgBouncer kept open): the batch's
    /// transaction is refused, the round ends, and the next connection's `reconcile` sends them again.
    static func moveMark(
        _ table: SyncTable, from: Int64, to: Int64, gateway: String, _ conn: PostgresConnection, _ logger: Logger
    ) async throws {
        let moved = try await conn.query(
            """
            UPDATE gateway_marks SET last_id = greatest(last_id, \(to)), updated = now()
            WHERE gateway = \(gateway) AND tbl = \(table.rawValue) AND last_id >= \(from)
            RETURNING 1
            """, logger: logger
        ).collect()
        guard !moved.isEmpty else {
            throw SyncError(
                .server,
                "the central no longer has the \(table.rawValue) it acknowledged up to \(from) (a failover lost its last commits): the next connection sends them again"
            )
        }
    }

    /// At every new connection: where the central's mark of a table is below this gateway's cursor, the central
    /// has lost rows it had acknowledged (a failover with asynchronous replication promoted a node without the
    /// last commits, marks included). The cursor goes back to the mark, so the round sends those rows again from
    /// the local store (the central keeps one of each). Rows already gone from the store (older than `[store]
    /// keep` and past the safety window) cannot be: they are counted and named as a gap, in an event
    /// (`central-gap`, critical) and the log, never passed over in silence. A table with no mark yet (the first
    /// round after an upgrade) is taken as it is.
    @discardableResult
    func reconcile(_ conn: PostgresConnection) async throws -> [SyncTable: Int64] {
        var marks: [SyncTable: Int64] = [:]
        for try await (tbl, last) in try await conn.query(
            "SELECT tbl, last_id FROM gateway_marks WHERE gateway = \(gateway)", logger: logger
        ).decode((String, Int64).self) {
            if let t = SyncTable(rawValue: tbl) { marks[t] = last }
        }
        var out: [SyncTable: Int64] = [:]
        for table in tables {
            guard let mark = marks[table] else {
                // No mark yet (a new gateway, or the first round after the upgrade that brought marks): the
                // central is taken to have what it acknowledged, and the mark starts at the cursor.
                let cursor: Int64
                do { cursor = try store.outboxCursor(name, table) } catch {
                    throw OutboxFailure(kind: "store", message: "the local store: \(error)")
                }
                try await conn.query(
                    """
                    INSERT INTO gateway_marks(gateway, tbl, last_id) VALUES (\(gateway), \(table.rawValue), \(cursor))
                    ON CONFLICT (gateway, tbl) DO NOTHING
                    """, logger: logger)
                out[table] = cursor
                continue
            }
            out[table] = mark
            let cursor: Int64
            let held: (count: Int, lowest: Int64?)
            do {
                cursor = try store.outboxCursor(name, table)
                guard cursor > mark else { continue }
                held = try store.heldRows(table, after: mark, through: cursor)
            } catch { throw OutboxFailure(kind: "store", message: "the local store: \(error)") }
            var gap = ""
            if !table.isUpserted {
                // Ids mark+1 … first held − 1 are gone from the store; the central may still have some of them (a
                // live pass sent rows ahead of the cursor).
                let firstHeld = held.lowest ?? (cursor + 1)
                if firstHeld > mark + 1 {
                    let (from, to) = (mark + 1, firstHeld - 1)
                    var binds = PostgresBindings()
                    binds.append(gateway)
                    binds.append(from)
                    binds.append(to)
                    var there: Int64 = 0
                    for try await n in try await conn.query(
                        PostgresQuery(
                            unsafeSQL:
                                "SELECT count(*) FROM \(table.rawValue) WHERE gateway = $1 AND local_id BETWEEN $2 AND $3",
                            binds: binds), logger: logger
                    ).decode(Int64.self) { there = n }
                    let lost = (to - from + 1) - there
                    if lost > 0 {
                        gap =
                            "; \(lost) of them (local ids \(from)…\(to)) are no longer in the local store: a gap in the central's \(table.rawValue) that cannot be filled from here"
                    }
                }
            }
            let unit = table.isUpserted ? "change number" : "local id"
            let resend = table.isUpserted ? "the tags changed since" : "\(held.count) rows"
            let message =
                "the central has \(table.rawValue) of gateway '\(gateway)' up to \(unit) \(mark) only, but had acknowledged up to \(cursor) (a failover lost its last commits): sending \(resend) again from the local store\(gap)"
            do { try store.rewindOutboxCursor(name, table, to: mark) } catch {
                throw OutboxFailure(kind: "store", message: "the local store: \(error)")
            }
            let e = Event(
                time: Millis.now(), gateway: gateway, uid: nil, kind: .error,
                name: gap.isEmpty ? "central-rewound" : "central-gap", severity: gap.isEmpty ? .warning : .critical,
                detail: "output \(name): \(message)")
            var b = Batch()
            b.events.append(e)
            _ = try? store.write(b)
            if gap.isEmpty { logger.warning("\(message)") } else { logger.error("\(message)") }
        }
        return out
    }
}
