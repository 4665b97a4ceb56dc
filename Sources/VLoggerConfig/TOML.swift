/// A TOML 1.0 reader that keeps the line of every key and value, so configuration errors can point at
/// them. It reads all of TOML 1.0 (tables, arrays of tables, dotted and quoted keys, inline tables,
/// the four string forms, integers in decimal/hex/octal/binary, floats, booleans) except date and time
/// values, which no vlogger setting takes: they are refused with a message to quote them.
public struct TOMLError: Error, Equatable, Sendable, CustomStringConvertible {
    public let line: Int
    public let column: Int
    public let message: String
    public var description: String { "line \(line), column \(column): \(message)" }
}

/// A value with the line it starts on.
public struct TOMLNode: Sendable {
    public var value: TOMLValue
    public var line: Int
    /// Made by `[[header]]` sections (not an array written inline).
    public var isTableArray = false
}

public enum TOMLValue: Sendable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case bool(Bool)
    case array([TOMLNode])
    case table(TOMLTable)

    public var typeName: String {
        switch self {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a float"
        case .bool: return "a boolean"
        case .array: return "an array"
        case .table: return "a table"
        }
    }
}

/// A table: keys in the order they were written, each with its line.
public struct TOMLTable: Sendable {
    public var entries: [(key: String, node: TOMLNode)] = []
    public var line: Int
    enum Origin: Sendable { case implicit, header, dotted, inline, arrayElement }
    var origin: Origin

    init(line: Int, origin: Origin) {
        self.line = line
        self.origin = origin
    }

    public subscript(key: String) -> TOMLNode? {
        entries.first { $0.key == key }?.node
    }

    func index(_ key: String) -> Int? { entries.firstIndex { $0.key == key } }
}

public enum TOML {
    /// Parses a whole document into its root table.
    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        var p = TOMLParser(Array(text.utf8))
        return try p.document()
    }
}

struct TOMLParser {
    let s: [UInt8]
    var i = 0
    var line = 1
    var lineStart = 0
    var root = TOMLTable(line: 1, origin: .header)
    /// Path of the current table (from the last header); array-of-table segments resolve to their last element.
    var current: [String] = []
    /// Arrays and inline tables open around the value being read.
    var depth = 0
    /// How deep values may nest, and how many parts a dotted key or a header may have. Far beyond any
    /// configuration; it keeps a crafted file (40,000 nested arrays in 80 KB) from exhausting the stack.
    static let maxDepth = 64

