/// How every value leaves a gateway as text: the one place times, block numbers, bytes and flags are formatted,
/// and the one writer of CSV and JSON-lines rows. The local export (`Exporter`), the central export
/// (`CentralExport`) and anything else that writes rows for people or other programs go through here, so the same
/// row comes out byte for byte the same whichever database it was read from.
///
/// CSV follows RFC 4180: a header row, cells with a comma, quote, CR or LF quoted, quotes doubled, CRLF line ends
/// (or LF). Text cells that begin with `=`, `+`, `-`, `@`, tab or CR get a leading `'` so spreadsheets show them
/// rather than run them (OWASP "CSV injection"); numbers are left alone. JSON lines: one object per row, keys in
/// column order, text as JSON strings, numbers as numbers; a missing value leaves its member out (a field that does
/// not apply to a row is not in its object).
public enum ValueText {
    static let digits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Milliseconds since 1970 as ISO 8601 UTC with milliseconds: `2026-11-22T08:30:00.250Z`.
    public static func appendTime(_ ms: Millis, to out: inout [UInt8]) {
        let days = Int(TimeSpec.floorDiv(ms, 86_400_000))
        // The millisecond of the day, from the remainder (days × 86,400,000 can be below Int64.min).
        let r = Int(ms % 86_400_000)
        let rem = r < 0 ? r + 86_400_000 : r
        let (y, m, d) = TimeSpec.civilFromDays(days)
        if y < 0 { out.append(0x2D) }
        appendPadded(abs(y), 4, &out)
        out.append(0x2D)
        appendPadded(m, 2, &out)
        out.append(0x2D)
        appendPadded(d, 2, &out)
        out.append(0x54)
        appendPadded(rem / 3_600_000, 2, &out)
        out.append(0x3A)
        appendPadded(rem / 60_000 % 60, 2, &out)
        out.append(0x3A)
        appendPadded(rem / 1000 % 60, 2, &out)
        out.append(0x2E)
        appendPadded(rem % 1000, 3, &out)
        out.append(0x5A)
    }

    /// Milliseconds since 1970 as ISO 8601 in `zone` with milliseconds and the offset that applied then:
    /// `2026-11-22T09:30:00.250+01:00` (`--local-time`, for people; `Z` stays the form of programs).
    public static func appendTime(_ ms: Millis, in zone: LocalTime, to out: inout [UInt8]) {
        let offset = zone.offsetSeconds(ms)
        let (local, overflow) = ms.addingReportingOverflow(Millis(offset) * 1000)
        // RFC 3339 offsets are whole minutes: a local mean time of before 1900 (Berlin +00:53:28) is written in UTC.
        guard !overflow, offset % 60 == 0 else { return appendTime(ms, to: &out) }
        appendTime(local, to: &out)
        out.removeLast()  // the Z
        out.append(offset < 0 ? 0x2D : 0x2B)
        appendPadded(abs(offset) / 3600, 2, &out)
        out.append(0x3A)
        appendPadded(abs(offset) / 60 % 60, 2, &out)
    }

    /// A block number in hex: `0xF8` below 256, `0x0100` from there on (more digits only past 0xFFFF).
    public static func appendBlock(_ block: Int64, to out: inout [UInt8]) {
        appendHexNumber(block, width: block < 256 ? 2 : 4, to: &out)
    }

    /// Request flags as one hex byte: `0x22`.
    public static func appendFlags(_ flags: Int64, to out: inout [UInt8]) {
        appendHexNumber(flags, width: 2, to: &out)
    }

    /// Bytes as upper-case hex without separators.
    public static func appendHex<C: Collection>(_ bytes: C, to out: inout [UInt8]) where C.Element == UInt8 {
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
    }

    /// A whole number in decimal.
    public static func appendInteger(_ n: Int64, to out: inout [UInt8]) {
        if n < 0 {
            out.append(0x2D)
            appendUnsigned(n.magnitude, &out)
        } else {
            appendUnsigned(UInt64(n), &out)
        }
    }

    /// `0x` and upper-case hex digits, at least `width` of them; a negative number (never stored) as `-0x…`.
    static func appendHexNumber(_ n: Int64, width: Int, to out: inout [UInt8]) {
        if n < 0 { out.append(0x2D) }
        out.append(0x30)
        out.append(0x78)
        let v = n.magnitude
        // As many digits as the value needs, at least `width` (at most 16): no buffer, it runs once per row.
        let count = min(16, max(width, (64 - v.leadingZeroBitCount + 3) / 4, 1))
        for k in stride(from: count - 1, through: 0, by: -1) { out.append(digits[Int((v >> (4 * k)) & 0x0F)]) }
    }

