import VLoggerModel

extension OutboxJSON {
    /// Why a message is not a row `append` wrote (a status text, a tag's retained state, a damaged or foreign
    /// message).
    public struct Invalid: Error, CustomStringConvertible, Sendable, Equatable {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }

    /// The most members one row's object may have (its columns and a reading's decoded fields): a message with
    /// more is refused before anything is kept of it.
    public static let maxMembers = 4096

    /// The row a JSON object made by `append` stands for: its table, and the outbox row with its id (from `key`,
    /// which must name the row's own gateway and table), time, gateway and the table's `columns` in order. A
    /// reading's decoded fields (every member that is not a column) become its `decoded` object again, in their
    /// order, without the `field_` a clash with a column's name added. What `append` made lossy stays so: a
    /// decoded `true` arrives as `1`, and an object field that was not nested arrives as its text.
    ///
    /// This is the central side of the MQTT fan-in (`vlogger central ingest`): every value is checked (times in
    /// `append`'s ISO form, hex with an even count of digits, integers within 64 bits) and anything else is an
    /// `Invalid` naming the member.
    public static func row(from bytes: [UInt8]) throws(Invalid) -> (table: SyncTable, row: OutboxRow) {
        try bytes.withUnsafeBufferPointer { p throws(Invalid) in try row(p) }
    }

    /// Each object of a message: one object (`messages = "row"`) or an array of them (`"batch"`), each decoded
    /// on its own (a bad one does not take the others with it).
    public static func rows(from bytes: [UInt8]) -> [Result<(table: SyncTable, row: OutboxRow), Invalid>] {
        bytes.withUnsafeBufferPointer { p in
            var i = JSONMembers.skipSpace(p, 0)
            guard i < p.count, p[i] == 0x5B else {
                return [one(p)]
            }
            var out: [Result<(table: SyncTable, row: OutboxRow), Invalid>] = []
            i = JSONMembers.skipSpace(p, i + 1)
            if i < p.count, p[i] == 0x5D {
                return JSONMembers.skipSpace(p, i + 1) == p.count ? [] : [.failure(Invalid("text after the array"))]
            }
            while i < p.count {
                guard let end = JSONMembers.valueEnd(p, i) else {
                    out.append(.failure(Invalid("an unfinished value in the array")))
                    return out
                }
                let element = UnsafeBufferPointer(rebasing: p[i..<end])
                out.append(one(element))
                i = JSONMembers.skipSpace(p, end)
                guard i < p.count else { break }
                if p[i] == 0x5D {
                    if JSONMembers.skipSpace(p, i + 1) != p.count {
                        out.append(.failure(Invalid("text after the array")))
                    }
                    return out
                }
                guard p[i] == 0x2C else { break }
                i = JSONMembers.skipSpace(p, i + 1)
            }
            out.append(.failure(Invalid("an array that does not end")))
            return out
        }
    }

    static func one(_ p: UnsafeBufferPointer<UInt8>) -> Result<(table: SyncTable, row: OutboxRow), Invalid> {
        do throws(Invalid) { return .success(try row(p)) } catch { return .failure(error) }
    }

