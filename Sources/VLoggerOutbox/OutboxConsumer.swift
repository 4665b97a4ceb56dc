import VLoggerModel
import VLoggerStore

/// A way data leaves the gateway: one consumer of the store's outbox. It names itself (its cursors and its
/// metrics carry the name), says which tables it takes, and delivers batches; `OutboxPump` reads the rows after
/// its cursor and moves the cursor only after `deliver` returned, so a batch is acknowledged only when the
/// destination has it. A consumer knows nothing of the others, and the service knows consumer kinds only
/// through its one registration list.
public protocol OutboxConsumer: Sendable {
    /// The name its cursors and metrics carry (`postgres`, …): letters, digits, `-` and `_`.
    var name: String { get }
    /// What an operator calls it ("Fleet sync to PostgreSQL"): the status page's heading.
    var title: String { get }
    /// A name it had before outputs were consumers (the fleet sync: `sync`, for `"sync"` in /healthz and
    /// `vlogger_sync_*`), so that dashboards built on it go on working; nil for a new output.
    var legacyName: String? { get }
    /// The tables it takes, in the order a round ships them.
    var tables: [SyncTable] { get }
    /// Rows per batch.
    var batchSize: Int { get }
    /// Opens what one round needs (a connection, a check of the destination's schema), runs `body` with it, and
    /// closes it, also when `body` throws.
    func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T
    /// What a failure of a round is, for the log, `/healthz` and `vlogger_output_failures_total{kind}`.
    func describe(_ error: any Error) -> OutboxFailure
    /// Called once when the service stops, after the last round (a connection kept between rounds says goodbye).
    func shutdown() async
    /// Whether its tables may go in any order relative to each other (a broker, a webhook: each row stands
    /// alone). A round then takes one batch of each table in turn, so that a backlog of one table (a day of
    /// readings) does not hold back the others (the events, with their alarms). False (the fleet sync: audit
    /// results refer to their audit): each table in turn, to its end.
    var tablesIndependent: Bool { get }
    /// Whether its connection is up now (nil: it has none between rounds).
    var isConnected: Bool? { get }
    /// At most this many rows per second when a round catches up with a backlog (nil: no bound).
    var replayRowsPerSecond: Int? { get }
    /// While a round catches up with a backlog, how often it also sends the rows committed since it began, so
    /// that live rows are not held back behind the backlog (nil: the backlog first, in order). Only for a
    /// destination that takes rows out of order and a row twice (the fleet sync: keyed by (gateway, local id)).
    var liveEvery: Duration? { get }
    /// Rows the destination refused for good since the start (a webhook's 4xx), not sent again: counted in
    /// `vlogger_output_refused_rows_total{output}` (each is also an event).
    var refusedRows: Int { get }
    /// Checks that the destination answers, sending no row (`outputs status`): by default a session opened and
    /// closed; an output whose session needs no connection (a webhook) contacts its destination.
    func probe() async throws
    /// How long the store keeps rows after this destination acknowledged them (nil: none), because it may lose
    /// what it acknowledged (a central cluster failing over with asynchronous replication): retention reads it.
    var safetyWindowMs: Millis? { get }
    /// Lines `outputs status` adds under the backlog (a safety window, a gap the destination reported).
    func statusNotes() -> [String]
}

extension OutboxConsumer {
    public var legacyName: String? { nil }
    public func shutdown() async {}
    public var tablesIndependent: Bool { false }
    public var isConnected: Bool? { nil }
    public var replayRowsPerSecond: Int? { nil }
    public var liveEvery: Duration? { nil }
    public var refusedRows: Int { 0 }
    public func probe() async throws { try await withSession { _ in } }
    public var safetyWindowMs: Millis? { nil }
    public func statusNotes() -> [String] { [] }
}

/// Spreads a backlog's replay over time: after `rows` rows in `elapsed` since the round began, how long to wait
/// before the next batch so that the round stays at or under `rowsPerSecond` on average (its first second's worth
/// goes at once). Pure, so the tests need no clock.
public struct ReplayPace: Sendable, Equatable {
    public let rowsPerSecond: Int
    public init(rowsPerSecond: Int) { self.rowsPerSecond = max(1, rowsPerSecond) }

    public func wait(afterRows rows: Int, elapsed: Duration) -> Duration {
        guard rows > rowsPerSecond else { return .zero }
        // The time `rows` rows take at the rate, less the first second's allowance, less what has passed.
        let due = Duration.milliseconds(Int64(rows - rowsPerSecond) * 1000 / Int64(rowsPerSecond))
        return due > elapsed ? due - elapsed : .zero
    }
}

