import ArgumentParser
import ISO15693
import VLoggerCore

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

    func validate() throws {
        guard (1...65536).contains(count) else { throw ValidationError("--count must be 1…65536 (ISO 15693 numbers blocks with at most 16 bits)") }
    }

    func run() throws {
        var bytes: [UInt8]
        do { bytes = try Hex.parse(frame.joined(separator: " ")) } catch { throw ValidationError("frame: \(error)") }
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
            do { code = UInt8(try Hex.parseInteger(command, max: 0xFF, what: "command code")) } catch { throw ValidationError("--command: \(error)") }
            let request = try Self.request(for: code, count: count, option: option)
            do { meaning = try Response.decode(bytes, to: request).summary } catch { throw VLoggerError("not a valid answer to \(CommandCode(code).name): \(error)") }
        } else {
            do { meaning = try Request.decode(bytes).summary } catch { throw VLoggerError("not a valid ISO 15693 request: \(error)") }
        }
        if json {
            printJSON(["frame": Hex.format(bytes, separator: ""), "crc": crcNote, "meaning": meaning])
        } else {
            print("\(meaning)\n\(crcNote)")
        }
    }

    /// A request of that command for the decoder to decode the answer against.
    static func request(for code: UInt8, count: Int, option: Bool) throws -> Request {
        let flags: RequestFlags = option ? [.highDataRate, .option] : [.highDataRate]
        let c: Command
        switch code {
        case 0x01: c = .inventory(afi: nil, mask: .none)
        case 0x20: c = .readSingleBlock(0)
        case 0x30: c = .extendedReadSingleBlock(0)
        case 0x23: c = .readMultipleBlocks(first: 0, count: count)
        case 0x33: c = .extendedReadMultipleBlocks(first: 0, count: count)
        case 0x2B: c = .getSystemInformation
        case 0x3B: c = .extendedGetSystemInformation(parameters: 0xFF)
        case 0x2C: c = .getMultipleBlockSecurityStatus(first: 0, count: count)
        case 0x3C: c = .extendedGetMultipleBlockSecurityStatus(first: 0, count: count)
        case 0x21: c = .writeSingleBlock(0, data: [0])
        case 0x22: c = .lockBlock(0)
        case 0x24: c = .writeMultipleBlocks(first: 0, count: 1, data: [0])
        case 0x25, 0x02: c = .select
        case 0x26: c = .resetToReady
        case 0x27: c = .writeAFI(0)
        case 0x28: c = .lockAFI
        case 0x29: c = .writeDSFID(0)
        case 0x2A: c = .lockDSFID
        case 0x31: c = .extendedWriteSingleBlock(0, data: [0])
        case 0x32: c = .extendedLockBlock(0)
        case 0x34: c = .extendedWriteMultipleBlocks(first: 0, count: 1, data: [0])
        case 0xA0...0xDF: c = .custom(code: code, manufacturer: ManufacturerCode(0), parameters: [])
        case 0xE0...0xFF: c = .proprietary(code: code, parameters: [])
        default: c = .other(code: code, parameters: [])
        }
        return Request(c, flags: flags)
    }
}
