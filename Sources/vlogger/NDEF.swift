import ArgumentParser
import VLoggerModel
import Foundation
import ISO15693
import Readers
import Type5NDEF
import VLoggerCore

struct NDEF: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ndef",
        abstract:
            "NDEF on Type 5 tags (NFC Forum T5T mapping): read, write, format, make read-only; decode and encode without a tag.",
        discussion: """
            Examples:
              vlogger ndef read
              vlogger ndef write --text "Pallet 0001" --lang en --uri https://example.com/p/0001
              vlogger ndef encode --text hi            (prints the NDEF message in hex)
              vlogger ndef decode D1010554 02656E6869
              vlogger ndef decode --memory E1400A01 0300FE
            """,
        subcommands: [NDEFRead.self, NDEFWrite.self, NDEFFormat.self, NDEFLock.self, NDEFDecode.self, NDEFEncode.self])
}

/// The records of a message, from the command line. Records keep the order their options were given in.
struct RecordOptions: ParsableArguments {
    @Option(help: "A Text record (repeatable).")
    var text: [String] = []

    @Option(help: "Language code of the Text records (a BCP 47 tag, e.g. en, de-CH, es-419).")
    var lang = "en"

    @Flag(help: "Encode Text records in UTF-16 instead of UTF-8.")
    var utf16 = false

    @Option(
        help: "A URI record (repeatable); the longest of the 36 NFC Forum prefixes (https://www. …) is abbreviated.")
    var uri: [String] = []

    @Option(
        help:
            "A MIME record of this type (e.g. text/plain), its payload from the --file at the same position (repeatable)."
    )
    var mime: [String] = []

    @Option(help: "Payload file of the --mime record at the same position.")
    var file: [String] = []

    @Option(
        help:
            "An NFC Forum External record, domain:type (e.g. example.com:asset), its payload from the --data at the same position (repeatable)."
    )
    var external: [String] = []

    @Option(help: "Payload in hex of the --external record at the same position.")
    var data: [String] = []

    @Flag(help: "Wrap all the records in one Smart Poster record (it needs exactly one --uri).")
    var smartPoster = false

    var isEmpty: Bool { text.isEmpty && uri.isEmpty && mime.isEmpty && external.isEmpty }

    func validate() throws {
        guard mime.count == file.count else {
            throw ValidationError(
                "each --mime needs a --file with its payload (\(mime.count) --mime, \(file.count) --file)")
        }
        guard external.count == data.count else {
            throw ValidationError(
                "each --external needs a --data with its payload in hex (\(external.count) --external, \(data.count) --data)"
            )
        }
        guard NDEFLanguage.isValid(lang) else {
            throw ValidationError(
                "--lang \"\(lang)\": a BCP 47 language tag of at most 63 bytes (subtags of 1 to 8 letters or digits joined by '-', the first 2 to 8 letters), e.g. en, de-CH-1901, es-419"
            )
        }
        if smartPoster && uri.count != 1 {
            throw ValidationError(
                "--smart-poster: a Smart Poster has exactly one URI record (NFC Forum Smart Poster RTD); give one --uri (\(uri.count) given)"
            )
        }
        for m in mime where !m.contains("/") {
            throw ValidationError("--mime \"\(m)\": a MIME type is type/subtype, e.g. text/plain")
        }
        for e in external {
            let parts = e.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ValidationError(
                    "--external \"\(e)\": an NFC Forum External type is domain:type, e.g. example.com:asset")
            }
        }
        for u in uri where u.isEmpty { throw ValidationError("--uri is empty") }
    }

    /// The kinds in the order they were given on the command line (grouped by kind when that cannot be told).
    private func order() -> [String] {
        let names = ["--text": "text", "--uri": "uri", "--mime": "mime", "--external": "external"]
        var kinds: [String] = []
        for arg in CommandLine.arguments.dropFirst() {
            if arg == "--" { break }
            let key = arg.split(separator: "=", maxSplits: 1).first.map(String.init) ?? arg
            if let k = names[key] { kinds.append(k) }
        }
        let counts = ["text": text.count, "uri": uri.count, "mime": mime.count, "external": external.count]
        if counts.allSatisfy({ k, n in kinds.filter { $0 == k }.count == n }) { return kinds }
        return Array(repeating: "text", count: text.count) + Array(repeating: "uri", count: uri.count)
            + Array(repeating: "mime", count: mime.count) + Array(repeating: "external", count: external.count)
    }

    func records() throws -> [NDEFRecord] {
        var next = ["text": 0, "uri": 0, "mime": 0, "external": 0]
        var out: [NDEFRecord] = []
        for kind in order() {
            let i = next[kind, default: 0]
            next[kind] = i + 1
            switch kind {
            case "text": out.append(.text(text[i], language: lang, utf16: utf16))
            case "uri": out.append(.uri(uri[i]))
            case "mime":
                let payload: Data
                do { payload = try Data(contentsOf: URL(fileURLWithPath: file[i])) } catch {
                    throw VLoggerError("--file \(file[i]): cannot read it: \(error.localizedDescription)")
                }
                out.append(.mime(mime[i], Array(payload)))
            default:
                let bytes: [UInt8]
                do { bytes = try Hex.parse(data[i]) } catch { throw ValidationError("--data \"\(data[i])\": \(error)") }
                out.append(.external(external[i], bytes))
            }
        }
        return smartPoster ? [.smartPoster(out)] : out
    }
}

