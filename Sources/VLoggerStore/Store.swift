import CSQLite
import Foundation
import VLoggerModel
import GRDB
import ISO15693

/// The store: one SQLite file in WAL mode, schema versioned by named migrations, written in batches.
///
/// Connections are GRDB's: a `DatabasePool` (one writer, up to `readers` readers that never wait for it)
/// for a writable store, a read-only pool otherwise; migrations go through GRDB's `DatabaseMigrator`.
/// The hot paths (the batch insert, the export's row stream) bind and step statements by hand on GRDB's
/// own connection (`withWriter`, `withReader`), which the ingest benchmark holds to the C baseline.
///
/// Durability: `journal_mode=WAL` with `synchronous=FULL`, so a batch whose COMMIT returned is on disk
/// and survives a SIGKILL or a power cut; a batch that fails is rolled back whole and can be retried.
public final class Store: @unchecked Sendable {
    public let path: String
    private let pool: DatabasePool?
    private let readOnly: Bool
    /// A read-only store in a folder this process may not write, with no writer at work (no -wal file):
    /// read as an immutable file through one connection, since WAL mode would need its -shm file there.
    private let immutable: DatabaseQueue?
    /// Whether the store was opened that way (the export notes it).
    public var isImmutableCopy: Bool { immutable != nil }
    /// The writer connection, borrowed from GRDB (which owns and closes it), with the cached statements.
    private var writer: SQLiteConnection?
    /// The -wal file the writer commits into, as (device, inode) once the first commit made it: a batch
    /// finds it unlinked or replaced before it reports a commit that would be lost (see `checkIdentity`).
    private var walIdentity: FileIdentity?
    /// Set once the store file or its -wal was found removed or replaced: nothing more is written, and
    /// `close` does not checkpoint into whatever file now has the name.
    private var lostIdentity: StoreError?

    /// Where each column of a reading is bound in `TableDescription.readings.insertSQL`.
    private static let readingPositions = {
        let d = TableDescription.readings
        return (
            time: d.position("time"), gateway: d.position("gateway"), reader: d.position("reader"),
            location: d.position("location"), uid: d.position("uid"), assetID: d.position("asset_id"),
            block: d.position("block"),
            count: d.position("count"), data: d.position("data"), security: d.position("security"),
            decoded: d.position("decoded")
        )
    }()

    /// The register's asset id by printed UID, as the `assets` table has it, for the readings and events a batch
    /// stores; read again when the table changed (its row count or latest change), checked once per batch.
    private var assetIDs: [[UInt8]: String] = [:]
    private var assetsVersion: (rows: Int64, changed: Int64)?

    private func refreshAssetIDs(_ db: SQLiteConnection) throws(StoreError) {
        let v = try db.prepare("SELECT count(*), coalesce(max(updated_at), 0) FROM assets")
        guard try v.step() else { return }
        let now = (rows: v.int64(0), changed: v.int64(1))
        if let was = assetsVersion, was == now { return }
        var map: [[UInt8]: String] = [:]
        let all = try db.prepare("SELECT uid, asset_id FROM assets")
        while try all.step() {
            if let uid = all.text(0), let id = all.text(1) { map[Array(uid.utf8)] = id }
        }
        assetIDs = map
        assetsVersion = now
    }

    private var insertReading: SQLStatement?
    /// The batch's other statements (made from the tables' descriptions), by their SQL.
    private var described: [String: SQLStatement] = [:]

