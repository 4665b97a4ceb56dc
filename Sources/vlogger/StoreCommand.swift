import ArgumentParser
import Foundation
import VLoggerStore
import VLoggerModel

struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store", abstract: "Work on the store file itself.",
        subcommands: [StoreSalvage.self])
}

struct StoreSalvage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvage",
        abstract: "Copy every row that can still be read from a damaged store into a new store.",
        discussion: """
            For a store that SQLite reports damaged (a truncated file, a disk error): each table is read in row id \
            order and the rows past a damaged part are still found, where export stops at the first damaged page. \
            Row ids are kept. The damaged file is only read. Then export from the new store, move the damaged one \
            away and start the service with the new one (or an empty one).
            """)

    @Option(help: "The damaged store file.")
    var store: String

    @Option(help: "The new store file to create with what can be read.")
    var to: String

    func run() throws {
        let report: SalvageReport
        do { report = try Store.salvage(from: store, into: to) } catch { throw VLoggerError("\(error)") }
        for t in report.tables {
            var line = "\(t.name): \(t.copied) rows"
            if let u = t.unreadable { line += "; not read: \(u)" }
            if !t.skipped.isEmpty {
                line +=
                    "; passed over "
                    + t.skipped.map { r in
                        "ids after \(r.after == Int64.min ? "the start" : String(r.after))"
                            + (r.before.map { " up to \($0)" } ?? " to the end")
                    }.joined(separator: ", ")
            }
            print(line)
        }
        if let note = report.walNote { print("note: \(note)") }
        print("\(report.copied) rows saved in \(to)")
    }
}
