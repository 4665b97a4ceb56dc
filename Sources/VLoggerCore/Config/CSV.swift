import Foundation

/// RFC 4180 records (quoted cells, doubled quotes, CRLF or LF line ends) read one at a time from bytes that
/// arrive in chunks: a file of a million register rows is read in 64 KiB pieces and never held whole. Every
/// record carries the line it starts on, for messages. A NUL byte in a cell is an error (no register, rules or
/// list file has one, and C strings and terminals cut text at it).
struct CSVRecords {
    struct Failure: Error { let line: Int; let message: String }

    private let chunk: () throws -> [UInt8]?
    private var buffer: [UInt8] = []
    private var at = 0
    private var done = false
    private var line = 1
    private var started = false

    /// Records from `chunk`, which returns the next bytes, or nil at the end.
    init(chunks chunk: @escaping () throws -> [UInt8]?) {
        self.chunk = chunk
    }

    /// Records of an in-memory text.
    init(text: String) {
        var given = false
        let bytes = Array(text.utf8)
        self.init(chunks: {
            defer { given = true }
            return given ? nil : bytes
        })
    }

    /// Records of a file, read in 64 KiB chunks.
    static func file(_ path: String) throws -> CSVRecords {
        guard let h = FileHandle(forReadingAtPath: path) else {
            throw Failure(line: 0, message: "cannot read the file")
        }
        return CSVRecords(chunks: {
            let data = try h.read(upToCount: 65_536) ?? Data()
            if data.isEmpty { try? h.close(); return nil }
            return [UInt8](data)
        })
    }

    private mutating func byte() throws -> UInt8? {
        while at >= buffer.count {
            if done { return nil }
            guard let more = try chunk() else { done = true; return nil }
            buffer = more
            at = 0
        }
        defer { at += 1 }
        return buffer[at]
    }

    private mutating func peek() throws -> UInt8? {
        guard let b = try byte() else { return nil }
        at -= 1
        return b
    }

    /// The next record and the line it starts on; nil at the end. A blank line is a record of one empty cell.
    mutating func next() throws(Failure) -> (line: Int, cells: [String])? {
        do { return try read() } catch let f as Failure { throw f } catch {
            throw Failure(line: line, message: "cannot read the file (\(error.localizedDescription))")
        }
    }

    private mutating func read() throws -> (line: Int, cells: [String])? {
        let start = line
        var cells: [String] = []
        var cell: [UInt8] = []
        var quoted = false, wasQuoted = false, any = false
        let lineNow = line
        func finish() throws {
            // Text that is not UTF-8 (a Latin-1 export) is refused, not repaired into U+FFFD.
            guard let t = String(validating: cell, as: UTF8.self) else {
                throw Failure(line: lineNow, message: "the cell is not UTF-8 text (save the file as UTF-8)")
            }
            cells.append(t)
            cell.removeAll(keepingCapacity: true)
        }
        if !started {
            started = true
            // A UTF-8 byte order mark (spreadsheet programs write one) is not part of the first cell.
            if try peek() == 0xEF {
                _ = try byte()
                if try peek() == 0xBB {
                    _ = try byte()
                    if try peek() == 0xBF { _ = try byte() } else { cell += [0xEF, 0xBB] }
                } else {
                    cell.append(0xEF)
                }
            }
        }
        while let c = try byte() {
            any = true
            if c == 0 { throw Failure(line: line, message: "a NUL byte in a cell") }
            if quoted {
                if c == 0x22 {
                    if try peek() == 0x22 { _ = try byte(); cell.append(0x22) } else { quoted = false }
                } else {
                    if c == 0x0A { line += 1 }
                    cell.append(c)
                }
                continue
            }
            switch c {
            case 0x22:
                guard cell.isEmpty, !wasQuoted else {
                    throw Failure(
                        line: line,
                        message: "a quote inside an unquoted cell; quote the whole cell and double the quote")
                }
                quoted = true
                wasQuoted = true
            case 0x2C:
                try finish()
                wasQuoted = false
            case 0x0D, 0x0A:
                // LF, CRLF or a lone CR ends the record.
                if c == 0x0D, try peek() == 0x0A { _ = try byte() }
                try finish()
                line += 1
                return (start, cells)
            default:
                guard !wasQuoted else { throw Failure(line: line, message: "text after a closing quote") }
                cell.append(c)
            }
        }
        if quoted { throw Failure(line: line, message: "a quoted cell is not closed") }
        guard any || !cell.isEmpty else { return nil }
        try finish()
        return (start, cells)
    }

    /// Every record of `text` (small files: rules' lists, tests).
    static func parse(_ text: String) throws(Failure) -> [[String]] {
        var r = CSVRecords(text: text)
        var out: [[String]] = []
        while let rec = try r.next() { out.append(rec.cells) }
        return out
    }
}
