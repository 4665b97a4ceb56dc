import Foundation
import VLoggerConfig
import VLoggerModel

/// `[sync]`: where this gateway ships its store (PostgreSQL), how, and with which credentials. The password
/// never comes from the URL: a file (`password-file`) or an environment variable (`password-env`), so it is
/// in no configuration dump, log line, `/healthz` or error message.
public struct SyncSettings: Equatable, Sendable {
    public enum SSLMode: String, Sendable, CaseIterable {
        /// No TLS.
        case disable
        /// TLS, without checking the server's certificate (libpq's `require`).
        case require
        /// TLS, the certificate checked against `ca-file` (or the system's CAs) and the host name (libpq's `verify-full`).
        case verifyFull = "verify-full"
    }

    /// Which of several hosts a connection goes to (libpq's `target_session_attrs`).
    public enum TargetSession: String, Sendable, CaseIterable {
        /// The first host that takes the connection.
        case any
        /// The first host whose sessions may write (`SHOW transaction_read_only` is off): a cluster's leader.
        case readWrite = "read-write"
    }

    /// One host of the URL, with its port.
    public struct Endpoint: Equatable, Sendable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        public var description: String { HostPort.text(host, port) }
    }

    /// The hosts, in the URL's order (libpq's multi-host form `host1:port1,host2:port2`): a cluster's nodes.
    public var endpoints: [Endpoint]
    /// The first host (the only one, for most gateways).
    public var host: String {
        get { endpoints[0].host }
        set { endpoints[0].host = newValue }
    }
    public var port: Int {
        get { endpoints[0].port }
        set { endpoints[0].port = newValue }
    }
    public var user: String
    public var database: String
    public var sslMode: SSLMode = .verifyFull
    /// Nil: `read-write` where the URL names several hosts (the sync only writes: a replica is no use to it), `any`
    /// for one host (its refusal to write is then the server's own error).
    public var targetSession: TargetSession?
    public var effectiveTargetSession: TargetSession { targetSession ?? (endpoints.count > 1 ? .readWrite : .any) }
    public var caFile: String?
    public var passwordFile: String?
    public var passwordEnv: String?
    /// Rows per batch (one server transaction).
    public var batchSize = 5000
    /// Time between two sync rounds of the service's sync job.
    public var intervalMs: Millis = 10_000
    /// How long rows stay in the local store after the central acknowledged them (`safety-window`, default 24 h):
    /// a central cluster that fails over with asynchronous replication can lose commits it had acknowledged, and
    /// the gateway sends them again from what it still holds (0: no window).
    public var safetyWindowMs: Millis = 86_400_000
    /// How long the gateway waits for the central's answer to one step of a round (a batch's statement and its
    /// commit, the schema check, the mark; `answer-timeout`, default 5 min). A central that stops answering without
    /// closing the connection (a commit waiting for a synchronous standby that is gone, a link that drops packets
    /// without a reset) would otherwise hold the sync for good: past the limit the connection is closed, the round
    /// fails with the kind `timeout`, and the next round starts afresh (rows are keyed: a batch the server did
    /// commit is not stored twice). Connecting (TCP, TLS, authentication, the read-write check) is bounded by 30 s or
    /// this, if shorter (besides PostgresNIO's own 5 s connect timeout).
    public var answerTimeoutMs: Millis = 300_000
    /// The limit on setting up a connection: 30 s, or `answerTimeoutMs` when shorter.
    public var connectLimitMs: Millis { min(30_000, answerTimeoutMs) }
    /// `postgresql://user@host:port/db`, without the password: safe to print.
    public var url: String {
        "postgresql://\(user)@\(endpoints.map(\.description).joined(separator: ","))/\(database)"
    }

    public init(host: String, port: Int = 5432, user: String, database: String) {
        self.endpoints = [Endpoint(host: host, port: port)]
        self.user = user
        self.database = database
    }

    /// Parses libpq's URI form `postgresql://user@host:port/db[?sslmode=…]` (also `postgres://`). A password in
    /// the URI is refused, with where to put it instead.
    public init(url text: String) throws(VLoggerError) {
        guard let scheme = text.range(of: "://"),
            ["postgresql", "postgres"].contains(String(text[..<scheme.lowerBound]))
        else {
            // The text is not repeated: a malformed URL (postgresql:/gw:secret@…, the libpq keyword form
            // "host=… password=…") may well hold a password.
            throw VLoggerError(
                "sync.url is not a postgresql://user@host:port/database URI (the value is not shown here: it may hold a password; the password goes in password-file or password-env)"
            )
        }
        var rest = Substring(text[scheme.upperBound...])
        var query: Substring = ""
        if let q = rest.firstIndex(of: "?") { query = rest[rest.index(after: q)...]; rest = rest[..<q] }
        guard let at = rest.lastIndex(of: "@") else {
            throw VLoggerError("sync.url: name the user (postgresql://USER@host:port/database)")
        }
        let userInfo = rest[..<at]
        if userInfo.contains(":") {
            throw VLoggerError(
                "sync.url: a password does not go in the URL (it would show wherever the URL does); put it in password-file or password-env"
            )
        }
        guard !userInfo.isEmpty else { throw VLoggerError("sync.url: the user is empty") }
        var hostPart = rest[rest.index(after: at)...]
        guard let slash = hostPart.firstIndex(of: "/") else {
            throw VLoggerError("sync.url: name the database (…/DATABASE)")
        }
        let db = hostPart[hostPart.index(after: slash)...]
        hostPart = hostPart[..<slash]
        // libpq's multi-host form: host:port pairs separated by commas (a cluster's nodes, tried in turn).
        var endpoints: [Endpoint] = []
        for one in hostPart.split(separator: ",", omittingEmptySubsequences: false) {
            endpoints.append(try Self.endpoint(one))
        }
        guard endpoints.count <= 16 else { throw VLoggerError("sync.url: at most 16 hosts") }
        guard !db.isEmpty, !db.contains("/") else {
            throw VLoggerError("sync.url: the database name '\(db)' is empty or has a '/'")
        }
        let user = String(userInfo).removingPercentEncoding ?? String(userInfo)
        if user.contains(":") {
            throw VLoggerError(
                "sync.url: the user name decodes to one with a ':' (a password written as %3A?); a password does not go in the URL: put it in password-file or password-env"
            )
        }
        self.init(
            host: endpoints[0].host, port: endpoints[0].port, user: user,
            database: String(db).removingPercentEncoding ?? String(db))
        self.endpoints = endpoints
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { throw VLoggerError("sync.url: '\(pair)' in the query is not key=value") }
            switch kv[0] {
            case "sslmode":
                guard let m = SSLMode(rawValue: kv[1]) else {
                    throw VLoggerError("sync.url: sslmode '\(kv[1])': expected disable, require or verify-full")
                }
                sslMode = m
            case "sslrootcert": caFile = kv[1]
            case "target_session_attrs":
                guard let t = TargetSession(rawValue: kv[1]) else {
                    throw VLoggerError(
                        "sync.url: target_session_attrs '\(kv[1])': expected read-write or any (the sync only writes)")
                }
                targetSession = t
            default:
                throw VLoggerError(
                    "sync.url: '\(kv[0])' is not a setting vlogger takes (sslmode, sslrootcert, target_session_attrs)")
            }
        }
    }

    /// One `host[:port]` of the URL (an IPv6 address in brackets).
    static func endpoint(_ text: Substring) throws(VLoggerError) -> Endpoint {
        let (host, port) = try HostPort.parse(text, defaultPort: 5432, what: "sync.url")
        return Endpoint(host: host, port: port)
    }

    /// The password: from `password-file` (first line, whitespace trimmed) or the `password-env` variable; nil when
    /// neither is set (trust or peer authentication). Errors name the file or variable, never the password.
    public func password(environment: [String: String] = ProcessInfo.processInfo.environment) throws(VLoggerError)
        -> String?
    {
        try Secret.read(file: passwordFile, env: passwordEnv, label: "sync", environment: environment)
    }

    /// The password, read again whenever its file changes (each connection takes the current one).
    public func rotatingPassword(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(VLoggerError) -> RotatingSecret
    {
        try RotatingSecret(file: passwordFile, env: passwordEnv, label: "sync", environment: environment)
    }

    /// The URI with any password replaced, for error messages about a URI that did not parse.
    static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].lastIndex(of: "@") else {
            return text
        }
        let user = text[scheme.upperBound..<at]
        guard let colon = user.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    static let keys = [
        "url", "password-file", "password-env", "sslmode", "ca-file", "batch-size", "interval", "safety-window",
        "answer-timeout",
    ]

    static func read(_ s: Section, _ r: ConfigReader, resolve: (String) -> String) -> SyncSettings? {
        guard let text = s.string("url") else {
            r.issue(s.line, "sync: url is missing (postgresql://user@host:port/database)")
            return nil
        }
        var out: SyncSettings
        do { out = try SyncSettings(url: text) } catch {
            r.issue(s.node("url")?.line ?? s.line, "\(error)")
            return nil
        }
        if let m = s.string("sslmode") {
            if let mode = SSLMode(rawValue: m) {
                out.sslMode = mode
            } else {
                r.issue(
                    s.node("sslmode")?.line ?? s.line, "sync.sslmode: '\(m)': expected disable, require or verify-full")
            }
        }
        out.caFile = s.string("ca-file").map(resolve) ?? out.caFile
        out.passwordFile = s.string("password-file").map(resolve)
        out.passwordEnv = s.string("password-env")
        if out.passwordFile != nil && out.passwordEnv != nil {
            r.issue(s.line, "sync: give password-file or password-env, not both")
        }
        out.batchSize = s.integer("batch-size", in: 1...50_000).map(Int.init) ?? out.batchSize
        // An output's rounds: at least 100 ms apart (0 would spin a core), at most a day.
        out.intervalMs =
            s.duration(
                "interval", in: 100...86_400_000, "100ms…24h (how long a round waits when nothing new was committed)")
            ?? out.intervalMs
        out.safetyWindowMs =
            s.duration(
                "safety-window", in: 0...2_592_000_000,
                "0…30d (how long rows stay in the local store after the central has them, for a failover's resend)")
            ?? out.safetyWindowMs
        out.answerTimeoutMs =
            s.duration(
                "answer-timeout", in: 1000...3_600_000,
                "1s…1h (how long a round waits for the central's answer to one step (a batch and its commit) before it closes the connection and tries again)"
            )
            ?? out.answerTimeoutMs
        return out
    }
}