    /// Opens the store. Writable stores are created when missing and migrated to the current schema;
    /// read-only stores must exist and be at a schema this vlogger knows. `readers`: how many connections
    /// may read at once (the status page, exports beside the service).
    public init(path: String, readOnly: Bool = false, busyTimeoutMs: Int32 = 5000, readers: Int = 4) throws(StoreError)
    {
        self.path = path
        self.readOnly = readOnly
        if let kind = FileIdentity.nonRegularKind(path) {
            throw StoreError(
                "\(path) is \(kind), not a store file: give --store (or [store] path) a regular file's path")
        }
        if readOnly && !FileManager.default.fileExists(atPath: path) {
            throw StoreError("no store at \(path) (run `vlogger run` first, or pass --store FILE)")
        }
        var config = Configuration()
        config.readonly = readOnly
        config.busyMode = .timeout(Double(max(0, busyTimeoutMs)) / 1000)
        config.maximumReaderCount = max(1, readers)
        config.label = "vlogger store"
        // A new file is switched to WAL under an exclusive lock, for which SQLite does not call the busy
        // handler: another process creating the same store at this moment is waited out here.
        var opened: DatabasePool?, fallback: DatabaseQueue?
        for attempt in 0... {
            do {
                opened = try DatabasePool(path: path, configuration: config)
                break
            } catch let e as DatabaseError where e.resultCode == .SQLITE_BUSY && attempt < Int(busyTimeoutMs / 10) {
                Thread.sleep(forTimeInterval: 0.01)
            } catch let e as DatabaseError
                where readOnly && (e.resultCode == .SQLITE_READONLY || e.resultCode == .SQLITE_CANTOPEN)
                && !FileManager.default.isWritableFile(
                    atPath: (path as NSString).deletingLastPathComponent.isEmpty
                        ? "." : (path as NSString).deletingLastPathComponent)
            {
                // A read-only folder (a read-only mount, a backup): WAL mode would need to create the -shm. With
                // no -wal, or an empty one (a clean shutdown checkpoints it), the file alone holds every commit.
                let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
                guard wal == 0 else {
                    throw StoreError(
                        "\(path) is in a read-only folder and its -wal holds \(wal) bytes of commits not merged into it (the service did not stop cleanly); SQLite cannot read those without creating \(path)-shm there. Copy \(path), \(path)-wal and \(path)-shm (if any) to a writable folder and use that copy",
                        code: e.extendedResultCode.rawValue)
                }
                // The file: URI SQLite reads as such in every open (Debian builds it with SQLITE_USE_URI; GRDB
                // passes no SQLITE_OPEN_URI flag of its own).
                var immutableConfig = Configuration()
                immutableConfig.readonly = true
                immutableConfig.label = "vlogger store (immutable)"
                do {
                    fallback = try DatabaseQueue(
                        path: SQLiteConnection.immutableURI(path), configuration: immutableConfig)
                } catch {
                    throw StoreError(
                        "cannot open the store \(path) read-only: \(Self.describe(error))",
                        code: (error as? DatabaseError)?.extendedResultCode.rawValue)
                }
                break
            } catch let e as DatabaseError
                where !readOnly && (e.resultCode == .SQLITE_CORRUPT || e.resultCode == .SQLITE_NOTADB)
            {
                throw Self.damaged(path, [Self.describe(e)])
            } catch {
                throw StoreError(
                    "cannot open the store \(path): \(Self.describe(error))",
                    code: (error as? DatabaseError)?.extendedResultCode.rawValue)
            }
        }
        guard opened != nil || fallback != nil else { throw StoreError("cannot open the store \(path)") }
        pool = opened
        immutable = fallback
        if !readOnly {
            // Nothing is added to a damaged file: it would bury what can still be saved.
            var check: [String]
            do {
                check = try withWriter { db throws(StoreError) in
                    let s = try db.prepare("PRAGMA quick_check")
                    var lines: [String] = []
                    while try s.step() { lines.append(s.text(0) ?? "") }
                    return lines
                }
            } catch  where error.code.map({ $0 & 0xFF == 11 || $0 & 0xFF == 26 }) ?? false {
                check = [error.message]  // SQLITE_CORRUPT, SQLITE_NOTADB: too damaged to list its problems
            }
            guard check == ["ok"] else { throw Self.damaged(path, check) }
            try migrate()
            // The migrations wrote: the -wal exists now. From here a missing or replaced -wal is noticed.
            walIdentity = FileIdentity(path + "-wal")
        } else {
            let applied = try appliedMigrations()
            guard applied.count >= Self.migrations.count else {
                throw StoreError(
                    "\(path): the store is at schema \(applied.last ?? "none"); run `vlogger run` (or any writing command) once to migrate it"
                )
            }
            try checkKnown(applied)
        }
    }

    /// Finalises the cached statements, merges the -wal into the store file (so that the `.db` alone, copied
    /// or backed up, holds every commit) and closes every connection. A store whose file was removed or
    /// replaced while open is not checkpointed into the file that now has its name.
    public func close() {
        // The cached statements are finalized before their connection closes.
        if !readOnly {
            pool?.writeWithoutTransaction { db in
                (insertReading, described) = (nil, [:])
                writer = nil
                guard lostIdentity == nil, let h = db.sqliteConnection else { return }
                let c = SQLiteConnection(borrowing: h, path: path)
                // No batch may have come since the file was replaced (an idle gateway): look once more, and save
                // what this store holds before SQLite's own close leaves its -wal beside another file.
                if let problem = (try? Self.identityProblem(c, path: path, wal: walIdentity)) ?? nil {
                    let saved = rescue(c, walRemoved: problem.contains("-wal"))
                    lostIdentity = StoreError("\(problem); \(saved)", isFatal: true)
                } else if let busy = Self.checkpoint(c) {
                    closeProblem = StoreError(
                        "\(path): the -wal could not be merged into the store file at close (\(busy)); the next open merges it"
                    )
                }
            }
        }
        try? pool?.close()
        try? immutable?.close()
    }

