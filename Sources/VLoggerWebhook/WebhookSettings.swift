import Foundation
import VLoggerConfig
import VLoggerModel
import VLoggerStore

/// `[[output.webhook]]`: an HTTP(S) endpoint that takes chosen events as POSTed JSON (several allowed). Delivery
/// is a consumer of the store's outbox: a 2xx answer acknowledges a row; a time-out, a refused connection, 408, 429
/// or a 5xx is retried with the outputs' back-off; any other 4xx is final for that row (recorded as an event,
/// logged, not sent again).
public struct WebhookSettings: Equatable, Sendable {
    public var name = "webhook"
    public var url: String
    /// Event kinds (the kinds of docs/json.md), `audit` (an audit finished) and `write` (a
    /// write made, queued or direct).
    public var events: [String] = ["violation"]
    /// The HMAC-SHA256 key (first line of the file): the signature header is made with it.
    public var secretFile: String?
    /// For an https:// endpoint with a certificate of a private CA.
    public var caFile: String?
    public var timeoutMs: Millis = 10_000
    public var batchSize = 100
    public var intervalMs: Millis = 2000

    public init(url: String) { self.url = url }

    /// The event kinds asked for (the `events` that are not `audit` or `write`).
    public var eventKinds: [String] { events.filter { $0 != "audit" && $0 != "write" } }

    /// The tables its rows come from.
    public var tables: [SyncTable] {
        var t: [SyncTable] = []
        if !eventKinds.isEmpty { t.append(.events) }
        if events.contains("write") { t.append(.writes) }
        if events.contains("audit") { t.append(.audits) }
        return SyncTable.allCases.filter(t.contains)
    }

    /// The secret (nil without a secret-file). Errors name the file, never the secret.
    public func secret() throws(VLoggerError) -> String? {
        try Secret.read(file: secretFile, env: nil, label: "output.webhook \(name)", environment: [:])
    }

    /// The secret, read again whenever its file changes (a rotation takes effect with the next delivery).
    public func rotatingSecret() throws(VLoggerError) -> RotatingSecret {
        try RotatingSecret(file: secretFile, env: nil, label: "output.webhook \(name)", environment: [:])
    }

    static let keys = ["name", "url", "events", "secret-file", "ca-file", "timeout", "batch-size", "interval"]
    static let eventNames = Event.Kind.allCases.map(\.rawValue) + ["audit", "write"]

    static func read(_ s: Section, index: Int, _ r: ConfigReader, resolve: (String) -> String) -> WebhookSettings? {
        guard let url = s.string("url") else {
            r.issue(s.line, "output.webhook: url is missing (https://HOST/PATH)")
            return nil
        }
        guard let u = URL(string: url), let scheme = u.scheme, ["http", "https"].contains(scheme),
            let host = u.host, !host.isEmpty
        else {
            // Not repeated: a malformed URL may hold a token.
            r.issue(
                s.node("url")?.line ?? s.line,
                "output.webhook.url is not an http:// or https:// URL (the value is not shown here: it may hold a token)"
            )
            return nil
        }
        if u.user != nil || u.password != nil {
            r.issue(
                s.node("url")?.line ?? s.line,
                "output.webhook.url: credentials do not go in the URL (they would show wherever it does); the body is signed with secret-file"
            )
            return nil
        }
        var out = WebhookSettings(url: url)
        out.name = index == 0 ? "webhook" : "webhook-\(index + 1)"
        if let n = s.string("name") {
            if !OutputName.isValid(n) {
                r.issue(s.node("name")?.line ?? s.line, "output.webhook.name: 1 to 40 letters, digits, '-' or '_'")
            } else {
                out.name = n
            }
        }
        if let e = s.strings("events") {
            let unknown = e.filter { !eventNames.contains($0) }
            if !unknown.isEmpty || e.isEmpty {
                r.issue(
                    s.node("events")?.line ?? s.line,
                    "output.webhook.events: \(unknown.isEmpty ? "empty" : "'\(unknown[0])' is not one of") \(eventNames.joined(separator: ", "))"
                )
            } else {
                out.events = e
            }
        }
        out.secretFile = s.string("secret-file").map(resolve)
        out.caFile = s.string("ca-file").map(resolve)
        if out.caFile != nil && u.scheme != "https" {
            r.issue(s.line, "output.webhook: ca-file needs an https:// url")
        }
        if let t = s.duration("timeout") {
            if (100...300_000).contains(t) {
                out.timeoutMs = t
            } else {
                r.issue(s.node("timeout")?.line ?? s.line, "output.webhook.timeout: 100ms…5m")
            }
        }
        if let b = s.integer("batch-size", in: 1...1000) { out.batchSize = Int(b) }
        // An output's rounds: at least 100 ms apart (0 would spin a core), at most a day.
        out.intervalMs =
            s.duration(
                "interval", in: 100...86_400_000, "100ms…24h (how long a round waits when nothing new was committed)")
            ?? out.intervalMs
        return out
    }
}
