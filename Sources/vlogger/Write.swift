import VLoggerStore
import VLoggerModel
import ArgumentParser
import Foundation
import ISO15693
import Readers
import VLoggerCore

struct Write: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write blocks (read back and verified), with the Option flag where the chip needs it.",
        usage: """
            vlogger write --block <block> --data <hex> [--uid <uid>] [--secrets <file>] [reader options]
              vlogger write --when-seen --uid <uid> (--block <block> --data <hex> | --blocks-from <file>) [--lock --yes]
            """)

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Option(help: "First block (0xF8 or 248).")
    var block: String?

    @Option(help: "Data in hex, a whole number of blocks (e.g. 01020304 for one 4-byte block).")
    var data: String?

    @Option(
        help: ArgumentHelp(
            "With --when-seen: the blocks to write from a file, one a line: block number and hex bytes (0x10 41532D30).",
            discussion:
                "Blank lines and # comments are skipped; every line is one block of the same size; consecutive blocks are one write. Instead of --block and --data."
        ))
    var blocksFrom: String?

    @Flag(help: "Skip the read-back check.")
    var noVerify = false

    @Option(
        help:
            "Record the write (success or failure, flags, exchanges) in this store's writes table; with --when-seen, the store whose queue takes it."
    )
    var store: String?

    @Option(help: "Gateway id for the recorded write.")
    var gateway = "cli"

    @Option(
        help:
            "A secrets file (mode 0600) with the tag's NXP passwords, for blocks a password protects (docs/reference/tag-passwords.md). A wrong password is tried once: the chip is then mute until its power is reset."
    )
    var secrets: String?

    @OptionGroup var queue: QueueOptions

    @Flag(help: "With --when-seen: lock the blocks once written and read back (irreversible: needs --yes).")
    var lock = false

    @Flag(help: "Confirm --lock: locked blocks can never be written again.")
    var yes = false

    func run() throws {
        if lock && !queue.whenSeen {
            throw ValidationError("--lock is for --when-seen; to lock a block now: vlogger lock --block B --yes")
        }
        if lock && !yes {
            throw VLoggerError(
                "locking is irreversible: the blocks could never be written again; run again with --yes to queue the write and the lock"
            )
        }
        if let blocksFrom {
            guard queue.whenSeen else { throw ValidationError("--blocks-from is for --when-seen") }
            guard block == nil && data == nil else {
                throw ValidationError("--blocks-from gives the blocks: leave out --block and --data")
            }
            let text: String
            do { text = try String(contentsOfFile: blocksFrom, encoding: .utf8) } catch {
                throw VLoggerError("--blocks-from \(blocksFrom): cannot read it (\(error.localizedDescription))")
            }
            let runs: [(first: BlockNumber, data: [UInt8])]
            do { runs = try BlockFile.parse(text) } catch {
                throw VLoggerError("--blocks-from \(blocksFrom): \(error)")
            }
            return try queue.enqueue(
                runs.map { ($0.first, $0.data) }, operation: lock ? .writeLock : .write, options: options, store: store)
        }
        guard let block, let data else {
            throw ValidationError("give --block and --data (or --when-seen --blocks-from FILE)")
        }
        let first = try parseBlock(block)
        let bytes: [UInt8]
        do { bytes = try Hex.parse(data) } catch { throw ValidationError("--data: \(error)") }
        guard !bytes.isEmpty else { throw ValidationError("--data is empty") }
        if queue.whenSeen {
            guard bytes.count <= 2048 else {
                throw ValidationError(
                    "--data: \(bytes.count) bytes; a queued write is at most 2048 bytes (--blocks-from splits longer ones)"
                )
            }
            return try queue.enqueue(
                [(first, bytes)], operation: lock ? .writeLock : .write, options: options, store: store)
        }
        try queue.refuseWithoutWhenSeen()
        // A secrets file given is checked before the reader opens (its mode, owner and content), even when the
        // blocks turn out not to need a password.
        if let secrets {
            do { _ = try TagSecrets.load(secrets) } catch { throw VLoggerError("--secrets: \(error)") }
        }
        let session = try options.open()
        let uid = try options.target(session)
        let m = try session.client.memory(of: uid)
        guard bytes.count % m.blockSize == 0 else {
            throw VLoggerError(
                "--data has \(bytes.count) bytes; \(uid) has \(m.blockSize)-byte blocks, so give a multiple of \(m.blockSize)"
            )
        }
        let blocks = stride(from: 0, to: bytes.count, by: m.blockSize).map { Array(bytes[$0..<($0 + m.blockSize)]) }
        let option: Bool? = options.wantsOption ? true : nil
        let report: WriteReport
        let before = session.client.exchanges
        var flags = session.client.baseFlags.union(.address)
        if option ?? m.writeNeedsOption { flags.insert(.option) }
        // The protection status is asked first only where it can matter (a chip with page protection or areas, a
        // password in the secrets file); otherwise the write goes at once, and an error answer that protection may
        // explain asks then (PasswordUnlock.guarded).
        let guarded: PasswordUnlock.Guarded<WriteReport>
        do {
            guarded = try PasswordUnlock.guarded(
                session.client, uid, first: first, count: blocks.count, for: .write, secretsFile: secrets, asset: nil
            ) { () throws(ClientError) in
                try session.client.writeBlocks(uid, first: first, blocks: blocks, verify: !noVerify, option: option)
            }
            if case .done = guarded { try session.checkPersisted() }
        } catch {
            try record(
                uid, first, bytes, flags, result: "failed: \(error)", verified: false,
                exchanges: session.client.exchanges - before)
            throw error
        }
        switch guarded {
        case .done(let r, _): report = r
        case .stopped(.rejected(let why)):
            session.resetField()
            throw VLoggerError("\(uid): \(why); the field was reset, nothing written")
        case .stopped(let outcome):
            switch outcome {
            case .refused(let why), .forbidden(let why): throw VLoggerError("\(uid): \(why)")
            default: throw VLoggerError("\(uid): \(outcome)")
            }
        }
        try record(uid, first, bytes, flags, result: "ok", verified: report.verified, exchanges: report.exchanges)
        if options.json {
            printJSON(
                WriteJSON(
                    uid: uid.description, first: WireBlock(first.int), blocks: report.blocks,
                    verified: report.verified, retries: report.retries, airTimeUs: airMicroseconds(session)))
            return
        }
        print(
            "wrote \(report.blocks) block(s) from \(first) of \(uid)\(report.verified ? ", verified by read-back" : "")"
                + (report.retries > 0 ? ", \(report.retries) retry(ies)" : "") + "; \(airLine(session))")
    }

    /// Appends the write to the store's writes table when --store is given.
    func record(
        _ uid: UID, _ first: BlockNumber, _ data: [UInt8], _ flags: RequestFlags, result: String, verified: Bool,
        exchanges: Int
    ) throws {
        guard let store else { return }
        do {
            let s = try Store(path: store)
            var batch = Batch()
            batch.writes = [
                WriteRecord(
                    time: Millis.now(), gateway: gateway, uid: uid, first: first, data: data, flags: flags,
                    result: result, verified: verified, exchanges: exchanges, origin: "cli")
            ]
            try s.write(batch)
            s.close()
        } catch {
            throw VLoggerError("the write was made but could not be recorded in \(store): \(error)")
        }
    }
}