/// Runs an NDEF operation; its error names the tag.
func ndefCall<T>(_ uid: UID, _ body: () throws(NDEFTagError) -> T) throws -> T {
    do { return try body() } catch { throw VLoggerError("\(uid): \(error)") }
}

/// Prints a message's records, one per line or as JSON objects.
func describe(_ records: [NDEFRecord]) -> [String] {
    records.enumerated().map { SafeText.terminal("  \($0.offset + 1). " + NDEFDescription.line($0.element)) }
}

struct NDEFRead: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Read a tag's NDEF message, with its status (read-write / read-only / not supported) and capacity.",
        discussion:
            "Reads the CC, then the NDEF TLV (one read for the first 32 bytes, one more for a longer message), and the lock bits of the blocks it occupies. Exits 1 when the tag is not NDEF-formatted or its message is malformed."
    )

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Flag(help: "Do not read the lock bits (the CC alone then decides read-only).")
    var noLockStatus = false

    func run() throws {
        let session = try options.open()
        let uid = try options.target(session)
        let state: NDEFTagState
        do { state = try session.client.readNDEF(uid, lockStatus: !noLockStatus) } catch {
            throw VLoggerError("\(uid): \(error)")
        }
        var records: [NDEFRecord] = []
        var problem: String?
        if state.status == .notSupported {
            problem = "\(NDEFTagError.notFormatted(state.reason ?? "no capability container"))"
        } else {
            do { records = try state.records() } catch { problem = "\(error)" }
        }
        if options.json {
            printJSON(
                NDEFJSON(
                    uid: uid.description, status: state.status.rawValue, cc: state.area.map { WireHex($0.cc.encode()) },
                    capacity: state.capacity, reason: state.reason, message: WireHex(state.message),
                    messageBytes: state.message.count, records: records.map(NDEFDescription.object), error: problem,
                    airTimeUs: airMicroseconds(session)))
            if problem != nil { throw ExitCode.failure }
            return
        }
        if let problem { throw VLoggerError("\(uid): \(problem)") }
        let head =
            "\(uid): NDEF \(state.status.rawValue)" + (state.reason.map { " (\($0))" } ?? "")
            + ", capacity \(state.capacity) bytes; message \(state.message.count) bytes, \(records.count) record\(records.count == 1 ? "" : "s")"
        print(head)
        describe(records).forEach { print($0) }
        print(airLine(session))
    }
}

