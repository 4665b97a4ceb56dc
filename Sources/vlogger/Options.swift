import ArgumentParser
import Foundation
import ISO15693
import Readers
import VLoggerCore
import VLoggerModel

extension ReaderKind: ExpressibleByArgument {}

/// Options shared by every command that talks to a tag.
struct ReaderOptions: ParsableArguments {
    /// `--driver`, the `[[reader]] driver` key's name; `--reader` is its older spelling, still taken (export's
    /// `--reader` is a reader id, which `--reader-id` names here).
    @Option(
        name: [.customLong("driver"), .customLong("reader")],
        help:
            "Reader driver: \(ReaderDrivers.all.map(\.name).joined(separator: ", ")) (`vlogger devices --help` says what each takes); --reader is its older name."
    )
    var reader: ReaderKind?

    @Option(
        name: .customLong("reader-id"),
        help:
            "A configured reader (its [[reader]] id). Default: the configuration's only reader ($VLOGGER_CONFIG, else /etc/vlogger/vlogger.toml), else the simulator."
    )
    var readerID: String?

    @Option(help: "Folder of tag images for a simulated reader (default: $VLOGGER_FIELD or Config/demo-field).")
    var field: String?

    @Option(help: "Hardware reader, as its driver names devices (`vlogger devices --help`).")
    var device: String?

    @Option(help: "UID of the tag, most-significant byte first (E004015012345678). Default: the only tag in the field.")
    var uid: String?

    @Option(
        help: ArgumentHelp(
            "Request flags by name, comma-separated: high, low, dual-subcarrier, address, select, option, protocol-extension; or a byte (0x22).",
            discussion: "Without --flags, commands are addressed at the high data rate with one subcarrier."))
    var flags: String?

    @Flag(help: "Machine-readable JSON output.")
    var json = false

    @Flag(help: "Print every exchange: direction, bytes on air with CRC, air time, meaning.")
    var trace = false

    func parsedFlags() throws -> RequestFlags? {
        guard let flags else { return nil }
        guard !flags.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ValidationError("--flags: empty; name flags (high,address) or give a byte (0x22)")
        }
        do { return try RequestFlags(parsing: flags) } catch { throw ValidationError("--flags: \(error)") }
    }

    /// Opens the reader, applies flags and tracing, and returns the session.
    func open() throws -> ReaderSession {
        let session: ReaderSession
        if let rc = try configuredReader() {
            session = try ReaderSession.open(rc)
        } else {
            session = try ReaderSession.open(kind: reader ?? .default, field: field, device: device)
        }
        if let f = try parsedFlags() {
            session.client.baseFlags = f.intersection([.highDataRate, .dualSubcarrier])
            if f.contains(.select) {
                session.client.addressingMode = .selected
            } else if !f.contains(.address) {
                session.client.addressingMode = .nonAddressed
            }
        }
        if trace {
            let formatter = TraceFormatter { print($0) }
            session.reader.trace = formatter.handle
        }
        return session
    }

    /// The configured reader a tag command uses: --reader-id's, else the configuration's only reader when no
    /// --reader, --field or --device is given; nil: the reader the options name (the simulator by default).
    func configuredReader() throws -> ReaderConfig? {
        guard reader == nil, field == nil, device == nil else {
            if readerID != nil {
                throw ValidationError(
                    "--reader-id names a configured reader: give it without --reader, --field or --device")
            }
            return nil
        }
        let path = ConfigPath.found
        guard FileManager.default.fileExists(atPath: path) else {
            if let id = readerID { throw VLoggerError("--reader-id \(id): \(path): no such configuration file") }
            return nil
        }
        if readerID == nil, path == ConfigPath.checkout { return nil }  // a checkout's demo: the simulator, as before
        let c = try ConfigPath.load(path)
        if let id = readerID {
            guard let rc = c.readers.first(where: { $0.id == id }) else {
                throw VLoggerError(
                    "--reader-id \(id): \(path) has no such reader (\(c.readers.map(\.id).joined(separator: ", ")))")
            }
            return rc
        }
        return c.readers.count == 1 ? c.readers[0] : nil
    }

    /// The target tag; sends Select first when --flags asks for the selected mode.
    func target(_ session: ReaderSession) throws -> UID {
        let uid = try session.target(self.uid)
        if session.client.addressingMode == .selected { try session.client.select(uid) }
        return uid
    }

    var wantsOption: Bool { ((try? parsedFlags()) ?? nil)?.contains(.option) ?? false }
}

func parseBlock(_ text: String) throws -> BlockNumber {
    do { return try BlockNumber(parsing: text) } catch { throw ValidationError("\(error)") }
}

func airLine(_ session: ReaderSession) -> String {
    "air time \(session.reader.airTime) in \(session.client.exchanges) exchange\(session.client.exchanges == 1 ? "" : "s")"
}

/// Prints one line for a person: text that came from outside (a tag, an API client, a register) cannot move
/// the cursor, colour or retitle the terminal, or start a line of its own (`SafeText`).
func say(_ line: String) {
    print(SafeText.terminal(line))
}
