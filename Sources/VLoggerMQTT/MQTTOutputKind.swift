import Foundation
import Logging
import VLoggerConfig
import VLoggerModel
import VLoggerOutbox
import VLoggerStore

/// `[[output.mqtt]]` as an output kind (registered in LinkedOutputs): plain JSON, or a Sparkplug B edge node with
/// `sparkplug = true`.
public struct MQTTOutputKind: OutputKind {
    public init() {}
    public var section: OutputSection { .list("mqtt") }
    public var keys: [String] { MQTTSettings.keys }
    public var summary: String {
        "MQTT: rows as JSON messages, or a Sparkplug B 3.0 edge node, acknowledged by the broker"
    }
    public var sample: String {
        """
        [[output.mqtt]]                       # an MQTT broker (docs/integrating.md, "MQTT")
        url = "mqtts://broker.example.com:8883"   # EDIT: mqtt://HOST:PORT or mqtts://HOST:PORT
        # username = "gw-01"
        # password-file = "/etc/vlogger/mqtt-password"
        # topic = "vlogger/{gateway}/{reader}/{kind}"
        # publish = ["readings", "events"]
        # sparkplug = true                    # a Sparkplug B edge node instead of JSON
        # home-assistant = true               # Home Assistant MQTT discovery
        # nats-topics = true                  # the broker is NATS 2.9: '.' and spaces in ids become '_'

        """
    }

    public func read(_ section: Section, index: Int, _ reader: ConfigReader, _ context: OutputReadContext)
        -> (any OutputSettings)?
    {
        guard let settings = MQTTSettings.read(section, index: index, reader, resolve: context.resolve) else {
            return nil
        }
        // A reader filter naming no reader would publish nothing, silently (issue 47, item 1).
        let ids = context.readerIDs
        for id in settings.readers ?? [] where !ids.contains(id) {
            let near = NearestName.nearest(id, in: ids).map { " (did you mean '\($0)'?)" } ?? ""
            reader.issue(
                section.node("readers")?.line ?? section.line,
                "\(section.name).readers: '\(id)' is not a reader of this gateway\(near); readers: \(ids.joined(separator: ", "))"
            )
        }
        return settings
    }
}

extension MQTTSettings: OutputSettings {
    public var files: [OutputFile] {
        [
            passwordFile.map { OutputFile(what: "output.mqtt \(name) password-file", path: $0) },
            keyFile.map { OutputFile(what: "output.mqtt \(name) key-file", path: $0) },
            caFile.map { OutputFile(what: "output.mqtt \(name) ca-file", path: $0, secret: false) },
            certFile.map { OutputFile(what: "output.mqtt \(name) cert-file", path: $0, secret: false) },
        ].compactMap { $0 }
    }

    public var remotes: [Remote] { [Remote(what: "output \(name) (MQTT broker)", host: host, port: port)] }

    public func makeOutput(_ context: OutputContext) throws -> Output {
        let readers = context.readers.map { ($0.id, $0.location) }
        let place = context.readers.map { "\($0.id)@\($0.location ?? "")" }
        guard sparkplug != nil else {
            return Output(
                consumer: try MQTTOutput(
                    settings: self, gateway: context.gatewayID, readers: readers, fields: context.fields,
                    probe: context.probe, store: context.store, logger: context.logger),
                intervalMs: intervalMs, wakesOnCommit: true,
                signature: "\(self) \(context.gatewayID) \(place) \(Output.stamp(passwordFile))")
        }
        let store = context.store
        // bdSeq outlives a restart (hosts pair a Will with its NBIRTH by it): a file beside the store.
        let file = store.flatMap { s in
            s.path == ":memory:"
                ? nil
                : URL(fileURLWithPath: s.path).deletingLastPathComponent()
                    .appendingPathComponent("sparkplug-\(name).bdseq")
        }
        let logger = context.logger
        return Output(
            consumer: try SparkplugOutput(
                settings: self, gateway: context.gatewayID, readers: readers, readerUp: context.readerUp,
                fields: context.fields, devices: { store.map { Self.sparkplugDevices($0, logger: logger) } ?? [] },
                bdSeqFile: file, probe: context.probe, logger: logger),
            intervalMs: intervalMs, wakesOnCommit: true,
            signature:
                "\(self) \(context.gatewayID) \(place) \(context.fields.map { "\($0.name):\($0.kind):\($0.unit ?? "")" }) \(Output.stamp(passwordFile))"
        )
    }

    /// `vlogger doctor`'s check of the broker at the protocol level: a probe connection (a client id of its own,
    /// no Will, nothing published) that logs in with the configured TLS files and credentials.
    public func doctorProbe(_ context: OutputContext) async -> OutputProbe? {
        var logger = Logger(label: "vlogger.doctor")
        logger.logLevel = .critical
        let consumer: any OutboxConsumer
        do {
            consumer =
                sparkplug != nil
                ? try SparkplugOutput(settings: self, gateway: context.gatewayID, probe: true, logger: logger)
                : try MQTTOutput(settings: self, gateway: context.gatewayID, probe: true, logger: logger)
        } catch {
            let f =
                (error as? MQTTError).map { OutboxFailure(kind: $0.kind.rawValue, message: $0.message) }
                ?? OutboxFailure(kind: "other", message: "\(error)")
            return probe(f)
        }
        var failure: OutboxFailure?
        do { try await consumer.withSession { _ in } } catch { failure = consumer.describe(error) }
        await consumer.shutdown()
        return probe(failure)
    }

    private func probe(_ failure: OutboxFailure?) -> OutputProbe {
        OutputProbe(
            check: "broker \(name)", destination: url, failure: failure,
            advice: failure?.kind == "auth"
                ? "check username and password-file (or password-env) against the broker's users"
                : failure?.kind == "tls"
                    ? "check ca-file (the CA that signed the broker's certificate), cert-file and key-file, and the host name in the url"
                    : "check that the broker runs and listens on that port")
    }

    /// The tags a Sparkplug node is born with: those the store saw in the last 30 days (the 500 seen last), each
    /// named by its asset id where the store's register has one. A store that cannot answer gives none (the tags
    /// are born when their data comes).
    static func sparkplugDevices(_ store: Store, logger: Logger) -> [SparkplugDevice] {
        do {
            let uids = try store.tagsSeen(since: Millis.now() - 30 * 86_400_000, limit: 500)
            let assets = Dictionary(
                try store.assets().map { ($0.uid, $0.assetID) }, uniquingKeysWith: { a, _ in a })
            return uids.map { SparkplugDevice(uid: $0.description, asset: assets[$0]) }
        } catch {
            logger.warning("Sparkplug: the store's tags: \(error); tags are born when their data comes")
            return []
        }
    }
}

extension Collection where Element == any OutputSettings {
    /// The MQTT brokers among a configuration's outputs.
    public var mqtt: [MQTTSettings] { compactMap { $0 as? MQTTSettings } }
}
