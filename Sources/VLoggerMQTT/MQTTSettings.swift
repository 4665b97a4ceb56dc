import Foundation
import VLoggerConfig
import VLoggerModel
import VLoggerStore

/// `[[output.mqtt]]`: one MQTT broker the gateway publishes its rows to (several allowed). Delivery is a
/// consumer of the store's outbox: a row counts as delivered when the broker has acknowledged it (PUBACK at
/// QoS 1), and only then does the output's cursor move.
public struct MQTTSettings: Equatable, Sendable {
    public enum ProtocolVersion: String, Sendable, CaseIterable {
        case v311 = "3.1.1"
        case v5 = "5"
    }
    /// One message per row, or one JSON array per batch.
    public enum Messages: String, Sendable, CaseIterable { case row, batch }

    /// The output's name: its cursors and metrics carry it (`mqtt` for the first, `mqtt-2`, … unless named).
    public var name = "mqtt"
    public var host: String
    public var port: Int
    public var tls: Bool
    public var qos = 1
    /// The topic template: `{gateway}`, `{reader}`, `{location}`, `{uid}`, `{asset}`, `{kind}`.
    public var topic = "vlogger/{gateway}/{reader}/{kind}"
    /// What to publish: readings, events, writes, audits (audits bring their results).
    public var publish: [SyncTable] = [.readings, .events]
    /// Only rows of these readers (nil: all).
    public var readers: [String]?
    /// Only events of these kinds (nil: all).
    public var eventKinds: [String]?
    public var messages = Messages.row
    public var username: String?
    public var passwordFile: String?
    public var passwordEnv: String?
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public var clientID: String?
    public var keepAliveSeconds = 30
    public var cleanSession = true
    public var protocolVersion = ProtocolVersion.v311
    /// Rows per outbox batch (the broker acknowledges every message of a batch before the cursor moves).
    public var batchSize = 500
    /// Time between two rounds when there is nothing to send.
    public var intervalMs: Millis = 1000
    /// At most this many rows per second while a backlog is replayed (`replay-rate`; nil: no bound, `0` in the
    /// file). The default leaves a two-core gateway's polling and the broker's other clients their share: the
    /// benchmark here reached about 36,000 messages per second with no bound.
    public var replayRate: Int? = 10_000
    /// Home Assistant MQTT discovery: a tag scanner per reader (fed by arrivals), a sensor per tag and numeric
    /// field, on the gateway's device (docs/integrating.md, "Home Assistant").
    public var homeAssistant = false
    /// A retained message per tag with its latest values, their units and its alarms (`tag-state`,
    /// `vlogger/{gateway}/tag/{uid}`), after each batch that changed it.
    public var tagState = true
    /// Sparkplug B 3.0 instead of plain JSON: the gateway an edge node, each tag a device.
    public var sparkplug: Sparkplug?
    /// `nats-topics`: topics a NATS 2.9 broker takes: `.` and space in a value become `_`, and the template may have
    /// neither (NATS's MQTT listener closes the connection on them; docs/reference/fleet-engines.md §5).
    public var natsTopics = false

    /// `sparkplug = true` and its keys (docs/integrating.md, "Sparkplug B").
    public struct Sparkplug: Equatable, Sendable {
        /// The group id (topic level 2).
        public var group = "vlogger"
        /// The edge node id (topic level 4); nil: the gateway's id.
        public var edgeNode: String?
        /// A primary host application's id: births wait for its `spBv1.0/STATE/<id>` to say online, and the
        /// node dies and starts over when it says offline (rows stay in the store meanwhile).
        public var primaryHost: String?
        /// A STATE whose timestamp is more than this ahead of the gateway's clock is ignored (a forged or broken
        /// one would otherwise make every later, true one look older).
        public var stateSkewMs: Millis = 300_000
        /// At most one rebirth (NBIRTH and its DBIRTHs) per this interval, however many NCMD ask for one.
        public var rebirthIntervalMs: Millis = 5_000
        public init() {}
    }

