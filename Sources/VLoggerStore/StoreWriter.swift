import Dispatch
import Foundation
import VLoggerModel

/// The one write path into the store. Polling jobs hand it readings, events, tag updates and writes
/// (`add`, which never touches the database and never waits for a commit); it commits them in batches,
/// when `batchSize` readings are waiting or the oldest record has waited `flushIntervalMs`, whichever
/// comes first, on a thread of its own (`start`), or when asked (`commitNow`, for commands and tests).
///
/// A batch that fails (the file locked by another process beyond SQLite's wait, a full disk) is kept
/// whole and tried again after a back-off that doubles from 250 ms up to `maxBackoffMs`, not on every
/// cycle. The queue is bounded: past `queueLimit` readings (or events) the oldest uncommitted ones are
/// dropped, counted, and reported by one `readings-dropped` event in the first batch that commits
/// afterwards. A committed batch is never lost; nothing is half-written.
public final class StoreWriter: @unchecked Sendable {
    public let store: Store
    public let batchSize: Int
    public let flushIntervalMs: Millis
    public let queueLimit: Int
    /// The gateway named in the writer's own events (`readings-dropped`).
    public let gateway: String
    public var maxBackoffMs: Millis = 30_000
    /// Called on the writer's thread after each commit: readings, events, the last reading's row id, seconds.
    public var onCommit:
        (@Sendable (_ readings: Int, _ events: Int, _ lastReadingID: Int64, _ seconds: Double) -> Void)?
    /// Called when commits start failing (`nil` when they work again), for the log.
    public var onStateChange: (@Sendable (_ error: StoreError?, _ queued: Int) -> Void)?
    /// Called on the adding thread (outside the writer's lock) each time records are dropped at the queue limit,
    /// with the totals dropped so far: the service counts and says it as it happens, not when commits return.
    public var onDrop: (@Sendable (_ readings: Int, _ events: Int) -> Void)?
    /// Called once when a commit fails in a way no retry can mend (`StoreError.isFatal`: the store file or its
    /// -wal was removed or replaced). The writer commits nothing more; the service should stop.
    public var onFatal: (@Sendable (_ error: StoreError) -> Void)?

    /// The writer's own time, for batching and back-off only (records carry their own timestamps):
    /// monotonic milliseconds; tests inject a manual one.
    private let clock: @Sendable () -> Millis
    private let cond = NSCondition()
    private var pending = Batch()
    private var oldest: Millis?
    private var fields: [FieldInfo]?
    private var dropped = DropWindow()
    private var thread: Thread?
    private var running = false
    private var stopping = false
    private var backoff: Backoff?
    private var retryAt: Millis?
    /// The error that stopped the writer for good.
    private var fatal: StoreError?
    private let threadDone = DispatchSemaphore(value: 0)
    private var totals = Stats()

    /// What the writer has done so far.
    public struct Stats: Sendable {
        public var committedReadings = 0
        public var committedEvents = 0
        public var commits = 0
        public var failedCommits = 0
        public var droppedReadings = 0
        public var droppedEvents = 0
        /// Records waiting for a commit now.
        public var queued = 0
        public var queuedReadings = 0
        /// The last commit's error, while commits fail.
        public var lastError: StoreError?
        public init() {}
    }

    /// Records dropped since the last `readings-dropped` event.
    private struct DropWindow {
        var readings = 0
        var events = 0
        var first: Millis = .max
        var last: Millis = .min
        var isEmpty: Bool { readings == 0 && events == 0 }
    }

    public init(
        store: Store, gateway: String = "gateway", batchSize: Int = 500, flushIntervalMs: Millis = 2000,
        queueLimit: Int = 100_000, clock: (@Sendable () -> Millis)? = nil
    ) {
        self.store = store
        self.gateway = gateway
        self.batchSize = max(1, batchSize)
        self.flushIntervalMs = max(0, flushIntervalMs)
        self.queueLimit = max(1, queueLimit)
        self.clock = clock ?? { Millis(DispatchTime.now().uptimeNanoseconds / 1_000_000) }
    }

    private func locked<T>(_ body: () -> T) -> T {
        cond.lock()
        defer { cond.unlock() }
        return body()
    }

    public var stats: Stats {
        locked {
            var s = totals
            s.queued = pending.size
            s.queuedReadings = pending.readings.count
            return s
        }
    }

    public var pendingCount: Int { locked { pending.size } }
    public var lastError: StoreError? { locked { totals.lastError } }

    // MARK: Adding (any thread; never waits for the database)

