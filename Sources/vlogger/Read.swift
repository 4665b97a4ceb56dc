import VLoggerModel
import ArgumentParser
import ISO15693
import VLoggerCore

struct Read: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read one block, or --count blocks with as few Read Multiple Blocks as the chip allows.")

    @OptionGroup var options: ReaderOptions

    @Option(help: "First block (0xF8 or 248).")
    var block: String = "0"

    @Option(help: "Number of blocks.")
    var count: Int = 1

    @Flag(help: "Also read each block's lock status (the Option flag).")
    var security = false

    func run() throws {
        guard (1...65536).contains(count) else {
            throw ValidationError("--count must be 1…65536 (ISO 15693 numbers blocks with at most 16 bits)")
        }
        let first = try parseBlock(block)
        let session = try options.open()
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
