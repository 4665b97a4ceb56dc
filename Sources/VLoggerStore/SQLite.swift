import CSQLite
import VLoggerModel
import Foundation

/// An error from SQLite or from the store above it: what failed, SQLite's own message and result code.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// SQLite's primary result code (`SQLITE_BUSY` = 5, `SQLITE_CORRUPT` = 11, …), or nil for store errors.
    public let code: Int32?
    /// Trying again cannot help (the store file or its -wal was removed or replaced): the writer stops.
    public let isFatal: Bool
    public init(_ message: String, code: Int32? = nil, isFatal: Bool = false) {
        self.message = message
        self.code = code
        self.isFatal = isFatal
    }
    public var description: String { message }
    /// A statement ended by its time limit (`SQLiteConnection.withDeadline`).
    public var isInterrupted: Bool { code.map { $0 & 0xFF == SQLITE_INTERRUPT } ?? false }
    /// Another connection holds the lock (an export beside the agent): wait and try again.
    public var isBusy: Bool { code.map { $0 & 0xFF == SQLITE_BUSY || $0 & 0xFF == SQLITE_LOCKED } ?? false }
}

/// A value bound to or read from a statement.
public enum SQLValue: Equatable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// A record's value of a column (`StoredRow`).
    init(_ v: ColumnValue) {
        switch v {
        case .null: self = .null
        case .integer(let n): self = .integer(n)
        case .text(let t): self = .text(t)
        case .blob(let b): self = .blob(b)
        }
    }
}

/// A deadline SQLite's progress handler reads.
final class DeadlineBox {
    let deadline: ContinuousClock.Instant
    init(_ deadline: ContinuousClock.Instant) { self.deadline = deadline }
    var passed: Bool { ContinuousClock.now >= deadline }
}

/// One SQLite connection (the C API, Debian's libsqlite3). Not thread-safe: one owner at a time. Either
/// opened here (and closed here), or borrowed from GRDB inside one of its access closures.
final class SQLiteConnection {
    let path: String
    private(set) var handle: OpaquePointer?
    private let owned: Bool

    /// A connection GRDB owns: used, never closed, here.
    init(borrowing handle: OpaquePointer, path: String) {
        self.handle = handle
        self.path = path
        owned = false
    }

    /// Runs `body` with a time limit: SQLite checks the deadline every 1,000 virtual machine steps
    /// (`sqlite3_progress_handler`) and ends a statement that runs past it with `SQLITE_INTERRUPT`, which `step`
    /// throws (`StoreError.isInterrupted`). The handler is removed afterwards (a borrowed connection goes back to
    /// GRDB as it came).
    func withDeadline<T>(_ deadline: ContinuousClock.Instant, _ body: () throws(StoreError) -> T) throws(StoreError)
        -> T
    {
        guard let handle else { return try body() }
        let box = Unmanaged.passRetained(DeadlineBox(deadline))
        defer {
            sqlite3_progress_handler(handle, 0, nil, nil)
            box.release()
        }
        sqlite3_progress_handler(
            handle, 1000,
            { ctx in
                guard let ctx else { return 0 }
                return Unmanaged<DeadlineBox>.fromOpaque(ctx).takeUnretainedValue().passed ? 1 : 0
            }, box.toOpaque())
        return try body()
    }

    /// The `file:` URI that opens `path` as an immutable file: RFC 3986 percent-encoding of the path
    /// (sqlite.org/uri.html).
    static func immutableURI(_ path: String) -> String {
        let allowed = CharacterSet(charactersIn: "/-._~").union(.alphanumerics)
        return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
    }

    /// Opens (and with `create`, creates) the file. `busyTimeoutMs`: how long SQLite itself waits for
    /// another connection's lock before answering `SQLITE_BUSY`.
    /// `immutable`: read a file that no process is writing, without the -shm/-wal files WAL mode would
    /// otherwise create beside it (a store in a folder the reader may not write).
    init(
        path: String, readOnly: Bool = false, create: Bool = true, busyTimeoutMs: Int32 = 5000, immutable: Bool = false
    ) throws(StoreError) {
        self.path = path
        owned = true
        var flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        flags |= SQLITE_OPEN_NOMUTEX
        var name = path
        if immutable {
            flags |= SQLITE_OPEN_URI
            name = Self.immutableURI(path)
        }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(name, &db, flags, nil)
        handle = db
        guard rc == SQLITE_OK else {
            let msg = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            handle = nil
            throw StoreError("cannot open the store \(path): \(msg)", code: rc)
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMs)
    }

    deinit { close() }

    func close() {
        if owned, let h = handle { sqlite3_close_v2(h) }
        handle = nil
    }

    func error(_ what: String, _ rc: Int32) -> StoreError {
        let msg = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
        return StoreError("\(what): \(msg) (SQLite code \(rc)) in \(path)", code: rc)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(StoreError) {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let msg = err.map { String(cString: $0) } ?? "error"
            sqlite3_free(err)
            throw StoreError("\(sql.prefix(60)): \(msg) (SQLite code \(rc)) in \(path)", code: rc)
        }
    }

    func prepare(_ sql: String) throws(StoreError) -> SQLStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error("prepare \(sql.prefix(60))", rc) }
        return SQLStatement(stmt, connection: self)
    }

    /// The single value of a one-row query (nil when no row).
    func scalar(_ sql: String, _ args: [SQLValue] = []) throws(StoreError) -> SQLValue? {
        let s = try prepare(sql)
        try s.bind(args)
        guard try s.step() else { return nil }
        return s.value(0)
    }

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var changes: Int { Int(sqlite3_changes(handle)) }
}

