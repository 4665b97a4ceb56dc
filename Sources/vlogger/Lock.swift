import ArgumentParser
import VLoggerModel

struct Lock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lock a block for ever (irreversible: needs --yes); now, or queued with --when-seen.")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Option(help: "Block to lock (0xF8 or 248).")
    var block: String

    @Flag(help: "Confirm: a locked block can never be written again.")
    var yes = false

    @OptionGroup var queue: QueueOptions

    @Option(help: "With --when-seen: the store whose queue takes the lock (default: --config's).")
    var store: String?

    func run() throws {
        let b = try parseBlock(block)
        guard yes else {
            throw VLoggerError(
                "locking block \(b) is irreversible; run again with --yes to \(queue.whenSeen ? "queue the lock" : "lock it")"
            )
        }
        if queue.whenSeen { return try queue.enqueue([(b, [])], operation: .lock, options: options, store: store) }
        try queue.refuseWithoutWhenSeen()
        let session = try options.open()
        let uid = try options.target(session)
        try session.client.lockBlock(uid, block: b, option: options.wantsOption ? true : nil)
        try session.checkPersisted()
        let status = try session.client.securityStatus(uid, first: b, count: 1)
        if options.json {
            printJSON(LockJSON(uid: uid.description, block: WireBlock(b.int), locked: status.first?.isLocked ?? false))
            return
        }
        print(
            "block \(b) of \(uid) is \(status.first?.isLocked == true ? "locked" : "NOT locked"); \(airLine(session))")
    }
}