    /// What went wrong with the store's files during the run (removed or replaced), found at a batch or at
    /// close: the run must not report success.
    public var identityError: StoreError? { lostIdentity }
    /// A close that could not merge the -wal (a reader held an old snapshot): nothing is lost, said for the log.
    public private(set) var closeProblem: StoreError?

    /// `wal_checkpoint(TRUNCATE)`, checked: nil when every frame was copied back and the -wal truncated, else why
    /// not (a reader still holds an older snapshot: SQLITE_BUSY, or frames left uncopied).
    static func checkpoint(_ db: SQLiteConnection) -> String? {
        var log: Int32 = -1, copied: Int32 = -1
        let rc = sqlite3_wal_checkpoint_v2(db.handle, nil, SQLITE_CHECKPOINT_TRUNCATE, &log, &copied)
        if rc == SQLITE_BUSY { return "another connection was reading (SQLITE_BUSY)" }
        guard rc == SQLITE_OK else { return "SQLite code \(rc)" }
        return log == copied ? nil : "\(copied) of \(log) frames copied"
    }

    /// Whether the store file and its -wal are still the ones this store opened: a `rm vlogger.db-wal` or a
    /// `mv backup.db vlogger.db` under a running service would otherwise lose every commit since the last
    /// checkpoint, or the replacement, while batches still report success. SQLite's own check
    /// (`SQLITE_FCNTL_HAS_MOVED`: the file was unlinked, renamed or replaced) covers the store file; the
    /// -wal is compared by device and inode with the one the first commit made.
    static func identityProblem(_ db: SQLiteConnection, path: String, wal: FileIdentity?) throws(StoreError) -> String?
    {
        var moved: Int32 = 0
        let rc = sqlite3_file_control(db.handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved)
        if rc == SQLITE_OK && moved != 0 {
            return "the store file \(path) was removed or replaced while this process had it open"
        }
        if let wal {
            guard let now = FileIdentity(path + "-wal") else {
                return
                    "\(path)-wal (the commits not yet merged into \(path)) was removed while this process had it open"
            }
            if now != wal { return "\(path)-wal was replaced while this process had it open" }
        }
        return nil
    }

    /// Before a batch: the store's files are still the ones it commits into. Otherwise what the store held is
    /// saved (see `rescue`) and the batch fails with an error that `isFatal`: the writer stops instead of
    /// reporting commits nobody will find.
    private func checkIdentity(_ db: SQLiteConnection) throws(StoreError) {
        if let lostIdentity { throw lostIdentity }
        guard let problem = try Self.identityProblem(db, path: path, wal: walIdentity) else { return }
        let saved = rescue(db, walRemoved: problem.contains("-wal"))
        let e = StoreError(
            "\(problem); \(saved); nothing more is written, restart the service to go on with a new store file",
            code: nil, isFatal: true)
        lostIdentity = e
        throw e
    }

    /// Saves what the open connection still sees. A removed -wal is merged into the store file (the connection
    /// still holds it open). A removed or replaced store file is copied whole (`VACUUM INTO`) to a file beside
    /// it, and the -wal emptied so that it cannot be applied to the replacement.
    private func rescue(_ db: SQLiteConnection, walRemoved: Bool) -> String {
        if walRemoved {
            if let problem = Self.checkpoint(db) {
                return "the commits in it could not all be merged into \(path) (\(problem))"
            }
            return "every commit so far was merged into \(path)"
        }
        let copy = "\(path).orphaned-\(Millis.now()).db"
        do {
            let s = try db.prepare("VACUUM INTO ?")
            try s.bind([.text(copy)])
            _ = try s.step()
        } catch {
            return "what it held could not be saved (\(error))"
        }
        if let problem = Self.checkpoint(db) {
            return
                "what it held is saved in \(copy); its -wal could not be emptied (\(problem)): move \(path)-wal away before the next start, or SQLite applies it to the file now at \(path)"
        }
        return "what it held is saved in \(copy); the file now at \(path) was not touched"
    }

