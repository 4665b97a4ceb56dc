import CSQLite
import Foundation

/// What `salvage` saved of each table, and which row ids it had to pass over.
public struct SalvageReport: Sendable {
    public struct Table: Sendable {
        public var name: String
        public var copied = 0
        /// Row id ranges that could not be read (damaged or missing pages), exclusive bounds: (after, before).
        public var skipped: [(after: Int64, before: Int64?)] = []
        /// The table itself could not be read at all.
        public var unreadable: String?
    }
    public var tables: [Table] = []
    /// Said when the damaged store's -wal could not be read (its commits since the last checkpoint are not saved).
    public var walNote: String?
    public var copied: Int { tables.reduce(0) { $0 + $1.copied } }
}

extension Store {
    /// The tables a salvage copies, parents before children.
    static let salvageTables = [
        "fields", "tags", "assets", "readings", "events", "writes", "write_queue", "audits", "audit_results",
        "outbox_cursor", "reader_buffers",
    ]

    /// Copies every row that can still be read from a damaged store file into a new store at `target`. A plain
    /// `SELECT` stops at the first damaged page ("database disk image is malformed"); here each rowid table is
    /// read in row id order, and where a read fails the row ids after it are probed in growing steps until the
    /// b-tree can be entered again, so the rows past a hole are kept. Row ids are kept (the fleet sync and
    /// every export key on them). The damaged file is opened read-only and never written.
    public static func salvage(from damaged: String, into target: String) throws(StoreError) -> SalvageReport {
        guard FileManager.default.fileExists(atPath: damaged) else { throw StoreError("no store at \(damaged)") }
        guard !FileManager.default.fileExists(atPath: target) else {
            throw StoreError("\(target) exists; name a new file for what is saved")
        }
        // A working copy, so that the damaged file is never written: a truncated file's header still counts the
        // pages it had (bytes 28–31, "in-header database size", sqlite.org/fileformat2.html §1.3.7), and SQLite
        // then takes the missing pages for a malformed schema; the copy's count is the pages it really has.
        let work = target + ".source-copy"
        try? FileManager.default.removeItem(atPath: work)
        do { try FileManager.default.copyItem(atPath: damaged, toPath: work) } catch {
            throw StoreError("cannot copy \(damaged) to \(work) to read it: \(error.localizedDescription)")
        }
        // Commits since the last checkpoint are in the -wal (usual after a crash): copied beside the copy.
        let walSize = (try? FileManager.default.attributesOfItem(atPath: damaged + "-wal")[.size] as? Int) ?? 0
        if walSize > 0 { try? FileManager.default.copyItem(atPath: damaged + "-wal", toPath: work + "-wal") }
        defer { for f in [work, work + "-wal", work + "-shm"] { try? FileManager.default.removeItem(atPath: f) } }
        Self.fitHeaderPageCount(work)
        var walNote: String?
        let source: SQLiteConnection
        if walSize > 0, let s = try? SQLiteConnection(path: work, readOnly: true),
            (try? s.scalar("SELECT count(*) FROM sqlite_master")) != nil
        {
            source = s
        } else {
            source = try SQLiteConnection(path: work, readOnly: true, immutable: true)
            if walSize > 0 {
                walNote = "its -wal (\(walSize) bytes) could not be read; only the store file's own pages were"
            }
        }
        defer { source.close() }
        let out = try Store(path: target)
        defer { out.close() }
        var report = SalvageReport()
        try out.withWriter { db throws(StoreError) in
            // A result whose audit was lost is still a row worth keeping: no foreign-key check on the copy.
            try db.execute("PRAGMA foreign_keys = OFF")
            for name in salvageTables {
                var t = SalvageReport.Table(name: name)
                do throws(StoreError) {
                    try transaction(db) { () throws(StoreError) in
                        // A store from before migration 013 keeps the fleet sync's cursors in sync_cursor.
                        if name == "outbox_cursor" && columns(name, source).isEmpty
                            && !columns("sync_cursor", source).isEmpty
                        {
                            try copyOldSyncCursor(from: source, into: db, &t)
                        } else {
                            try copy(name, from: source, into: db, &t)
                        }
                    }
                } catch {
                    t.unreadable = error.message
                    t.copied = 0  // rolled back
                }
                report.tables.append(t)
            }
            // The saved store is the same store: it keeps its instance id (a new one would make the central store
            // refuse its rows as another gateway's; docs/integrating.md, "One store per gateway id").
            if let read = try? source.prepare("SELECT instance, created_at FROM store_instance WHERE one = 1"),
                (try? read.step()) == true, let instance = read.text(0)
            {
                let replace = try db.prepare(
                    "INSERT OR REPLACE INTO store_instance(one, instance, created_at) VALUES(1, ?, ?)")
                try replace.bind([.text(instance), read.value(1)])
                try replace.step()
            }
        }
        report.walNote = walNote
        return report
    }