struct NDEFWrite: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract:
            "Write an NDEF message (one or more records) the NFC Forum way: length 0, the message, then the real length.",
        discussion: """
            Records are written in the order given. A message larger than the tag's capacity is refused with both \
            sizes. The Option flag is used when the CC asks for Special Frame or the chip needs it.
              vlogger ndef write --text "Pallet 0001" --uri https://example.com/p/0001
              vlogger ndef write --mime application/json --file asset.json
              vlogger ndef write --external example.com:asset --data 0102
            """)

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions
    @OptionGroup var message: RecordOptions

    func validate() throws {
        if message.isEmpty {
            throw ValidationError(
                "give at least one record: --text, --uri, --mime with --file, or --external with --data")
        }
    }

    func run() throws {
        let bytes = NDEFMessage.encode(try message.records())
        let session = try options.open()
        let uid = try options.target(session)
        let report = try ndefCall(uid) { () throws(NDEFTagError) in try session.client.writeNDEF(uid, message: bytes) }
        try session.checkPersisted()
        let back = try session.client.readNDEF(uid)
        guard back.message == bytes else {
            throw VLoggerError(
                "\(uid): the NDEF message reads back as \(back.message.count) bytes (\(Hex.format(back.message.prefix(16)))…), not the \(bytes.count) written"
            )
        }
        if options.json {
            printJSON(
                NDEFJSON(
                    uid: uid.description, capacity: report.capacity, message: WireHex(bytes), messageBytes: bytes.count,
                    blocksWritten: report.blocksWritten, option: report.option, verified: true,
                    airTimeUs: airMicroseconds(session)))
            return
        }
        print(
            "wrote a \(bytes.count)-byte NDEF message to \(uid) (capacity \(report.capacity) bytes): \(report.blocksWritten) block writes"
                + (report.option ? " with the Option flag" : "") + ", read back and verified")
        describe(try NDEFMessage.decode(bytes)).forEach { print($0) }
        print(airLine(session))
    }
}

struct NDEFFormat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "format",
        abstract: "Format a tag for NDEF: a CC sized from its memory, an empty NDEF TLV and a Terminator.",
        discussion: "A tag that already holds a valid CC is refused unless --force (its message would be lost).")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Flag(help: "Format even when the tag already holds an NDEF capability container.")
    var force = false

    @Flag(
        help:
            "On a tag of exactly 2048 bytes with 1-byte block numbers, write the NFC Forum 8-byte CC (E1 40 00 01 00 00 00 FF) instead of the 4-byte one with the MLEN-overflow bit that every stack reads (docs/reference/t5t-cc-layouts.md)."
    )
    var eightByteCC = false

    func run() throws {
        let session = try options.open()
        let uid = try options.target(session)
        let cc = try ndefCall(uid) { () throws(NDEFTagError) in
            try session.client.formatNDEF(uid, force: force, eightByte: eightByteCC)
        }
        try session.checkPersisted()
        let state = try session.client.readNDEF(uid)
        if options.json {
            printJSON(
                NDEFJSON(
                    uid: uid.description, status: state.status.rawValue, cc: WireHex(cc.encode()),
                    capacity: state.capacity, airTimeUs: airMicroseconds(session)))
            return
        }
        print(
            "formatted \(uid): CC \(Hex.format(cc.encode())) (\(cc.length)-byte, data area \(cc.dataAreaBytes) bytes"
                + (cc.specialFrame ? ", Special Frame" : "")
                + "), empty NDEF message; capacity \(state.capacity) bytes; \(airLine(session))")
    }
}

struct NDEFLock: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock",
        abstract:
            "Make a tag's NDEF read-only for ever: CC write access 'never', then Lock Block on the CC and data area (needs --yes)."
    )

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Flag(help: "Confirm: a read-only tag can never be written again.")
    var yes = false

    func run() throws {
        guard yes else {
            throw VLoggerError(
                "making the NDEF read-only is irreversible (the CC says write access never and the blocks are locked); run again with --yes"
            )
        }
        let session = try options.open()
        let uid = try options.target(session)
        let report = try ndefCall(uid) { () throws(NDEFTagError) in try session.client.lockNDEF(uid) }
        try session.checkPersisted()
        let state = try session.client.readNDEF(uid, lockStatus: true)
        if options.json {
            printJSON(
                NDEFJSON(
                    uid: uid.description, status: state.status.rawValue, cc: WireHex(report.cc.encode()),
                    blocksLocked: report.locked, alreadyLocked: report.alreadyLocked, lockProblem: report.lockProblem,
                    airTimeUs: airMicroseconds(session)))
        } else {
            print(
                "\(uid): NDEF \(state.status.rawValue); CC \(Hex.format(report.cc.encode())); \(report.locked) block(s) locked"
                    + (report.alreadyLocked > 0 ? ", \(report.alreadyLocked) already locked" : "")
                    + "; \(airLine(session))")
        }
        if let p = report.lockProblem { throw VLoggerError(p) }
    }
}

