import Dispatch
import Foundation
import Hummingbird
import HummingbirdCore
import ISO15693
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
import UnixSignals
import VLoggerCore
import VLoggerModel
import VLoggerMQTT
import VLoggerStore
import VLoggerSync
import VLoggerWebhook

/// One output of the gateway: a consumer of the store's outbox and how often its job runs a round.
public struct Output: Sendable {
    public let consumer: any OutboxConsumer
    /// Between rounds when there is nothing new (or, without `wakesOnCommit`, always).
    public let intervalMs: Millis
    /// Whether a round starts as soon as the store writer committed (a connection kept open: MQTT), rather than
    /// every `intervalMs` (a connection per round: the fleet sync).
    public var wakesOnCommit = false
    /// What it was made from (its settings as text, secrets not read): a reload restarts an output whose
    /// signature changed.
    public var signature = ""
}

extension Gateway {
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

    /// The registration list of outputs: every consumer of the outbox the configuration enables. The only place
    /// in the service that knows the kinds of output.
    /// `readerUp` says which readers work (a Sparkplug node's `Reader/<id>/Up`).
    public static func outputs(
        _ config: AgentConfig, store: Store, logger: Logger,
        readerUp: @escaping @Sendable () -> [String: Bool] = { [:] }, probe: Bool = false
    ) throws -> [Output] {
        var out: [Output] = []
        if let settings = config.sync {
            out.append(
                Output(
                    consumer: try Syncer(
                        settings: settings, store: store, gateway: config.gatewayID, site: config.site, logger: logger),
                    intervalMs: settings.intervalMs,
                    signature:
                        "\(settings) \(config.gatewayID) \(config.site ?? "") \(Self.stamp(settings.passwordFile))"))
        }
        for m in config.mqtt where m.sparkplug != nil {
            let readers = config.readers.map { ($0.id, $0.location) }
            // bdSeq outlives a restart (hosts pair a Will with its NBIRTH by it): a file beside the store.
            let file = URL(fileURLWithPath: store.path).deletingLastPathComponent()
                .appendingPathComponent("sparkplug-\(m.name).bdseq")
            out.append(
                Output(
                    consumer: try SparkplugOutput(
                        settings: m, gateway: config.gatewayID, readers: readers, readerUp: readerUp,
                        fields: config.fieldInfos, devices: { Self.sparkplugDevices(store, logger: logger) },
                        bdSeqFile: store.path == ":memory:" ? nil : file, probe: probe, logger: logger),
                    intervalMs: m.intervalMs, wakesOnCommit: true,
                    signature:
                        "\(m) \(config.gatewayID) \(config.readers.map { "\($0.id)@\($0.location ?? "")" }) \(config.fieldInfos.map { "\($0.name):\($0.kind):\($0.unit ?? "")" }) \(Self.stamp(m.passwordFile))"
                ))
        }
        for m in config.mqtt where m.sparkplug == nil {
            out.append(
                Output(
                    consumer: try MQTTOutput(
                        settings: m, gateway: config.gatewayID, readers: config.readers.map { ($0.id, $0.location) },
                        fields: config.fieldInfos, probe: probe, store: store, logger: logger),
                    intervalMs: m.intervalMs, wakesOnCommit: true,
                    signature:
                        "\(m) \(config.gatewayID) \(config.readers.map { "\($0.id)@\($0.location ?? "")" }) \(Self.stamp(m.passwordFile))"
                ))
        }
        for w in config.webhooks {
            out.append(
                Output(
                    consumer: try WebhookOutput(settings: w, gateway: config.gatewayID, store: store, logger: logger),
                    intervalMs: w.intervalMs, wakesOnCommit: true,
                    signature: "\(w) \(config.gatewayID) \(Self.stamp(w.secretFile))"))
        }
        return out
    }

    /// A secret file's stamp for an output's signature (no content): a SIGHUP restarts an output whose password or
    /// secret file changed, as it restarts one whose settings did.
    static func stamp(_ file: String?) -> String { FileStamp.of(file).map { "secret \($0)" } ?? "" }
}

extension Gateway {
    /// `vlogger doctor`'s check of each MQTT broker at the protocol level: a probe connection (a client id of its
    /// own, no Will, nothing published) that logs in with the configured TLS files and credentials. Nothing is
    /// written to the store. The result per output: nil when the broker accepted the connection, else the failure.
    public static func probeBrokers(_ config: AgentConfig) async -> [(
        name: String, url: String, failure: OutboxFailure?
    )] {
        var logger = Logger(label: "vlogger.doctor")
        logger.logLevel = .critical
        var out: [(name: String, url: String, failure: OutboxFailure?)] = []
        for m in config.mqtt {
            let consumer: any OutboxConsumer
            do {
                consumer =
                    m.sparkplug != nil
                    ? try SparkplugOutput(settings: m, gateway: config.gatewayID, probe: true, logger: logger)
                    : try MQTTOutput(settings: m, gateway: config.gatewayID, probe: true, logger: logger)
            } catch {
                let f =
                    (error as? MQTTError).map { OutboxFailure(kind: $0.kind.rawValue, message: $0.message) }
                    ?? OutboxFailure(kind: "other", message: "\(error)")
                out.append((m.name, m.url, f))
                continue
            }
            do {
                try await consumer.withSession { _ in }
                out.append((m.name, m.url, nil))
            } catch {
                out.append((m.name, m.url, consumer.describe(error)))
            }
            await consumer.shutdown()
        }
        return out
    }
}
