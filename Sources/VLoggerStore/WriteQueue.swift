import Foundation
import GRDB
import VLoggerModel
import ISO15693

/// A write that waits in the store until its tag is in a reader's field.
public struct QueuedWrite: Equatable, Sendable {
    /// `rejected`: the tag refused the password the write needed (an NXP chip is then mute until its power is
    /// reset); the write is not tried again until an operator asks (`vlogger writes retry ID`).
    public enum State: String, Sendable, CaseIterable { case queued, done, failed, expired, cancelled, rejected }
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
    /// Who queued it (`api`, `cli`, later `opcua:<client>`; docs/json.md, origin): the origin of the write made
    /// of it and of its outcome's event. Nil for a write queued before the queue kept it (those are `queue`'s).
    public var origin: String?

    public init(
        created: Millis, uid: UID, first: BlockNumber, data: [UInt8], flags: RequestFlags? = nil, reader: String? = nil,
        expires: Millis? = nil,
        operation: Operation = .write, origin: String? = nil
    ) {
        self.origin = origin
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
        return try write { db in
            if let earlier = try StoredQueuedWrite.filter(Column("idempotency_key") == key).fetchOne(db)?.write {
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
                return (earlier.id, true, earlier.state)
            }
            return (try Self.insert([w], db, key: key)[0], false, .queued)
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
        try write { db in try Self.insert(writes, db, key: nil) }
    }

    /// Inside a transaction: checks and inserts the writes.
    private static func insert(_ writes: [QueuedWrite], _ db: Database, key: String?) throws -> [Int64] {
        var ids: [Int64] = []
        let n = try StoredQueuedWrite.filter(Column("state") == QueuedWrite.State.queued.rawValue).fetchCount(db)
        if n + writes.count > Self.writeQueueLimit {
            throw StoreError(
                "the write queue holds \(n) writes waiting for their tags and takes at most \(Self.writeQueueLimit); cancel some (vlogger writes cancel ID) or wait for them to be made or expire"
            )
        }
        for w in writes {
            if w.operation == .lock ? !w.data.isEmpty : w.data.isEmpty {
                throw StoreError(
                    w.operation == .lock ? "a queued lock of one block carries no data" : "a queued write needs data")
            }
            let layout = try Row.fetchOne(
                db,
                Table("tags").select(Column("block_count"), Column("block_size"))
                    .filter(Column("uid") == w.uid.description))
            if let layout, let count: Int = layout[0], let size: Int = layout[1] {
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
            var row = StoredQueuedWrite(w, idempotencyKey: key)
            try row.insert(db)
            ids.append(row.id ?? db.lastInsertedRowID)
        }
        return ids
    }

    /// One queued write by id, whatever its state; nil if there is none.
    public func queuedWrite(_ id: Int64) throws(StoreError) -> QueuedWrite? {
        try read { db in try StoredQueuedWrite.fetchOne(db, key: id)?.write }
    }

    /// The queue and its history, newest first; with `state`, only those.
    public func queuedWrites(state: QueuedWrite.State? = nil, limit: Int = 1000, oldestFirst: Bool = false)
        throws(StoreError) -> [QueuedWrite]
    {
        try read { db in
            var q = StoredQueuedWrite.order(oldestFirst ? Column("id").asc : Column("id").desc)
            if let state { q = q.filter(Column("state") == state.rawValue) }
            return try q.limit(max(0, limit)).fetchAll(db).compactMap(\.write)
        }
    }

    /// Cancels a write that is still queued; false if it is not (done, failed, … or no such id).
    public func cancelWrite(_ id: Int64, now: Millis = Millis.now()) throws(StoreError) -> Bool {
        try write { db in
            try StoredQueuedWrite.filter(key: id).filter(Column("state") == QueuedWrite.State.queued.rawValue)
                .updateAll(
                    db, Column("state").set(to: QueuedWrite.State.cancelled.rawValue),
                    Column("result").set(to: "cancelled"), Column("finished").set(to: now)) > 0
        }
    }

    /// Queues again a write that failed or whose password was rejected (an operator's decision); false if it is in
    /// another state or there is no such id.
    public func retryWrite(_ id: Int64) throws(StoreError) -> Bool {
        try write { db in
            try StoredQueuedWrite.filter(key: id)
                .filter(
                    [QueuedWrite.State.rejected.rawValue, QueuedWrite.State.failed.rawValue].contains(Column("state"))
                )
                .updateAll(
                    db, Column("state").set(to: QueuedWrite.State.queued.rawValue), Column("result").set(to: nil),
                    Column("finished").set(to: nil)) > 0
        }
    }

    /// Marks the queued writes whose time ran out as expired; returns how many.
    @discardableResult
    public func expireWrites(now: Millis = Millis.now()) throws(StoreError) -> Int {
        try write { db in
            try StoredQueuedWrite.filter(Column("state") == QueuedWrite.State.queued.rawValue)
                .filter(Column("expires") != nil && Column("expires") < now)
                .updateAll(
                    db, Column("state").set(to: QueuedWrite.State.expired.rawValue),
                    Column("result").set(to: "expired before the tag was seen"), Column("finished").set(to: now))
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
