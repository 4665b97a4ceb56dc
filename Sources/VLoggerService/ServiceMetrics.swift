import Foundation
import VLoggerStore
import VLoggerModel
import ISO15693
import Metrics
import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory
import VLoggerCore

/// What the service knows about itself: per reader, what its polling job last reported; the store
/// writer's counts; reloads. The polling threads and the writer update it, the HTTP handlers read it
/// (health, status page); every access holds the lock.
///
/// Metrics go through swift-metrics (`Counter`, `Gauge`, `Recorder`, `Timer`) into a Prometheus
/// registry made for this service (no global bootstrap, so tests can make several); `/metrics` is the
/// registry's text exposition. Series about a reader carry a `reader` label.
public final class ServiceMetrics: @unchecked Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let lock = NSLock()
    public let startedMs: Millis

    /// One reader's state, as its polling job last reported it.
    public struct ReaderStatus: Sendable {
        public var id: String
        public var location: String?
        public var name = ""
        public var intervalMs: Millis
        public var counters = AgentCounters()
        public var tags: [UID] = []
        public var up = true
        public var lastGoodPollMs: Millis?
    }

    private var readers: [ReaderStatus]
    private var writer = StoreWriter.Stats()
    /// Queued writes waiting for their tags (the service's copy of the store's queue), for /healthz.
    public var writesQueued: (@Sendable () -> Int)?
    private var reported = StoreWriter.Stats()

    /// swift-metrics handles, made once.
    private struct ReaderHandles {
        let cycles, arrivals, departures, readings, exchanges, violations: Counter
        let inField, up, lastPoll: Gauge
        let air: Recorder
        var errors: [String: Counter] = [:]
    }
    private var handles: [String: ReaderHandles] = [:]
    private let committed, droppedReadings, droppedEvents, failedCommits: Counter
    private let queueDepth, storeUp: Gauge
    private let commitTime: Metrics.Timer
    private var reloads: [String: Counter] = [:]

    /// Fleet sync's state, as the sync job last saw it (nil: no `[sync]`).
    public struct SyncStatus: Sendable {
        public var up = false
        public var backlog: [SyncTable: (rows: Int, oldest: Millis?)] = [:]
        public var lastError: String?
        public var lastSuccessMs: Millis?
    }
    private var sync: SyncStatus?
    private var syncHandles: (up: Gauge, rows: [SyncTable: Gauge], age: [SyncTable: Gauge], sent: [SyncTable: Counter])?
    private var syncFailures: [String: Counter] = [:]

    /// Turns on the sync metrics (`vlogger_sync_*`) and the sync part of /healthz.
    public func enableSync() {
        locked {
            let f = factory
            var rows: [SyncTable: Gauge] = [:], age: [SyncTable: Gauge] = [:], sent: [SyncTable: Counter] = [:]
            for t in SyncTable.allCases {
                rows[t] = Gauge(label: "vlogger_sync_backlog_rows", dimensions: [("table", t.rawValue)], factory: f)
                age[t] = Gauge(
                    label: "vlogger_sync_oldest_unsynced_age_seconds", dimensions: [("table", t.rawValue)], factory: f)
                sent[t] = Counter(
                    label: "vlogger_sync_rows_sent_total", dimensions: [("table", t.rawValue)], factory: f)
            }
            syncHandles = (Gauge(label: "vlogger_sync_up", factory: f), rows, age, sent)
            sync = SyncStatus()
        }
    }

    /// After each sync round: the backlog, what was sent, and the error if the round failed (its kind counted).
    public func syncUpdated(
        backlog: [SyncTable: (rows: Int, oldest: Millis?)], sent: [SyncTable: Int], error: SyncFailure?,
        now: Millis = Millis.now()
    ) {
        locked {
            guard var st = sync, let h = syncHandles else { return }
            st.backlog = backlog
            st.up = error == nil
            st.lastError = error?.message
            if error == nil { st.lastSuccessMs = now }
            h.up.record(error == nil ? 1 : 0)
            for t in SyncTable.allCases {
                let b = backlog[t] ?? (0, nil)
                h.rows[t]?.record(b.rows)
                h.age[t]?.record(b.oldest.map { Double(max(0, now - $0)) / 1000 } ?? 0)
                if let n = sent[t], n > 0 { h.sent[t]?.increment(by: n) }
            }
            if let error {
                let c =
                    syncFailures[error.kind]
                    ?? Counter(
                        label: "vlogger_sync_failures_total", dimensions: [("kind", error.kind)], factory: factory)
                syncFailures[error.kind] = c
                c.increment()
            }
            sync = st
        }
    }

    public var syncStatus: SyncStatus? { locked { sync } }

    public init(readers: [ReaderConfig], intervalMs: (ReaderConfig) -> Millis, startedMs: Millis = Millis.now()) {
        self.startedMs = startedMs
        var f = PrometheusMetricsFactory(registry: registry)
        f.durationHistogramBuckets["vlogger_batch_commit_seconds"] = [
            0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
        ].map { .milliseconds(Int64($0 * 1000)) }
        f.valueHistogramBuckets["vlogger_cycle_air_time_seconds"] = [0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2]
        factory = f
        self.readers = readers.map { ReaderStatus(id: $0.id, location: $0.location, intervalMs: intervalMs($0)) }
        committed = Counter(label: "vlogger_readings_committed_total", factory: f)
        droppedReadings = Counter(label: "vlogger_readings_dropped_total", factory: f)
        droppedEvents = Counter(label: "vlogger_events_dropped_total", factory: f)
        failedCommits = Counter(label: "vlogger_store_failed_commits_total", factory: f)
        queueDepth = Gauge(label: "vlogger_queue_depth", factory: f)
        storeUp = Gauge(label: "vlogger_store_up", factory: f)
        commitTime = Metrics.Timer(label: "vlogger_batch_commit_seconds", factory: f)
        Gauge(label: "vlogger_start_time_seconds", factory: f).record(Double(startedMs) / 1000)
        storeUp.record(1)
        for r in readers {
            let d = [("reader", r.id)]
            handles[r.id] = ReaderHandles(
                cycles: Counter(label: "vlogger_cycles_total", dimensions: d, factory: f),
                arrivals: Counter(label: "vlogger_tags_seen_total", dimensions: d, factory: f),
                departures: Counter(label: "vlogger_tag_departures_total", dimensions: d, factory: f),
                readings: Counter(label: "vlogger_readings_total", dimensions: d, factory: f),
                exchanges: Counter(label: "vlogger_exchanges_total", dimensions: d, factory: f),
                violations: Counter(label: "vlogger_rule_violations_total", dimensions: d, factory: f),
                inField: Gauge(label: "vlogger_tags_in_field", dimensions: d, factory: f),
                up: Gauge(label: "vlogger_reader_up", dimensions: d, factory: f),
                lastPoll: Gauge(label: "vlogger_last_successful_poll_timestamp_seconds", dimensions: d, factory: f),
                air: Recorder(label: "vlogger_cycle_air_time_seconds", dimensions: d, aggregate: true, factory: f))
            handles[r.id]?.up.record(1)
        }
        for result in ["ok", "failed"] {
            reloads[result] = Counter(
                label: "vlogger_config_reloads_total", dimensions: [("result", result)], factory: f)
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// After each cycle, from the reader's polling thread.
    public func cycleDone(_ agent: Agent, _ report: CycleReport) {
        var c = agent.counters
        c.cycleAirTime = []
        c.cycleLowerBound = []
        let id = agent.readerConfig.id
        let tags = agent.tagsInField, up = agent.readerHealthy, good = agent.lastGoodPollMs,
            name = agent.session.reader.name
        let interval = agent.config.intervalMs, location = agent.readerConfig.location
        locked {
            guard let i = readers.firstIndex(where: { $0.id == id }), var h = handles[id] else { return }
            let before = readers[i].counters
            h.cycles.increment(by: c.cycles - before.cycles)
            h.arrivals.increment(by: c.arrivals - before.arrivals)
            h.departures.increment(by: c.departures - before.departures)
            h.readings.increment(by: c.readings - before.readings)
            h.exchanges.increment(by: c.exchanges - before.exchanges)
            h.violations.increment(by: c.violations - before.violations)
            for (kind, n) in c.errors where n != before.errors[kind] {
                let counter =
                    h.errors[kind]
                    ?? Counter(
                        label: "vlogger_errors_total", dimensions: [("reader", id), ("kind", kind)], factory: factory)
                h.errors[kind] = counter
                counter.increment(by: n - (before.errors[kind] ?? 0))
            }
            h.inField.record(tags.count)
            h.up.record(up ? 1 : 0)
            if let good { h.lastPoll.record(Double(good) / 1000) }
            if !report.readerFailed { h.air.record(report.airTime.microseconds / 1_000_000) }
            handles[id] = h
            readers[i].counters = c
            readers[i].tags = tags
            readers[i].up = up
            readers[i].lastGoodPollMs = good
            readers[i].name = name
            readers[i].intervalMs = interval
            readers[i].location = location
        }
    }

    /// After each commit (and each failed one), from the writer's thread.
    public func storeUpdated(_ s: StoreWriter.Stats, commitSeconds: Double? = nil) {
        locked {
            committed.increment(by: s.committedReadings - reported.committedReadings)
            droppedReadings.increment(by: s.droppedReadings - reported.droppedReadings)
            droppedEvents.increment(by: s.droppedEvents - reported.droppedEvents)
            failedCommits.increment(by: s.failedCommits - reported.failedCommits)
            queueDepth.record(s.queued)
            storeUp.record(s.lastError == nil ? 1 : 0)
            if let commitSeconds { commitTime.recordNanoseconds(Int64(commitSeconds * 1e9)) }
            reported = s
            writer = s
        }
    }

    public func reloaded(ok: Bool) { locked { reloads[ok ? "ok" : "failed"]?.increment() } }

    public var readerStatus: [ReaderStatus] { locked { readers } }

    /// Healthy when every reader answers and had a good poll within 3 of its intervals (or 90 s of
    /// back-off), and the store commits.
    public func health(now: Millis = Millis.now()) -> (healthy: Bool, json: String) {
        locked {
            var o: [UInt8] = []
            var allOK = writer.lastError == nil
            func key(_ k: String) {
                if let last = o.last, last != 0x7B, last != 0x5B { o.append(0x2C) }
                JSONText.appendQuoted(k, to: &o)
                o.append(0x3A)
            }
            func string(_ k: String, _ v: String?) {
                key(k)
                if let v { JSONText.appendQuoted(v, to: &o) } else { o += Array("null".utf8) }
            }
            func raw(_ k: String, _ v: String) {
                key(k)
                o += Array(v.utf8)
            }
            var parts: [(ReaderStatus, Bool)] = []
            for r in readers {
                let staleAfter = max(r.intervalMs * 3, 90_000)
                let recent = r.lastGoodPollMs.map { now - $0 <= staleAfter } ?? (now - startedMs <= staleAfter)
                let ok = r.up && recent
                allOK = allOK && ok
                parts.append((r, ok))
            }
            o.append(0x7B)
            string("status", allOK ? "ok" : "unhealthy")
            // The first reader's fields at the top level, as before several readers.
            if let (first, _) = parts.first {
                string("reader", first.name)
                raw("readerUp", first.up ? "true" : "false")
                string("lastSuccessfulPoll", first.lastGoodPollMs.map(TimeSpec.format))
            }
            string("store", writer.lastError == nil ? "ok" : writer.lastError?.description)
            raw("queueDepth", String(writer.queued))
            raw("readingsDropped", String(writer.droppedReadings))
            if let writesQueued { raw("writesQueued", String(writesQueued())) }
            raw("cycles", String(readers.reduce(0) { $0 + $1.counters.cycles }))
            raw("tagsInField", String(readers.reduce(0) { $0 + $1.tags.count }))
            // Fleet sync: its own status; a failing sync does not make the gateway unhealthy (it keeps logging
            // locally and catches up by itself), but the backlog is here for whoever watches it.
            if let st = sync {
                key("sync")
                o.append(0x7B)
                string("status", st.up ? "ok" : "failing")
                raw("backlogRows", String(st.backlog.values.reduce(0) { $0 + $1.rows }))
                let oldest = st.backlog.values.compactMap(\.oldest).min()
                raw("oldestUnsyncedSeconds", oldest.map { String(max(0, now - $0) / 1000) } ?? "null")
                string("lastSuccess", st.lastSuccessMs.map(TimeSpec.format))
                string("lastError", st.lastError)
                o.append(0x7D)
            }
            key("readers")
            o.append(0x5B)
            for (r, ok) in parts {
                if o.last != 0x5B { o.append(0x2C) }
                o.append(0x7B)
                string("id", r.id)
                string("location", r.location)
                string("driver", r.name)
                string("status", ok ? "ok" : "unhealthy")
                raw("up", r.up ? "true" : "false")
                string("lastSuccessfulPoll", r.lastGoodPollMs.map(TimeSpec.format))
                raw("cycles", String(r.counters.cycles))
                raw("tagsInField", String(r.tags.count))
                o.append(0x7D)
            }
            o.append(0x5D)
            o.append(0x7D)
            return (allOK, String(decoding: o, as: UTF8.self))
        }
    }

    /// The Prometheus text exposition format (version 0.0.4).
    public func prometheusText() -> [UInt8] { registry.emitToBuffer() }
}

/// A failed sync round, as the metrics and /healthz show it (the kind is a label value).
public struct SyncFailure: Sendable, Equatable {
    public var kind: String
    public var message: String
    public init(kind: String, message: String) {
        self.kind = kind
        self.message = message
    }
}