    /// A store that fails SQLite's checks: nothing is written into it, and the way out.
    static func damaged(_ path: String, _ problems: [String]) -> StoreError {
        let saved = path + ".salvaged.db"
        return StoreError(
            "\(path) is damaged (SQLite: \(problems.prefix(3).joined(separator: "; "))\(problems.count > 3 ? "; …" : "")); nothing is written into it. Save what can be read: vlogger store salvage --store \(path) --to \(saved); then export from \(saved) (vlogger export --store \(saved) --since 2000-01-01 --output saved.csv, for each --table), move \(path) away and start with \(saved) or a new store.",
            code: 11)
    }

    static func describe(_ error: Error) -> String {
        if let e = error as? DatabaseError {
            return "\(e.message ?? "\(e.resultCode)") (SQLite code \(e.extendedResultCode.rawValue))"
        }
        return "\(error)"
    }

    static func storeError(_ error: Error, _ path: String) -> StoreError {
        if let e = error as? StoreError { return e }
        if let e = error as? DatabaseError {
            return StoreError(
                "\(e.message ?? "\(e.resultCode)") (SQLite code \(e.extendedResultCode.rawValue)) in \(path)",
                code: e.extendedResultCode.rawValue)
        }
        return StoreError("\(error) in \(path)")
    }

    /// Runs `body` on the writer connection (GRDB's writer queue; blocks until it is free), outside any
    /// transaction: `body` opens its own.
    func withWriter<T>(_ body: (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        try withWriterDatabase { _, c throws(StoreError) in try body(c) }
    }

    /// Runs `body` in one immediate transaction on the writer, with GRDB's `Database` (the record types of the
    /// cold paths); rolled back whole when it throws.
    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try withWriterDatabase { db, _ throws(StoreError) in
            do {
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                guard let result else { throw StoreError("\(path): the transaction returned nothing") }
                return result
            } catch {
                throw Self.storeError(error, path)
            }
        }
    }

