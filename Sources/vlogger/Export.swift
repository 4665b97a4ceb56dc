import ArgumentParser
import Foundation
import VLoggerStore
import VLoggerModel
import ISO15693
import VLoggerSync
import VLoggerOutbox

extension ExportRequest.Table: ExpressibleByArgument {}
extension ExportRequest.Format: ExpressibleByArgument {}

/// Where `vlogger export` reads: this gateway's store, or the fleet's central PostgreSQL ([sync]).
enum ExportSource: String, ExpressibleByArgument, CaseIterable {
    case local, postgres
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export readings, events, tags or writes from the store as CSV or JSON lines.",
        discussion: """
            CSV follows RFC 4180: a header row, CRLF line ends (--lf for LF), cells with commas, quotes or line \
            breaks quoted. Times are ISO 8601 UTC with milliseconds (--local-time: the gateway's zone with its offset); UIDs are printed most-significant byte first; \
            bytes (raw data, hex fields) are hex after \\x (PostgreSQL's bytea form), so pandas, DuckDB and Polars \
            read them as text, not as numbers (--plain-hex leaves the \\x out); each decoded field has its own column. Text cells starting with = + - @ get a leading ' \
            so spreadsheets do not run them; numbers are left alone. Rows stream: memory stays flat for any size.

            --since and --until without an offset are the gateway's local time ([gateway] time-zone, or the \
            system's): --since 2026-11-27 is that day in the plant, and a note on stderr says which instant it is.

            --source postgres reads the central database of [sync] instead: the same tables, options and columns \
            across every gateway (or one, with --gateway); tags and audit_results gain a gateway column there. \
            The asset register is not synced, so --table assets is local only.

            --after-id N (readings, events, writes) exports the rows after local id N in id order, which is commit \
            order, and prints `last-id M` on stderr: a program that polls passes M to its next call and gets every \
            row once, none twice (`vlogger export --after-id 0` the first time). --since is optional with it.
            """
    )

    @OptionGroup var options: ConfigOptions

    @Option(
        help:
            "From this time: ISO 8601 (2026-11-22, 2026-11-22 08:00, 2026-11-22T08:00:00Z; without a zone or offset the gateway's local time, [gateway] time-zone or the system's), or an age (24h, 7d, 30m)."
    )
    var since: String?

    @Option(
        name: .customLong("after-id"),
        help: "Only rows after this local id, in commit order; prints `last-id N` on stderr for the next call.")
    var afterID: Int64?

    @Option(help: "Up to (not including) this time; same forms as --since (local dates too). Default: no end.")
    var until: String?

    @Option(
        help:
            "Table: readings, events, tags (by last seen), writes, assets (the register, by last change), audits or audit_results (by the audit's start)."
    )
    var table: ExportRequest.Table = .readings

    @Option(help: "Only this tag (UID, most-significant byte first).")
    var uid: String?

    @Option(
        name: [.customLong("reader-id"), .customLong("reader")],
        help:
            "Only rows of this reader (its [[reader]] id, as --reader-id in the tag commands); tags by the reader that saw them last. Not for --table writes."
    )
    var reader: String?

    @Option(help: "Output format: csv or jsonl.")
    var format: ExportRequest.Format = .csv

    @Option(
        help:
            "Write to this file (written beside it, then renamed, so a failed export leaves no half file). Default: stdout."
    )
    var output: String?

    @Flag(help: "End CSV lines with LF instead of CRLF.")
    var lf = false

    @Flag(
        name: .customLong("local-time"),
        help: ArgumentHelp(
            "Times in the gateway's zone with their offset (2026-11-27T09:30:00.000+01:00), for people; default UTC (Z).",
            discussion:
                "The zone is [gateway] time-zone of the configuration, or the system's. Data tools read both forms as the same instant."
        ))
    var localTime = false

    @Flag(
        name: .customLong("plain-hex"),
        help: "CSV bytes as bare hex (42494E35), without the \\x that keeps data tools from reading them as numbers.")
    var plainHex = false

    @Flag(
        help: ArgumentHelp(
            "For people: the register's asset_name beside the UID, units in the CSV header, a reading's units in JSON.",
            discussion:
                "CSV: decoded fields' columns are headed `temperature [°C]`; JSON lines: a reading has `\"units\":{\"temperature\":\"°C\"}`. readings, events and tags get an asset_name column (the name in the store's register now). Local store only."
        ))
    var labels = false

    @Option(help: "Read from: local (this gateway's store) or postgres (the fleet's central database of [sync]).")
    var source: ExportSource = .local

    @Option(help: "Only rows of this gateway (its [gateway] id). With --source postgres.")
    var gateway: String?

    func run() async throws {
        let now = Millis.now()
        var request: ExportRequest
        if let afterID {
            guard afterID >= 0 else { throw ValidationError("--after-id: \(afterID) is not a row id (0 or more)") }
            guard ExportRequest.afterIDTables.contains(table) else {
                throw ValidationError(
                    "--after-id: the \(table.rawValue) table is not exported by id; it works with \(ExportRequest.afterIDTables.map(\.rawValue).joined(separator: ", "))"
                )
            }
            guard source == .local else {
                throw ValidationError("--after-id: ids are the local store's; use it without --source postgres")
            }
        } else if since == nil {
            throw ValidationError("--since is needed (or --after-id, for a program that polls)")
        }
        // Dates and times without an offset are the gateway's local ones, as every screen shows them.
        // The configuration when there is one that loads (an export by --store alone needs none): its zone, its
        // readers. --source postgres loads it again, where its errors end the command.
        let config = FileManager.default.fileExists(atPath: options.config) ? try? options.load() : nil
        let zone = config?.localTime ?? LocalTime(zone: TimeZone.current)
        do {
            let s = try since.map { try TimeSpec.parse($0, now: now, zone: zone) }
            if let note = s?.note { FileHandle.standardError.write(Data("note: --since \(note)\n".utf8)) }
            request = ExportRequest(since: s?.millis ?? 0)
            request.afterID = afterID
            if let until {
                let u = try TimeSpec.parse(until, now: now, zone: zone)
                if let note = u.note { FileHandle.standardError.write(Data("note: --until \(note)\n".utf8)) }
                guard u.millis > request.since else {
                    throw ValidationError(
                        "--until (\(TimeSpec.format(u.millis))) is not after --since (\(TimeSpec.format(request.since)))"
                    )
                }
                request.until = u.millis
            }
        } catch let e as TimeSpec.Invalid {
            throw ValidationError("\(e)")
        }
        if let uid {
            guard table != .audits else {
                throw ValidationError("--uid: the audits table has one row per audit; use --table audit_results")
            }
            do { request.uid = try UID(parsing: uid) } catch { throw ValidationError("--uid: \(error)") }
        }
        request.table = table
        if let reader {
            guard [.readings, .events, .tags].contains(table) else {
                throw ValidationError("--reader: the \(table.rawValue) table has no reader column")
            }
            request.reader = reader
            // A reader id the configuration does not have exports nothing: say so (a driver name such as `sim` here
            // is the usual slip), without refusing, as the store may hold rows of a reader removed since.
            if source == .local, let c = config, !c.readers.contains(where: { $0.id == reader }) {
                FileHandle.standardError.write(
                    Data(
                        "note: --reader-id \(reader) is not a [[reader]] of \(options.config) (its readers: \(c.readers.map(\.id).joined(separator: ", "))); rows of such a reader come only from a store that has them\n"
                            .utf8))
            }
        }
        request.format = format
        if labels {
            guard source == .local else {
                throw ValidationError(
                    "--labels: the register and the units are the local store's; use it without --source postgres")
            }
            request.labels = true
        }
        request.jsonFields = TableDescription.jsonFields
        request.crlf = !lf
        if localTime { request.zone = zone }
        if plainHex {
            guard format == .csv else {
                throw ValidationError("--plain-hex: JSON lines have no \\x prefix; it is for CSV")
            }
            request.plainHex = true
        }
        if let gateway {
            guard source == .postgres else {
                throw ValidationError(
                    "--gateway: the local store holds one gateway's rows; use it with --source postgres")
            }
            guard !gateway.isEmpty, gateway.count <= 64 else {
                throw ValidationError("--gateway: '\(gateway.prefix(40))' is not a gateway id (1 to 64 characters)")
            }
        }
        if source == .postgres {
            guard table != .assets else {
                throw ValidationError(
                    "--table assets: the asset register is not synced to the central database; export it without --source"
                )
            }
            let c = try options.load()
            guard let settings = c.outputs.sync else {
                throw VLoggerError(
                    "\(options.config): --source postgres needs a [sync] section (url = \"postgresql://user@host:port/database\")"
                )
            }
            let fields = c.fieldInfos.map(\.name)
            request.hexFields = Set(c.fieldInfos.filter(\.hex).map(\.name))
            try await write(to: output) { fd in
                do {
                    return try await CentralExport.export(
                        request, gateway: gateway, fields: fields, settings: settings, to: fd)
                } catch let e as SyncError {
                    throw VLoggerError(e.message)
                } catch {
                    throw VLoggerError("\(SyncError.from(error, url: settings.url))")
                }
            }
            return
        }
        let store: Store
        do { store = try Store(path: try options.storePath(), readOnly: true) } catch { throw VLoggerError("\(error)") }
        defer { store.close() }
        if store.isImmutableCopy {
            FileHandle.standardError.write(
                Data("note: the store's folder is read-only and no writer has it open: read as the file is\n".utf8))
        }
        var last: Int64?
        try await write(to: output) { fd in
            do {
                let r = try Exporter.exportWithLastID(request, store: store, to: fd)
                last = r.lastID
                return r.rows
            } catch { throw VLoggerError("\(error)") }
        }
        if let last { FileHandle.standardError.write(Data("last-id \(last)\n".utf8)) }
    }

    /// Runs `body` on stdout, or on `output + ".partial"` that is synced and renamed to `output` when it
    /// succeeded (and removed when it did not), so a failed export leaves no half file.
    func write(to output: String?, _ body: (Int32) async throws -> Int) async throws {
        guard let output else {
            _ = try await body(STDOUT_FILENO)
            return
        }
        // Checked before anything is written, so no .partial is left behind for a name that cannot work.
        var isDir: ObjCBool = false
        guard !output.isEmpty else {
            throw ValidationError("--output: empty; name a file, or leave --output out for stdout")
        }
        if output.hasSuffix("/")
            || (FileManager.default.fileExists(atPath: output, isDirectory: &isDir) && isDir.boolValue)
        {
            throw ValidationError("--output: \(output) is a folder; name a file in it")
        }
        let partial = output + ".partial"
        let fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw VLoggerError("cannot create \(partial): \(String(cString: strerror(errno)))") }
        let rows: Int
        do {
            rows = try await body(fd)
            guard fsync(fd) == 0, close(fd) == 0 else {
                throw VLoggerError("cannot finish \(partial): \(String(cString: strerror(errno)))")
            }
        } catch {
            close(fd)
            unlink(partial)
            throw error
        }
        guard rename(partial, output) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(partial)
            throw VLoggerError("cannot rename \(partial) to \(output): \(reason)")
        }
        let noun = table.rawValue.hasSuffix("s") ? String(table.rawValue.dropLast()) : table.rawValue
        FileHandle.standardError.write(
            Data(
                "\(rows) \(rows == 1 ? noun : noun + "s") written to \(output)\n".replacingOccurrences(
                    of: "_", with: " "
                ).utf8))
    }
}
