import Foundation
import ISO15693
import VLoggerModel

/// The live state of the gateway's fields: per reader, its status and the tags in its field; per tag, its latest
/// decoded values (merged over its plans) with their units and when they were read; the rule violations going on
/// now. The polling jobs feed it as they take readings and record events (before the store commits them: one
/// picture of now, not of the last batch); the pages, `/api/v1/tags`, `/metrics` and servers read it. No I/O.
///
/// Changes reach subscribers (`subscribe`) in the order they were made, through a bounded buffer per subscriber: a
/// polling thread never waits for a reader of the state, and a subscriber that falls behind by more than its buffer
/// is sent `.overflow` (the changes it missed are gone) and reads `snapshot()` again. Observers (`observe`) are
/// called on the feeding thread, in order, before the change is queued for subscribers: for what must move with the
/// state (the Prometheus series of `/metrics`).
public final class FieldState: @unchecked Sendable {
    /// One reader as its polling job last reported it.
    public struct Reader: Sendable, Equatable {
        public var id: String
        public var location: String?
        /// What the driver calls the device (`simulator (…)`, a PC/SC reader's name).
        public var name = ""
        public var intervalMs: Millis
        public var up = true
        public var lastGoodPollMs: Millis?
        /// The tags in its field, in the order it found them.
        public var tags: [UID] = []
        public init(id: String, location: String?, intervalMs: Millis) {
            self.id = id
            self.location = location
            self.intervalMs = intervalMs
        }
    }

    /// A decoded value with its unit (nil: none configured).
    public struct Value: Sendable, Equatable {
        public var name: String
        public var value: FieldValue
        public var unit: String?
        public init(name: String, value: FieldValue, unit: String?) {
            self.name = name
            self.value = value
            self.unit = unit
        }
    }

    /// A tag's latest decoded values and when they were read.
    public struct Values: Sendable, Equatable {
        public var uid: UID
        public var reader: String?
        public var asset: String?
        public var time: Millis
        public var values: [Value]
        /// As name and value pairs (the pages' and the metrics' shape).
        public var fields: [(name: String, value: FieldValue)] { values.map { ($0.name, $0.value) } }
    }

    /// A rule violation as a state: when it started, what started it, and the tag's latest values since.
    public struct Alarm: Sendable {
        public var rule: String
        public var uid: UID
        public var asset: String?
        public var reader: String?
        public var location: String?
        public var severity: Event.Severity
        public var since: Millis
        /// The violation event's detail (the value that started it).
        public var detail: String
        /// The tag's latest decoded values (updated with each of its readings while the violation lasts).
        public var latest: [(name: String, value: FieldValue)] = []
        /// Who acknowledged it, when, with what comment (nil: not yet).
        public var acknowledged: Acknowledgement?
    }

    /// An acknowledgement of a rule violation (an `acknowledged` event).
    public struct Acknowledgement: Sendable, Equatable {
        public var rule: String
        public var uid: UID
        /// Who: the event's origin (`opcua:<ApplicationUri> (user)`).
        public var by: String
        public var comment: String
        public var time: Millis
        /// When the violation it acknowledges began (nil: not known, the one going on).
        public var since: Millis?
        public init(rule: String, uid: UID, by: String, comment: String, time: Millis, since: Millis? = nil) {
            self.rule = rule
            self.uid = uid
            self.by = by
            self.comment = comment
            self.time = time
            self.since = since
        }
    }

    /// What changed.
    public enum Change: Sendable {
        /// A reader's status or its list of tags changed.
        case reader(Reader)
        case arrived(uid: UID, reader: String?, asset: String?, time: Millis)
        case departed(uid: UID, reader: String?, time: Millis)
        /// A reading brought these values (the tag's others are unchanged).
        case values(Values)
        case alarm(Alarm)
        case alarmEnded(rule: String, uid: UID, time: Millis)
        /// A violation, going on or ended, was acknowledged.
        case alarmAcknowledged(Acknowledgement)
        /// This subscriber fell behind and changes were dropped: read `snapshot()` again.
        case overflow
    }

    /// Everything at one instant.
    public struct Snapshot: Sendable {
        public var readers: [Reader]
        public var values: [UID: Values]
        public var alarms: [Alarm]
    }

    private let lock = NSLock()
    private var readerList: [Reader]
    private var units: [String: String]
    private var now: [UID: Values] = [:]
    private var active: [String: Alarm] = [:]
    private var observers: [@Sendable (Change) -> Void] = []
    private var subscribers: [UUID: Subscriber] = [:]