    /// Runs `body` with GRDB's `Database` on a reader, in a read transaction (a snapshot of the last commit).
    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            if let immutable { return try immutable.read(body) }
            guard let pool else { throw StoreError("\(path): not open") }
            return try pool.read(body)
        } catch {
            throw Self.storeError(error, path)
        }
    }

    /// The writer's `Database` and the same connection as a `SQLiteConnection`, with the writer set up and the
    /// store's identity checked.
    private func withWriterDatabase<T>(_ body: (Database, SQLiteConnection) throws(StoreError) -> T)
        throws(StoreError) -> T
    {
        guard !readOnly, let pool else { throw StoreError("\(path) is open read-only", code: 8) }
        do {
            return try pool.writeWithoutTransaction { db -> T in
                let c: SQLiteConnection
                if let w = writer, w.handle == db.sqliteConnection {
                    c = w
                } else {
                    guard let h = db.sqliteConnection else {
                        throw StoreError("\(path): the writer connection is closed", code: 21)
                    }
                    c = SQLiteConnection(borrowing: h, path: path)
                    // GRDB sets NORMAL for WAL; a committed batch must survive a power cut: FULL.
                    try c.execute("PRAGMA synchronous=FULL")
                    writer = c
                    (insertReading, described) = (nil, [:])
                }
                // Every write (batches, the write queue, the sync cursor, retention, the register) goes through
                // here: none may land in a file that is no longer the store.
                try checkIdentity(c)
                do { return try body(db, c) } catch { throw error }
            }
        } catch {
            throw Self.storeError(error, path)
        }
    }

    /// Runs `body` on a reader connection, in a read transaction: a snapshot of the last commit, which the
    /// writer does not wait for.
    func withReader<T>(_ body: (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        do {
            let path = self.path
            let borrowed = { (db: Database) throws -> T in
                guard let h = db.sqliteConnection else { throw StoreError("\(path): the reader connection is closed") }
                do { return try body(SQLiteConnection(borrowing: h, path: path)) } catch { throw error }
            }
            if let immutable { return try immutable.read(borrowed) }
            guard let pool else { throw StoreError("\(path): not open") }
            return try pool.read(borrowed)
        } catch {
            throw Self.storeError(error, path)
        }
    }

    // MARK: Migrations

    /// The migrations applied to the store, in order (GRDB's `grdb_migrations`).
    func appliedMigrations() throws(StoreError) -> [String] {
        try withReader { db throws(StoreError) in try Self.applied(db) }
    }

    static func applied(_ db: SQLiteConnection) throws(StoreError) -> [String] {
        guard try db.scalar("SELECT 1 FROM sqlite_master WHERE type='table' AND name='grdb_migrations'") != nil else {
            return []
        }
        let s = try db.prepare("SELECT identifier FROM grdb_migrations ORDER BY identifier")
        var names: [String] = []
        while try s.step() { names.append(s.text(0) ?? "") }
        return names
    }

    private func checkKnown(_ applied: [String]) throws(StoreError) {
        let known = Set(Self.migrations.map(\.name))
        if let unknown = applied.first(where: { !known.contains($0) }) {
            throw StoreError(
                "\(path): the store has migration \(unknown), which this vlogger does not know; it was written by a newer vlogger"
            )
        }
    }

    static let migrator: DatabaseMigrator = {
        var m = DatabaseMigrator()
        for (name, sql) in Store.migrations { m.registerMigration(name) { db in try db.execute(sql: sql) } }
        return m
    }()

    /// Applies the missing migrations with GRDB's migrator. A store of the release before GRDB has its
    /// applied names in `schema_migrations`: they are carried over to `grdb_migrations` first, and
    /// `schema_migrations` keeps every name too, so an older vlogger refuses the newer schema by name.
    /// GRDB reads what is applied before taking the write lock, so a second process migrating the same
    /// store at the same moment can find a migration already applied under it (SQLITE_CONSTRAINT or
    /// "already exists"); the migration is then run again, and finds nothing left to do.
    func migrate() throws(StoreError) {
        try withWriter { db throws(StoreError) in
            try Self.transaction(db) { () throws(StoreError) in
                let legacy =
                    try db.scalar("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'") != nil
                try db.execute("CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
                if legacy { try db.execute("INSERT OR IGNORE INTO grdb_migrations SELECT name FROM schema_migrations") }
                try checkKnown(try Self.applied(db))
            }
        }
        guard let pool else { throw StoreError("\(path): not open for writing") }
        for attempt in 0... {
            do {
                try Self.migrator.migrate(pool)
                break
            } catch  where attempt < 20 {
                Thread.sleep(forTimeInterval: 0.02)
            } catch {
                throw Self.storeError(error, path)
            }
        }
        try withWriter { db throws(StoreError) in
            try Self.transaction(db) { () throws(StoreError) in
                try db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations(name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL) WITHOUT ROWID"
                )
                let s = try db.prepare(
                    "INSERT OR IGNORE INTO schema_migrations(name, applied_at) SELECT identifier, ? FROM grdb_migrations"
                )
                try s.bind([.integer(Millis.now())])
                try s.step()
            }
        }
    }

    /// Runs `body` in one IMMEDIATE transaction on `db`: all of it commits, or none of it.
    static func transaction(_ db: SQLiteConnection, _ body: () throws(StoreError) -> Void) throws(StoreError) {
        try db.execute("BEGIN IMMEDIATE")
        do {
            try body()
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    // MARK: Writing

    /// Writes a batch in one transaction. Returns the row id of the last reading written (0 if none).
    @discardableResult
    public func write(_ batch: Batch) throws(StoreError) -> Int64 {
        try withWriter { db throws(StoreError) in try write(batch, db) }
    }

    private func write(_ batch: Batch, _ db: SQLiteConnection) throws(StoreError) -> Int64 {
        var lastID: Int64 = 0
        defer { if walIdentity == nil { walIdentity = FileIdentity(path + "-wal") } }
        try Self.transaction(db) { () throws(StoreError) in
            if !batch.readings.isEmpty || !batch.events.isEmpty { try refreshAssetIDs(db) }
            try store(batch.tags, .tags, db)
            if !batch.readings.isEmpty {
                let s = try prepared(&insertReading, db, TableDescription.readings.insertSQL)
                let p = Self.readingPositions
                var scratch: [UInt8] = []
                scratch.reserveCapacity(256)
                // Gateway, reader and location are the same row after row: bound again only when they change
                // (the statement keeps its bindings across resets).
                var bound: (gateway: String, reader: String?, location: String?)?
                // A cached statement keeps the last batch's parameters: asset_id is cleared at the first row without one.
                var assetBound = true
                for r in batch.readings {
                    s.resetKeepingBindings()
                    try s.bindInteger(r.time, at: p.time)
                    let same =
                        bound.map { $0.gateway == r.gateway && $0.reader == r.reader && $0.location == r.location }
                        ?? false
                    if !same {
                        try s.bindText(r.gateway, at: p.gateway)
                        if let v = r.reader { try s.bindText(v, at: p.reader) } else { try s.bind(.null, at: p.reader) }
                        if let v = r.location {
                            try s.bindText(v, at: p.location)
                        } else {
                            try s.bind(.null, at: p.location)
                        }
                        bound = (r.gateway, r.reader, r.location)
                    }
                    scratch.removeAll(keepingCapacity: true)
                    r.uid.appendPrinted(to: &scratch)
                    try s.bindTextBytes(scratch, at: p.uid)
                    // The register's asset id; without a register (or for a tag it does not list) NULL, bound again
                    // only when the row before had one (the statement keeps its bindings across resets).
                    if !assetIDs.isEmpty, let a = assetIDs[scratch] {
                        try s.bindText(a, at: p.assetID)
                        assetBound = true
                    } else if assetBound {
                        try s.bind(.null, at: p.assetID)
                        assetBound = false
                    }
                    try s.bindInteger(Int64(r.first.int), at: p.block)
                    try s.bindInteger(Int64(r.count), at: p.count)
                    try s.bindBlob(r.data, at: p.data)
                    if let sec = r.security {
                        try s.bindBlob(sec, at: p.security)
                    } else {
                        try s.bind(.null, at: p.security)
                    }
                    if r.decoded.isEmpty {
                        try s.bind(.null, at: p.decoded)
                    } else {
                        scratch.removeAll(keepingCapacity: true)
                        r.appendDecodedJSON(to: &scratch)
                        try s.bindTextBytes(scratch, at: p.decoded)
                    }
                    try s.step()
                }
                lastID = db.lastInsertRowID
            }
            try store(batch.events, .events, db)
            try Self.record(batch.outcomes, db)
            try store(batch.sensorProgress, .sensorSessions, db)
            for m in batch.bufferMarks {
                if m.records > 0 {
                    try store([m], .readerBuffers, db)
                } else {
                    // A mark of no records is the reader's buffer cleared: its row goes (by the table's key).
                    let d = TableDescription.readerBuffers
                    guard let delete = d.deleteSQL else { continue }
                    let s = try statement(delete, db)
                    s.reset()
                    try s.bind((d.upsertKey ?? []).map { SQLValue(m.column($0)) })
                    try s.step()
                }
            }
            try store(batch.writes, .writes, db)
        }
        return lastID
    }

    private func prepared(_ cache: inout SQLStatement?, _ db: SQLiteConnection, _ sql: String) throws(StoreError)
        -> SQLStatement
    {
        if let s = cache { return s }
        let s = try db.prepare(sql)
        cache = s
        return s
    }

    /// The cached statement of `sql` on the writer.
    private func statement(_ sql: String, _ db: SQLiteConnection) throws(StoreError) -> SQLStatement {
        try prepared(&described[sql], db, sql)
    }

    /// Each table's batch statement (its upsert, or its insert) and the columns its parameters bind, made once.
    private static let batchSQL = Dictionary(
        uniqueKeysWithValues: (TableDescription.all + TableDescription.internalTables).map {
            ($0.name, (sql: $0.upsertSQL ?? $0.insertSQL, columns: $0.parameterColumns))
        })

    /// Stores `rows` as rows of `table`: inserted, or (a table with a key) stored again under their key and merged
    /// as its columns say. Each value is the record's, or the store's own (`ColumnSource`): the register's asset id
    /// of the row's UID. In the caller's transaction.
    private func store(_ rows: [some StoredRow], _ table: TableDescription, _ db: SQLiteConnection)
        throws(StoreError)
    {
        guard !rows.isEmpty else { return }
        let (sql, columns) = Self.batchSQL[table.name] ?? (table.upsertSQL ?? table.insertSQL, table.parameterColumns)
        let s = try statement(sql, db)
        for r in rows {
            s.reset()
            try s.bind(
                columns.map { c in
                    guard c.source == .register else { return SQLValue(r.column(c.name)) }
                    guard case .text(let uid) = r.column("uid"), let id = assetIDs[Array(uid.utf8)] else {
                        return .null
                    }
                    return .text(id)
                })
            try s.step()
        }
    }

    /// Records the decoded fields the configuration defines, so exports give each a column (in this order).
    public func registerFields(_ fields: [FieldInfo]) throws(StoreError) {
        try withWriter { db throws(StoreError) in
            try Self.transaction(db) { () throws(StoreError) in
                let known = try Self.fields(db)
                var position = known.count
                let s = try db.prepare(
                    "INSERT INTO fields(name, unit, position, kind) VALUES(?,?,?,?) ON CONFLICT(name) DO UPDATE SET unit = excluded.unit, kind = excluded.kind"
                )
                for f in fields {
                    s.reset()
                    let existing = known.contains { $0.name == f.name }
                    try s.bind([
                        .text(f.name), f.unit.map(SQLValue.text) ?? .null, .integer(Int64(existing ? 0 : position)),
                        .text(f.kind.rawValue),
                    ])
                    try s.step()
                    if !existing { position += 1 }
                }
            }
        }
    }

    /// The records a drain of `reader`'s buffer committed and the reader has not cleared yet (nil: none).
    public func bufferMark(reader: String) throws(StoreError) -> BufferMark? {
        try withReader { db throws(StoreError) in
            let st = try db.prepare("SELECT records, raw, time FROM reader_buffers WHERE reader = ?")
            try st.bind([.text(reader)])
            guard try st.step() else { return nil }
            return BufferMark(reader: reader, records: Int(st.int64(0)), raw: st.blob(1), time: st.int64(2))
        }
    }

    /// How many records of a sensor tag's logging session are stored (0: none yet).
    public func sensorRecords(uid: UID, session: String) throws(StoreError) -> Int {
        try withReader { db throws(StoreError) in
            let st = try db.prepare("SELECT records FROM sensor_sessions WHERE uid = ? AND session = ?")
            try st.bind([.text(uid.description), .text(session)])
            return try st.step() ? Int(st.int64(0)) : 0
        }
    }

    /// The open rule excursions of a sensor tag's logging session, as the agent last committed them (JSON text; "{}"
    /// when none or no such session).
    public func sensorExcursions(uid: UID, session: String) throws(StoreError) -> String {
        try withReader { db throws(StoreError) in
            let st = try db.prepare("SELECT excursions FROM sensor_sessions WHERE uid = ? AND session = ?")
            try st.bind([.text(uid.description), .text(session)])
            return try st.step() ? (st.text(0) ?? "{}") : "{}"
        }
    }

    /// The decoded fields known to the store, in column order.
    public func fields() throws(StoreError) -> [FieldInfo] {
        try withReader { db throws(StoreError) in try Self.fields(db) }
    }

    static func fields(_ db: SQLiteConnection) throws(StoreError) -> [FieldInfo] {
        let s = try db.prepare("SELECT name, unit, kind FROM fields ORDER BY position, name")
        var out: [FieldInfo] = []
        while try s.step() {
            out.append(
                FieldInfo(
                    name: s.text(0) ?? "", unit: s.text(1), kind: s.text(2).flatMap(FieldInfo.Kind.init) ?? .number))
        }
        return out
    }

    // MARK: Reading back

    public func count(_ table: String) throws(StoreError) -> Int {
        guard ["readings", "events", "tags", "writes", "audits", "audit_results"].contains(table) else {
            throw StoreError("no table \(table)")
        }
        return try withReader { db throws(StoreError) in
            if case let .integer(n)? = try db.scalar("SELECT count(*) FROM \(table)") { return Int(n) }
            return 0
        }
    }

    /// `PRAGMA integrity_check`: "ok" for a sound file, else SQLite's list of problems.
    public func integrityCheck() throws(StoreError) -> String {
        try withReader { db throws(StoreError) in
            let s = try db.prepare("PRAGMA integrity_check")
            var lines: [String] = []
            while try s.step() { lines.append(s.text(0) ?? "") }
            return lines.joined(separator: "\n")
        }
    }

    /// Readings whose row id is at most `id` (for checking what a committed batch left).
    public func readingCount(upToID id: Int64) throws(StoreError) -> Int {
        try withReader { db throws(StoreError) in
            if case let .integer(n)? = try db.scalar("SELECT count(*) FROM readings WHERE id <= ?", [.integer(id)]) {
                return Int(n)
            }
            return 0
        }
    }

    /// Events, oldest first (for tests and status).
    public func events(kind: Event.Kind? = nil) throws(StoreError) -> [Event] {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(
                "SELECT time, gateway, uid, kind, name, severity, detail, reader, location, origin FROM events"
                    + (kind == nil ? "" : " WHERE kind = ?") + " ORDER BY id")
            if let kind { try s.bind([.text(kind.rawValue)]) }
            var out: [Event] = []
            while try s.step() {
                out.append(
                    Event(
                        time: s.int64(0), gateway: s.text(1) ?? "", reader: s.text(7), location: s.text(8),
                        uid: s.text(2).flatMap { try? UID(parsing: $0) },
                        kind: Event.Kind(rawValue: s.text(3) ?? "") ?? .error, name: s.text(4) ?? "",
                        severity: Event.Severity(rawValue: s.text(5) ?? "") ?? .info, detail: s.text(6) ?? "",
                        origin: s.text(9)))
            }
            return out
        }
    }

    /// Readings, oldest first (for tests).
    public func readings(uid: UID? = nil) throws(StoreError) -> [(
        time: Millis, uid: String, block: Int, data: [UInt8], decoded: String?
    )] {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(
                "SELECT time, uid, block, data, decoded FROM readings" + (uid == nil ? "" : " WHERE uid = ?")
                    + " ORDER BY id")
            if let uid { try s.bind([.text(uid.description)]) }
            var out: [(Millis, String, Int, [UInt8], String?)] = []
            while try s.step() { out.append((s.int64(0), s.text(1) ?? "", Int(s.int64(2)), s.blob(3), s.text(4))) }
            return out
        }
    }
}

