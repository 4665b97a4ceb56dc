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
        # password-file = "/etc/vlogger/sync-password"            # or password-env = "VLOGGER_SYNC_PASSWORD"
        sslmode = "verify-full"               # disable | require | verify-full
        # ca-file = "/etc/vlogger/fleet-ca.pem"
        # batch-size = 5000
        # interval = "10s"

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

    public var remotes: [Remote] { [Remote(what: "fleet sync", host: host, port: port)] }

    public func warnings(file: String) -> [String] {
        guard sslMode == .disable, !ListenAddress(host: host, port: port).isLoopback else { return [] }
        return [
            "\(file): sync.sslmode = \"disable\" to \(host), which is not this machine: the password and every row cross the network in clear; use verify-full with ca-file"
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