    /// Sets a database file's in-header page count to the pages the file holds, when the header counts more.
    static func fitHeaderPageCount(_ path: String) {
        guard let h = FileHandle(forUpdatingAtPath: path) else { return }
        defer { try? h.close() }
        guard let head = try? h.read(upToCount: 100), head.count == 100 else { return }
        let b = [UInt8](head)
        var pageSize = Int(b[16]) << 8 | Int(b[17])
        if pageSize == 1 { pageSize = 65_536 }
        guard pageSize >= 512, let end = try? h.seekToEnd() else { return }
        let pages = UInt32(clamping: end / UInt64(pageSize))
        let counted = UInt32(b[28]) << 24 | UInt32(b[29]) << 16 | UInt32(b[30]) << 8 | UInt32(b[31])
        guard counted > pages else { return }
        try? h.seek(toOffset: 28)
        try? h.write(
            contentsOf: Data([
                UInt8(pages >> 24), UInt8(pages >> 16 & 0xFF), UInt8(pages >> 8 & 0xFF), UInt8(pages & 0xFF),
            ]))
    }

    /// The cursors of a store from before migration 013 (`sync_cursor`: the fleet sync's) as the "postgres"
    /// consumer's.
    private static func copyOldSyncCursor(
        from source: SQLiteConnection, into db: SQLiteConnection, _ t: inout SalvageReport.Table
    ) throws(StoreError) {
        let read = try source.prepare("SELECT tbl, last_id, updated_at FROM sync_cursor")
        let insert = try db.prepare(
            "INSERT OR IGNORE INTO outbox_cursor(consumer, tbl, last_id, updated_at) VALUES('postgres', ?, ?, ?)")
        while try read.step() {
            insert.reset()
            try insert.bind([read.value(0), read.value(1), read.value(2)])
            try insert.step()
            t.copied += 1
        }
    }

    /// The columns of `table` on a connection (none when its schema cannot be read).
    private static func columns(_ table: String, _ db: SQLiteConnection) -> [String] {
        guard let s = try? db.prepare("PRAGMA table_info(\(table))") else { return [] }
        var out: [String] = []
        while (try? s.step()) == true { out.append(s.text(1) ?? "") }
        return out
    }

