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
        abstract: "Import an asset register (CSV with uid and asset_id; name or description, location and other columns optional).",
        discussion: "A UID already in the store is updated where the file differs; nothing is duplicated, and assets the file does not list are kept. The file's other columns are kept as what an audit expects.")

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The register file (CSV).")
    var file: String

    @Flag(help: "Show what would change; write nothing.")
    var dryRun = false

    func run() throws {
        let text: String
        do { text = try ConfigReader.loadText(file) } catch { throw VLoggerError("\(error)") }
        let rows: [AssetRow]
        do { rows = try AssetRegister.assetRows(text, file: file) } catch { throw VLoggerError("\(error)") }
        let store = try options.openStore()
        defer { store.close() }
        let r: AssetImportReport
        do { r = try store.importAssets(rows, source: file, dryRun: dryRun) } catch { throw VLoggerError("\(error)") }
        let verb = dryRun ? "would add" : "added"
        print("\(file): \(rows.count) assets; \(verb) \(r.added.count), \(dryRun ? "would change" : "changed") \(r.changed.count), \(r.unchanged) unchanged"
              + (r.notInFile.isEmpty ? "" : "; \(r.notInFile.count) in the store but not in the file (kept)") + (dryRun ? " (dry run: nothing written)" : ""))
        for u in r.added { print("  + \(u)") }
        for u in r.changed { print("  ~ \(u)") }
    }
}

struct AssetsList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the asset register kept in the store.")

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
            printJSON(rows.map { r -> [String: Any] in
                var o: [String: Any] = ["uid": r.uid.description, "asset_id": r.assetID]
                if let n = r.name { o["name"] = n }
                if let l = r.location { o["location"] = l }
                if !r.extra.isEmpty { o["expected"] = r.extra }
                return o
            })
            return
        }
        for r in rows {
            say("\(r.uid)  \(r.assetID)  \(r.location ?? "-")  \(r.name ?? "")" + (r.extra.isEmpty ? "" : "  " + r.extra.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")))
        }
        print("\(rows.count) asset(s)\(location.map { " in \($0)" } ?? "")")
    }
}
