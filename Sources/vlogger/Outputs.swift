import ArgumentParser
import Foundation
import Logging
import VLoggerModel
import VLoggerService
import VLoggerStore
import VLoggerOutbox

struct OutputsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outputs",
        abstract: "The gateway's outputs (\(sections)): their backlog and their destinations.",
        discussion: """
            Every output is a consumer of the store's outbox with a cursor per table, moved only when its \
            destination acknowledged a batch. `status` prints each one's backlog and whether its destination \
            answers (it connects, sends nothing); `send` ships each one's backlog once, as the service would.
            """,
        subcommands: [Status.self, Send.self, Resend.self])

    /// The sections of the registered output kinds: `[sync], [[output.mqtt]], [[output.webhook]]`.
    static var sections: String { OutputKinds.all.map(\.section.heading).joined(separator: ", ") }

    /// The configured outputs, or only `name`.
    /// `probe`: MQTT outputs that only connect, under a client id of their own, with no Will, status or births (a
    /// check must not take over, or speak for, the service's connection).
    static func outputs(_ options: ConfigOptions, name: String?, probe: Bool = false) throws -> (Store, [Output]) {
        let c = try options.load()
        let store = try options.openStore()
        var logger = Logger(label: "vlogger.outputs")
        logger.logLevel = .warning
        let all: [Output]
        do { all = try Gateway.outputs(c, store: store, logger: logger, probe: probe) } catch {
            store.close()
            throw VLoggerError("\(error)")
        }
        let chosen = name.map { n in all.filter { $0.consumer.name == n } } ?? all
        guard !chosen.isEmpty else {
            store.close()
            throw VLoggerError(
                name.map {
                    "\(options.config): no output named '\($0)' (configured: \(all.map(\.consumer.name).joined(separator: ", ")))"
                } ?? "\(options.config): no outputs configured (\(sections))")
        }
        return (store, chosen)
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Each output's backlog (rows not yet acknowledged, the oldest one's age) and its destination's answer."
        )
        @OptionGroup var options: ConfigOptions
        @Argument(help: "Only this output (its name: postgres, mqtt, …).") var name: String?
        @Flag(help: "JSON: {\"items\":[{name, title, backlog per table, destination}]}.") var json = false

        func run() async throws {
            let (store, outputs) = try OutputsCommand.outputs(options, name: name, probe: true)
            defer { store.close() }
            var failed = 0
            var items: [OutputStatusJSON] = []
            for o in outputs {
                let c = o.consumer
                if !json { print("\(c.name): \(c.title)") }
                let backlog = OutboxPump(store: store, consumer: c).backlog()
                var item = OutputStatusJSON(
                    name: c.name, title: c.title,
                    backlog: Dictionary(
                        uniqueKeysWithValues: backlog.map {
                            (
                                $0.key.rawValue,
                                OutputStatusJSON.Backlog(rows: $0.value.rows, oldest: WireTime($0.value.oldest))
                            )
                        }), destination: "answers")
                if !json {
                    for (t, b) in backlog.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                        let age =
                            b.oldest.map { ", oldest " + DurationText.format(max(0, Millis.now() - $0)) + " old" } ?? ""
                        print("  \(t.rawValue): \(b.rows) rows not yet acknowledged\(age)")
                    }
                }
                item.notes = c.statusNotes()
                if !json { for n in item.notes { print("  \(n)") } }
                do {
                    try await c.probe()
                    if !json { print("  destination: answers") }
                } catch {
                    let f = c.describe(error)
                    if !json { print("  destination: failed (\(f.kind)): \(f.message)") }
                    item.destination = "failed"
                    item.failure = f.message
                    item.failureKind = f.kind
                    failed += 1
                }
                items.append(item)
                await c.shutdown()
            }
            if json { printLine(WireJSON.encode(ItemsJSON(items))) }
            if failed > 0 { throw ExitCode(1) }
        }
    }

    struct Resend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Send an output's rows again from a row key on (rows a webhook refused, a receiver that lost them).",
            discussion: """
                KEY is a row's key as the output sent it (X-Vlogger-Key, "key" in the JSON, the key a \
                webhook-refused event names): GATEWAY/TABLE/ID. The rows of that table from ID up to the newest are \
                delivered once, in batches, whatever the output's cursor; the cursor does not move (rows after it are \
                the service's to send). Receivers de-duplicate on the key.
                """)
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The output (its name: webhook, mqtt, …).") var name: String
        @Option(help: "The first row key to send again: GATEWAY/TABLE/ID.") var from: String

        func run() async throws {
            let parts = from.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, let table = SyncTable(rawValue: parts[1]), let first = Int64(parts[2]), first > 0
            else {
                throw ValidationError(
                    "--from must be a row key GATEWAY/TABLE/ID (e.g. gw-01/events/1234), with a table of \(SyncTable.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            let (store, outputs) = try OutputsCommand.outputs(options, name: name)
            defer { store.close() }
            guard let c = outputs.first?.consumer else { return }
            // An output that keeps a connection (MQTT, Sparkplug B) would take over the running service's session
            // (its client id, Will and births): not from here.
            guard c.isConnected == nil else {
                throw VLoggerError(
                    "output \(c.name) keeps a connection to its broker; resending from here would take over the running service's session. MQTT and Sparkplug rows are sent at least once from the store by the service itself"
                )
            }
            guard c.tables.contains(table) else {
                throw VLoggerError(
                    "output \(c.name) does not send \(table.rawValue) (it sends \(c.tables.map(\.rawValue).joined(separator: ", ")))"
                )
            }
            var after = first - 1, rows = 0, delivered = 0, last: Int64?
            do {
                try await c.withSession { session in
                    while true {
                        let batch = try store.outbox(table, after: after, limit: max(1, c.batchSize))
                        guard let end = batch.last?.id else { break }
                        delivered += try await session.deliver(table, batch)
                        rows += batch.count
                        after = end
                        last = end
                    }
                }
            } catch {
                let f = c.describe(error)
                await c.shutdown()
                throw VLoggerError(
                    "\(c.name): resending from \(from) stopped after \(rows) rows (failed, \(f.kind)): \(f.message)")
            }
            await c.shutdown()
            print(
                "\(c.name): sent \(rows) \(table.rawValue) rows again (\(from)\(last.map { " to \(parts[0])/\(table.rawValue)/\($0)" } ?? ""); \(delivered) taken) to \(c.title)"
            )
        }
    }

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ship each output's backlog once (all of it), and print what went and how fast.")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "Only this output (its name: postgres, mqtt, …).") var name: String?

        func run() async throws {
            let (store, outputs) = try OutputsCommand.outputs(options, name: name)
            defer { store.close() }
            var failed = false
            for o in outputs {
                let c = o.consumer
                let started = Date()
                do {
                    let r = try await OutboxPump(store: store, consumer: c).round()
                    let seconds = Date().timeIntervalSince(started)
                    let rows = r.sent.values.reduce(0, +)
                    print(
                        "\(c.name): sent \(rows) rows in \(r.batches) batches in \(String(format: "%.2f", seconds)) s (\(Int(Double(rows) / max(seconds, 1e-6))) rows/s) to \(c.title)"
                    )
                } catch {
                    let f = c.describe(error)
                    print("\(c.name): failed (\(f.kind)): \(f.message); what was not acknowledged stays in the store")
                    failed = true
                }
                await c.shutdown()
            }
            if failed { throw ExitCode(1) }
        }
    }
}