/// A prepared statement, reset and rebound for each use.
final class SQLStatement {
    private let stmt: OpaquePointer
    private unowned let connection: SQLiteConnection

    init(_ stmt: OpaquePointer, connection: SQLiteConnection) {
        self.stmt = stmt
        self.connection = connection
    }

    deinit { sqlite3_finalize(stmt) }

    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func bind(_ values: [SQLValue]) throws(StoreError) {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    func bind(_ value: SQLValue, at i: Int32) throws(StoreError) {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(stmt, i)
        case let .integer(n): rc = sqlite3_bind_int64(stmt, i, n)
        case let .real(d): rc = sqlite3_bind_double(stmt, i, d)
        case let .text(s):
            var s = s
            rc = Self.bindUTF8(stmt, i, &s)
        case let .blob(b):
            rc = b.withUnsafeBytes {
                vlogger_bind_blob(stmt, i, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count))
            }
        }
        guard rc == SQLITE_OK else { throw connection.error("bind parameter \(i)", rc) }
    }

    private static func bindUTF8(_ stmt: OpaquePointer, _ i: Int32, _ s: inout String) -> Int32 {
        s.withUTF8 { buf -> Int32 in
            guard let base = buf.baseAddress else { return vlogger_bind_text(stmt, i, "", 0) }
            return base.withMemoryRebound(to: CChar.self, capacity: buf.count) {
                vlogger_bind_text(stmt, i, $0, Int32(buf.count))
            }
        }
    }

    // Direct binds for the hot path (no SQLValue boxing). Unbound parameters are NULL after reset.
    func bindInteger(_ n: Int64, at i: Int32) throws(StoreError) {
        let rc = sqlite3_bind_int64(stmt, i, n)
        guard rc == SQLITE_OK else { throw connection.error("bind parameter \(i)", rc) }
    }

    func bindText(_ s: String, at i: Int32) throws(StoreError) {
        var s = s
        let rc = Self.bindUTF8(stmt, i, &s)
        guard rc == SQLITE_OK else { throw connection.error("bind parameter \(i)", rc) }
    }

    /// Text given as UTF-8 bytes (copied by SQLite).
    func bindTextBytes(_ b: [UInt8], at i: Int32) throws(StoreError) {
        let rc = b.withUnsafeBufferPointer { buf -> Int32 in
            guard let base = buf.baseAddress else { return vlogger_bind_text(stmt, i, "", 0) }
            return base.withMemoryRebound(to: CChar.self, capacity: buf.count) {
                vlogger_bind_text(stmt, i, $0, Int32(buf.count))
            }
        }
        guard rc == SQLITE_OK else { throw connection.error("bind parameter \(i)", rc) }
    }

    /// Reset for the next row when every parameter is bound again (no clear).
    func resetKeepingBindings() { sqlite3_reset(stmt) }

    func bindBlob(_ b: [UInt8], at i: Int32) throws(StoreError) {
        let rc = b.withUnsafeBytes {
            vlogger_bind_blob(stmt, i, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count))
        }
        guard rc == SQLITE_OK else { throw connection.error("bind parameter \(i)", rc) }
    }

    /// Steps once: true when a row is ready, false when done.
    @discardableResult
    func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(stmt)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let e = connection.error("step", rc)
            sqlite3_reset(stmt)
            throw e
        }
    }

    var columnCount: Int { Int(sqlite3_column_count(stmt)) }
    func columnName(_ i: Int) -> String { String(cString: sqlite3_column_name(stmt, Int32(i))) }
    func type(_ i: Int) -> Int32 { sqlite3_column_type(stmt, Int32(i)) }
    func int64(_ i: Int) -> Int64 { sqlite3_column_int64(stmt, Int32(i)) }
    func double(_ i: Int) -> Double { sqlite3_column_double(stmt, Int32(i)) }

    func text(_ i: Int) -> String? {
        guard let p = sqlite3_column_text(stmt, Int32(i)) else { return nil }
        return String(cString: p)
    }

    /// The UTF-8 bytes of a text (or blob) column without copying; valid until the next step.
    func withBytes<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let n = Int(sqlite3_column_bytes(stmt, Int32(i)))
        let p: UnsafeRawPointer? =
            type(i) == SQLITE_BLOB
            ? sqlite3_column_blob(stmt, Int32(i)) : sqlite3_column_text(stmt, Int32(i)).map { UnsafeRawPointer($0) }
        return body(UnsafeRawBufferPointer(start: p, count: p == nil ? 0 : n))
    }

    func blob(_ i: Int) -> [UInt8] { withBytes(i) { Array($0) } }

    func value(_ i: Int) -> SQLValue {
        switch type(i) {
        case SQLITE_INTEGER: return .integer(int64(i))
        case SQLITE_FLOAT: return .real(double(i))
        case SQLITE_TEXT: return .text(text(i) ?? "")
        case SQLITE_BLOB: return .blob(blob(i))
        default: return .null
        }
    }

    static let integerType = SQLITE_INTEGER
    static let floatType = SQLITE_FLOAT
    static let textType = SQLITE_TEXT
    static let blobType = SQLITE_BLOB
    static let nullType = SQLITE_NULL
}
