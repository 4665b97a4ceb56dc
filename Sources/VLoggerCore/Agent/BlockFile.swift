import Foundation
import ISO15693

/// The blocks of one tag to write, from a file (`vlogger write --when-seen --blocks-from FILE`): one block a
/// line, its number and its bytes in hex, separated by spaces, a comma, a colon or `=`:
///
///     # asset label, blocks 0x10…0x12
///     0x10  41 53 2D 30
///     0x11: 30303432
///     18,00000000
///
/// Blank lines and `#` comments are skipped. Every line has the same number of bytes (one block); a block
/// appears once. Consecutive blocks become one write (at most `maxRun` bytes each, else split).
public enum BlockFile {
    public struct Invalid: Error, CustomStringConvertible, Sendable { public let description: String }

    /// The runs to write: first block and whole blocks' bytes, in block order.
    public static func parse(_ text: String, maxRun: Int = 2048) throws(Invalid) -> [(
        first: BlockNumber, data: [UInt8]
    )] {
        guard text.utf8.count <= 1 << 20 else {
            throw Invalid(
                description: "the file is larger than 1 MiB; a tag has at most 65,536 blocks of 32 bytes, one a line")
        }
        var blocks: [(number: Int, data: [UInt8], line: Int)] = []
        var size: (bytes: Int, line: Int)?
        var lineOf: [Int: Int] = [:]
        // Lines end in LF, CRLF or a lone CR. A Character that is "\r\n" is not "\n": split on all three, by
        // Character, so that a file saved on Windows is read line by line.
        for (i, raw) in text.split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        ).enumerated() {
            let n = i + 1
            if let odd = raw.unicodeScalars.first(where: {
                ($0.value < 0x20 && $0 != "\t") || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028
                    || $0.value == 0x2029
            }) {
                throw Invalid(
                    description:
                        "line \(n): a control character U+\(String(format: "%04X", odd.value)) in the line; one block a line, lines ended by a line feed"
                )
            }
            var line = Substring(raw)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let t = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if t.isEmpty { continue }
            guard let sep = t.firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "," || $0 == ":" || $0 == "=" })
            else {
                throw Invalid(description: "line \(n): expected a block number and its bytes in hex (0x10 41532D30)")
            }
            let numberText = String(t[..<sep])
            let rest = t[t.index(after: sep)...].drop { $0 == " " || $0 == "\t" || $0 == "," || $0 == ":" || $0 == "=" }
            let number: BlockNumber
            do { number = try BlockNumber(parsing: numberText) } catch {
                throw Invalid(description: "line \(n): block '\(numberText)': \(error)")
            }
            let bytes: [UInt8]
            do { bytes = try Hex.parse(String(rest)) } catch { throw Invalid(description: "line \(n): data: \(error)") }
            guard (1...32).contains(bytes.count) else {
                throw Invalid(description: "line \(n): \(bytes.count) bytes; a block has 1 to 32")
            }
            if let size, size.bytes != bytes.count {
                throw Invalid(
                    description:
                        "line \(n): \(bytes.count) bytes, but line \(size.line) has \(size.bytes); every line is one block of the tag"
                )
            }
            size = size ?? (bytes.count, n)
            if let earlier = lineOf[number.int] {
                throw Invalid(description: "line \(n): block \(number) is already on line \(earlier)")
            }
            lineOf[number.int] = n
            blocks.append((number.int, bytes, n))
        }
        guard let size else { throw Invalid(description: "no blocks in the file (one a line: 0x10 41532D30)") }
        let perRun = max(1, maxRun / size.bytes)
        var out: [(first: BlockNumber, data: [UInt8])] = []
        var start = -2, count = 0
        for b in blocks.sorted(by: { $0.number < $1.number }) {
            if b.number == start + count, count < perRun, var last = out.popLast() {
                last.data += b.data
                out.append(last)
                count += 1
            } else {
                guard let first = BlockNumber(exactly: b.number) else { continue }
                out.append((first, b.data))
                (start, count) = (b.number, 1)
            }
        }
        return out
    }
}
