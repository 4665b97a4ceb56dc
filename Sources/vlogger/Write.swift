import ArgumentParser
import ISO15693
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

    func run() throws {
        let first = try parseBlock(block)
        let bytes: [UInt8]
        do { bytes = try Hex.parse(data) } catch { throw ValidationError("--data: \(error)") }
        guard !bytes.isEmpty else { throw ValidationError("--data is empty") }
        let session = try options.open()
        let uid = try options.target(session)
        let m = try session.client.memory(of: uid)
        guard bytes.count % m.blockSize == 0 else {
            throw VLoggerError("--data has \(bytes.count) bytes; \(uid) has \(m.blockSize)-byte blocks, so give a multiple of \(m.blockSize)")
        }
        let blocks = stride(from: 0, to: bytes.count, by: m.blockSize).map { Array(bytes[$0..<($0 + m.blockSize)]) }
        let option: Bool? = options.wantsOption ? true : nil
        let report = try session.client.writeBlocks(uid, first: first, blocks: blocks, verify: !noVerify, option: option)
        try session.checkPersisted()
        if options.json {
            printJSON(["uid": uid.description, "first": first.description, "blocks": report.blocks, "verified": report.verified,
                       "retries": report.retries, "airTimeMicroseconds": session.reader.airTime.microseconds])
            return
        }
        print("wrote \(report.blocks) block(s) from \(first) of \(uid)\(report.verified ? ", verified by read-back" : "")"
              + (report.retries > 0 ? ", \(report.retries) retry(ies)" : "") + "; \(airLine(session))")
    }
}