/// The head of a reader's own buffer that a commit took (`records` > 0), or that the reader has cleared
/// (`records` = 0: the mark goes).
public struct BufferMark: Sendable, Equatable, StoredRow {
    public var reader: String
    public var records: Int
    public var raw: [UInt8]
    public var time: Millis
    public init(reader: String, records: Int, raw: [UInt8], time: Millis) {
        self.reader = reader
        self.records = records
        self.raw = raw
        self.time = time
    }
    public static func cleared(_ reader: String, time: Millis) -> BufferMark {
        BufferMark(reader: reader, records: 0, raw: [], time: time)
    }

    public func column(_ name: String) -> ColumnValue {
        switch name {
        case "reader": return .text(reader)
        case "records": return .integer(Int64(records))
        case "raw": return .blob(raw)
        case "time": return .integer(time)
        default: return .null
        }
    }
}

/// How far a sensor tag's logging session has been read: committed with the readings of its records.
public struct SensorProgress: Sendable, Equatable, StoredRow {
    public var uid: UID
    public var session: String
    public var kind: String
    /// Records of the session stored, counting these.
    public var records: Int
    public var time: Millis
    /// The open rule excursions after these records (JSON text); nil: unchanged.
    public var excursions: String?
    public init(uid: UID, session: String, kind: String, records: Int, time: Millis, excursions: String? = nil) {
        self.uid = uid
        self.session = session
        self.kind = kind
        self.records = records
        self.time = time
        self.excursions = excursions
    }