    public func add(_ reading: Reading) {
        let dropped: Stats? = locked {
            if pending.readings.isEmpty { pending.readings.reserveCapacity(min(batchSize, 100_000)) }
            pending.readings.append(reading)
            let over = pending.readings.count > queueLimit
            if over { dropOldest() }
            marked(wakeIf: pending.readings.count == batchSize)
            return over ? totals : nil
        }
        if let dropped { onDrop?(dropped.droppedReadings, dropped.droppedEvents) }
    }

    public func add(_ event: Event) {
        let dropped: Stats? = locked {
            pending.events.append(event)
            let over = pending.events.count > queueLimit
            if over { dropOldest() }
            marked(wakeIf: false)
            return over ? totals : nil
        }
        if let dropped { onDrop?(dropped.droppedReadings, dropped.droppedEvents) }
    }

    public func add(_ tag: TagRecord) {
        locked {
            pending.add(tag)
            marked(wakeIf: false)
        }
    }

    public func add(_ write: WriteRecord) {
        locked {
            pending.writes.append(write)
            marked(wakeIf: false)
        }
    }

    /// What became of a queued write: committed at once, with what is queued (someone is waiting for it: the
    /// write API's caller polls for the outcome; writes are rare, so an early batch costs little).
    public func add(_ outcome: WriteOutcome) {
        locked {
            pending.outcomes.append(outcome)
            marked(wakeIf: true)
        }
    }

    /// The decoded fields the configuration defines (export columns), registered before the next commit.
    public func register(fields new: [FieldInfo]) {
        locked {
            fields = new
            marked(wakeIf: true)
        }
    }

    /// With the lock held: notes when the batch started and wakes the writer thread when it has work to plan.
    private func marked(wakeIf full: Bool) {
        if oldest == nil {
            oldest = clock()
            cond.signal()
        } else if full {
            cond.signal()
        }
    }

    /// With the lock held: drops the oldest readings (and events) past the limit, an eighth of the limit
    /// at a time so that a long outage costs one move per eighth, not one per record.
    private func dropOldest() {
        let r = trimmed(&pending.readings, time: \.time), e = trimmed(&pending.events, time: \.time)
        dropped.readings += r
        dropped.events += e
        totals.droppedReadings += r
        totals.droppedEvents += e
    }

    /// Drops the oldest of `items` past the limit, widening the window of dropped times; returns how many.
    private func trimmed<T>(_ items: inout [T], time: KeyPath<T, Millis>) -> Int {
        guard items.count > queueLimit else { return 0 }
        let k = min(items.count, max(items.count - queueLimit, queueLimit / 8))
        dropped.first = min(dropped.first, items[0][keyPath: time])
        dropped.last = max(dropped.last, items[k - 1][keyPath: time])
        items.removeFirst(k)
        return k
    }

    // MARK: Committing

    /// Whether a commit is due at the writer's time `now`.
    public func isDue(now: Millis) -> Bool { locked { due(now) } }

    private func due(_ now: Millis) -> Bool {
        if fields != nil { return true }
        guard let oldest, !pending.isEmpty else { return false }
        return pending.readings.count >= batchSize || !pending.outcomes.isEmpty || now - oldest >= flushIntervalMs
    }

    /// Commits what is queued now, on the calling thread (commands, tests, the final flush). Returns
    /// false when the commit failed; the records stay queued and `lastError` says why.
    @discardableResult
    public func commitNow() -> Bool {
        cond.lock()
        defer { cond.unlock() }
        return commitLocked()
    }

    /// Commits `batch` on the calling thread after what is queued before it, and returns once it is committed: for
    /// work that may go on only when its rows are stored (the buffer drain tells its reader to clear the records
    /// only then). It is counted and reported (`onCommit`) like the writer's own batches. Throws when the queued
    /// records or `batch` cannot be committed; `batch` is then not stored, and not kept either (its owner still
    /// has it).
    public func commit(_ batch: Batch) throws(StoreError) {
        cond.lock()
        let earlier = commitLocked()
        let failure = fatal ?? totals.lastError
        cond.unlock()
        guard earlier else { throw failure ?? StoreError("the store writer cannot commit") }
        let started = DispatchTime.now().uptimeNanoseconds
        let last = try store.write(batch)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let onCommit = locked { () -> (@Sendable (Int, Int, Int64, Double) -> Void)? in
            totals.committedReadings += batch.readings.count
            totals.committedEvents += batch.events.count
            totals.commits += 1
            return self.onCommit
        }
        onCommit?(batch.readings.count, batch.events.count, last, seconds)
    }