/// One round's link to a consumer's destination.
public protocol OutboxSession {
    /// Delivers one batch of `table` (rows in commit order) and returns when the destination has committed it;
    /// returns how many of the rows were new to it (a resent batch: fewer). Throws when it is not sure the
    /// destination has them: the cursor does not move, and the batch is sent again.
    func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int
    /// The same, for a batch after which the cursor moves to `cursorAfter` (every row up to it is then
    /// acknowledged): a destination that records how far it has everything (the fleet sync's marks) records it
    /// with the batch. Live passes and resends use `deliver(_:_:)`.
    func deliver(_ table: SyncTable, _ rows: [OutboxRow], cursorAfter: Int64) async throws -> Int
    /// The cursor moves to `id` without a batch: every row up to it was delivered (the backlog reached rows that
    /// live passes had sent). Called before the cursor moves.
    func acknowledged(_ table: SyncTable, through id: Int64) async throws
}

extension OutboxSession {
    public func deliver(_ table: SyncTable, _ rows: [OutboxRow], cursorAfter: Int64) async throws -> Int {
        try await deliver(table, rows)
    }
    public func acknowledged(_ table: SyncTable, through id: Int64) async throws {}
}

/// A failed round, as the log, the metrics and /healthz show it (the kind is a label value).
public struct OutboxFailure: Sendable, Equatable, Error {
    public var kind: String
    public var message: String
    public init(kind: String, message: String) {
        self.kind = kind
        self.message = message
    }
}

/// What one round delivered.
public struct OutboxRound: Sendable, Equatable {
    /// Rows the destination acknowledged, by table (resent rows it had already count too).
    public var sent: [SyncTable: Int] = [:]
    /// Rows that were new to it.
    public var inserted: [SyncTable: Int] = [:]
    public var batches = 0
    public init() {}
}