/// `--when-seen` and what goes with it, for `write` and `lock`: the write is put in the store's queue and the
/// service makes it the next time the tag is in a reader's field.
struct QueueOptions: ParsableArguments {
    @Flag(
        help: ArgumentHelp(
            "Queue it in the store (--store, or --config's) and exit; the service makes it the next time the tag is in a reader's field, and verifies it by reading back.",
            discussion: "Needs --uid. `vlogger writes list` shows the queue and what became of each."))
    var whenSeen = false

    @Option(help: "With --when-seen: the configuration whose store holds the queue (when --store is not given).")
    var config = ConfigPath.found

    @Option(help: "With --when-seen: give up after this long (e.g. 7d); default: never.")
    var expires: String?

    @Option(name: .customLong("only-reader"), help: "With --when-seen: only this reader (its [[reader]] id) makes it.")
    var onlyReader: String?

    func refuseWithoutWhenSeen() throws {
        if expires != nil || onlyReader != nil {
            throw ValidationError("--expires and --only-reader are for --when-seen")
        }
    }

    /// Queues the runs for one tag (all or none) and says what was queued.
    func enqueue(
        _ runs: [(BlockNumber, [UInt8])], operation: QueuedWrite.Operation, options: ReaderOptions, store: String?
    ) throws {
        guard let uidText = options.uid else {
            throw ValidationError("--when-seen needs --uid: the tag is not on the reader now")
        }
        let uid: UID
        do { uid = try UID(parsing: uidText) } catch { throw ValidationError("--uid: \(error)") }
        let now = Millis.now()
        var expiry: Millis?
        if let expires {
            do { expiry = try WriteRequest.expiry(expires, now: now) } catch { throw ValidationError("--\(error)") }
        }
        let flags = try options.parsedFlags()
        if let flags, flags.contains(.select) {
            throw ValidationError("--flags: the selected state is a session's; a queued write is addressed")
        }
        // The configuration names the store (without --store) and the readers a write may be kept for.
        let loaded: AgentConfig? =
            FileManager.default.fileExists(atPath: config) || store == nil
            ? try { () throws -> AgentConfig in
                return try ConfigPath.load(config)
            }() : nil
        if let onlyReader, let loaded, !loaded.readers.contains(where: { $0.id == onlyReader }) {
            throw ValidationError(
                "--only-reader: \(config) has no reader '\(onlyReader)' (\(loaded.readers.map(\.id).joined(separator: ", "))); the write would wait for ever"
            )
        }
        let path = store ?? loaded?.storePath ?? "vlogger.db"
        let s: Store
        do { s = try Store(path: path) } catch { throw VLoggerError("\(error)") }
        defer { s.close() }
        let writes = runs.map {
            QueuedWrite(
                created: now, uid: uid, first: $0.0, data: $0.1, flags: flags, reader: onlyReader, expires: expiry,
                operation: operation, origin: "cli")
        }
        let ids: [Int64]
        do { ids = try s.enqueue(writes) } catch { throw VLoggerError("\(error)") }
        let whom =
            (onlyReader.map { " by reader \($0)" } ?? "")
            + (expiry.map { ", until \((loaded?.localTime ?? LocalTime(zone: TimeZone.current)).dateTime($0))" } ?? "")
        for (id, w) in zip(ids, writes) {
            switch operation {
            case .write: print("queued write \(id): \(w.data.count) bytes from \(w.first) of \(uid)\(whom)")
            case .writeLock:
                print("queued write \(id): \(w.data.count) bytes from \(w.first) of \(uid), then locked\(whom)")
            case .lock: print("queued lock \(id): block \(w.first) of \(uid)\(whom)")
            }
        }
        print("the service makes \(ids.count == 1 ? "it" : "them") when the tag is seen (vlogger writes list)")
    }
}
