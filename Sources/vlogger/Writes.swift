import ArgumentParser
import Foundation
import ISO15693
import VLoggerStore
import VLoggerModel

struct WritesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "writes",
        abstract: "Queued writes (vlogger write --when-seen): the queue and what became of each.",
        subcommands: [WritesList.self, WritesCancel.self, WritesRetry.self])
}

struct WritesList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "The queue and the history, newest first.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "Only writes in this state: queued, done, failed, expired, cancelled.")
    var state: String?

    @Flag(help: "JSON (as GET /api/v1/writes answers): {\"items\":[…]}.")
    var json = false

    func run() throws {
        var wanted: QueuedWrite.State?
        if let state {
            guard let s = QueuedWrite.State(rawValue: state) else {
                throw ValidationError(
                    "--state: one of \(QueuedWrite.State.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            wanted = s
        }
        let store = try options.openStore(readOnly: true)
        defer { store.close() }
        let list: [QueuedWrite]
        do { list = try store.queuedWrites(state: wanted) } catch { throw VLoggerError("\(error)") }
        if json { return printLine(WireJSON.encode(ItemsJSON(list.map(QueuedWriteJSON.init)))) }
        let time = options.localTime
        for w in list {
            let what =
                w.operation == .lock
                ? "lock" : Hex.format(w.data, separator: "") + (w.operation == .writeLock ? " +lock" : "")
            say(
                "\(w.id)  \(w.state.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(w.uid)  \(w.first)  \(what)"
                    + "  queued \(time.dateTime(w.created))" + (w.reader.map { "  reader \($0)" } ?? "")
                    + (w.expires.map { "  expires \(time.dateTime($0))" } ?? "")
                    + (w.finished.map { "  \(time.dateTime($0))" } ?? "") + (w.result.map { "  \($0)" } ?? "")
                    + (w.origin.map { "  by \($0)" } ?? ""))
        }
        print("\(list.count) write\(list.count == 1 ? "" : "s")")
    }
}

struct WritesCancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel a write that is still queued.")

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The write's id (vlogger writes list).")
    var id: Int64

    func run() throws {
        let store = try options.openStore()
        defer { store.close() }
        let cancelled: Bool
        do { cancelled = try store.cancelWrite(id) } catch { throw VLoggerError("\(error)") }
        guard cancelled else { throw VLoggerError("write \(id) is not queued (vlogger writes list shows its state)") }
        print("write \(id) cancelled")
    }
}

struct WritesRetry: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Queue again a write that failed or whose password the tag rejected.",
        discussion: """
            A write whose password the tag rejected is never tried again by itself: an NXP chip that was given a \
            wrong password answers nothing until its power is reset, and repeated wrong passwords look like an \
            attack. Correct the secrets file ([security] secrets-file) first, then retry.
            """)

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The write's id (vlogger writes list).")
    var id: Int64

    func run() throws {
        let store = try options.openStore()
        defer { store.close() }
        let queued: Bool
        do { queued = try store.retryWrite(id) } catch { throw VLoggerError("\(error)") }
        guard queued else {
            throw VLoggerError("write \(id) did not fail and was not rejected (vlogger writes list shows its state)")
        }
        print("write \(id) queued again")
    }
}