    static func row(_ p: UnsafeBufferPointer<UInt8>) throws(Invalid) -> (table: SyncTable, row: OutboxRow) {
        var members: [(name: String, value: Range<Int>)] = []
        var tooMany = false
        let whole = JSONMembers.scan(p) { key, value in
            guard members.count < maxMembers else { tooMany = true; return }
            let name =
                p[key].contains(0x5C)
                ? JSONMembers.unescape(p, key).map { String(decoding: $0, as: UTF8.self) }
                : String(decoding: UnsafeBufferPointer(rebasing: p[key]), as: UTF8.self)
            members.append((name ?? "\u{FFFD}", value))
        }
        guard whole else { throw Invalid("not one JSON object") }
        guard !tooMany else { throw Invalid("more than \(maxMembers) members") }
        var byName: [String: Range<Int>] = [:]
        for m in members {
            guard byName.updateValue(m.value, forKey: m.name) == nil else { throw Invalid("'\(m.name)' twice") }
        }
        func string(_ name: String) throws(Invalid) -> String? {
            guard let r = byName[name], !isNull(p, r) else { return nil }
            guard let s = text(p, r) else { throw Invalid("'\(name)' is not a string") }
            return s
        }
        guard let tableName = try string("table") else { throw Invalid("no 'table' (not a row)") }
        guard let table = SyncTable(rawValue: tableName), let layout = layouts[table] else {
            throw Invalid(
                "'table' is \(tableName), not a table this vlogger ships (a newer gateway? upgrade the ingest)")
        }
        guard let key = try string("key") else { throw Invalid("no 'key' (a row of a scratch store, or not a row)") }
        guard let gateway = try string("gateway"), !gateway.isEmpty else { throw Invalid("no 'gateway'") }
        let prefix = gateway + "/" + table.rawValue + "/"
        guard key.hasPrefix(prefix), let id = Int64(key.dropFirst(prefix.count)), id > 0 else {
            throw Invalid("'key' \(key) is not \(prefix)<local id>")
        }
        if layout.exportsID, let r = byName["id"] {
            guard integer(p, r) == id else { throw Invalid("'id' is not the key's local id \(id)") }
        }
        let d = table.tableDescription
        let exported = d.exported
        var time: Millis?
        var values = [OutboxValue](repeating: .null, count: table.columns.count)
        let index = Dictionary(table.columns.enumerated().map { ($0.element.name, $0.offset) }) { a, _ in a }
        for (column, (format, source)) in zip(exported, layout.columns) {
            guard let r = byName[column.name], !isNull(p, r) else {
                if case .time = source { throw Invalid("no '\(column.name)' (the row's time)") }
                continue
            }
            let value: OutboxValue
            switch format {
            case .time:
                guard let s = text(p, r), let ms = parseTime(Array(s.utf8)) else {
                    throw Invalid("'\(column.name)' is not a time as 2026-01-02T03:04:05.678Z")
                }
                value = .integer(ms)
            case .block, .flags:
                guard let s = text(p, r), let n = parseHexNumber(Array(s.utf8)) else {
                    throw Invalid("'\(column.name)' is not a hex number as 0xF8")
                }
                value = .integer(n)
            case .hex:
                guard let s = text(p, r), let b = parseHex(Array(s.utf8)) else {
                    throw Invalid("'\(column.name)' is not hex bytes")
                }
                value = .blob(b)
            case .integer:
                guard let n = integer(p, r) else { throw Invalid("'\(column.name)' is not a whole number") }
                value = .integer(n)
            case .text:
                guard let s = text(p, r) else { throw Invalid("'\(column.name)' is not a string") }
                value = .text(s)
            }
            switch source {
            case .time:
                guard case .integer(let ms) = value else { throw Invalid("'\(column.name)' is not a time") }
                time = ms
            case .value(let i) where i < values.count: values[i] = value
            default: break
            }
        }
        if layout.ownTime, let r = byName["time"] {
            guard let s = text(p, r), let ms = parseTime(Array(s.utf8)) else {
                throw Invalid("'time' is not a time as 2026-01-02T03:04:05.678Z")
            }
            time = ms
        }
        guard let time else { throw Invalid("no 'time'") }
        if table == .readings, let at = index["decoded"] {
            var decoded: [UInt8] = [0x7B]
            var fields = 0
            for m in members where !layout.taken.contains(m.name) {
                var name = m.name
                if name.hasPrefix("field_"), layout.taken.contains(String(name.dropFirst(6))) {
                    name = String(name.dropFirst(6))
                }
                if fields > 0 { decoded.append(0x2C) }
                JSONText.appendQuoted(name, to: &decoded)
                decoded.append(0x3A)
                decoded.append(contentsOf: p[m.value])
                fields += 1
            }
            decoded.append(0x7D)
            if fields > 0 { values[at] = .text(String(decoding: decoded, as: UTF8.self)) }
        }
        // Members of no column of this version (a newer gateway's) are left out, not a reason to refuse the row.
        return (table, OutboxRow(id: id, time: time, gateway: gateway, values: values))
    }