    public init(host: String, port: Int, tls: Bool) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// `mqtt://host:port` or `mqtts://host:port`, safe to print (never has a password).
    public var url: String { "\(tls ? "mqtts" : "mqtt")://" + HostPort.text(host, port) }

    /// Parses `mqtt://HOST[:PORT]` (1883 by default) or `mqtts://HOST[:PORT]` (8883). A user or password in the
    /// URL is refused, with where to put them instead.
    public init(url text: String) throws(VLoggerError) {
        guard let scheme = text.range(of: "://"), ["mqtt", "mqtts"].contains(String(text[..<scheme.lowerBound]))
        else {
            throw VLoggerError(
                "output.mqtt.url is not mqtt://HOST:PORT or mqtts://HOST:PORT (the value is not shown here: it may hold a password)"
            )
        }
        let tls = text[..<scheme.lowerBound] == "mqtts"
        var rest = Substring(text[scheme.upperBound...])
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.contains("@") {
            throw VLoggerError(
                "output.mqtt.url: a user or password does not go in the URL (it would show wherever the URL does); use username and password-file or password-env"
            )
        }
        guard !rest.contains("/"), !rest.contains("?") else {
            throw VLoggerError("output.mqtt.url: only mqtt://HOST:PORT, no path or query (the topic is `topic`)")
        }
        let (host, port) = try HostPort.parse(rest, defaultPort: tls ? 8883 : 1883, what: "output.mqtt.url")
        self.init(host: host, port: port, tls: tls)
    }

    /// The password (from password-file, first line, or password-env); nil without either. Errors name the
    /// file or variable, never the password.
    public func password(environment: [String: String] = ProcessInfo.processInfo.environment) throws(VLoggerError)
        -> String?
    {
        try Secret.read(file: passwordFile, env: passwordEnv, label: "output.mqtt \(name)", environment: environment)
    }