    public func column(_ name: String) -> ColumnValue {
        switch name {
        case "uid": return .text(uid.description)
        case "session": return .text(session)
        case "kind": return .text(kind)
        case "records": return .integer(Int64(records))
        case "updated_at": return .integer(time)
        case "excursions": return excursions.map { .text($0) } ?? .null
        default: return .null
        }
    }
}

/// What one commit writes.
public struct Batch: Sendable {
    public var readings: [Reading] = []
    public var events: [Event] = []
    public var tags: [TagRecord] = []
    public var writes: [WriteRecord] = []
    /// What became of queued writes.
    public var outcomes: [WriteOutcome] = []
    /// Records taken from (or cleared in) a reader's own buffer, committed with the readings made of them.
    public var bufferMarks: [BufferMark] = []
    /// Sensor logs read this far, committed with the readings made of their records.
    public var sensorProgress: [SensorProgress] = []
    public init() {}
    public var isEmpty: Bool {
        readings.isEmpty && events.isEmpty && tags.isEmpty && writes.isEmpty && outcomes.isEmpty && bufferMarks.isEmpty
            && sensorProgress.isEmpty
    }

    /// One row per tag: a later update replaces the earlier one, keeping the latest time seen.
    public mutating func add(_ tag: TagRecord) {
        if let i = tags.firstIndex(where: { $0.uid == tag.uid }) {
            var t = tag
            t.seen = max(t.seen, tags[i].seen)
            t.originality = t.originality ?? tags[i].originality
            tags[i] = t
        } else {
            tags.append(tag)
        }
    }

    /// Appends what `later` holds after this batch's records, in order.
    public mutating func append(_ later: Batch) {
        readings += later.readings
        events += later.events
        for t in later.tags { add(t) }
        writes += later.writes
        outcomes += later.outcomes
        bufferMarks += later.bufferMarks
        sensorProgress += later.sensorProgress
    }
    public var size: Int { readings.count + events.count + tags.count + writes.count + outcomes.count }
}
