import Foundation

/// A JSON value read strictly (RFC 8259), for bodies that other systems send: every type exact, a key twice
/// in one object refused (RFC 8259 §4 leaves duplicates to the reader; the last one winning would let a
/// second `"lock"` decide what the first said), integers kept as integers and told apart from any number
/// with a fraction or an exponent (`2.49e2` is not the block 249, `-1e-400` not 0), nesting bounded.
/// Foundation's `JSONSerialization` bridges `false` to 0 through `as? Int`, keeps the last duplicate, and
/// rounds: none of that is acceptable for a request that writes a tag.
public indirect enum StrictJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number written without fraction or exponent, within Int64.
    case integer(Int64)
    /// Any other number, as written.
    case number(String)
    case string(String)
    case array([StrictJSON])
    /// Members in the order written (keys unique).
    case object([(key: String, value: StrictJSON)])

    public static func == (a: StrictJSON, b: StrictJSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.integer(x), .integer(y)): return x == y
        case let (.number(x), .number(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    /// Where and why a body is not strict JSON.
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public let offset: Int
        public let reason: String
        public var description: String { "not valid JSON at byte \(offset): \(reason)" }
    }

    /// The deepest nesting accepted (arrays and objects).
    public static let maxDepth = 32

    /// Parses one JSON text (white space around it allowed, nothing after it).
    public static func parse(_ bytes: [UInt8]) throws(Invalid) -> StrictJSON {
        var p = Parser(bytes: bytes)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.i == bytes.count else { throw Invalid(offset: p.i, reason: "text after the JSON value") }
        return v
    }

    public static func parse(_ data: Data) throws(Invalid) -> StrictJSON { try parse([UInt8](data)) }

    /// The members of an object, nil for any other value.
    public var members: [(key: String, value: StrictJSON)]? {
        if case let .object(m) = self { return m }
        return nil
    }

    /// The value of `key` in an object.
    public subscript(key: String) -> StrictJSON? { members?.first { $0.key == key }?.value }

    /// The JSON type's name, for messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer: return "an integer"
        case .number: return "a number with a fraction or an exponent"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D {
                i += 1
            }
        }

        func fail(_ reason: String) -> Invalid { Invalid(offset: i, reason: reason) }

        mutating func literal(_ word: String, _ v: StrictJSON) throws(Invalid) -> StrictJSON {
            let w = Array(word.utf8)
            guard bytes.count - i >= w.count, Array(bytes[i..<(i + w.count)]) == w else {
                throw fail("expected a value")
            }
            i += w.count
            return v
        }

        mutating func value(depth: Int) throws(Invalid) -> StrictJSON {
            guard i < bytes.count else { throw fail("the text ends where a value was expected") }
            switch bytes[i] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("expected a value")
            }
        }

        mutating func object(depth: Int) throws(Invalid) -> StrictJSON {
            guard depth <= StrictJSON.maxDepth else { throw fail("nested deeper than \(StrictJSON.maxDepth) levels") }
            i += 1
            var members: [(key: String, value: StrictJSON)] = []
            var seen = Set<String>()
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
                    throw fail("expected a key in double quotes")
                }
                let keyAt = i
                let key = try string()
                guard seen.insert(key).inserted else {
                    throw Invalid(offset: keyAt, reason: "the key '\(key)' appears twice in one object")
                }
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
                i += 1
                skipSpace()
                members.append((key, try value(depth: depth)))
                skipSpace()
                guard i < bytes.count else { throw fail("the object is not closed") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(Invalid) -> StrictJSON {
            guard depth <= StrictJSON.maxDepth else { throw fail("nested deeper than \(StrictJSON.maxDepth) levels") }
            i += 1
            var items: [StrictJSON] = []
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try value(depth: depth))
                skipSpace()
                guard i < bytes.count else { throw fail("the array is not closed") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func hex4() throws(Invalid) -> UInt32 {
            guard bytes.count - i >= 4 else { throw fail("\\u needs four hex digits") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
                default: throw fail("\\u needs four hex digits")
                }
                v = v << 4 | UInt32(d)
                i += 1
            }
            return v
        }

        mutating func string() throws(Invalid) -> String {
            i += 1
            var out: [UInt8] = []
            while true {
                guard i < bytes.count else { throw fail("the string is not closed") }
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; break }
                if c < 0x20 {
                    throw fail("a control character (0x\(String(c, radix: 16))) inside a string must be escaped")
                }
                if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
                i += 1
                guard i < bytes.count else { throw fail("the string is not closed") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard bytes.count - i >= 6, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u")
                        else { throw fail("a lone UTF-16 surrogate") }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("a lone UTF-16 surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("a lone UTF-16 surrogate")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("not a Unicode scalar") }
                    out += Array(String(Character(u)).utf8)
                default:
                    throw fail("unknown escape '\\\(Character(Unicode.Scalar(e)))'")
                }
            }
            // Invalid UTF-8 is refused, not repaired.
            guard let s = String(validating: out, as: UTF8.self) else { throw fail("the string is not valid UTF-8") }
            return s
        }

        mutating func number() throws(Invalid) -> StrictJSON {
            let start = i
            func digits() -> Int {
                let s = i
                while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
                return i - s
            }
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count else { throw fail("a number needs digits") }
            if bytes[i] == UInt8(ascii: "0") {
                i += 1
            } else {
                guard digits() > 0 else { throw fail("a number needs digits") }
            }
            var integral = true
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                integral = false
                guard digits() > 0 else { throw fail("a fraction needs digits") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                integral = false
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { throw fail("an exponent needs digits") }
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if integral {
                guard let n = Int64(text) else {
                    throw Invalid(offset: start, reason: "the integer \(text) is out of range")
                }
                return .integer(n)
            }
            return .number(text)
        }
    }
}
