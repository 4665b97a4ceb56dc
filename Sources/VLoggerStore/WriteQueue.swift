import Foundation
import VLoggerModel
import ISO15693

/// A write that waits in the store until its tag is in a reader's field.
public struct QueuedWrite: Equatable, Sendable {
    public enum State: String, Sendable, CaseIterable { case queued, done, failed, expired, cancelled }
    /// What is done to the tag: write the blocks; write them and then lock them (irreversible); or lock the
    /// one block `first` (`data` empty). Locks are queued only when the person or system asked with `--yes`.
    public enum Operation: String, Sendable, CaseIterable { case write, writeLock = "write-lock", lock }
    public var id: Int64 = 0
    public var operation: Operation = .write
    public var created: Millis
    public var uid: UID
    public var first: BlockNumber
    /// Whole blocks, concatenated.
    public var data: [UInt8]
    public var flags: RequestFlags?
    public var reader: String?
    public var expires: Millis?
    public var state: State = .queued
    public var result: String?
    public var finished: Millis?

    public init(
        created: Millis, uid: UID, first: BlockNumber, data: [UInt8], flags: RequestFlags? = nil, reader: String? = nil,
        expires: Millis? = nil,
        operation: Operation = .write
    ) {
        self.operation = operation
        self.created = created
        self.uid = uid
        self.first = first
        self.data = data
        self.flags = flags
        self.reader = reader
        self.expires = expires
    }
}

/// What became of a queued write, for the store writer to record.
public struct WriteOutcome: Equatable, Sendable {
    public var id: Int64
    public var state: QueuedWrite.State
    public var result: String
    public var time: Millis
    public init(id: Int64, state: QueuedWrite.State, result: String, time: Millis) {
        self.id = id
        self.state = state
        self.result = result
        self.time = time
    }
}

extension Store {
    /// How many writes may wait for their tags at once. Past it a new write is refused (it would otherwise
    /// grow the queue without bound, and every refresh of the service's copy with it).
    public static let writeQueueLimit = 10_000

    /// Puts a write in the queue under a client's idempotency key: a key already used returns the write it
    /// queued (`replayed`), so a client that retries a POST after a lost answer queues nothing twice.
    public func enqueue(_ w: QueuedWrite, idempotencyKey: String?) throws(StoreError) -> (
        id: Int64, replayed: Bool, state: QueuedWrite.State
    ) {
        guard let key = idempotencyKey else { return (try enqueue([w])[0], false, .queued) }
        return try withWriter { db throws(StoreError) in
            var result: (Int64, Bool, QueuedWrite.State) = (0, false, .queued)
            try Self.transaction(db) { () throws(StoreError) in
                let s = try db.prepare(Self.queueColumns + " WHERE idempotency_key = ?")
                try s.bind([.text(key)])
                if try s.step(), let earlier = Self.queuedWrite(s) {
                    // The same key for another write is the client's mistake: said, not answered with the first.
                    let same =
                        earlier.uid == w.uid && earlier.first == w.first && earlier.data == w.data
                        && earlier.operation == w.operation
                        && earlier.reader == w.reader && earlier.flags == w.flags
                    guard same else {
                        throw StoreError(
                            "Idempotency-Key '\(key)' was used for another write (\(earlier.id)); use a new key for a new write"
                        )
                    }
                    result = (earlier.id, true, earlier.state)
                    return
                }
                result = (try insert([w], db, key: key)[0], false, .queued)
            }
            return result
        }
    }

    /// Puts a write in the queue; returns its id. When the store already knows the tag's memory (it has
    /// been seen), a write that is not whole blocks or runs past the end is refused here, not at the tag.
    @discardableResult
    public func enqueue(_ w: QueuedWrite) throws(StoreError) -> Int64 {
        try enqueue([w])[0]
    }

    /// Puts several writes in the queue, all or none (the blocks of one file); returns their ids in order.
    @discardableResult
    public func enqueue(_ writes: [QueuedWrite]) throws(StoreError) -> [Int64] {
        try withWriter { db throws(StoreError) in
            var ids: [Int64] = []
            try Self.transaction(db) { () throws(StoreError) in ids = try insert(writes, db, key: nil) }
            return ids
        }
    }