    /// The readers (ids, locations and intervals as configured) and each field's unit.
    public init(readers: [Reader], units: [String: String] = [:]) {
        readerList = readers
        self.units = units
    }

    /// After a reload: the units of the fields as now configured (values taken from now on carry them).
    public func setUnits(_ units: [String: String]) { lock.withLock { self.units = units } }

    /// Calls `observer` with every change from now on, on the thread that made it, in order. It must not call
    /// back into this state.
    public func observe(_ observer: @escaping @Sendable (Change) -> Void) {
        lock.withLock { observers.append(observer) }
    }

    /// As `observe`, with the state as it is when the observation begins handed to `start` first, under the same
    /// lock: no change falls between the two, and `start` runs before the first change is observed. Neither
    /// closure may call back into this state.
    public func observe(
        from start: (Snapshot) -> Void, _ observer: @escaping @Sendable (Change) -> Void
    ) {
        lock.withLock {
            start(Snapshot(readers: readerList, values: now, alarms: sortedAlarms()))
            observers.append(observer)
        }
    }

    // MARK: Fed by the polling jobs

    /// After a reader's cycle.
    public func cycleDone(
        reader id: String, tags: [UID], up: Bool, lastGoodPollMs: Millis?, name: String, intervalMs: Millis,
        location: String?
    ) {
        lock.withLock {
            guard let i = readerList.firstIndex(where: { $0.id == id }) else { return }
            let before = readerList[i]
            var r = before
            r.tags = tags
            r.up = up
            r.lastGoodPollMs = lastGoodPollMs
            r.name = name
            r.intervalMs = intervalMs
            r.location = location
            readerList[i] = r
            var changed = r
            changed.lastGoodPollMs = before.lastGoodPollMs
            // The time of the last good poll moves every cycle: not a change worth a message by itself.
            if changed != before { emit(.reader(r)) }
        }
    }

    /// A reading taken: its decoded values become the tag's latest (merged with its other fields).
    public func readingTaken(_ r: Reading, asset: String?) {
        guard !r.decoded.isEmpty else { return }
        lock.withLock {
            let taken = r.decoded.map { Value(name: $0.name, value: $0.value, unit: units[$0.name]) }
            var merged = taken
            for old in now[r.uid]?.values ?? [] where !merged.contains(where: { $0.name == old.name }) {
                merged.append(old)
            }
            let time = max(now[r.uid]?.time ?? r.time, r.time)
            now[r.uid] = Values(uid: r.uid, reader: r.reader, asset: asset, time: time, values: merged)
            let fields = merged.map { ($0.name, $0.value) }
            for (k, v) in active where v.uid == r.uid { active[k]?.latest = fields }
            emit(.values(Values(uid: r.uid, reader: r.reader, asset: asset, time: r.time, values: taken)))
        }
    }

    /// An event recorded: arrivals, departures (the tag's values are forgotten), violations and their ends.
    public func eventRecorded(_ e: Event, asset: String?) {
        guard let uid = e.uid else { return }
        lock.withLock {
            let key = "\(e.name)|\(uid)"
            switch e.kind {
            case .arrival:
                emit(.arrived(uid: uid, reader: e.reader, asset: asset, time: e.time))
            case .departure:
                now[uid] = nil
                emit(.departed(uid: uid, reader: e.reader, time: e.time))
            case .violation:
                let a = Alarm(
                    rule: e.name, uid: uid, asset: asset, reader: e.reader, location: e.location, severity: e.severity,
                    since: e.time, detail: e.detail, latest: now[uid]?.fields ?? [])
                active[key] = a
                emit(.alarm(a))
            case .violationEnded:
                active[key] = nil
                emit(.alarmEnded(rule: e.name, uid: uid, time: e.time))
            case .acknowledged:
                let ack = Acknowledgement(
                    rule: e.name, uid: uid, by: e.origin ?? "", comment: e.detail, time: e.time,
                    since: active[key]?.since)
                active[key]?.acknowledged = ack
                emit(.alarmAcknowledged(ack))
            default:
                break
            }
        }
    }

    /// With the lock held: the observers, then each subscriber's buffer.
    private func emit(_ change: Change) {
        for o in observers { o(change) }
        for s in subscribers.values { s.push(change) }
    }

    // MARK: Read by the pages, the API, the metrics and servers

    public var readers: [Reader] { lock.withLock { readerList } }

    /// Which readers work, by id.
    public var readersUp: [String: Bool] {
        lock.withLock { Dictionary(readerList.map { ($0.id, $0.up) }, uniquingKeysWith: { a, _ in a }) }
    }

    /// Each tag's latest decoded values while it is in a field.
    public var latestValues: [UID: Values] { lock.withLock { now } }