    static func appendPadded(_ n: Int, _ width: Int, _ out: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var v = n
        while divisor * 10 <= v { divisor *= 10 }
        while divisor > 0 {
            out.append(0x30 + UInt8(v / divisor % 10))
            v %= divisor
            divisor /= 10
        }
    }

    static func appendUnsigned(_ n: UInt64, _ out: inout [UInt8]) {
        if n < 10 {
            out.append(0x30 + UInt8(n))
            return
        }
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes, enough for 20 digits
        withUnsafeMutableBytes(of: &buffer) { p in
            var v = n
            var i = p.count
            while v > 0 {
                i -= 1
                p[i] = 0x30 + UInt8(v % 10)
                v /= 10
            }
            out.append(contentsOf: p[i...])
        }
    }
}

/// Writes rows of cells as CSV or JSON lines into a byte buffer (the caller flushes it).
public struct RowWriter: Sendable {
    public enum Format: Sendable { case csv, jsonl }
    public let format: Format
    let eol: [UInt8]
    /// Each column's JSON key with its colon (`"time":`).
    let keys: [[UInt8]]
    var column = 0
    /// Members written in this JSON object (a null cell writes none).
    var members = 0
    /// CSV cells of bytes start with `\x` (PostgreSQL's bytea hex form), so pandas, DuckDB and Polars read them as
    /// text: without it `42494E3500000000` is read as the number 42494e3500000000 (infinity) and `0100000000000000`
    /// as 1e14 (docs/json.md, "CSV and data tools"). JSON lines never have it (their strings are strings).
    let bytesPrefix: Bool
    /// Times in this zone (`--local-time`); nil: UTC with `Z`.
    let zone: LocalTime?

    /// `names`: the columns, in order. `crlf`: CSV rows end in CR LF (RFC 4180) rather than LF. `header`: the CSV
    /// header's cells when they differ from the names (units after decoded fields' names). `plainHex`: CSV bytes
    /// without the `\x` prefix (as before it was there). `zone`: times in that zone with their offset, not UTC.
    public init(
        format: Format, names: [String], crlf: Bool = true, header: [String]? = nil, plainHex: Bool = false,
        zone: LocalTime? = nil
    ) {
        self.format = format
        self.zone = zone
        bytesPrefix = format == .csv && !plainHex
        eol = crlf ? [0x0D, 0x0A] : [0x0A]
        keys = names.map { name in
            var k: [UInt8] = []
            JSONText.appendQuoted(name, to: &k)
            k.append(0x3A)
            return k
        }
        self.names = header ?? names
    }

    /// The CSV header's cells.
    let names: [String]

    /// The CSV header row (JSON lines have none).
    public func header(to out: inout [UInt8]) {
        guard format == .csv else { return }
        for (i, name) in names.enumerated() {
            if i > 0 { out.append(0x2C) }
            Self.appendCSV(Array(name.utf8), neutralise: false, to: &out)
        }
        out.append(contentsOf: eol)
    }

    public mutating func beginRow(_ out: inout [UInt8]) {
        column = 0
        members = 0
        if format == .jsonl { out.append(0x7B) }
    }

    public mutating func endRow(_ out: inout [UInt8]) {
        if format == .jsonl {
            out.append(0x7D)
            out.append(0x0A)
        } else {
            out.append(contentsOf: eol)
        }
    }

    /// Starts the next cell: the separator, and in JSON lines its key.
    mutating func next(_ out: inout [UInt8]) {
        if format == .csv {
            if column > 0 { out.append(0x2C) }
        } else {
            if members > 0 { out.append(0x2C) }
            members += 1
            if let k = pendingKey {
                out.append(contentsOf: k)
                pendingKey = nil
            } else if column < keys.count {
                out.append(contentsOf: keys[column])
            }
        }
        column += 1
    }

    /// The key of the next cell, for a row with members beyond the named columns (a reading's decoded fields in
    /// a message of its own); JSON lines only.
    public mutating func key(_ name: String) {
        var k: [UInt8] = []
        JSONText.appendQuoted(name, to: &k)
        k.append(0x3A)
        pendingKey = k
    }

    var pendingKey: [UInt8]?

    /// No value: an empty CSV cell; in JSON lines the member is left out.
    public mutating func null(_ out: inout [UInt8]) {
        if format == .jsonl {
            pendingKey = nil
            column += 1
        } else {
            next(&out)
        }
    }

