import Foundation
import Logging
import VLoggerConfig
import VLoggerOutbox
import VLoggerModel
import VLoggerStore

/// An MQTT broker as an output: a consumer of the store's outbox that publishes each row (or each batch) as JSON
/// and returns from a batch only when the broker has acknowledged every message of it (PUBACK at QoS 1), so
/// the output's cursor moves only over rows the broker has. A broker that is down leaves the backlog in the store
/// (retention keeps it), and the next round after it is back sends it in order. At least once: a batch resent
/// after a failure or a crash carries the same `key`s, for a subscriber to de-duplicate on.
///
/// The connection stays open between rounds; its retained status topic `vlogger/{gateway}/status` says
/// `online` once connected and `offline` when the gateway leaves (or, as the Will, when the broker loses it).
public final class MQTTOutput: OutboxConsumer, @unchecked Sendable {
    public let settings: MQTTSettings
    public let gateway: String
    let client: MQTTClient
    let logger: Logger
    /// Fields whose values are JSON (the NDEF records): nested in the message, not a string of JSON.
    let jsonFields: Set<String>
    /// Home Assistant discovery: the readers (id, location) to announce a tag scanner for.
    let readers: [(id: String, location: String?)]
    /// Where a row that can never be published (a topic libmosquitto refuses) is recorded as an event; nil: logged.
    let store: Store?
    /// Each tag's state (`tag-state`), and the sensors announced to Home Assistant (by tag and field).
    private var tagStates: TagStates
    private var announced = Set<String>()
    private let stateLock = NSLock()

    public var name: String { settings.name }
    public var title: String { "MQTT to \(URLRedaction.redact(settings.url))" }
    public var tables: [SyncTable] { settings.publish }
    public var batchSize: Int { settings.batchSize }
    public var tablesIndependent: Bool { true }
    public var isConnected: Bool? { client.isConnected }
    public var replayRowsPerSecond: Int? { settings.replayRate }

    /// The retained status topic.
    public var statusTopic: String { "vlogger/\(Self.level(gateway, nats: settings.natsTopics))/status" }

    /// The retained announcement of which store publishes as this gateway (`vlogger/{gateway}/instance`), and the
    /// conflicts it noticed (nil: a probe, or no store).
    let watch: InstanceWatch?

    /// A probe (`vlogger outputs status`): a client id of its own (the service's connection is not taken over),
    /// no Will, no status or discovery messages: it connects and says nothing.
    let probe: Bool

    public init(
        settings: MQTTSettings, gateway: String, readers: [(id: String, location: String?)] = [],
        fields: [FieldInfo] = [], probe: Bool = false, store: Store? = nil,
        logger: Logger = Logger(label: "vlogger.mqtt")
    ) throws {
        self.probe = probe
        tagStates = TagStates(units: FieldInfo.units(fields))
        self.store = store
        self.settings = settings
        self.gateway = gateway
        self.logger = logger
        self.readers = readers
        jsonFields = TableDescription.jsonFields
        let rotating: RotatingSecret
        do { rotating = try settings.rotatingPassword() } catch {
            throw MQTTError(kind: .auth, message: "\(error)")
        }
        let status = "vlogger/\(Self.level(gateway, nats: settings.natsTopics))/status"
        client = try MQTTClient(
            .init(
                host: settings.host, port: settings.port,
                clientID: (settings.clientID ?? "vlogger-\(gateway)-\(settings.name)")
                    + (probe ? "-check-\(getpid())" : ""),
                cleanSession: settings.cleanSession, keepAliveSeconds: settings.keepAliveSeconds,
                protocolVersion: settings.protocolVersion == .v5 ? 5 : 4, username: settings.username,
                password: rotating.current, passwordSource: { rotating.current }, tls: settings.tls,
                caFile: settings.caFile, certFile: settings.certFile,
                keyFile: settings.keyFile, will: probe ? nil : .init(topic: status, payload: Array("offline".utf8)),
                inflight: max(20, settings.batchSize)))
        let clientID = (settings.clientID ?? "vlogger-\(gateway)-\(settings.name)")
        if !probe, let store, let instance = try? store.instance() {
            watch = InstanceWatch(instance: instance, host: HostName.current, clientID: clientID)
        } else {
            watch = nil
        }
        let discovery = settings.homeAssistant ? discoveryMessages() : []
        if probe { return }
        let instanceTopic = InstanceWatch.topic(Self.level(gateway, nats: settings.natsTopics))
        let (watch, logger, name) = (self.watch, self.logger, settings.name)
        client.onConnect = { c in
            _ = try? c.publishAside(topic: status, payload: Array("online".utf8), qos: 1, retain: true)
            for (topic, payload) in discovery {
                _ = try? c.publishAside(topic: topic, payload: payload, qos: 1, retain: true)
            }
            if let watch {
                try? c.subscribe(instanceTopic, qos: 1)
                watch.announce(on: c, topic: instanceTopic)
            }
        }
        client.onAsideRefused = { text in logger.warning("output \(name): \(text)") }
        if let watch {
            client.onMessage = { c, topic, payload, retained in
                guard topic == instanceTopic,
                    let other = watch.received(payload, retained: retained, now: Millis.now())
                else { return }
                logger.warning(
                    "\(InstanceWatch.describe(other, own: watch.own, gateway: gateway, output: name))")
                // Said again now, so that the other gateway notices too (once per conflict, at most a few).
                watch.announce(on: c, topic: instanceTopic)
            }
        }
    }