    init(_ bytes: [UInt8]) {
        s = bytes
        if s.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3; lineStart = 3 }
    }

    func fail(_ message: String, at pos: Int? = nil) -> TOMLError {
        TOMLError(line: line, column: (pos ?? i) - lineStart + 1, message: message)
    }

    var peek: UInt8? { i < s.count ? s[i] : nil }
    func peek(_ k: Int) -> UInt8? { i + k < s.count ? s[i + k] : nil }

    mutating func skipSpaces() {
        while let c = peek, c == 0x20 || c == 0x09 { i += 1 }
    }

    mutating func skipComment() throws(TOMLError) {
        guard peek == UInt8(ascii: "#") else { return }
        while let c = peek, c != 0x0A {
            if c == 0x0D && peek(1) == 0x0A { break }
            if (c < 0x20 && c != 0x09) || c == 0x7F { throw fail("control character in a comment") }
            i += 1
        }
    }

    /// Consumes a newline (LF or CRLF) if there is one.
    mutating func newline() -> Bool {
        if peek == 0x0A { i += 1; line += 1; lineStart = i; return true }
        if peek == 0x0D && peek(1) == 0x0A { i += 2; line += 1; lineStart = i; return true }
        return false
    }

    mutating func endOfLine() throws(TOMLError) {
        skipSpaces()
        try skipComment()
        if peek == nil { return }
        guard newline() else { throw fail("expected the end of the line, found '\(Self.show(peek))'") }
    }

    static func show(_ c: UInt8?) -> String {
        guard let c else { return "end of file" }
        if c >= 0x20 && c < 0x7F { return String(UnicodeScalar(c)) }
        return String(format: "0x%02X", c)
    }

    mutating func document() throws(TOMLError) -> TOMLTable {
        while true {
            skipSpaces()
            try skipComment()
            if peek == nil { break }
            if newline() { continue }
            if peek == UInt8(ascii: "[") {
                try header()
            } else {
                try keyValue(into: current)
            }
            try endOfLine()
        }
        return root
    }

    // MARK: Keys

    mutating func key() throws(TOMLError) -> [String] {
        var parts: [String] = []
        while true {
            skipSpaces()
            guard let c = peek else { throw fail("expected a key") }
            if c == UInt8(ascii: "\"") {
                parts.append(try basicString())
            } else if c == UInt8(ascii: "'") {
                parts.append(try literalString())
            } else {
                let start = i
                while let c = peek, Self.isBare(c) { i += 1 }
                guard i > start else { throw fail("expected a key, found '\(Self.show(peek))'") }
                parts.append(String(decoding: s[start..<i], as: UTF8.self))
            }
            skipSpaces()
            guard peek == UInt8(ascii: ".") else { return parts }
            guard parts.count < Self.maxDepth else { throw fail("a dotted key of more than \(Self.maxDepth) parts") }
            i += 1
        }
    }

    static func isBare(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x5F
    }

    // MARK: Tables

    mutating func header() throws(TOMLError) {
        let headerLine = line
        i += 1
        let isArray = peek == UInt8(ascii: "[")
        if isArray { i += 1 }
        let path = try key()
        guard peek == UInt8(ascii: "]") else { throw fail("expected ']' to close the table header") }
        i += 1
        if isArray {
            guard peek == UInt8(ascii: "]") else { throw fail("expected ']]' to close the array-of-tables header") }
            i += 1
        }
        let name = path.joined(separator: ".")
        var doc = root
        defer { root = doc }
        try withTable(root: &doc, path: Array(path.dropLast())) { (t: inout TOMLTable) throws(TOMLError) in
            let last = path[path.count - 1]
            if isArray {
                let element = TOMLNode(
                    value: .table(TOMLTable(line: headerLine, origin: .arrayElement)), line: headerLine)
                if let k = t.index(last) {
                    guard case var .array(items) = t.entries[k].node.value, t.entries[k].node.isTableArray else {
                        throw fail(
                            "[[\(name)]]: \(name) is already defined as \(t.entries[k].node.value.typeName) at line \(t.entries[k].node.line)"
                        )
                    }
                    items.append(element)
                    t.entries[k].node.value = .array(items)
                } else {
                    t.entries.append((last, TOMLNode(value: .array([element]), line: headerLine, isTableArray: true)))
                }
            } else if let k = t.index(last) {
                guard case var .table(existing) = t.entries[k].node.value else {
                    throw fail(
                        "[\(name)]: \(name) is already defined as \(t.entries[k].node.value.typeName) at line \(t.entries[k].node.line)"
                    )
                }
                guard existing.origin == .implicit else {
                    throw fail("table [\(name)] is defined twice (first at line \(existing.line))")
                }
                existing.origin = .header
                existing.line = headerLine
                t.entries[k].node = TOMLNode(value: .table(existing), line: headerLine)
            } else {
                t.entries.append(
                    (last, TOMLNode(value: .table(TOMLTable(line: headerLine, origin: .header)), line: headerLine)))
            }
        }
        current = path
    }

    /// Runs `body` on the table at `path` under `table`, creating implicit tables on the way; an array of
    /// tables on the way resolves to its last element.
    func withTable(
        root table: inout TOMLTable, path: [String], origin: TOMLTable.Origin = .implicit,
        _ body: (inout TOMLTable) throws(TOMLError) -> Void
    ) throws(TOMLError) {
        guard let first = path.first else { return try body(&table) }
        let rest = Array(path.dropFirst())
        if let k = table.index(first) {
            switch table.entries[k].node.value {
            case var .table(sub):
                if sub.origin == .inline {
                    throw fail("\(first) is an inline table (line \(sub.line)) and cannot be extended")
                }
                try withTable(root: &sub, path: rest, origin: origin, body)
                table.entries[k].node.value = .table(sub)
            case var .array(items) where table.entries[k].node.isTableArray:
                guard case var .table(last)? = items.last?.value else { throw fail("\(first) is not a table") }
                try withTable(root: &last, path: rest, origin: origin, body)
                items[items.count - 1].value = .table(last)
                table.entries[k].node.value = .array(items)
            default:
                throw fail(
                    "\(first) is already \(table.entries[k].node.value.typeName) (line \(table.entries[k].node.line)), not a table"
                )
            }
        } else {
            var sub = TOMLTable(line: line, origin: origin)
            try withTable(root: &sub, path: rest, origin: origin, body)
            table.entries.append((first, TOMLNode(value: .table(sub), line: line)))
        }
    }

    /// `key = value` into the table at `path`.
    mutating func keyValue(into path: [String]) throws(TOMLError) {
        let keyLine = line
        let keyPos = i
        let k = try key()
        guard peek == UInt8(ascii: "=") else { throw fail("expected '=' after the key \(k.joined(separator: "."))") }
        i += 1
        skipSpaces()
        let v = try value()
        let node = TOMLNode(value: v, line: keyLine)
        let target = path + k.dropLast()
        let lastKey = k[k.count - 1]
        let err = fail("\(k.joined(separator: ".")) is defined twice", at: keyPos)
        var doc = root
        defer { root = doc }
        try withTable(root: &doc, path: target, origin: .dotted) { (t: inout TOMLTable) throws(TOMLError) in
            if let j = t.index(lastKey) {
                throw TOMLError(
                    line: err.line, column: err.column,
                    message: "\(err.message) (first at line \(t.entries[j].node.line))")
            }
            t.entries.append((lastKey, node))
        }
    }

    // MARK: Values

    mutating func value() throws(TOMLError) -> TOMLValue {
        guard let c = peek else { throw fail("expected a value") }
        switch c {
        case UInt8(ascii: "\""):
            if peek(1) == c && peek(2) == c { return .string(try multilineBasic()) }
            return .string(try basicString())
        case UInt8(ascii: "'"):
            if peek(1) == c && peek(2) == c { return .string(try multilineLiteral()) }
            return .string(try literalString())
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            guard depth < Self.maxDepth else {
                throw fail("arrays and inline tables nest more than \(Self.maxDepth) deep here; no setting needs that")
            }
            depth += 1
            defer { depth -= 1 }
            return c == UInt8(ascii: "[") ? try array() : try inlineTable()
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            if match("true") { return .bool(true) }
            if match("false") { return .bool(false) }
            throw fail("expected a value; strings need quotes")
        default:
            return try number()
        }
    }

    mutating func match(_ word: String) -> Bool {
        let w = Array(word.utf8)
        guard i + w.count <= s.count, Array(s[i..<(i + w.count)]) == w else { return false }
        if let next = i + w.count < s.count ? s[i + w.count] : nil, Self.isBare(next) { return false }
        i += w.count
        return true
    }

    mutating func number() throws(TOMLError) -> TOMLValue {
        let start = i
        while let c = peek, Self.isBare(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":")
        { i += 1 }
        let text = String(decoding: s[start..<i], as: UTF8.self)
        guard !text.isEmpty else { throw fail("expected a value, found '\(Self.show(peek))'; strings need quotes") }
        let bytes = Array(text.utf8)
        if text.contains(":")
            || (bytes.count >= 5 && bytes[4] == UInt8(ascii: "-")
                && bytes[0...3].allSatisfy { $0 >= 0x30 && $0 <= 0x39 })
        {
            throw fail("date and time values are not used by vlogger; write \(text) as a quoted string", at: start)
        }
        var body = text
        var sign: Int64 = 1
        if body.hasPrefix("+") { body.removeFirst() } else if body.hasPrefix("-") { body.removeFirst(); sign = -1 }
        switch body {
        case "inf": return .float(Double(sign) * .infinity)
        case "nan": return .float(.nan)
        default: break
        }
        func digitsOK(_ d: String, _ allowed: (Character) -> Bool) -> Bool {
            !d.isEmpty && !d.hasPrefix("_") && !d.hasSuffix("_") && !d.contains("__")
                && d.allSatisfy { $0 == "_" || allowed($0) }
        }
        for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] where body.hasPrefix(prefix) {
            let d = String(body.dropFirst(2))
            guard sign == 1, text.first != "+", digitsOK(d, { $0.isHexDigit && Int(String($0), radix: radix) != nil }),
                let v = UInt64(d.replacingOccurrences(of: "_", with: ""), radix: radix), v <= UInt64(Int64.max)
            else {
                throw fail("\(text) is not a valid integer", at: start)
            }
            return .integer(Int64(v))
        }
        let isFloat = body.contains(".") || body.contains("e") || body.contains("E")
        if !isFloat {
            guard digitsOK(body, { $0.isASCII && $0.isNumber }), !(body.count > 1 && body.hasPrefix("0")),
                let v = Int64(body.replacingOccurrences(of: "_", with: ""))
            else {
                throw fail(
                    "\(text) is not a valid number (integers have no leading zeros; strings need quotes)", at: start)
            }
            return .integer(sign * v)
        }
        let plain = body.replacingOccurrences(of: "_", with: "")
        let mantissa = plain.split(whereSeparator: { $0 == "e" || $0 == "E" }).first.map(String.init) ?? ""
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        guard !body.contains("_.") && !body.contains("._"), parts.allSatisfy({ !$0.isEmpty }),
            !(parts[0].count > 1 && parts[0].hasPrefix("0")), let v = Double(plain)
        else {
            throw fail("\(text) is not a valid number", at: start)
        }
        return .float(Double(sign) * v)
    }

    mutating func array() throws(TOMLError) -> TOMLValue {
        i += 1
        var items: [TOMLNode] = []
        while true {
            try skipWhitespaceAndComments()
            if peek == UInt8(ascii: "]") { i += 1; return .array(items) }
            let l = line
            items.append(TOMLNode(value: try value(), line: l))
            try skipWhitespaceAndComments()
            if peek == UInt8(ascii: ",") { i += 1; continue }
            guard peek == UInt8(ascii: "]") else {
                throw fail("expected ',' or ']' in the array, found '\(Self.show(peek))'")
            }
        }
    }

    mutating func skipWhitespaceAndComments() throws(TOMLError) {
        while true {
            skipSpaces()
            try skipComment()
            if !newline() { return }
        }
    }

    mutating func inlineTable() throws(TOMLError) -> TOMLValue {
        let open = line
        i += 1
        // Parse into a scratch root, then mark the result inline (closed to later additions).
        let savedRoot = root, savedCurrent = current
        root = TOMLTable(line: open, origin: .inline)
        current = []
        defer { root = savedRoot; current = savedCurrent }
        skipSpaces()
        if peek == UInt8(ascii: "}") { i += 1; return .table(root) }
        while true {
            skipSpaces()
            try keyValue(into: [])
            skipSpaces()
            if peek == UInt8(ascii: ",") { i += 1; continue }
            guard peek == UInt8(ascii: "}") else {
                throw fail("expected ',' or '}' in the inline table (inline tables stay on one line)")
            }
            i += 1
            var t = root
            t.origin = .inline
            return .table(t)
        }
    }

    // MARK: Strings

    mutating func basicString() throws(TOMLError) -> String {
        i += 1
        var out = [UInt8]()
        while true {
            guard let c = peek, c != 0x0A else { throw fail("unterminated string") }
            i += 1
            if c == UInt8(ascii: "\"") { break }
            if c == UInt8(ascii: "\\") { try escape(into: &out); continue }
            if (c < 0x20 && c != 0x09) || c == 0x7F { throw fail("control character in a string", at: i - 1) }
            out.append(c)
        }
        return try utf8(out)
    }

    mutating func escape(into out: inout [UInt8]) throws(TOMLError) {
        guard let e = peek else { throw fail("unterminated escape") }
        i += 1
        switch e {
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            let n = e == UInt8(ascii: "u") ? 4 : 8
            guard i + n <= s.count, let v = UInt32(String(decoding: s[i..<(i + n)], as: UTF8.self), radix: 16),
                let scalar = Unicode.Scalar(v)
            else { throw fail("invalid \\\(Self.show(e)) escape") }
            i += n
            out += Array(String(Character(scalar)).utf8)
        default:
            throw fail("invalid escape \\\(Self.show(e))", at: i - 2)
        }
    }

    mutating func literalString() throws(TOMLError) -> String {
        i += 1
        let start = i
        while true {
            guard let c = peek, c != 0x0A else { throw fail("unterminated string") }
            if c == UInt8(ascii: "'") { break }
            if (c < 0x20 && c != 0x09) || c == 0x7F { throw fail("control character in a string") }
            i += 1
        }
        let out = Array(s[start..<i])
        i += 1
        return try utf8(out)
    }

    mutating func multilineBasic() throws(TOMLError) -> String {
        i += 3
        _ = newline()
        var out = [UInt8]()
        while true {
            guard let c = peek else { throw fail("unterminated multi-line string") }
            if c == UInt8(ascii: "\""), peek(1) == c, peek(2) == c {
                i += 3
                // Up to two more quotes belong to the content.
                var extra = 0
                while peek == UInt8(ascii: "\""), extra < 2 { out.append(c); i += 1; extra += 1 }
                return try utf8(out)
            }
            if newline() { out.append(0x0A); continue }
            i += 1
            if c == UInt8(ascii: "\\") {
                // Line-ending backslash: trim the newline and the whitespace after it.
                var j = i
                while j < s.count, s[j] == 0x20 || s[j] == 0x09 { j += 1 }
                if j < s.count, s[j] == 0x0A || s[j] == 0x0D {
                    i = j
                    while true {
                        skipSpaces()
                        if !newline() { break }
                    }
                    continue
                }
                try escape(into: &out)
                continue
            }
            if (c < 0x20 && c != 0x09) || c == 0x7F { throw fail("control character in a string", at: i - 1) }
            out.append(c)
        }
    }

    mutating func multilineLiteral() throws(TOMLError) -> String {
        i += 3
        _ = newline()
        var out = [UInt8]()
        while true {
            guard let c = peek else { throw fail("unterminated multi-line string") }
            if c == UInt8(ascii: "'"), peek(1) == c, peek(2) == c {
                i += 3
                var extra = 0
                while peek == UInt8(ascii: "'"), extra < 2 { out.append(c); i += 1; extra += 1 }
                return try utf8(out)
            }
            if newline() { out.append(0x0A); continue }
            if (c < 0x20 && c != 0x09) || c == 0x7F { throw fail("control character in a string") }
            out.append(c)
            i += 1
        }
    }

    func utf8(_ bytes: [UInt8]) throws(TOMLError) -> String {
        guard let str = String(validating: bytes, as: UTF8.self) else { throw fail("string is not valid UTF-8") }
        return str
    }
}