    /// The violations going on now: critical first, then the oldest.
    public var alarms: [Alarm] { lock.withLock { sortedAlarms() } }

    private func sortedAlarms() -> [Alarm] {
        active.values.sorted {
            ($0.severity == .critical ? 0 : 1, $0.since, $0.rule, $0.uid.description) < (
                $1.severity == .critical ? 0 : 1, $1.since, $1.rule, $1.uid.description
            )
        }
    }

    public func snapshot() -> Snapshot {
        lock.withLock { Snapshot(readers: readerList, values: now, alarms: sortedAlarms()) }
    }

    /// The changes from now on, with the state as it was when the subscription began (so that nothing falls
    /// between the two). `buffer`: changes kept for this subscriber while it has not taken them; past it, they
    /// are dropped and the next it takes is `.overflow`. Ends when the subscription is released.
    public func subscribe(buffer: Int = 4096) -> (snapshot: Snapshot, changes: Subscription) {
        let s = Subscriber(limit: max(1, buffer))
        let id = UUID()
        let snap = lock.withLock {
            subscribers[id] = s
            return Snapshot(readers: readerList, values: now, alarms: sortedAlarms())
        }
        return (snap, Subscription(subscriber: s) { [weak self] in self?.unsubscribe(id) })
    }

    private func unsubscribe(_ id: UUID) {
        let s = lock.withLock { subscribers.removeValue(forKey: id) }
        s?.finish()
    }

    /// Subscribers now (tests, metrics).
    public var subscriberCount: Int { lock.withLock { subscribers.count } }

    /// The changes of one subscription, in order; `cancel()` (or releasing it) ends it.
    public final class Subscription: AsyncSequence, @unchecked Sendable {
        public typealias Element = Change
        let subscriber: Subscriber
        private let onCancel: @Sendable () -> Void
        init(subscriber: Subscriber, onCancel: @escaping @Sendable () -> Void) {
            self.subscriber = subscriber
            self.onCancel = onCancel
        }
        deinit { onCancel() }
        public func cancel() { onCancel() }

        public struct AsyncIterator: AsyncIteratorProtocol {
            let subscriber: Subscriber
            public mutating func next() async -> Change? { await subscriber.next() }
        }
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscriber: subscriber) }
    }

    /// One subscriber's bounded buffer: pushed under the state's lock (never waits), taken by its task.
    final class Subscriber: @unchecked Sendable {
        private let lock = NSLock()
        private let limit: Int
        private var queue: [Change] = []
        private var head = 0
        private var waiting: CheckedContinuation<Change?, Never>?
        private var finished = false
        private var overflowed = false

        init(limit: Int) { self.limit = limit }

        func push(_ change: Change) {
            let resume: (CheckedContinuation<Change?, Never>, Change)? = lock.withLock {
                guard !finished else { return nil }
                if let w = waiting {
                    waiting = nil
                    return (w, change)
                }
                if overflowed { return nil }
                if queue.count - head >= limit {
                    // Behind by a whole buffer: what it has not taken is dropped; it is told to read the state again.
                    queue = [.overflow]
                    head = 0
                    overflowed = true
                    return nil
                }
                // What was taken is dropped from the front now and then (the buffer stays bounded in memory too).
                if head >= limit || head >= 1024 {
                    queue.removeFirst(head)
                    head = 0
                }
                queue.append(change)
                return nil
            }
            if let (w, c) = resume { w.resume(returning: c) }
        }

        func finish() {
            let w: CheckedContinuation<Change?, Never>? = lock.withLock {
                finished = true
                defer { waiting = nil }
                return waiting
            }
            w?.resume(returning: nil)
        }

        /// The next change, waiting for it; nil once the subscription ended or the waiting task is cancelled. One
        /// task takes from a subscription.
        func next() async -> Change? {
            await withTaskCancellationHandler {
                await take()
            } onCancel: {
                let w: CheckedContinuation<Change?, Never>? = lock.withLock {
                    defer { waiting = nil }
                    return waiting
                }
                w?.resume(returning: nil)
            }
        }

        private func take() async -> Change? {
            await withCheckedContinuation { (c: CheckedContinuation<Change?, Never>) in
                let now: Change?? = lock.withLock {
                    if head < queue.count {
                        let item = queue[head]
                        head += 1
                        if head == queue.count {
                            queue.removeAll(keepingCapacity: true)
                            head = 0
                            overflowed = false
                        }
                        return .some(item)
                    }
                    if finished || Task.isCancelled || waiting != nil { return .some(nil) }
                    waiting = c
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        }
    }
}