    /// The password, read again whenever its file changes (used at each new connection).
    public func rotatingPassword(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(VLoggerError) -> RotatingSecret
    {
        try RotatingSecret(file: passwordFile, env: passwordEnv, label: "output.mqtt \(name)", environment: environment)
    }

    static let keys = [
        "name", "url", "qos", "topic", "publish", "readers", "event-kinds", "messages", "username", "password-file",
        "password-env", "ca-file", "cert-file", "key-file", "client-id", "keep-alive", "clean-session", "protocol",
        "batch-size", "interval", "replay-rate", "home-assistant", "tag-state", "sparkplug", "sparkplug-group",
        "sparkplug-edge-node",
        "sparkplug-primary-host", "sparkplug-state-skew", "sparkplug-rebirth-interval", "nats-topics",
    ]

    /// The tables `publish` names: readings, events, writes, audits (with their results).
    static let publishable: [String: [SyncTable]] = [
        "readings": [.readings], "events": [.events], "writes": [.writes], "audits": [.audits, .auditResults],
    ]

    static func read(_ s: Section, index: Int, _ r: ConfigReader, resolve: (String) -> String) -> MQTTSettings? {
        guard let text = s.string("url") else {
            r.issue(s.line, "output.mqtt: url is missing (mqtt://HOST:PORT or mqtts://HOST:PORT)")
            return nil
        }
        var out: MQTTSettings
        do { out = try MQTTSettings(url: text) } catch {
            r.issue(s.node("url")?.line ?? s.line, "\(error)")
            return nil
        }
        out.name = index == 0 ? "mqtt" : "mqtt-\(index + 1)"
        if let n = s.string("name") {
            if !OutputName.isValid(n) {
                r.issue(s.node("name")?.line ?? s.line, "output.mqtt.name: 1 to 40 letters, digits, '-' or '_'")
            } else {
                out.name = n
            }
        }
        if let q = s.integer("qos", in: 0...1) { out.qos = Int(q) }
        if let t = s.string("topic") {
            if let problem = Self.topicProblem(t) {
                r.issue(s.node("topic")?.line ?? s.line, "output.mqtt.topic: \(problem)")
            } else {
                out.topic = t
            }
        }
        if let p = s.strings("publish") {
            var tables: [SyncTable] = []
            for name in p {
                guard let t = publishable[name] else {
                    r.issue(
                        s.node("publish")?.line ?? s.line,
                        "output.mqtt.publish: '\(name)' is not one of readings, events, writes, audits")
                    continue
                }
                for x in t where !tables.contains(x) { tables.append(x) }
            }
            // In the outbox's order (audits before their results).
            out.publish = SyncTable.allCases.filter(tables.contains)
        }
        out.readers = s.strings("readers")
        out.eventKinds = s.strings("event-kinds")
        out.messages = s.choice("messages", Messages.self) ?? out.messages
        out.username = s.string("username")
        out.passwordFile = s.string("password-file").map(resolve)
        out.passwordEnv = s.string("password-env")
        if out.passwordFile != nil && out.passwordEnv != nil {
            r.issue(s.line, "output.mqtt: give password-file or password-env, not both")
        }
        if (out.passwordFile != nil || out.passwordEnv != nil) && out.username == nil {
            r.issue(s.line, "output.mqtt: a password needs a username")
        }
        out.caFile = s.string("ca-file").map(resolve)
        out.certFile = s.string("cert-file").map(resolve)
        out.keyFile = s.string("key-file").map(resolve)
        if (out.certFile == nil) != (out.keyFile == nil) {
            r.issue(s.line, "output.mqtt: cert-file and key-file go together")
        }
        if !out.tls && (out.caFile != nil || out.certFile != nil) {
            r.issue(s.line, "output.mqtt: ca-file, cert-file and key-file need an mqtts:// url")
        }
        if let id = s.string("client-id") {
            if id.isEmpty || id.utf8.count > 65535 {
                r.issue(s.node("client-id")?.line ?? s.line, "output.mqtt.client-id: empty or too long")
            } else {
                out.clientID = id
            }
        }
        if let k = s.integer("keep-alive", in: 5...3600) { out.keepAliveSeconds = Int(k) }
        if let c = s.bool("clean-session") { out.cleanSession = c }
        out.protocolVersion = s.choice("protocol", ProtocolVersion.self) ?? out.protocolVersion
        if let b = s.integer("batch-size", in: 1...5000) { out.batchSize = Int(b) }
        // An output's rounds: at least 100 ms apart (0 would spin a core), at most a day.
        out.intervalMs =
            s.duration(
                "interval", in: 100...86_400_000, "100ms…24h (how long a round waits when nothing new was committed)")
            ?? out.intervalMs
        if let r = s.integer("replay-rate", in: 0...10_000_000) { out.replayRate = r == 0 ? nil : Int(r) }
        if let n = s.bool("nats-topics") { out.natsTopics = n }
        if out.natsTopics, out.topic.contains(".") || out.topic.contains(" ") {
            r.issue(
                s.node("topic")?.line ?? s.line,
                "output.mqtt.topic: '.' or a space in the topic; with nats-topics = true the broker is NATS, whose MQTT listener (2.9) closes the connection on them"
            )
        }
        if let h = s.bool("home-assistant") { out.homeAssistant = h }
        if let t = s.bool("tag-state") { out.tagState = t }
        if out.homeAssistant && !out.tagState {
            r.issue(
                s.node("tag-state")?.line ?? s.line,
                "output.mqtt.home-assistant needs tag-state (its sensors read the tags' retained state)")
        }
        readSparkplug(s, r, into: &out)
        if out.natsTopics, out.sparkplug != nil {
            r.issue(
                s.node("nats-topics")?.line ?? s.line,
                "output.mqtt.nats-topics: Sparkplug's topics start with spBv1.0, whose '.' NATS 2.9's MQTT listener refuses"
            )
        }
        return out
    }

    /// The Sparkplug keys: ids are checked as topic levels (Sparkplug 3.0: UTF-8, no `/`, `+` or `#`), and the
    /// keys that shape plain JSON messages are refused with `sparkplug = true` (its topics, QoS and payloads are
    /// the specification's).
    static func readSparkplug(_ s: Section, _ r: ConfigReader, into out: inout MQTTSettings) {
        let keys = [
            "sparkplug-group", "sparkplug-edge-node", "sparkplug-primary-host", "sparkplug-state-skew",
            "sparkplug-rebirth-interval",
        ]
        guard s.bool("sparkplug") == true else {
            for k in keys where s.node(k) != nil {
                r.issue(s.node(k)?.line ?? s.line, "output.mqtt.\(k) needs sparkplug = true")
            }
            return
        }
        var sp = Sparkplug()
        func id(_ key: String) -> String? {
            guard let v = s.string(key) else { return nil }
            if let problem = sparkplugIDProblem(v) {
                r.issue(s.node(key)?.line ?? s.line, "output.mqtt.\(key): \(problem)")
                return nil
            }
            return v
        }
        sp.group = id("sparkplug-group") ?? sp.group
        sp.edgeNode = id("sparkplug-edge-node")
        sp.primaryHost = id("sparkplug-primary-host")
        sp.stateSkewMs =
            s.duration("sparkplug-state-skew", in: 1000...86_400_000, "1s…24h (how far ahead a STATE may be)")
            ?? sp.stateSkewMs
        sp.rebirthIntervalMs =
            s.duration("sparkplug-rebirth-interval", in: 0...3_600_000, "0s…1h (the least time between two rebirths)")
            ?? sp.rebirthIntervalMs
        for k in ["topic", "messages", "home-assistant", "tag-state", "qos"] where s.node(k) != nil {
            r.issue(
                s.node(k)?.line ?? s.line,
                "output.mqtt.\(k) does not go with sparkplug = true (Sparkplug B sets the topics, the QoS and the payloads)"
            )
        }
        for t in out.publish where t != .readings && t != .events {
            r.issue(
                s.node("publish")?.line ?? s.line,
                "output.mqtt.publish: with sparkplug = true, readings and events only ('\(t.kind)' is not a metric)")
        }
        out.publish = out.publish.filter { $0 == .readings || $0 == .events }
        out.qos = 0
        out.sparkplug = sp
    }

    /// Why a Sparkplug group, edge node, device or host id cannot be one (Sparkplug 3.0, chapter Topics: a
    /// valid UTF-8 string without the MQTT separators and wildcards `/`, `+`, `#`).
    public static func sparkplugIDProblem(_ id: String) -> String? {
        if id.isEmpty { return "empty" }
        if id.contains("/") || id.contains("+") || id.contains("#") { return "'/', '+' and '#' are not allowed" }
        if id.unicodeScalars.contains(where: { $0.value < 0x20 }) { return "holds a control character" }
        if id.utf8.count > 256 { return "longer than 256 bytes" }
        return nil
    }

    /// Why a topic template cannot be published to (MQTT 3.1.1 §4.7: no wildcards in a topic name; not empty).
    public static func topicProblem(_ t: String) -> String? {
        if t.isEmpty { return "empty" }
        if t.contains("#") || t.contains("+") {
            return "'+' and '#' are wildcards, not allowed in a topic to publish to"
        }
        if t.utf8.count > 1024 { return "longer than 1024 bytes" }
        if t.unicodeScalars.contains(where: { $0.value == 0 }) { return "holds a NUL character" }
        var rest = Substring(t)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { return "unclosed {" }
            let name = rest[rest.index(after: open)..<close]
            if !["gateway", "reader", "location", "uid", "asset", "kind"].contains(name) {
                return "{\(name)} is not a placeholder (gateway, reader, location, uid, asset, kind)"
            }
            rest = rest[rest.index(after: close)...]
        }
        return nil
    }
}