    /// Inside a transaction: checks and inserts the writes.
    private func insert(_ writes: [QueuedWrite], _ db: SQLiteConnection, key: String?) throws(StoreError) -> [Int64] {
        var ids: [Int64] = []
        if case let .integer(n)? = try db.scalar("SELECT count(*) FROM write_queue WHERE state = 'queued'"),
            Int(n) + writes.count > Self.writeQueueLimit
        {
            throw StoreError(
                "the write queue holds \(n) writes waiting for their tags and takes at most \(Self.writeQueueLimit); cancel some (vlogger writes cancel ID) or wait for them to be made or expire"
            )
        }
        for w in writes {
            if w.operation == .lock ? !w.data.isEmpty : w.data.isEmpty {
                throw StoreError(
                    w.operation == .lock ? "a queued lock of one block carries no data" : "a queued write needs data")
            }
            let layout = try db.prepare("SELECT block_count, block_size FROM tags WHERE uid = ?")
            try layout.bind([.text(w.uid.description)])
            if try layout.step(), layout.type(0) != SQLStatement.nullType, layout.type(1) != SQLStatement.nullType {
                let count = Int(layout.int64(0)), size = Int(layout.int64(1))
                if w.operation == .lock && w.first.int >= count {
                    throw StoreError("block \(w.first) is past the end of \(w.uid) (\(count) blocks)")
                }
                guard size > 0, w.operation == .lock || w.data.count % size == 0 else {
                    throw StoreError(
                        "\(w.uid) has \(size)-byte blocks; \(w.data.count) bytes is not a whole number of them")
                }
                let n = w.operation == .lock ? 1 : w.data.count / size
                guard n <= count, w.first.int <= count - n else {
                    throw StoreError("\(n) block(s) from \(w.first) run past the end of \(w.uid) (\(count) blocks)")
                }
            }
            let s = try db.prepare(
                "INSERT INTO write_queue(created, uid, block, data, flags, reader, expires, state, operation, idempotency_key) VALUES(?,?,?,?,?,?,?, 'queued', ?, ?)"
            )
            try s.bind([
                .integer(w.created), .text(w.uid.description), .integer(Int64(w.first.int)), .blob(w.data),
                w.flags.map { .integer(Int64($0.rawValue)) } ?? .null, w.reader.map(SQLValue.text) ?? .null,
                w.expires.map(SQLValue.integer) ?? .null, .text(w.operation.rawValue), key.map(SQLValue.text) ?? .null,
            ])
            try s.step()
            ids.append(db.lastInsertRowID)
        }
        return ids
    }

    /// One queued write by id, whatever its state; nil if there is none.
    public func queuedWrite(_ id: Int64) throws(StoreError) -> QueuedWrite? {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(Self.queueColumns + " WHERE id = ?")
            try s.bind([.integer(id)])
            return try s.step() ? Self.queuedWrite(s) : nil
        }
    }

    static let queueColumns =
        "SELECT id, created, uid, block, data, flags, reader, expires, state, result, finished, operation FROM write_queue"

    static func queuedWrite(_ s: SQLStatement) -> QueuedWrite? {
        guard let uid = try? UID(parsing: s.text(2) ?? ""), let first = BlockNumber(exactly: Int(s.int64(3))) else {
            return nil
        }
        var w = QueuedWrite(
            created: s.int64(1), uid: uid, first: first, data: s.blob(4),
            flags: s.type(5) == SQLStatement.nullType
                ? nil : RequestFlags(rawValue: UInt8(truncatingIfNeeded: s.int64(5))),
            reader: s.text(6), expires: s.type(7) == SQLStatement.nullType ? nil : s.int64(7),
            operation: QueuedWrite.Operation(rawValue: s.text(11) ?? "") ?? .write)
        w.id = s.int64(0)
        w.state = QueuedWrite.State(rawValue: s.text(8) ?? "") ?? .failed
        w.result = s.text(9)
        w.finished = s.type(10) == SQLStatement.nullType ? nil : s.int64(10)
        return w
    }

    /// The queue and its history, newest first; with `state`, only those.
    public func queuedWrites(state: QueuedWrite.State? = nil, limit: Int = 1000, oldestFirst: Bool = false)
        throws(StoreError) -> [QueuedWrite]
    {
        try withReader { db throws(StoreError) in
            let s = try db.prepare(
                Self.queueColumns
                    + (state == nil ? "" : " WHERE state = ?2")
                    + " ORDER BY id \(oldestFirst ? "ASC" : "DESC") LIMIT ?1")
            try s.bind(
                state == nil ? [.integer(Int64(limit))] : [.integer(Int64(limit)), .text(state?.rawValue ?? "")])
            var out: [QueuedWrite] = []
            while try s.step() {
                if let w = Self.queuedWrite(s) { out.append(w) }
            }
            return out
        }
    }

    /// Cancels a write that is still queued; false if it is not (done, failed, … or no such id).
    public func cancelWrite(_ id: Int64, now: Millis = Millis.now()) throws(StoreError) -> Bool {
        try withWriter { db throws(StoreError) in
            var changed = false
            try Self.transaction(db) { () throws(StoreError) in
                let s = try db.prepare(
                    "UPDATE write_queue SET state = 'cancelled', result = 'cancelled', finished = ? WHERE id = ? AND state = 'queued'"
                )
                try s.bind([.integer(now), .integer(id)])
                try s.step()
                changed = db.changes > 0
            }
            return changed
        }
    }

    /// Marks the queued writes whose time ran out as expired; returns how many.
    @discardableResult
    public func expireWrites(now: Millis = Millis.now()) throws(StoreError) -> Int {
        try withWriter { db throws(StoreError) in
            var n = 0
            try Self.transaction(db) { () throws(StoreError) in
                let s = try db.prepare(
                    "UPDATE write_queue SET state = 'expired', result = 'expired before the tag was seen', finished = ?1 WHERE state = 'queued' AND expires IS NOT NULL AND expires < ?1"
                )
                try s.bind([.integer(now)])
                try s.step()
                n = db.changes
            }
            return n
        }
    }

    /// Records outcomes, inside a batch's transaction; a write no longer queued (cancelled meanwhile) keeps its state.
    static func record(_ outcomes: [WriteOutcome], _ db: SQLiteConnection) throws(StoreError) {
        guard !outcomes.isEmpty else { return }
        let s = try db.prepare(
            "UPDATE write_queue SET state = ?, result = ?, finished = ? WHERE id = ? AND state = 'queued'")
        for o in outcomes {
            s.reset()
            try s.bind([.text(o.state.rawValue), .text(o.result), .integer(o.time), .integer(o.id)])
            try s.step()
        }
    }
}