    static func isNull(_ p: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Bool {
        r.count == 4 && p[r].elementsEqual([0x6E, 0x75, 0x6C, 0x6C])
    }

    /// The string at `r` unescaped; nil when it is not a string.
    static func text(_ p: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> String? {
        guard r.count >= 2, p[r.lowerBound] == 0x22, p[r.upperBound - 1] == 0x22 else { return nil }
        let inner = (r.lowerBound + 1)..<(r.upperBound - 1)
        if !p[inner].contains(0x5C) { return String(decoding: UnsafeBufferPointer(rebasing: p[inner]), as: UTF8.self) }
        return JSONMembers.unescape(p, inner).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A JSON integer (an optional minus and at most 19 digits, within Int64); nil for anything else.
    static func integer(_ p: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Int64? {
        guard !r.isEmpty, r.count <= 20 else { return nil }
        let negative = p[r.lowerBound] == 0x2D
        let digits = (negative ? r.lowerBound + 1 : r.lowerBound)..<r.upperBound
        guard !digits.isEmpty, p[digits].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        var v: Int64 = 0
        for b in p[digits] {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.subtractingReportingOverflow(Int64(b - 0x30))
            guard !o1, !o2 else { return nil }
            v = s
        }
        if negative { return v }
        return v == .min ? nil : -v
    }

    /// `0xF8`, `0x0100`, `-0x01` (what `ValueText.appendHexNumber` writes): at most 16 digits, within Int64.
    static func parseHexNumber(_ s: [UInt8]) -> Int64? {
        var t = s[...]
        let negative = t.first == 0x2D
        if negative { t = t.dropFirst() }
        guard t.count > 2, t.count <= 18, t.first == 0x30, t.dropFirst().first == 0x78 || t.dropFirst().first == 0x58
        else { return nil }
        var v: UInt64 = 0
        for b in t.dropFirst(2) {
            guard let d = hexDigit(b) else { return nil }
            v = v << 4 | UInt64(d)
        }
        if negative { return v <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- v) : nil }
        return v <= UInt64(Int64.max) ? Int64(v) : nil
    }

    /// Hex digits, two per byte, either case.
    static func parseHex(_ s: [UInt8]) -> [UInt8]? {
        guard s.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(s.count / 2)
        var i = 0
        while i < s.count {
            guard let hi = hexDigit(s[i]), let lo = hexDigit(s[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    static func hexDigit(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x37
        case 0x61...0x66: return b - 0x57
        default: return nil
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` (`ValueText.appendTime`'s form, years 0000–9999) as milliseconds since 1970.
    static func parseTime(_ s: [UInt8]) -> Millis? {
        guard s.count == 24, s[4] == 0x2D, s[7] == 0x2D, s[10] == 0x54, s[13] == 0x3A, s[16] == 0x3A, s[19] == 0x2E,
            s[23] == 0x5A
        else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var v = 0
            for b in s[from..<(from + count)] {
                guard b >= 0x30 && b <= 0x39 else { return nil }
                v = v * 10 + Int(b - 0x30)
            }
            return v
        }
        guard let y = number(0, 4), let mo = number(5, 2), let d = number(8, 2), let h = number(11, 2),
            let mi = number(14, 2), let sec = number(17, 2), let ms = number(20, 3),
            (1...12).contains(mo), d >= 1, d <= TimeSpec.daysIn(mo, y), h < 24, mi < 60, sec < 60
        else { return nil }
        let days = TimeSpec.daysFromCivil(y, mo, d)
        return Millis(days) * 86_400_000 + Millis(((h * 60 + mi) * 60 + sec) * 1000 + ms)
    }
}
