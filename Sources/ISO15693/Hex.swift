/// The one hex parser and formatter of the project, and the one parser for numbers that may be written
/// in hex (`0xF8`) or decimal (`248`).
public enum Hex {
    /// Formats bytes as upper-case hex, e.g. `E0 04 01 50` (separator " ") or `E0040150` (separator "").
    public static func format<S: Sequence>(_ bytes: S, separator: String = " ") -> String where S.Element == UInt8 {
        var out: [UInt8] = []
        append(bytes, separator: Array(separator.utf8), to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the hex digits of `bytes` as ASCII to `out` (the formatter's core; no String is made).
    public static func append<S: Sequence>(_ bytes: S, separator: [UInt8] = [], to out: inout [UInt8])
    where S.Element == UInt8 {
        out.reserveCapacity(out.count + bytes.underestimatedCount * (2 + separator.count))
        var first = true
        for byte in bytes {
            if !first { out.append(contentsOf: separator) }
            first = false
            out.append(ascii[Int(byte >> 4)])
            out.append(ascii[Int(byte & 0x0F)])
        }
    }

    private static let ascii: [UInt8] = Array("0123456789ABCDEF".utf8)

    private static let digits: [Character] = Array("0123456789ABCDEF")

    /// Parses hex text into bytes. Spaces, tabs, `:`, `-` and `_` between byte pairs are ignored, and a
    /// leading `0x` is accepted. An odd number of digits or any other character is an error.
    public static func parse(_ text: String) throws(ParseError) -> [UInt8] {
        var body = Substring(text.trimmingWhitespace())
        if body.hasPrefix("0x") || body.hasPrefix("0X") { body = body.dropFirst(2) }
        var nibbles: [UInt8] = []
        nibbles.reserveCapacity(body.utf8.count)
        for scalar in body.unicodeScalars {
            switch scalar {
            case " ", "\t", ":", "-", "_", "\n", "\r": continue
            default:
                guard let value = nibble(scalar) else {
                    throw ParseError("'\(text)' is not hex: '\(scalar)' is not a hex digit")
                }
                nibbles.append(value)
            }
        }
        guard nibbles.count % 2 == 0 else {
            throw ParseError(
                "'\(text)' has an odd number of hex digits (\(nibbles.count)); write whole bytes, e.g. 0A not A")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(nibbles.count / 2)
        var i = 0
        while i < nibbles.count {
            bytes.append(nibbles[i] << 4 | nibbles[i + 1])
            i += 2
        }
        return bytes
    }

    /// Parses an unsigned integer written in hex (`0xF8`, `F8h`) or decimal (`248`), at most `max`.
    public static func parseInteger(_ text: String, max: UInt64 = UInt64.max, what: String = "number")
        throws(ParseError) -> UInt64
    {
        let t = text.trimmingWhitespace()
        var value: UInt64?
        if t.hasPrefix("0x") || t.hasPrefix("0X") {
            value = UInt64(t.dropFirst(2), radix: 16)
        } else if t.hasSuffix("h") || t.hasSuffix("H") {
            value = UInt64(t.dropLast(), radix: 16)
        } else {
            value = UInt64(t, radix: 10)
        }
        guard let v = value else {
            throw ParseError("\(what) '\(text)' is neither decimal (248) nor hex (0xF8)")
        }
        guard v <= max else {
            throw ParseError(
                "\(what) '\(text)' is out of range: at most \(max) (0x\(String(max, radix: 16, uppercase: true)))")
        }
        return v
    }

    private static func nibble(_ s: Unicode.Scalar) -> UInt8? {
        switch s.value {
        case 0x30...0x39: return UInt8(s.value - 0x30)
        case 0x41...0x46: return UInt8(s.value - 0x41 + 10)
        case 0x61...0x66: return UInt8(s.value - 0x61 + 10)
        default: return nil
        }
    }
}

/// A piece of text (hex, a UID, a block number, a flag name) could not be parsed. The message says what
/// was wrong and what is expected.
public struct ParseError: Error, CustomStringConvertible, Equatable, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension String {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s = s.dropFirst() }
        while let c = s.last, c.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