    private static func copy(
        _ table: String, from source: SQLiteConnection, into db: SQLiteConnection, _ t: inout SalvageReport.Table
    ) throws(StoreError) {
        let theirs = Set(columns(table, source))
        guard !theirs.isEmpty else { t.unreadable = "its schema cannot be read"; return }
        let cols = columns(table, db).filter { theirs.contains($0) }
        guard !cols.isEmpty else { return }
        let list = cols.joined(separator: ", ")
        let withoutRowID =
            (try? source.scalar("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)]))
            .flatMap { v -> Bool? in
                if case let .text(sql) = v { return sql.uppercased().contains("WITHOUT ROWID") }; return nil
            } ?? false
        let insert = try db.prepare(
            "INSERT OR IGNORE INTO \(table)(\(withoutRowID ? "" : "rowid, ")\(list)) VALUES(\(Array(repeating: "?", count: cols.count + (withoutRowID ? 0 : 1)).joined(separator: ",")))"
        )
        func put(_ s: SQLStatement, offset: Int) throws(StoreError) {
            insert.reset()
            try insert.bind((0..<(cols.count + offset)).map { s.value($0) })
            try insert.step()
            t.copied += 1
        }
        if withoutRowID {
            // Keyed by text: read in key order until the first damaged page.
            guard let s = try? source.prepare("SELECT \(list) FROM \(table)") else {
                t.unreadable = "it cannot be read"; return
            }
            while true {
                do { guard try s.step() else { break } } catch {
                    t.skipped.append((after: Int64(t.copied), before: nil)); break
                }
                try put(s, offset: 0)
            }
            return
        }
        var last = Int64.min
        var resumedAt: Int64?
        let chunk = try? source.prepare("SELECT rowid, \(list) FROM \(table) WHERE rowid > ? ORDER BY rowid LIMIT 1000")
        let probe = try? source.prepare("SELECT rowid FROM \(table) WHERE rowid >= ? ORDER BY rowid LIMIT 1")
        let back = try? source.prepare(
            "SELECT rowid, \(list) FROM \(table) WHERE rowid > ? AND rowid < ? ORDER BY rowid DESC")
        /// Reads the rows between `after` and `before` from the top down until a read fails (a probe that found
        /// `before` in doubling steps may have jumped over readable rows); returns the lowest row id read.
        func readBack(after: Int64, before: Int64) throws(StoreError) -> Int64? {
            guard let back else { return nil }
            back.reset()
            try? back.bind([.integer(after), .integer(before)])
            var lowest: Int64?
            while true {
                do { guard try back.step() else { break } } catch { break }
                lowest = back.int64(0)
                try put(back, offset: 1)
            }
            return lowest
        }
        while true {
            var failed = false
            if let chunk {
                chunk.reset()
                try? chunk.bind([.integer(last)])
                var n = 0
                while true {
                    do { guard try chunk.step() else { break } } catch { failed = true; break }
                    last = chunk.int64(0)
                    try put(chunk, offset: 1)
                    n += 1
                }
                if !failed && n < 1000 { return }  // the end of the table
                if !failed { continue }
            } else {
                failed = true
            }
            // Probe past the hole: the next row id whose page can be reached, in doubling steps.
            var step: Int64 = 1
            var resumed = false
            probing: while step < (1 << 40), let probe {
                let (from, overflow) = last == Int64.min ? (step - 1, false) : last.addingReportingOverflow(step)
                if overflow { break }
                probe.reset()
                try? probe.bind([.integer(from)])
                if let more = try? probe.step() {
                    guard more else {
                        // Nothing at or past `from`: what lay between is the damaged tail.
                        let low = last == Int64.max ? nil : try readBack(after: last, before: from)
                        t.skipped.append((after: last, before: low))
                        return
                    }
                    let next = probe.int64(0)
                    if next == resumedAt {
                        // Its row id can be reached but the row itself cannot be read: pass over it.
                        guard next < Int64.max else { t.skipped.append((after: next - 1, before: nil)); return }
                        t.skipped.append((after: next - 1, before: next + 1))
                        last = next
                        resumedAt = nil
                    } else {
                        if next - 1 != last {
                            let low = step > 1 ? try readBack(after: last, before: next) : nil
                            t.skipped.append((after: last, before: low ?? next))
                        }
                        last = next - 1
                        resumedAt = next
                    }
                    resumed = true
                    break probing
                }
                step *= 2
            }
            if !resumed {
                // No later row id can be reached at all: the rest of the table is lost, and said.
                t.skipped.append((after: last, before: nil))
                return
            }
        }
    }
}
