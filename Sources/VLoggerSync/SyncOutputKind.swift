import Logging
import VLoggerConfig
import VLoggerOutbox

/// `[sync]`: the fleet sync as an output kind (the configuration reads its section through this; the executable
/// registers it in LinkedOutputs).
public struct SyncOutputKind: OutputKind {
    public init() {}
    public var section: OutputSection { .table("sync") }
    public var keys: [String] { SyncSettings.keys }
    public var summary: String {
        "fleet sync: the store's rows into a central PostgreSQL, keyed so a resend is harmless"
    }
    public var sample: String {
        """
        [sync]                                # fleet sync into a central PostgreSQL (docs/fleet.md)
        url = "postgresql://vlogger@db.example.com:5432/fleet"   # EDIT: no password here
        # a cluster: "postgresql://vlogger@db1:5432,db2:5432,db3:5432/fleet" (the writable node is used), or
        # HAProxy's read-write port, or PgBouncer in front of it (docs/integrating.md, "A fleet on a cluster")
        # password-file = "/etc/vlogger/sync-password"            # or password-env = "VLOGGER_SYNC_PASSWORD"
        sslmode = "verify-full"               # disable | require | verify-full
        # ca-file = "/etc/vlogger/fleet-ca.pem"
        # batch-size = 5000
        # interval = "10s"
        # safety-window = "24h"               # rows stay this long after the central has them (a failover's resend)
        # answer-timeout = "5m"               # a statement unanswered this long: the connection is closed, the round retried

        """
    }

    public func read(_ section: Section, index: Int, _ reader: ConfigReader, _ context: OutputReadContext)
        -> (any OutputSettings)?
    {
        SyncSettings.read(section, reader, resolve: context.resolve)
    }
}

extension SyncSettings: OutputSettings {
    /// The fleet sync's cursors and metrics are `postgres`'s (and `sync`, its name before outputs).
    public var name: String { "postgres" }

    public var files: [OutputFile] {
        [
            passwordFile.map { OutputFile(what: "sync.password-file", path: $0) },
            caFile.map { OutputFile(what: "sync.ca-file", path: $0, secret: false) },
        ].compactMap { $0 }
    }

    public var remotes: [Remote] { endpoints.map { Remote(what: "fleet sync", host: $0.host, port: $0.port) } }

    public func warnings(file: String) -> [String] {
        guard sslMode == .disable,
            let far = endpoints.first(where: { !ListenAddress(host: $0.host, port: $0.port).isLoopback })
        else { return [] }
        return [
            "\(file): sync.sslmode = \"disable\" to \(far.host), which is not this machine: the password and every row cross the network in clear; use verify-full with ca-file"
        ]
    }

    public func makeOutput(_ context: OutputContext) throws -> Output {
        Output(
            consumer: try Syncer(
                settings: self, store: try context.requireStore("the fleet sync"), gateway: context.gatewayID,
                site: context.site, logger: context.logger),
            intervalMs: intervalMs,
            signature: "\(self) \(context.gatewayID) \(context.site ?? "") \(Output.stamp(passwordFile))")
    }
}

extension Collection where Element == any OutputSettings {
    /// The fleet sync among a configuration's outputs (nil: none configured).
    public var sync: SyncSettings? { lazy.compactMap { $0 as? SyncSettings }.first }
}

extension SyncSettings {
    /// `vlogger doctor`'s check of the central: a connection to the writable host (its answer names which), the
    /// schema, and how the connection is pooled (`Syncer.poolingMode`). Nothing is written.
    public func doctorProbe(_ context: OutputContext) async -> OutputProbe? {
        var logger = Logger(label: "vlogger.doctor")
        logger.logLevel = .critical
        let password: String?
        do { password = try self.password() } catch {
            return OutputProbe(
                check: "central postgres", destination: url,
                failure: OutboxFailure(kind: "configuration", message: "\(error)"),
                advice: "check password-file or password-env")
        }
        do {
            let (settings, logger) = (self, logger)
            let detail = try await Syncer.bounded(self, "the doctor's check") {
                try await Syncer.withConnection(settings, password: password, logger: logger) { conn in
                    try await Syncer.requireSchema(conn, logger)
                    var server = ""
                    for try await (addr, port, recovery) in try await conn.query(
                        "SELECT coalesce(host(inet_server_addr()), 'socket'), coalesce(inet_server_port(), 0), pg_is_in_recovery()",
                        logger: logger
                    ).decode((String, Int32, Bool).self) {
                        server = "the server at \(addr):\(port)"
                        if recovery {
                            throw SyncError(
                                .readOnly,
                                "\(server) is a replica (in recovery): it takes no rows; name the cluster's nodes (the writable one is found) or HAProxy's read-write port"
                            )
                        }
                    }
                    return server
                }
            }
            let pooling = try await Syncer.bounded(self, "the pooling check") {
                try await Syncer.poolingMode(settings, password: password, logger: logger)
            }
            return OutputProbe(
                check: "central postgres", destination: url, failure: nil,
                detail: "\(detail) takes writes and has the schema; \(pooling)")
        } catch {
            let e = SyncError.from(error, url: url)
            return OutputProbe(
                check: "central postgres", destination: url,
                failure: OutboxFailure(kind: e.kind.rawValue, message: e.message),
                advice: e.kind == .schema
                    ? "create or migrate the schema: `vlogger sync --init-schema`"
                    : e.kind == .authentication
                        ? "check the user and password-file (or password-env)"
                        : "check that the server (or HAProxy, PgBouncer) runs and listens there")
        }
    }
}