struct NDEFDecode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract:
            "Decode an NDEF message, or with --memory a tag memory image from block 0 (CC, TLVs, message). No reader needed.",
        discussion: """
              vlogger ndef decode D1 01 05 54 02 65 6E 68 69
              vlogger ndef decode --memory E1400A01 0300FE
              vlogger ndef decode --memory --input memory.bin   (raw bytes, or hex text)
            """)

    @Argument(help: "The bytes in hex (spaces allowed).")
    var hex: [String] = []

    @Option(help: "Read the bytes from a file: hex text, or raw bytes.")
    var input: String?

    @Flag(help: "The bytes are a tag's memory from block 0 (CC first), not a bare NDEF message.")
    var memory = false

    @Flag(help: "Machine-readable JSON output.")
    var json = false

    func run() throws {
        var bytes: [UInt8]
        if let input {
            guard hex.isEmpty else {
                throw ValidationError("give the bytes either as arguments or with --input, not both")
            }
            guard let data = FileManager.default.contents(atPath: input) else {
                throw VLoggerError("--input \(input): cannot read the file")
            }
            let text = String(decoding: data, as: UTF8.self)
            if let parsed = try? Hex.parse(text.trimmingCharacters(in: .whitespacesAndNewlines)), !parsed.isEmpty {
                bytes = parsed
            } else {
                bytes = Array(data)
            }
        } else {
            guard !hex.isEmpty else { throw ValidationError("give the bytes in hex, or --input FILE") }
            do { bytes = try Hex.parse(hex.joined(separator: " ")) } catch { throw ValidationError("\(error)") }
        }
        var out = NDEFJSON()
        var lines: [String] = []
        if memory {
            let area: NDEFArea
            do { (area, bytes) = try NDEFArea.decode(image: bytes) } catch { throw VLoggerError("\(error)") }
            let cc = area.cc
            out.cc = WireHex(cc.encode())
            out.status = area.status.rawValue
            out.capacity = area.capacity
            lines.append(
                "CC \(Hex.format(cc.encode())): mapping \(cc.majorVersion).\(cc.minorVersion), \(cc.length)-byte, \(cc.twoByteAddressing ? "2-byte block numbers (E2)" : "1-byte block numbers (E1)"), "
                    + "data area \(area.areaBytes) bytes, \(area.status.rawValue)"
                    + (cc.readMultipleBlocks ? ", Read Multiple Blocks" : "") + (cc.lockBlock ? ", Lock Block" : "")
                    + (cc.specialFrame ? ", Special Frame" : ""))
            lines.append(
                area.message.map {
                    "NDEF TLV at byte \(area.tlvOffset): \($0.count)-byte message; capacity \(area.capacity) bytes"
                }
                    ?? "no NDEF TLV; capacity \(area.capacity) bytes")
        }
        let records: [NDEFRecord]
        do { records = try NDEFMessage.decode(bytes) } catch { throw VLoggerError("\(error)") }
        if json {
            out.messageBytes = bytes.count
            out.records = records.map(NDEFDescription.object)
            printJSON(out)
            return
        }
        lines.forEach { print($0) }
        print("\(records.count) record(s), \(bytes.count) bytes")
        describe(records).forEach { print($0) }
    }
}

struct NDEFEncode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode",
        abstract: "Print an NDEF message in hex, built from the same record options as `ndef write`. No reader needed.")

    @OptionGroup var message: RecordOptions

    @Flag(help: "Print it wrapped in its NDEF TLV and a Terminator, as it would sit after the CC.")
    var tlv = false

    @Flag(help: "Machine-readable JSON output.")
    var json = false

    func validate() throws {
        if message.isEmpty {
            throw ValidationError(
                "give at least one record: --text, --uri, --mime with --file, or --external with --data")
        }
    }

    func run() throws {
        let records = try message.records()
        let bytes = NDEFMessage.encode(records)
        let shown = tlv ? TLV.encode(bytes) : bytes
        if json {
            printJSON(
                NDEFJSON(hex: WireHex(shown), messageBytes: bytes.count, records: records.map(NDEFDescription.object)))
            return
        }
        print(Hex.format(shown, separator: ""))
    }
}
