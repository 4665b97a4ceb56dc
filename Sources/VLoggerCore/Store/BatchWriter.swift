import Foundation

/// Collects readings, events and tag updates and commits them in batches: when `batchSize` readings are
/// waiting or `flushInterval` has passed since the oldest one, whichever comes first. A batch that fails
/// (the file busy beyond SQLite's wait, a full disk) stays queued whole and is tried again at the next
/// flush; nothing is dropped and nothing is half-written.
public final class BatchWriter {
    public let store: Store
    public var batchSize: Int
    public var flushIntervalMs: Millis
    /// Called after each commit with the batch's size, the last reading's row id and the commit's duration.
    public var onCommit: ((_ readings: Int, _ events: Int, _ lastReadingID: Int64, _ seconds: Double) -> Void)?

    private var pending = Batch()
    private var oldest: Millis?
    public private(set) var committedReadings = 0
    public private(set) var committedEvents = 0
    public private(set) var commits = 0
    public private(set) var failedCommits = 0
    public private(set) var lastError: StoreError?

    public init(store: Store, batchSize: Int = 500, flushIntervalMs: Millis = 2000) {
        self.store = store
        self.batchSize = max(1, batchSize)
        self.flushIntervalMs = max(0, flushIntervalMs)
    }

    public var pendingCount: Int { pending.size }

    public func add(_ reading: Reading, now: Millis) {
        if pending.readings.isEmpty { pending.readings.reserveCapacity(min(batchSize, 100_000)) }
        pending.readings.append(reading)
        mark(now)
    }

    public func add(_ event: Event, now: Millis) {
        pending.events.append(event)
        mark(now)
    }

    public func add(_ tag: TagRecord, now: Millis) {
        if let i = pending.tags.firstIndex(where: { $0.uid == tag.uid }) {
            var t = tag
            t.seen = max(t.seen, pending.tags[i].seen)
            pending.tags[i] = t
        } else {
            pending.tags.append(tag)
        }
        mark(now)
    }

    public func add(_ write: WriteRecord, now: Millis) {
        pending.writes.append(write)
        mark(now)
    }

    private func mark(_ now: Millis) {
        if oldest == nil { oldest = now }
    }

    /// Whether a flush is due at `now`.
    public func isDue(now: Millis) -> Bool {
        guard let oldest, !pending.isEmpty else { return false }
        return pending.readings.count >= batchSize || now - oldest >= flushIntervalMs
    }

    /// Commits when due (or always, with `force`). Returns false when a due commit failed; the batch
    /// stays queued and `lastError` says why.
    @discardableResult
    public func flush(now: Millis, force: Bool = false) -> Bool {
        guard !pending.isEmpty, force || isDue(now: now) else { return true }
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            let last = try store.write(pending)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            committedReadings += pending.readings.count
            committedEvents += pending.events.count
            commits += 1
            let (r, e) = (pending.readings.count, pending.events.count)
            pending = Batch()
            oldest = nil
            lastError = nil
            onCommit?(r, e, last, seconds)
            return true
        } catch {
            failedCommits += 1
            lastError = error
            return false
        }
    }
}
