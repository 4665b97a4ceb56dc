import ArgumentParser
import Foundation
import VLoggerStore
import VLoggerModel
import VLoggerSync

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Ship the local store to the central PostgreSQL of [sync] once, and print what was sent.",
        discussion: """
            Rows after each table's cursor (readings, events, writes, audits, audit results, tags) go in batches of \
            [sync] batch-size (5000 by default), each batch one statement keyed by (gateway, local row id): a batch \
            sent twice (after a crash or a lost acknowledgement) goes again skipping the keys the server has, so it \
            keeps only the rows it lacks. Tags are one row \
            per gateway and tag, updated as the tag is seen again. The local cursor moves only after the server's \
            commit. --init-schema creates or migrates the central schema (and refuses a newer one); --status prints \
            the backlog without sending. The password comes from [sync] password-file or password-env, never the URL.
            """)

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Create or migrate the central schema, then stop.")
    var initSchema = false

    @Flag(
        help:
            "Print the backlog (rows not yet acknowledged, age of the oldest) and the server's rows of this gateway; send nothing."
    )
    var status = false

    func run() async throws {
        let c = try options.load()
        guard let settings = c.outputs.sync else {
            throw VLoggerError("\(options.config): no [sync] section (url = \"postgresql://user@host:port/database\")")
        }
        let store = try options.openStore()
        defer { store.close() }
        let syncer: Syncer
        do { syncer = try Syncer(settings: settings, store: store, gateway: c.gatewayID, site: c.site) } catch {
            throw VLoggerError("\(error)")
        }
        do {
            if initSchema {
                let (from, to) = try await syncer.initSchema()
                print(
                    from == to
                        ? "\(URLRedaction.redact(settings.url)): schema already at version \(to)"
                        : "\(URLRedaction.redact(settings.url)): schema migrated from version \(from) to \(to)")
                return
            }
            if status {
                for t in SyncTable.allCases {
                    let b = try store.outboxBacklog(syncer.name, t)
                    let age =
                        b.oldest.map { " (oldest " + DurationText.format(max(0, Millis.now() - $0)) + " old)" } ?? ""
                    print(
                        "\(t.rawValue): \(b.rows) rows not yet acknowledged\(age); cursor at \(t.isUpserted ? "change" : "local id") \(try store.outboxCursor(syncer.name, t))"
                    )
                }
                let counts = try await syncer.serverCounts()
                print(
                    "\(URLRedaction.redact(settings.url)): "
                        + SyncTable.allCases.map { "\(counts[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
                        + " of gateway \(c.gatewayID)")
                return
            }
            let started = Date()
            let r = try await syncer.syncOnce()
            let seconds = Date().timeIntervalSince(started)
            let parts = SyncTable.allCases.map { "\(r.sent[$0] ?? 0) \($0.rawValue) (\(r.inserted[$0] ?? 0) new)" }
            print(
                "sent \(parts.joined(separator: ", ")) in \(r.batches) batch\(r.batches == 1 ? "" : "es") to \(URLRedaction.redact(settings.url)) in \(String(format: "%.2f", seconds)) s"
            )
        } catch let e as SyncError {
            // The service's log adds the same (OutputJob): said once, where the failure ends a command.
            throw VLoggerError(e.message + "; the rows stay in the local store")
        } catch let e as StoreError {
            throw VLoggerError("\(e)")
        }
    }
}
