import VLoggerModel
import ArgumentParser
import ISO15693
import Readers

struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Explain a frame as sent on air (CRC included): flags, command, parameters. No reader needed.",
        discussion: """
            A CRC mismatch is reported and exits non-zero. Examples:
              vlogger decode 26 01 00 F6 0A
              vlogger decode --response --command 0x20 00 01 02 03 04 <crc>
            """)

    @Argument(help: "The frame in hex.")
    var frame: [String]

    @Flag(help: "The frame has no CRC (a capture that stripped it).")
    var noCrc = false

    @Flag(help: "The frame is a tag's answer; needs --command.")
    var response = false

    @Option(help: "With --response: the command code it answers (e.g. 0x20, 0x2B).")
    var command: String?

    @Option(help: "With --response to a multiple-block command: number of blocks asked for.")
    var count: Int = 1

    @Flag(help: "With --response: the request had the Option flag (security status before each block).")
    var option = false

    @Flag(help: "Machine-readable JSON output.")
    var json = false

    @Option(
        help: ArgumentHelp(
            "iso15693 (a frame on air), or a driver's host protocol: \(Self.hostProtocols.joined(separator: ", ")).",
            discussion: ReaderDrivers.all.filter { $0.capabilities.contains(.hostProtocol) }.map {
                "\($0.name): \($0.summary); the frame's CRC is checked"
            }.joined(separator: "; ")))
    var `protocol`: String = "iso15693"

    @Flag(help: "With a host protocol: the frame is the reader's reply (it has a STATUS byte).")
    var reply = false

    /// The drivers with a host protocol of their own.
    static var hostProtocols: [String] {
        ReaderDrivers.all.filter { $0.capabilities.contains(.hostProtocol) }.map(\.name)
    }

    func validate() throws {
        guard `protocol` == "iso15693" || Self.hostProtocols.contains(`protocol`) else {
            throw ValidationError(
                "--protocol: '\(`protocol`)' is not iso15693 or a host protocol (\(Self.hostProtocols.joined(separator: ", ")))"
            )
        }
        guard (1...65536).contains(count) else {
            throw ValidationError("--count must be 1…65536 (ISO 15693 numbers blocks with at most 16 bits)")
        }
    }

    func run() throws {
        var bytes: [UInt8]
        do { bytes = try Hex.parse(frame.joined(separator: " ")) } catch { throw ValidationError("frame: \(error)") }
        if `protocol` != "iso15693", let driver = ReaderDrivers.named(`protocol`) {
            guard !response, !noCrc else {
                throw ValidationError(
                    "--protocol \(`protocol`): use --reply for a reader's reply; host frames always carry their CRC")
            }
            do { print(try driver.explainHostFrame(bytes, reply: reply).joined(separator: "\n")) } catch {
                throw VLoggerError("\(error)")
            }
            return
        }
        guard !reply else {
            throw ValidationError(
                "--reply is for a host protocol (--protocol \(Self.hostProtocols.first ?? "NAME")); an ISO 15693 answer is --response --command CODE"
            )
        }
        var crcNote = "no CRC (--no-crc)"
        if !noCrc {
            do {
                bytes = try CRC16.strip(bytes)
                crcNote = "CRC ok"
            } catch {
                throw VLoggerError("\(error)")
            }
        }
        let meaning: String
        if response {
            guard let command else { throw ValidationError("--response needs --command CODE (the command it answers)") }
            let code: UInt8
            do { code = UInt8(try Hex.parseInteger(command, max: 0xFF, what: "command code")) } catch {
                throw ValidationError("--command: \(error)")
            }
            let request = try Self.request(for: code, count: count, option: option)
            do { meaning = try Response.decode(bytes, to: request).summary } catch {
                throw VLoggerError("not a valid answer to \(CommandCode(code).name): \(error)")
            }
        } else {
            do { meaning = try Request.decode(bytes).summary } catch {
                throw VLoggerError("not a valid ISO 15693 request: \(error)")
            }
        }
        if json {
            printJSON(DecodeJSON(frame: WireHex(bytes), crc: crcNote, meaning: meaning))
        } else {
            print("\(meaning)\n\(crcNote)")
        }
    }

    /// A request of that command for the decoder to decode the answer against.
    static func request(for code: UInt8, count: Int, option: Bool) throws -> Request {
        let flags: RequestFlags = option ? [.highDataRate, .option] : [.highDataRate]
        let c = Command.answered(code: code, count: count)
        return Request(c, flags: flags)
    }
}
