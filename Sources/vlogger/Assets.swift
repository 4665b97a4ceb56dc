import VLoggerModel
import ArgumentParser
import Foundation
import ISO15693
import VLoggerCore
import VLoggerStore

struct AssetsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assets", abstract: "The asset register kept in the store: import it from CSV, list it.",
        subcommands: [AssetsImport.self, AssetsList.self])
}

struct AssetsImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract:
            "Import an asset register (CSV with uid and asset_id; name or description, location and other columns optional).",
        discussion:
            "A UID already in the store is updated where the file differs; nothing is duplicated, and assets the file does not list are kept. The file's other columns are kept as what an audit expects."
    )

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The register file (CSV).")
    var file: String

    @Flag(help: "Show what would change; write nothing.")
    var dryRun = false

    func run() throws {
        guard FileManager.default.isReadableFile(atPath: file) else {
            throw VLoggerError("\(file): cannot read the file")
        }
        let store = try options.openStore()
        defer { store.close() }
        let r: AssetImportReport
        // Read record by record into one transaction: a register of a million rows does not sit in memory.
        do { r = try AssetRegister.importFile(file, into: store, dryRun: dryRun) } catch {
            throw VLoggerError("\(error)")
        }
        let verb = dryRun ? "would add" : "added"
        print(
            "\(file): \(r.addedTotal + r.changedTotal + r.unchanged) assets; \(verb) \(r.addedTotal), \(dryRun ? "would change" : "changed") \(r.changedTotal), \(r.unchanged) unchanged"
                + (r.notInFileTotal == 0 ? "" : "; \(r.notInFileTotal) in the store but not in the file (kept)")
                + (dryRun ? " (dry run: nothing written)" : ""))
        for u in r.added { print("  + \(u)") }
        if r.addedTotal > r.added.count { print("  + … and \(r.addedTotal - r.added.count) more") }
        for u in r.changed { print("  ~ \(u)") }
        if r.changedTotal > r.changed.count { print("  ~ … and \(r.changedTotal - r.changed.count) more") }
    }
}

struct AssetsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the asset register kept in the store.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "Only the assets of this location.")
    var location: String?

    @Flag(help: "Machine-readable JSON output.")
    var json = false

    func run() throws {
        let store = try options.openStore(readOnly: true)
        defer { store.close() }
        let rows: [AssetRow]
        do { rows = try store.assets(location: location) } catch { throw VLoggerError("\(error)") }
        if json {
            printLine(WireJSON.encode(ItemsJSON(rows.map(AssetJSON.init))))
            return
        }
        for r in rows {
            say(
                "\(r.uid)  \(r.assetID)  \(r.location ?? "-")  \(r.name ?? "")"
                    + (r.extra.isEmpty
                        ? ""
                        : "  "
                            + r.extra.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            )
        }
        print("\(rows.count) asset(s)\(location.map { " in \($0)" } ?? "")")
    }
}
