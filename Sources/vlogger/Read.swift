import VLoggerModel
import ArgumentParser
import ISO15693
import Readers
import VLoggerCore

struct Read: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read one block, or --count blocks with as few Read Multiple Blocks as the chip allows.")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Option(help: "First block (0xF8 or 248).")
    var block: String = "0"

    @Option(help: "Number of blocks.")
    var count: Int = 1

    @Flag(help: "Also read each block's lock status (the Option flag).")
    var security = false

    @Option(
        help: ArgumentHelp(
            "A file (mode 0600) holding the NXP privacy password (8 hex digits): a SLIX-L or SLIX2 in privacy mode answers until its power is reset.",
            discussion:
                "GET RANDOM NUMBER and SET PASSWORD are sent non-addressed (a tag in privacy mode does not tell its UID), so only one tag in privacy mode may be in the field. A wrong password is tried once: the chip is then mute until its power is reset, and the field is reset."
        ))
    var privacyPasswordFile: String?

    func run() throws {
        guard (1...65536).contains(count) else {
            throw ValidationError("--count must be 1…65536 (ISO 15693 numbers blocks with at most 16 bits)")
        }
        let first = try parseBlock(block)
        let session = try options.open()
        if let file = privacyPasswordFile {
            let password: [UInt8]
            do { password = try TagSecrets.passwordFile(file) } catch { throw VLoggerError("\(error)") }
            let outcome: ISO15693Client.PasswordOutcome
            do { outcome = try session.client.nxpLeavePrivacy(password: password) } catch {
                throw VLoggerError("leaving privacy mode: \(error)")
            }
            if case .rejected(let why) = outcome {
                session.resetField()
                throw VLoggerError("the privacy password was rejected (\(why)); the field was reset")
            }
        }
        let uid = try options.target(session)
        let blocks = try session.client.readBlocks(
            uid, first: first, count: count, security: security || options.wantsOption)
        if options.json {
            printJSON(
                ReadJSON(uid: uid.description, blocks: blocks.map(BlockJSON.init), airTimeUs: airMicroseconds(session)))
            return
        }
        for b in blocks {
            let ascii = String(b.data.map { (0x20...0x7E).contains($0) ? Character(Unicode.Scalar($0)) : "." })
            print(
                "\(b.number.description.padding(toLength: 6, withPad: " ", startingAt: 0)) \(Hex.format(b.data))  |\(ascii)|"
                    + (b.security.map { $0.isLocked ? "  locked" : "  unlocked" } ?? ""))
        }
        print("\(blocks.count) block(s) of \(uid); \(airLine(session))")
    }
}
