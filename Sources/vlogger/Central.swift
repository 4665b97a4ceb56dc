import ArgumentParser
import Foundation
import Logging
import VLoggerIngest
import VLoggerModel
import VLoggerSync

struct CentralCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "central",
        abstract: "Commands that run at the centre of a fleet, not on a gateway.",
        subcommands: [Ingest.self])

    struct Ingest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ingest",
            abstract: "Take the rows gateways publish over MQTT into the central PostgreSQL (the MQTT fan-in).",
            discussion: """
                Subscribes to the broker with a persistent QoS 1 session (clean session off, the same --client-id at \
                every start) and writes each batch of rows into the central schema in one transaction, keyed as \
                `vlogger sync` keys them (gateway and local id; tags by gateway and uid), acknowledging the batch's \
                messages only after the commit. A crash or a lost connection leaves the unacknowledged messages with \
                the broker, which sends them again; the key keeps each row once. The broker is NATS with JetStream \
                (its MQTT listener), mosquitto or any MQTT 3.1.1 broker; several --broker are tried in turn (the nodes \
                of a cluster). Gateways publish with [[output.mqtt]] and messages = "row" or "batch", qos = 1, on \
                topics under the --topic filters (vlogger/{gateway}/… by default). Messages that are not rows (status, \
                tag states) are acknowledged and counted. The central schema must exist (vlogger sync --init-schema, \
                or --init-schema here). SIGINT or SIGTERM stop it after the batch in hand; it prints what it did.
                """)

        @Option(help: "The broker: mqtt://HOST[:PORT] (1883 by default); repeat for the nodes of a cluster.")
        var broker: [String] = []

        @Option(help: "The central PostgreSQL: postgresql://USER@HOST[:PORT][,HOST2[:PORT]…]/DATABASE[?sslmode=…].")
        var central: String

        @Option(help: "A file holding the central database's password.")
        var centralPasswordFile: String?

        @Option(help: "An environment variable holding the central database's password.")
        var centralPasswordEnv: String?

        @Option(help: "A topic filter to subscribe to (repeat for several).")
        var topic: [String] = ["vlogger/#"]

        @Option(help: "The MQTT client id of the persistent session (keep it the same at every start).")
        var clientID = "vlogger-central-ingest"

        @Option(help: "The broker's user name.")
        var username: String?

        @Option(help: "A file holding the broker's password.")
        var passwordFile: String?

        @Option(help: "Rows per transaction at most (1…100000).")
        var batchSize = 5000

        @Option(help: "A batch closes this long after its first message at the latest (e.g. 200ms, 1s).")
        var linger = "200ms"

        @Option(
            help:
                "Stop once no message came for this long (e.g. 10s): drain and exit. While the broker or the central cannot be reached it gives up after this or 60 s, whichever is longer."
        )
        var untilIdle: String?

        @Option(
            help:
                "A step (a batch's statements and commit) the central leaves unanswered this long closes the connection; the batch's messages stay with the broker and come again (1s…1h)."
        )
        var answerTimeout = "5m"

        @Flag(help: "Create or migrate the central schema first.")
        var initSchema = false

        func run() async throws {
            guard !broker.isEmpty else { throw ValidationError("give at least one --broker mqtt://HOST:PORT") }
            guard (1...100_000).contains(batchSize) else { throw ValidationError("--batch-size must be 1…100000") }
            let lingerMs: Millis
            do { lingerMs = try DurationText.parse(linger) } catch { throw ValidationError("--linger: \(error)") }
            guard (1...60_000).contains(lingerMs) else { throw ValidationError("--linger must be 1ms…60s") }
            var idleMs: Millis?
            if let untilIdle {
                do { idleMs = try DurationText.parse(untilIdle) } catch {
                    throw ValidationError("--until-idle: \(error)")
                }
                guard let i = idleMs, (1...86_400_000).contains(i) else {
                    throw ValidationError("--until-idle must be 1ms…24h")
                }
            }
            var brokers: [CentralIngest.Broker] = []
            for b in broker {
                do { brokers.append(try CentralIngest.Broker(url: b)) } catch { throw ValidationError(error.message) }
            }
            var sync = try SyncSettings(url: central)
            do { sync.answerTimeoutMs = try DurationText.parse(answerTimeout) } catch {
                throw ValidationError("--answer-timeout: \(error)")
            }
            guard (1000...3_600_000).contains(sync.answerTimeoutMs) else {
                throw ValidationError("--answer-timeout must be 1s…1h")
            }
            sync.passwordFile = centralPasswordFile
            sync.passwordEnv = centralPasswordEnv
            let centralPassword = try sync.password()
            var settings = CentralIngest.Settings(brokers: brokers, central: sync)
            settings.filters = topic
            settings.clientID = clientID
            settings.username = username
            if let passwordFile {
                guard let data = FileManager.default.contents(atPath: passwordFile) else {
                    throw VLoggerError("--password-file \(passwordFile): cannot be read")
                }
                var bytes = [UInt8](data)
                while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
                settings.password = bytes
                if username == nil { throw ValidationError("--password-file needs --username (MQTT 3.1.1 §3.1.2.9)") }
            }
            settings.batchSize = batchSize
            settings.lingerMs = Int(lingerMs)
            if initSchema {
                let (from, to) = try await Syncer.initSchema(sync, password: centralPassword)
                print(
                    from == to
                        ? "\(URLRedaction.redact(sync.url)): schema already at version \(to)"
                        : "\(URLRedaction.redact(sync.url)): schema migrated from version \(from) to \(to)")
            }
            var logger = Logger(label: "vlogger.ingest")
            logger.logLevel = .info
            let ingest = CentralIngest(settings: settings, centralPassword: centralPassword, logger: logger)
            let stopping = StopFlag()
            let sources = [SIGINT, SIGTERM].map { sig -> any DispatchSourceSignal in
                signal(sig, SIG_IGN)
                let s = DispatchSource.makeSignalSource(signal: sig)
                s.setEventHandler { stopping.set() }
                s.resume()
                return s
            }
            defer { sources.forEach { $0.cancel() } }
            let started = Date()
            let t: CentralIngest.Tally
            do {
                t = try await ingest.run(untilIdleMs: idleMs.map { Int($0) }, stop: { stopping.isSet })
            } catch let e as IngestError {
                let so = ingest.tally
                throw VLoggerError(
                    "\(e.message) (after \(so.rows) rows, \(so.inserted) new; unacknowledged messages stay with the broker)"
                )
            }
            let seconds = Date().timeIntervalSince(started)
            print(
                "ingested \(t.rows) rows (\(t.inserted) new) from \(t.messages) messages in \(t.batches) batches, \(t.ignored) not rows, \(t.refused) refused, \(t.reconnects) reconnections, in \(String(format: "%.2f", seconds)) s (busy \(String(format: "%.2f", t.busySeconds)) s: \(t.busySeconds > 0 ? Int(Double(t.rows) / t.busySeconds) : 0) rows/s)"
            )
        }
    }
}

/// Set once by a signal handler, read by the ingest between batches.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