    public func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
        try await client.connect(within: .seconds(10))
        if let watch {
            let now = Millis.now()
            if watch.due(now: now) {
                watch.announce(on: client, topic: InstanceWatch.topic(Self.level(gateway, nats: settings.natsTopics)))
            }
            // Conflicts the network thread noticed become events here, on the output's own task (taken from the
            // list only once stored).
            let others = watch.pendingConflicts()
            try record(
                others.map { other in
                    Event(
                        time: now, gateway: gateway, uid: nil, kind: .error, name: "gateway-id-conflict",
                        severity: .critical,
                        detail: InstanceWatch.describe(other, own: watch.own, gateway: gateway, output: name))
                })
            watch.stored(others.count)
        }
        return try await body(Session(output: self))
    }

    public func describe(_ error: any Error) -> OutboxFailure { Self.failure(error) }

    /// A round's failure as an MQTT output tells it (the kind of an `MQTTError`, or `other`).
    static func failure(_ error: any Error) -> OutboxFailure {
        if let e = error as? OutboxFailure { return e }
        if let e = error as? MQTTError { return OutboxFailure(kind: e.kind.rawValue, message: e.message) }
        return OutboxFailure(kind: "other", message: "\(error)")
    }

    public func shutdown() async {
        if probe {
            await client.close(final: nil, timeout: .seconds(2))
            return
        }
        await client.close(final: .init(topic: statusTopic, payload: Array("offline".utf8)), timeout: .seconds(2))
    }

    struct Session: OutboxSession {
        let output: MQTTOutput

        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            do {
                return try await publish(table, rows)
            } catch {
                // Not all acknowledged: drop what is queued (the next round sends it again from the cursor) and
                // connect afresh.
                await output.client.reset()
                throw error
            }
        }

        func publish(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            let o = output
            o.client.beginBatch()
            var published = 0
            var batches: [String: [UInt8]] = [:]
            var order: [String] = []
            var skipped: [Event] = []
            var sensors: [(uid: String, asset: String?, field: String)] = []
            for row in rows where o.wanted(table, row) {
                if o.settings.tagState {
                    let numeric = o.stateLock.withLock { o.tagStates.take(table, row) }
                    if o.settings.homeAssistant, let uid = row.value("uid", in: table).text {
                        let asset = row.value("asset_id", in: table).text
                        sensors += numeric.map { (uid, asset, $0) }
                    }
                }
                let topic = o.topic(table, row)
                if o.settings.messages == .row {
                    var payload: [UInt8] = []
                    OutboxJSON.append(table, row, gateway: o.gateway, jsonFields: o.jsonFields, to: &payload)
                    // A row that can never be sent (a topic libmosquitto refuses) is skipped with an event; the
                    // output goes on.
                    if let refused = try o.publishOrRefuse(topic, payload) {
                        skipped.append(o.skipped(table, row, refused))
                        continue
                    }
                } else {
                    if batches[topic] == nil {
                        batches[topic] = [0x5B]
                        order.append(topic)
                    } else {
                        batches[topic]?.append(0x2C)
                    }
                    OutboxJSON.append(
                        table, row, gateway: o.gateway, jsonFields: o.jsonFields, to: &batches[topic, default: []])
                }
                published += 1
            }
            for topic in order {
                guard var payload = batches[topic] else { continue }
                payload.append(0x5D)
                if let refused = try o.publishOrRefuse(topic, payload) {
                    skipped.append(o.skipped(table, nil, refused))
                }
            }
            try o.record(skipped)
            o.publishStates(sensors: sensors)
            // The broker has them all, or the batch is sent again (the cursor does not move).
            try await o.client.awaitAcks(timeout: .seconds(30 + rows.count / 100))
            return published
        }
    }

    /// The retained state topic of a tag.
    func stateTopic(_ uid: String) -> String {
        let nats = settings.natsTopics
        return "vlogger/\(Self.level(gateway, nats: nats))/tag/\(Self.level(uid, nats: nats))"
    }

    /// The retained state of each tag the batch changed, then the Home Assistant sensor of each tag's numeric field
    /// not announced yet (after its state, so that HA finds a value when it subscribes). Aside from the batch, as
    /// the status topic is: they are derived from the rows, so a broker that refuses them (an access list without
    /// the topic, MQTT 5 reason 0x87) costs a logged line, never the rows' delivery; the next change sends the state
    /// again.
    func publishStates(sensors: [(uid: String, asset: String?, field: String)]) {
        guard settings.tagState else { return }
        let changed = stateLock.withLock { tagStates.changed(gateway: gateway) }
        for (uid, payload) in changed {
            do {
                _ = try client.publishAside(topic: stateTopic(uid), payload: payload, qos: settings.qos, retain: true)
            } catch {
                logger.warning("output \(name): the state of tag \(uid) cannot be published (\(error.message))")
            }
        }
        for s in sensors {
            let key = s.uid + "\u{1F}" + s.field
            guard stateLock.withLock({ announced.insert(key).inserted }) else { continue }
            let (topic, payload) = HomeAssistant.sensor(
                gateway: gateway, uid: s.uid, asset: s.asset, field: s.field, unit: tagStates.units[s.field],
                stateTopic: stateTopic(s.uid), statusTopic: statusTopic)
            do {
                _ = try client.publishAside(topic: topic, payload: payload, qos: 1, retain: true)
            } catch {
                stateLock.withLock { _ = announced.remove(key) }
                logger.warning(
                    "output \(name): Home Assistant's sensor \(topic) cannot be published (\(error.message))")
            }
        }
    }

    /// Publishes one message; returns the error when libmosquitto refuses the message itself (it can never be sent),
    /// throws any other failure.
    func publishOrRefuse(_ topic: String, _ payload: [UInt8]) throws(MQTTError) -> MQTTError? {
        do {
            _ = try client.publish(topic: topic, payload: payload, qos: settings.qos, retain: false)
            return nil
        } catch {
            if error.kind == .invalidMessage { return error }
            throw error
        }
    }

    /// The event of a row (or a batch, `row` nil) that libmosquitto refused to publish.
    func skipped(_ table: SyncTable, _ row: OutboxRow?, _ error: MQTTError) -> Event {
        var key = "a batch of \(table.rawValue)"
        if let row {
            let g: String = row.gateway.isEmpty ? gateway : row.gateway
            key = g + "/" + table.rawValue + "/" + String(row.id)
        }
        let text: String = "output \(name): \(key) cannot be published (\(error.message)); skipped, the output goes on"
        logger.warning("\(text)")
        return Event(
            time: Millis.now(), gateway: gateway, uid: nil, kind: .error, name: "mqtt-skipped", severity: .warning,
            detail: text)
    }

    /// Stores the events of skipped rows (without a store: they were logged).
    func record(_ events: [Event]) throws {
        guard !events.isEmpty, let store else { return }
        var b = Batch()
        b.events = events
        do { _ = try store.write(b) } catch {
            throw OutboxFailure(kind: "store", message: "the local store: \(error)")
        }
    }

    /// Whether a row passes the output's filters (readers, event kinds).
    func wanted(_ table: SyncTable, _ row: OutboxRow) -> Bool { Self.wanted(settings, table, row) }

    /// Whether a row passes an MQTT output's filters (`readers`, `event-kinds`).
    static func wanted(_ settings: MQTTSettings, _ table: SyncTable, _ row: OutboxRow) -> Bool {
        if let readers = settings.readers, table == .readings || table == .events {
            guard let r = row.value("reader", in: table).text, readers.contains(r) else { return false }
        }
        if let kinds = settings.eventKinds, table == .events {
            guard let k = row.value("kind", in: table).text, kinds.contains(k) else { return false }
        }
        return true
    }

    /// The row's topic: the template with its placeholders filled (a value that is missing is `_`; `/`, `+`,
    /// `#` and NUL in a value become `_`, so a value never adds a level or a wildcard).
    func topic(_ table: SyncTable, _ row: OutboxRow) -> String {
        var t = settings.topic
        func fill(_ name: String, _ value: String?) {
            let key = "{\(name)}"
            guard t.contains(key) else { return }
            t = t.replacingOccurrences(of: key, with: Self.level(value, nats: settings.natsTopics))
        }
        fill("gateway", row.gateway.isEmpty ? gateway : row.gateway)
        fill("reader", row.value("reader", in: table).text)
        fill("location", row.value("location", in: table).text)
        fill("uid", row.value("uid", in: table).text)
        fill("asset", row.value("asset_id", in: table).text)
        fill("kind", table.kind)
        return t
    }

    /// One topic level made of a value: `/`, `+` and `#` would add a level or a wildcard, and what MQTT and
    /// libmosquitto refuse in a topic (MQTT 3.1.1 §1.5.3 and 5.0 §1.5.4: NUL; control characters U+0001–U+001F and
    /// U+007F–U+009F and Unicode non-characters, which libmosquitto's `mosquitto_validate_utf8` refuses) would make
    /// the message unsendable: each becomes `_`.
    /// With `nats` (`nats-topics = true`), `.` and space become `_` too: NATS 2.9's MQTT listener closes the
    /// connection on a topic with either (docs/reference/fleet-engines.md §5).
    static func level(_ value: String?, nats: Bool = false) -> String {
        guard let value, !value.isEmpty else { return "_" }
        var out = String.UnicodeScalarView()
        let underscore: Unicode.Scalar = "_"
        for c in value.unicodeScalars {
            out.append(topicSafe(c) && !(nats && (c == "." || c == " ")) ? c : underscore)
        }
        return String(out)
    }

    /// Whether a character may stand in a topic level as it is: plain text (`PlainText`), and not a level separator or
    /// a wildcard.
    static func topicSafe(_ c: Unicode.Scalar) -> Bool {
        let v: UInt32 = c.value
        if v == 0x2F || v == 0x2B || v == 0x23 { return false }  // / + #
        return PlainText.isPlain(c)
    }

    /// Home Assistant MQTT discovery at each connection: a tag scanner per reader on the topic its events go to,
    /// which makes one scan per arrival (docs/reference/home-assistant-mqtt-discovery.md §2). Only when this output
    /// publishes events one message per row, on topics without `{uid}` or `{asset}` (a scanner's topic is fixed).
    /// The sensors of the tags' fields are announced as their first values go out (`publishStates`).
    func discoveryMessages() -> [(String, [UInt8])] {
        guard settings.publish.contains(.events), !settings.topic.contains("{uid}"),
            !settings.topic.contains("{asset}"), settings.messages == .row
        else {
            logger.notice(
                "output \(name): no Home Assistant tag scanners (they need publish = [\"events\", …], messages = \"row\" and a topic without {uid} or {asset}); sensors are announced"
            )
            return []
        }
        return readers.map { r in
            var topic = settings.topic
            for (k, v) in [
                ("gateway", gateway), ("reader", r.id), ("location", r.location ?? ""), ("kind", SyncTable.events.kind),
            ] {
                topic = topic.replacingOccurrences(of: "{\(k)}", with: Self.level(v, nats: settings.natsTopics))
            }
            let (discovery, payload) = HomeAssistant.tagScanner(gateway: gateway, reader: r.id, eventsTopic: topic)
            return (discovery, payload)
        }
    }
}
