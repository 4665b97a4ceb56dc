/// Reads the members of a JSON object as they are stored (a reading's `decoded` column), without building a
/// dictionary: each top-level key and the text of its value, in order. The export takes the configured fields
/// from it, one pass per row.
public enum JSONMembers {
    /// Calls `body(key, value)` with the byte ranges of each top-level member of the object in `p`: the key
    /// without its quotes (escapes left in), the value as written. Returns false for text that is not one JSON
    /// object (the members found before the fault were handed over).
    @discardableResult
    public static func scan(_ p: UnsafeBufferPointer<UInt8>, _ body: (Range<Int>, Range<Int>) -> Void) -> Bool {
        var i = skipSpace(p, 0)
        guard i < p.count, p[i] == 0x7B else { return false }
        i = skipSpace(p, i + 1)
        if i < p.count, p[i] == 0x7D { return skipSpace(p, i + 1) == p.count }
        while i < p.count {
            guard p[i] == 0x22, let keyEnd = stringEnd(p, i) else { return false }
            let key = (i + 1)..<(keyEnd - 1)
            i = skipSpace(p, keyEnd)
            guard i < p.count, p[i] == 0x3A else { return false }
            i = skipSpace(p, i + 1)
            guard let valueEnd = valueEnd(p, i) else { return false }
            body(key, i..<valueEnd)
            i = skipSpace(p, valueEnd)
            guard i < p.count else { return false }
            if p[i] == 0x7D { return skipSpace(p, i + 1) == p.count }
            guard p[i] == 0x2C else { return false }
            i = skipSpace(p, i + 1)
        }
        return false
    }

    /// Whether the key at `range` (as `scan` gives it) is `name` (UTF-8), escapes decoded.
    public static func key(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, is name: [UInt8]) -> Bool {
        if !p[range].contains(0x5C) { return p[range].elementsEqual(name) }
        return unescape(p, range).map { $0 == name } ?? false
    }

    /// The UTF-8 of the JSON string whose text without quotes is at `range`; nil for a malformed escape.
    public static func unescape(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var i = range.lowerBound
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= range.upperBound else { return nil }
            var v: UInt32 = 0
            for j in at..<(at + 4) {
                let c = p[j]
                let d: UInt8
                switch c {
                case 0x30...0x39: d = c - 0x30
                case 0x41...0x46: d = c - 0x37
                case 0x61...0x66: d = c - 0x57
                default: return nil
                }
                v = v << 4 | UInt32(d)
            }
            return v
        }
        while i < range.upperBound {
            let c = p[i]
            guard c == 0x5C else {
                out.append(c)
                i += 1
                continue
            }
            guard i + 1 < range.upperBound else { return nil }
            let e = p[i + 1]
            i += 2
            switch e {
            case 0x22, 0x5C, 0x2F: out.append(e)
            case 0x62: out.append(0x08)
            case 0x66: out.append(0x0C)
            case 0x6E: out.append(0x0A)
            case 0x72: out.append(0x0D)
            case 0x74: out.append(0x09)
            case 0x75:
                guard var u = hex4(i) else { return nil }
                i += 4
                if (0xD800..<0xDC00).contains(u), i + 6 <= range.upperBound, p[i] == 0x5C, p[i + 1] == 0x75,
                    let low = hex4(i + 2), (0xDC00..<0xE000).contains(low)
                {
                    u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                // A lone surrogate becomes U+FFFD, as a UTF-8 decoder would make of it.
                let scalar = Unicode.Scalar(u) ?? "\u{FFFD}"
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default: return nil
            }
        }
        return out
    }

    package static func skipSpace(_ p: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int {
        var i = from
        while i < p.count, p[i] == 0x20 || p[i] == 0x0A || p[i] == 0x0D || p[i] == 0x09 { i += 1 }
        return i
    }

    /// The index after the closing quote of the string that opens at `start`.
    static func stringEnd(_ p: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        var i = start + 1
        while i < p.count {
            switch p[i] {
            case 0x22: return i + 1
            case 0x5C: i += 2
            default: i += 1
            }
        }
        return nil
    }

    /// The index after the value that starts at `start` (a string, an object or array with what it holds, or a
    /// number or literal up to the next separator).
    package static func valueEnd(_ p: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        guard start < p.count else { return nil }
        switch p[start] {
        case 0x22: return stringEnd(p, start)
        case 0x7B, 0x5B:
            var depth = 0
            var i = start
            while i < p.count {
                switch p[i] {
                case 0x22:
                    guard let e = stringEnd(p, i) else { return nil }
                    i = e
                    continue
                case 0x7B, 0x5B: depth += 1
                case 0x7D, 0x5D:
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            return nil
        default:
            var i = start
            while i < p.count, p[i] != 0x2C, p[i] != 0x7D, p[i] != 0x5D, p[i] != 0x20, p[i] != 0x0A, p[i] != 0x0D,
                p[i] != 0x09
            {
                i += 1
            }
            return i > start ? i : nil
        }
    }
}

extension RowWriter {
    /// A decoded field's value as its JSON text gives it: a string as text, a number as is, true and false as 1
    /// and 0, null (or no value) as no value, an object or array as JSON text that JSON lines nest when `nested`;
    /// a string of a `hex` field (`hex`) as `hexText` writes it.
    public mutating func decoded(
        _ p: UnsafeBufferPointer<UInt8>, _ value: Range<Int>?, nested: Bool, hex: Bool = false, _ out: inout [UInt8]
    ) {
        guard let value, !value.isEmpty else { return null(&out) }
        switch p[value.lowerBound] {
        case 0x22:
            let inner = (value.lowerBound + 1)..<(value.upperBound - 1)
            if hex && !p[inner].contains(0x5C) {
                hexText(p[inner], &out)
            } else if !p[inner].contains(0x5C) {
                text(p[inner], &out)
            } else {
                text(JSONMembers.unescape(p, inner) ?? Array(p[inner]), &out)
            }
        case 0x74: number(CollectionOfOne(UInt8(0x31)), &out)
        case 0x66: number(CollectionOfOne(UInt8(0x30)), &out)
        case 0x6E: null(&out)
        case 0x7B, 0x5B:
            if nested { json(p[value], &out) } else { text(p[value], &out) }
        default: number(p[value], &out)
        }
    }
}