    /// A number given as its text (digits, sign, point, exponent): as is in both formats.
    public mutating func number<C: Collection>(_ text: C, _ out: inout [UInt8]) where C.Element == UInt8 {
        next(&out)
        out.append(contentsOf: text)
    }

    public mutating func integer(_ n: Int64, _ out: inout [UInt8]) {
        next(&out)
        ValueText.appendInteger(n, to: &out)
    }

    /// Text given as UTF-8: CSV-quoted and neutralised, or a JSON string.
    public mutating func text<C: Collection>(_ utf8: C, _ out: inout [UInt8]) where C.Element == UInt8 {
        next(&out)
        if format == .csv {
            Self.appendCSV(utf8, neutralise: true, to: &out)
        } else {
            JSONText.appendQuoted(String(decoding: utf8, as: UTF8.self), to: &out)
        }
    }

    /// JSON text that JSON lines nest as it is (an NDEF record list); CSV gets it as text.
    public mutating func json<C: Collection>(_ utf8: C, _ out: inout [UInt8]) where C.Element == UInt8 {
        if format == .csv { text(utf8, &out); return }
        next(&out)
        out.append(contentsOf: utf8)
    }

    /// A value that is formatted as text (a time, a block number, hex bytes, flags): `body` appends the text, which
    /// needs no CSV quoting and starts with a digit, `0x` or `\x`, so it is never neutralised.
    public mutating func formatted(_ out: inout [UInt8], _ body: (inout [UInt8]) -> Void) {
        next(&out)
        if format == .jsonl { out.append(0x22) }
        body(&out)
        if format == .jsonl { out.append(0x22) }
    }

    public mutating func time(_ ms: Millis, _ out: inout [UInt8]) {
        if let zone {
            formatted(&out) { ValueText.appendTime(ms, in: zone, to: &$0) }
        } else {
            formatted(&out) { ValueText.appendTime(ms, to: &$0) }
        }
    }

    public mutating func block(_ n: Int64, _ out: inout [UInt8]) {
        formatted(&out) { ValueText.appendBlock(n, to: &$0) }
    }

    public mutating func flags(_ n: Int64, _ out: inout [UInt8]) {
        formatted(&out) { ValueText.appendFlags(n, to: &$0) }
    }

    /// Bytes: upper-case hex, in CSV after `\x` (unless `plainHex`).
    public mutating func hex<C: Collection>(_ bytes: C, _ out: inout [UInt8]) where C.Element == UInt8 {
        prefixedHex(&out) { ValueText.appendHex(bytes, to: &$0) }
    }

    /// A decoded `hex` field's value, already hex text: as `hex` writes bytes (`\x` first in CSV), or as text
    /// when it is not hex digits (a value stored before its field was `hex`).
    public mutating func hexText<C: Collection>(_ utf8: C, _ out: inout [UInt8]) where C.Element == UInt8 {
        let digits =
            !utf8.isEmpty && utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }
        guard bytesPrefix, digits else { return text(utf8, &out) }
        prefixedHex(&out) { $0.append(contentsOf: utf8) }
    }

    /// A hex cell: `\x` before what `body` writes when CSV bytes are prefixed (the one place the prefix is written).
    mutating func prefixedHex(_ out: inout [UInt8], _ body: (inout [UInt8]) -> Void) {
        let prefix = bytesPrefix
        formatted(&out) {
            if prefix { $0.append(contentsOf: [0x5C, 0x78]) }
            body(&$0)
        }
    }

    /// One CSV cell: quoted when it holds a comma, quote, CR or LF; a formula-like start neutralised.
    public static func appendCSV<C: Collection>(_ cell: C, neutralise: Bool, to out: inout [UInt8])
    where C.Element == UInt8 {
        var needsQuotes = false
        for b in cell where b == 0x2C || b == 0x22 || b == 0x0D || b == 0x0A {
            needsQuotes = true
            break
        }
        let formula: Bool
        if neutralise, let f = cell.first {
            formula = f == 0x3D || f == 0x2B || f == 0x2D || f == 0x40 || f == 0x09 || f == 0x0D
        } else {
            formula = false
        }
        if !needsQuotes && !formula {
            out.append(contentsOf: cell)
            return
        }
        if needsQuotes { out.append(0x22) }
        if formula { out.append(0x27) }
        if needsQuotes {
            for b in cell {
                if b == 0x22 { out.append(0x22) }
                out.append(b)
            }
            out.append(0x22)
        } else {
            out.append(contentsOf: cell)
        }
    }
}
