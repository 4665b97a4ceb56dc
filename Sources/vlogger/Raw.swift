import VLoggerModel
import ArgumentParser
import ISO15693
import Readers

struct Raw: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a raw frame (flags, command, parameters in hex; the reader adds the CRC) and print the answer.",
        discussion: "Example: vlogger raw 26 01 00   (Inventory, 1 slot).  vlogger raw --write 02 21 05 01020304")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Argument(help: "The frame in hex, without CRC.")
    var frame: [String]

    @Flag(help: "Wait as for a write-alike command (programming time; an EOF after the wait with the Option flag).")
    var write = false

    @Flag(
        help:
            "Confirm a frame whose command cannot be undone (Lock Block, Lock AFI/DSFID, Extended Lock Block) or that is a custom or proprietary command (0xA0-0xFF) other than a known read."
    )
    var yes = false

    /// Why `frame` must be confirmed with --yes (ISO15693 knows which commands change a tag).
    static func irreversible(_ frame: [UInt8]) -> String? { CommandCode.confirmationNeeded(for: frame) }

    func run() throws {
        let bytes: [UInt8]
        do { bytes = try Hex.parse(frame.joined(separator: " ")) } catch { throw ValidationError("frame: \(error)") }
        guard !bytes.isEmpty else { throw ValidationError("the frame is empty") }
        if let what = Self.irreversible(bytes), !yes {
            throw ValidationError("this frame is \(what); add --yes to send it")
        }
        let session = try options.open()
        let wait: ResponseWait = write ? .writeAlike(optionFlag: bytes[0] & 0x40 != 0) : .standard
        let answer = try session.client.raw(bytes, wait: wait)
        let meaning = (try? Request.decode(bytes)).flatMap { try? Response.decode(answer, to: $0).summary } ?? ""
        if options.json {
            printJSON(
                RawJSON(request: WireHex(bytes), response: WireHex(answer), meaning: meaning.isEmpty ? nil : meaning))
        } else {
            print("<< \(Hex.format(answer))\(meaning.isEmpty ? "" : "  (\(meaning))")")
        }
        // The tag's error flag (response flags bit 0, ISO/IEC 15693-3): the command failed on the tag.
        if let flags = answer.first, flags & 0x01 != 0 {
            throw VLoggerError(
                "the tag answered with its error flag"
                    + (answer.count > 1 ? ", error code 0x\(Hex.format([answer[1]]))" : ""))
        }
    }
}