    /// With the lock held (released during the database work): commits everything queued.
    private func commitLocked() -> Bool {
        if fatal != nil { return false }
        guard !pending.isEmpty || fields != nil || !dropped.isEmpty else { return true }
        var batch = pending
        let newFields = fields
        pending = Batch()
        oldest = nil
        fields = nil
        let window = dropped
        if !window.isEmpty {
            batch.events.append(
                Event(
                    time: Millis.now(), gateway: gateway, uid: nil, kind: .error, name: "readings-dropped",
                    severity: .warning,
                    detail:
                        "\(window.readings) readings and \(window.events) events made between \(TimeSpec.format(window.first)) and \(TimeSpec.format(window.last)) were dropped uncommitted: the store could not commit and the queue reached its limit of \(queueLimit) (store queue-limit)"
                ))
        }
        cond.unlock()
        let started = DispatchTime.now().uptimeNanoseconds
        var result: Result<Int64, StoreError>
        do {
            if let newFields { try store.registerFields(newFields) }
            result = .success(try store.write(batch))
        } catch {
            result = .failure(error)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        cond.lock()
        switch result {
        case let .success(last):
            if !window.isEmpty {
                dropped.readings -= window.readings
                dropped.events -= window.events
                if dropped.isEmpty { dropped = DropWindow() }
            }
            totals.committedReadings += batch.readings.count
            totals.committedEvents += batch.events.count
            totals.commits += 1
            let recovered = totals.lastError != nil
            totals.lastError = nil
            backoff = nil
            retryAt = nil
            let (r, e, onCommit, onState, queued) = (
                batch.readings.count, batch.events.count, self.onCommit, self.onStateChange, pending.size
            )
            cond.unlock()
            if recovered { onState?(nil, queued) }
            onCommit?(r, e, last, seconds)
            cond.lock()
            return true
        case let .failure(error):
            if !window.isEmpty { batch.events.removeLast() }
            if fields == nil { fields = newFields }
            // Back in front of what came meanwhile, in order; then the bound.
            batch.append(pending)
            pending = batch
            oldest = clock() - flushIntervalMs
            dropOldest()
            let first = totals.lastError == nil
            totals.failedCommits += 1
            totals.lastError = error
            if error.isFatal {
                fatal = error
                let onFatal = self.onFatal
                cond.unlock()
                onFatal?(error)
                cond.lock()
                return false
            }
            if backoff == nil { backoff = Backoff(baseMs: 250, capMs: maxBackoffMs) }
            retryAt = clock() + (backoff?.failed() ?? 250)
            let (onState, queued) = (self.onStateChange, pending.size)
            if first {
                cond.unlock()
                onState?(error, queued)
                cond.lock()
            }
            return false
        }
    }

    // MARK: The writer thread

    /// Starts committing on a thread of its own.
    public func start() {
        locked {
            guard thread == nil else { return }
            running = true
            let t = Thread { [self] in loop() }
            t.name = "vlogger-store-writer"
            thread = t
            t.start()
        }
    }

    private func loop() {
        cond.lock()
        while !stopping {
            if fatal != nil {
                cond.wait()
                continue
            }
            let now = clock()
            if let retryAt, now < retryAt {
                _ = cond.wait(until: Date(timeIntervalSinceNow: Double(retryAt - now) / 1000))
                continue
            }
            if due(now) {
                _ = commitLocked()
                continue
            }
            if let oldest {
                let wait = max(1, oldest + flushIntervalMs - now)
                _ = cond.wait(until: Date(timeIntervalSinceNow: Double(wait) / 1000))
            } else {
                cond.wait()
            }
        }
        running = false
        cond.unlock()
        threadDone.signal()
    }

    /// Stops the thread and commits what is left, trying again with back-off for up to `timeoutMs`
    /// (a store that stays locked or full). True when nothing is left uncommitted.
    @discardableResult
    public func finish(timeoutMs: Millis = 5000) -> Bool {
        let wasRunning = locked { () -> Bool in
            stopping = true
            cond.broadcast()
            return running
        }
        if wasRunning { threadDone.wait() }
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, timeoutMs)) * 1_000_000
        var pauses = Backoff(baseMs: 100, capMs: 1000)
        while true {
            if commitNow() { return true }
            if locked({ fatal != nil }) { return false }
            let pause = UInt64(pauses.failed()) * 1_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if now + pause > end { return false }
            Thread.sleep(forTimeInterval: Double(pause) / 1e9)
        }
    }
}