/// Moves rows from the store to one consumer: for each of its tables, the rows after its cursor, batch by
/// batch, the cursor moved after each acknowledged batch, until nothing is left (or `maxBatches`).
///
/// Live rows during a catch-up (a consumer with `liveEvery`): the round notes where each table's newest batch
/// begins when the round begins; that batch and what is committed after it are live. At once and then every
/// `liveEvery`, before the next batch of the backlog, the live rows not yet sent go first (a "live pass"). The cursor still moves over the backlog only, batch by batch; when
/// it reaches the live rows, it jumps over those the passes delivered (the destination has them) instead of
/// sending them again. A crash in between loses only that knowledge: the next round sends those rows again, and
/// the destination keeps one of each.
public struct OutboxPump: Sendable {
    public let store: Store
    public let consumer: any OutboxConsumer
    /// Called after the destination acknowledged a batch and before the cursor moves (tests: a crash there).
    public var afterDelivery: (@Sendable (SyncTable, Int64) throws -> Void)?
    /// The clock live passes are timed by (tests: one that the deliveries advance).
    public var now: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }

    public init(store: Store, consumer: any OutboxConsumer) {
        self.store = store
        self.consumer = consumer
    }

    /// One round. A store that fails is an `OutboxFailure` of kind `store`; the consumer's own failures are
    /// thrown as it threw them. `pace` (the service's: the consumer's `replayRowsPerSecond`) is awaited after
    /// each batch with the rows sent so far in the round and may sleep; `vlogger outputs send` has none.
    public func round(
        maxBatches: Int = .max, pace: (@Sendable (_ rowsSoFar: Int) async throws -> Void)? = nil
    ) async throws -> OutboxRound {
        let (store, consumer, hook, now) = (self.store, self.consumer, self.afterDelivery, self.now)
        let name = consumer.name
        let batchSize = max(1, consumer.batchSize)
        func storeFailure(_ error: any Error) -> OutboxFailure {
            OutboxFailure(kind: "store", message: "the local store: \(error)")
        }
        // Live passes: where each append-only table's live rows begin. The newest batch when the round begins
        // counts as live too (rows committed just before the round must not wait for the whole backlog); a table
        // with no more than that after its cursor has no backlog, and no live pass.
        var liveFrom: [SyncTable: Int64] = [:]
        if consumer.liveEvery != nil {
            do {
                for t in consumer.tables where !t.isUpserted {
                    let newest = try store.newestID(t)
                    liveFrom[t] = max(try store.outboxCursor(name, t), newest - Int64(batchSize))
                }
            } catch { throw storeFailure(error) }
        }
        return try await consumer.withSession { session in
            var report = OutboxRound()
            // The next batch of a table is read from the store while the destination takes the current one
            // (its rows follow the current batch's last id, which the cursor will be once it is acknowledged):
            // reading and delivering overlap instead of taking turns.
            var ahead: [SyncTable: (after: Int64, rows: Task<[OutboxRow], any Error>)] = [:]
            var spent: [OutboxRow] = []
            // The highest live id a live pass delivered, by table, and when the last pass was.
            var liveSent: [SyncTable: Int64] = [:]
            // The first pass is due at once: the newest rows first, then the backlog.
            var lastLive = now() - (consumer.liveEvery ?? .zero)
            func read(_ table: SyncTable, after: Int64) throws -> [OutboxRow] {
                do { return try store.outbox(table, after: after, limit: batchSize) } catch {
                    throw storeFailure(error)
                }
            }
            // Each table's cursor as this round moved it: read from the store once, then kept (a store read per
            // batch cost the destination a millisecond of waiting each time).
            var cursors: [SyncTable: Int64] = [:]
            func cursor(_ table: SyncTable) throws -> Int64 {
                if let c = cursors[table] { return c }
                do {
                    let c = try store.outboxCursor(name, table)
                    cursors[table] = c
                    return c
                } catch { throw storeFailure(error) }
            }
            func advance(_ table: SyncTable, to last: Int64) throws {
                // The destination has the rows: only now does the cursor move.
                try hook?(table, last)
                do { try store.advanceOutboxCursor(name, table, to: last) } catch { throw storeFailure(error) }
                cursors[table] = max(cursors[table] ?? last, last)
            }
            func record(_ table: SyncTable, _ rows: Int, _ inserted: Int) async throws {
                report.sent[table, default: 0] += rows
                report.inserted[table, default: 0] += inserted
                report.batches += 1
                try await pace?(report.sent.values.reduce(0, +))
            }
            /// The rows committed since the round began that no pass has sent, of every table whose backlog has
            /// not reached them yet, when `liveEvery` has passed since the last pass.
            func livePass() async throws {
                guard let every = consumer.liveEvery, now() - lastLive >= every else { return }
                for table in consumer.tables {
                    guard let from = liveFrom[table], try cursor(table) < from else { continue }
                    var after = max(from, liveSent[table] ?? from)
                    while report.batches < maxBatches {
                        let rows = try read(table, after: after)
                        guard let last = rows.last?.id else { break }
                        let inserted = try await session.deliver(table, rows)
                        liveSent[table] = last
                        after = last
                        try await record(table, rows.count, inserted)
                        if rows.count < batchSize { break }
                    }
                }
                lastLive = now()
            }
            /// One batch of `table`; false when it was the table's last (fewer rows than a batch).
            func batch(_ table: SyncTable) async throws -> Bool {
                try await livePass()
                var after = try cursor(table)
                // The backlog reached the live rows: those a pass delivered are there already.
                if let from = liveFrom[table], after >= from {
                    if let sent = liveSent.removeValue(forKey: table), sent > after {
                        try await session.acknowledged(table, through: sent)
                        try advance(table, to: sent)
                        after = sent
                    }
                    liveFrom[table] = nil
                }
                var rows: [OutboxRow]
                if let a = ahead.removeValue(forKey: table), a.after == after {
                    rows = try await a.rows.value
                } else {
                    rows = try read(table, after: after)
                }
                var more = rows.count == batchSize
                // The backlog's last batch stops where the live rows a pass delivered begin.
                if let from = liveFrom[table], liveSent[table] != nil,
                    let cut = rows.firstIndex(where: { $0.id > from })
                {
                    rows.removeSubrange(cut...)
                    more = true
                    // No backlog row is left before the live ones: the cursor goes to where they begin.
                    if rows.isEmpty {
                        try await session.acknowledged(table, through: from)
                        try advance(table, to: from)
                        return true
                    }
                }
                guard let last = rows.last?.id else { return more }
                if more && rows.count == batchSize {
                    // The batch delivered before this one is freed by the task that reads the next (thousands
                    // of values: a millisecond the destination would otherwise wait for the next batch).
                    let old = spent
                    spent = []
                    ahead[table] = (
                        last,
                        Task {
                            withExtendedLifetime(old) {}
                            return try read(table, after: last)
                        }
                    )
                }
                let inserted = try await session.deliver(table, rows, cursorAfter: last)
                try advance(table, to: last)
                try await record(table, rows.count, inserted)
                spent = rows
                return more
            }
            if consumer.tablesIndependent {
                // One batch of each table in turn, while any has more.
                var open = consumer.tables
                while !open.isEmpty && report.batches < maxBatches {
                    var still: [SyncTable] = []
                    for table in open where report.batches < maxBatches {
                        if try await batch(table) { still.append(table) }
                    }
                    open = still
                }
            } else {
                for table in consumer.tables {
                    while report.batches < maxBatches {
                        if !(try await batch(table)) { break }
                    }
                }
            }
            return report
        }
    }

    /// The consumer's backlog on each of its tables: rows not yet acknowledged and the oldest one's time.
    public func backlog() -> [SyncTable: (rows: Int, oldest: Millis?)] {
        var out: [SyncTable: (rows: Int, oldest: Millis?)] = [:]
        for t in consumer.tables { out[t] = (try? store.outboxBacklog(consumer.name, t)) ?? (0, nil) }
        return out
    }
}
