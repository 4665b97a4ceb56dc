import VLoggerStore
import ArgumentParser
import ISO15693
import Readers
import VLoggerCore

struct Write: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write blocks (read back and verified), with the Option flag where the chip needs it.")

    @OptionGroup var options: ReaderOptions

    @Option(help: "First block (0xF8 or 248).")
    var block: String

    @Option(help: "Data in hex, a whole number of blocks (e.g. 01020304 for one 4-byte block).")
    var data: String

    @Flag(help: "Skip the read-back check.")
    var noVerify = false

    @Option(help: "Record the write (success or failure, flags, exchanges) in this store's writes table.")
    var store: String?

    @Option(help: "Gateway id for the recorded write.")
    var gateway = "cli"

    @Flag(help: ArgumentHelp("Queue the write in the store (--store, or --config's) and exit; the service makes it the next time the tag is in a reader's field, and verifies it by reading back.",
                             discussion: "Needs --uid. `vlogger writes list` shows the queue and what became of each write."))
    var whenSeen = false

    @Option(help: "With --when-seen: the configuration whose store holds the queue (when --store is not given).")
    var config = "Config/vlogger.toml"

    @Option(help: "With --when-seen: give up after this long (e.g. 7d); default: never.")
    var expires: String?

    @Option(name: .customLong("only-reader"), help: "With --when-seen: only this reader (its [[reader]] id) makes the write.")
    var onlyReader: String?

    func run() throws {
        let first = try parseBlock(block)
        let bytes: [UInt8]
        do { bytes = try Hex.parse(data) } catch { throw ValidationError("--data: \(error)") }
        guard !bytes.isEmpty else { throw ValidationError("--data is empty") }
        if whenSeen { return try queue(first, bytes) }
        if expires != nil || onlyReader != nil { throw ValidationError("--expires and --only-reader are for --when-seen") }
        let session = try options.open()
        let uid = try options.target(session)
        let m = try session.client.memory(of: uid)
        guard bytes.count % m.blockSize == 0 else {
            throw VLoggerError("--data has \(bytes.count) bytes; \(uid) has \(m.blockSize)-byte blocks, so give a multiple of \(m.blockSize)")
        }
        let blocks = stride(from: 0, to: bytes.count, by: m.blockSize).map { Array(bytes[$0..<($0 + m.blockSize)]) }
        let option: Bool? = options.wantsOption ? true : nil
        let report: WriteReport
        let before = session.client.exchanges
        var flags = session.client.baseFlags.union(.address)
        if option ?? m.writeNeedsOption { flags.insert(.option) }
        do {
            report = try session.client.writeBlocks(uid, first: first, blocks: blocks, verify: !noVerify, option: option)
            try session.checkPersisted()
        } catch {
            try record(uid, first, bytes, flags, result: "failed: \(error)", verified: false, exchanges: session.client.exchanges - before)
            throw error
        }
        try record(uid, first, bytes, flags, result: "ok", verified: report.verified, exchanges: report.exchanges)
        if options.json {
            printJSON(["uid": uid.description, "first": first.description, "blocks": report.blocks, "verified": report.verified,
                       "retries": report.retries, "airTimeMicroseconds": session.reader.airTime.microseconds])
            return
        }
        print("wrote \(report.blocks) block(s) from \(first) of \(uid)\(report.verified ? ", verified by read-back" : "")"
              + (report.retries > 0 ? ", \(report.retries) retry(ies)" : "") + "; \(airLine(session))")
    }

    /// --when-seen: puts the write in the store's queue for the service.
    func queue(_ first: BlockNumber, _ bytes: [UInt8]) throws {
        guard let uidText = options.uid else { throw ValidationError("--when-seen needs --uid: the tag is not on the reader now") }
        let uid: UID
        do { uid = try UID(parsing: uidText) } catch { throw ValidationError("--uid: \(error)") }
        guard bytes.count <= 8 * 256 else { throw ValidationError("--data: \(bytes.count) bytes; a queued write is at most 2048 bytes") }
        let now = Millis.now()
        var expiry: Millis?
        if let expires {
            do { expiry = now + (try DurationText.parse(expires)) } catch { throw ValidationError("--expires: \(error)") }
        }
        let flags = try options.parsedFlags()
        if let flags, flags.contains(.select) { throw ValidationError("--flags: the selected state is a session's; a queued write is addressed") }
        let path: String
        if let store { path = store } else {
            do { path = try AgentConfig.load(config).storePath } catch { throw VLoggerError("\(error)") }
        }
        let s: Store
        do { s = try Store(path: path) } catch { throw VLoggerError("\(error)") }
        defer { s.close() }
        let id: Int64
        do { id = try s.enqueue(QueuedWrite(created: now, uid: uid, first: first, data: bytes, flags: flags, reader: onlyReader, expires: expiry)) } catch {
            throw VLoggerError("\(error)")
        }
        print("queued write \(id): \(bytes.count) bytes from \(first) of \(uid)\(onlyReader.map { " by reader \($0)" } ?? "")\(expiry.map { ", until \(TimeSpec.format($0))" } ?? ""); the service makes it when the tag is seen (vlogger writes list)")
    }

    /// Appends the write to the store's writes table when --store is given.
    func record(_ uid: UID, _ first: BlockNumber, _ data: [UInt8], _ flags: RequestFlags, result: String, verified: Bool, exchanges: Int) throws {
        guard let store else { return }
        do {
            let s = try Store(path: store)
            var batch = Batch()
            batch.writes = [WriteRecord(time: Millis.now(), gateway: gateway, uid: uid, first: first, data: data, flags: flags,
                                        result: result, verified: verified, exchanges: exchanges)]
            try s.write(batch)
            s.close()
        } catch {
            throw VLoggerError("the write was made but could not be recorded in \(store): \(error)")
        }
    }
}
