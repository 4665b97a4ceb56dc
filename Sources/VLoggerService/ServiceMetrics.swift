import Foundation
import VLoggerStore
import VLoggerModel
import ISO15693
import Metrics
import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory
import VLoggerCore
import VLoggerOutbox
import FieldState

/// What the service knows about itself: per reader, its polling job's counters; the store writer's counts; reloads;
/// the outputs. The live state of the fields (tags present, latest values, alarms, reader status) is `field`, a
/// `FieldState` this reads and observes (its Prometheus series move with it). The polling threads and the writer
/// update it, the HTTP handlers read it (health, status page); every access holds the lock.
///
/// Metrics go through swift-metrics (`Counter`, `Gauge`, `Recorder`, `Timer`) into a Prometheus
/// registry made for this service (no global bootstrap, so tests can make several); `/metrics` is the
/// registry's text exposition. Series about a reader carry a `reader` label.
public final class ServiceMetrics: @unchecked Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let lock = NSLock()
    public let startedMs: Millis

    /// The live state of the fields, which the polling jobs feed.
    public let field: FieldState

    /// One reader's state, as its polling job last reported it (its status from `field`, its counters from here).
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

    /// Each reader's counters as its polling job last reported them.
    private var counters: [String: AgentCounters] = [:]
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
    /// `vlogger_field_value` per reader, tag and numeric field, while the tag is in that reader's field.
    private var fieldGauges: [String: (uid: UID, gauge: Gauge)] = [:]
    /// `vlogger_rule_violation` per rule and tag, while the violation lasts.
    private var violationGauges: [String: Gauge] = [:]

    /// Each tag's latest decoded values (merged over its plans) and when they were read, as the polling jobs took
    /// them (before the store commits them): one snapshot, so that a page shows one value per tag.
    public var latestValues: [UID: (time: Millis, fields: [(name: String, value: FieldValue)])] {
        field.latestValues.mapValues { ($0.time, $0.fields) }
    }

    /// A rule violation as a state: when it started, what started it, and the tag's latest values since.
    public typealias ActiveViolation = FieldState.Alarm

    /// The violations going on now: critical first, then the oldest.
    public var activeViolations: [ActiveViolation] { field.alarms }
    private let committed, droppedReadings, droppedEvents, failedCommits: Counter
    private let queueDepth, storeUp: Gauge
    private let commitTime: Metrics.Timer
    private var reloads: [String: Counter] = [:]
    /// Live stream clients now, and those dropped for not taking what was sent in time.
    private let streamClients: Gauge
    private let streamDropped: Counter
    private var streamCount = 0

    /// One output's state (a consumer of the outbox: the fleet sync, …), as its job last saw it.
    public struct OutputStatus: Sendable {
        public var name: String
        /// What the status page calls it ("Fleet sync to PostgreSQL").
        public var title: String
        /// The key of its older /healthz object and the infix of its older metric names (`sync` for the fleet
        /// sync: `"sync": {…}` and `vlogger_sync_*`), kept so that what was built on them goes on working.
        public var legacyName: String?
        public var tables: [SyncTable]
        public var up = false
        public var backlog: [SyncTable: (rows: Int, oldest: Millis?)] = [:]
        public var lastError: String?
        public var lastSuccessMs: Millis?
        public var failures: [String: Int] = [:]
        /// Whether its connection is up (nil: an output without one between rounds).
        public var connected: Bool?
        /// Rows its destination refused for good.
        public var refused = 0
    }
    private struct OutputHandles {
        var up: [Gauge]
        var connected: Gauge?
        var refused: Counter?
        var lastSuccess: Gauge
        var rows: [SyncTable: [Gauge]] = [:]
        var age: [SyncTable: [Gauge]] = [:]
        var sent: [SyncTable: [Counter]] = [:]
        var failures: [String: [Counter]] = [:]
    }
    private var outputs: [OutputStatus] = []
    private var outputHandles: [String: OutputHandles] = [:]

    /// Turns on an output's metrics (`vlogger_output_*{output="name"}`, and `vlogger_<legacy>_*` where it has a
    /// legacy name) and its part of /healthz and the status page. Every output is shown by the same code.
    public func enableOutput(name: String, title: String, legacyName: String? = nil, tables: [SyncTable]) {
        locked {
            guard outputHandles[name] == nil else { return }
            let f = factory
            func gauges(_ what: String, _ legacyWhat: String? = nil, _ dims: [(String, String)]) -> [Gauge] {
                series(name, legacyName, what, legacyWhat, dims) { Gauge(label: $0, dimensions: $1, factory: f) }
            }
            var h = OutputHandles(
                up: gauges("up", nil, []),
                lastSuccess: Gauge(
                    label: "vlogger_output_last_success_timestamp_seconds", dimensions: [("output", name)], factory: f))
            for t in tables {
                let dims = [("table", t.rawValue)]
                h.rows[t] = gauges("backlog_rows", nil, dims)
                h.age[t] = gauges("oldest_unsent_age_seconds", "oldest_unsynced_age_seconds", dims)
                h.sent[t] = series(name, legacyName, "rows_sent_total", nil, dims) {
                    Counter(label: $0, dimensions: $1, factory: f)
                }
            }
            outputHandles[name] = h
            outputs.append(OutputStatus(name: name, title: title, legacyName: legacyName, tables: tables))
        }
    }

    /// Turns an output's metrics off (a reload removed it): its series leave /metrics, its part of /healthz goes.
    public func disableOutput(name: String) {
        locked {
            guard let h = outputHandles.removeValue(forKey: name) else { return }
            for g in h.up { g.destroy() }
            h.connected?.destroy()
            h.refused?.destroy()
            h.lastSuccess.destroy()
            for gs in h.rows.values { for g in gs { g.destroy() } }
            for gs in h.age.values { for g in gs { g.destroy() } }
            for cs in h.sent.values { for c in cs { c.destroy() } }
            for cs in h.failures.values { for c in cs { c.destroy() } }
            outputs.removeAll { $0.name == name }
        }
    }

    /// After each round of an output: its backlog, what it sent, and the failure if the round failed (its kind
    /// counted); `connected`, for an output that keeps a connection, whether it is up
    /// (`vlogger_output_connected{output}`).
    public func outputUpdated(
        _ name: String, backlog: [SyncTable: (rows: Int, oldest: Millis?)], sent: [SyncTable: Int],
        error: OutboxFailure?, connected: Bool? = nil, refused: Int = 0, now: Millis = Millis.now()
    ) {
        locked {
            guard let i = outputs.firstIndex(where: { $0.name == name }), var h = outputHandles[name] else { return }
            var st = outputs[i]
            st.backlog = backlog
            if let connected {
                st.connected = connected
                if h.connected == nil {
                    h.connected = Gauge(
                        label: "vlogger_output_connected", dimensions: [("output", name)], factory: factory)
                }
                h.connected?.record(connected ? 1 : 0)
            }
            if refused > st.refused || (refused > 0 && h.refused == nil) {
                if h.refused == nil {
                    h.refused = Counter(
                        label: "vlogger_output_refused_rows_total", dimensions: [("output", name)], factory: factory)
                }
                h.refused?.increment(by: max(0, refused - st.refused))
                st.refused = refused
            }
            st.up = error == nil
            st.lastError = error?.message
            if error == nil {
                st.lastSuccessMs = now
                h.lastSuccess.record(Double(now) / 1000)
            }
            for g in h.up { g.record(error == nil ? 1 : 0) }
            for t in st.tables {
                let b = backlog[t] ?? (0, nil)
                for g in h.rows[t] ?? [] { g.record(b.rows) }
                for g in h.age[t] ?? [] { g.record(b.oldest.map { Double(max(0, now - $0)) / 1000 } ?? 0) }
                if let n = sent[t], n > 0 { for c in h.sent[t] ?? [] { c.increment(by: n) } }
            }
            if let error {
                st.failures[error.kind, default: 0] += 1
                if h.failures[error.kind] == nil {
                    let f = factory
                    h.failures[error.kind] = series(name, st.legacyName, "failures_total", nil, [("kind", error.kind)])
                    {
                        Counter(label: $0, dimensions: $1, factory: f)
                    }
                }
                for c in h.failures[error.kind] ?? [] { c.increment() }
            }
            outputs[i] = st
            outputHandles[name] = h
        }
    }

    /// One series of an output: `vlogger_output_<what>` with the label `output`, and, for an output with a legacy
    /// name, the same under `vlogger_<legacy>_<legacyWhat or what>` without that label (one output had them).
    private func series<M>(
        _ output: String, _ legacy: String?, _ what: String, _ legacyWhat: String?, _ dims: [(String, String)],
        _ make: (String, [(String, String)]) -> M
    ) -> [M] {
        [make("vlogger_output_\(what)", [("output", output)] + dims)]
            + (legacy.map { [make("vlogger_\($0)_\(legacyWhat ?? what)", dims)] } ?? [])
    }

    /// Every output's state, in the order they were enabled.
    public var outputStatus: [OutputStatus] { locked { outputs } }

    // MARK: Servers

    /// A server of an output kind ([opcua]): asked for its status at each scrape of /metrics and each /healthz.
    private struct ServerEntry {
        var name: String
        var status: @Sendable () -> ServerStatus?
        var last: ServerStatus?
        var gauges: [String: Gauge] = [:]
        var counters: [String: (counter: Counter, value: Int)] = [:]
    }
    private var servers: [ServerEntry] = []
    /// The HELP texts of the servers' families (they name their own counts).
    private var serverHelp: [String: String] = [:]

    /// Shows a server in /metrics (`vlogger_output_<count>{output="name"}`) and /healthz (`outputs.name`).
    public func enableServer(name: String, status: @escaping @Sendable () -> ServerStatus?) {
        locked {
            guard !servers.contains(where: { $0.name == name }) else { return }
            servers.append(ServerEntry(name: name, status: status))
        }
    }

    /// Asks each server for its status (outside the lock: a server takes its own) and records its counts.
    private func refreshServers() {
        let asks = locked { servers.map { ($0.name, $0.status) } }
        guard !asks.isEmpty else { return }
        let answers = asks.map { ($0.0, $0.1()) }
        locked {
            for (name, status) in answers {
                guard let i = servers.firstIndex(where: { $0.name == name }) else { continue }
                var e = servers[i]
                e.last = status
                for c in status?.counts ?? [] {
                    let family = "vlogger_output_\(c.name)" + (c.isCounter ? "_total" : "")
                    serverHelp[family] = c.help
                    if c.isCounter {
                        var entry =
                            e.counters[c.name]
                            ?? (Counter(label: family, dimensions: [("output", name)], factory: factory), 0)
                        entry.counter.increment(by: max(0, c.value - entry.value))
                        entry.value = max(entry.value, c.value)
                        e.counters[c.name] = entry
                    } else {
                        let g =
                            e.gauges[c.name] ?? Gauge(label: family, dimensions: [("output", name)], factory: factory)
                        g.record(c.value)
                        e.gauges[c.name] = g
                    }
                }
                servers[i] = e
            }
        }
    }

    /// Why the store does not commit now (nil: it does), and how many records wait.
    public var storeState: (problem: String?, queued: Int) { locked { (writer.lastError?.description, writer.queued) } }

    public init(
        readers: [ReaderConfig], intervalMs: (ReaderConfig) -> Millis, startedMs: Millis = Millis.now(),
        units: [String: String] = [:]
    ) {
        self.startedMs = startedMs
        field = FieldState(
            readers: readers.map { FieldState.Reader(id: $0.id, location: $0.location, intervalMs: intervalMs($0)) },
            units: units)
        var f = PrometheusMetricsFactory(registry: registry)
        f.durationHistogramBuckets["vlogger_batch_commit_seconds"] = [
            0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
        ].map { .milliseconds(Int64($0 * 1000)) }
        f.valueHistogramBuckets["vlogger_cycle_air_time_seconds"] = [0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2]
        factory = f
        committed = Counter(label: "vlogger_readings_committed_total", factory: f)
        droppedReadings = Counter(label: "vlogger_readings_dropped_total", factory: f)
        droppedEvents = Counter(label: "vlogger_events_dropped_total", factory: f)
        failedCommits = Counter(label: "vlogger_store_failed_commits_total", factory: f)
        queueDepth = Gauge(label: "vlogger_queue_depth", factory: f)
        storeUp = Gauge(label: "vlogger_store_up", factory: f)
        streamClients = Gauge(label: "vlogger_stream_clients", factory: f)
        streamDropped = Counter(label: "vlogger_stream_clients_dropped_total", factory: f)
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
        field.observe { [weak self] change in self?.fieldChanged(change) }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// Which readers work, by id, as their polling jobs last reported.
    public func readersUp() -> [String: Bool] { field.readersUp }

    /// After each cycle, from the reader's polling thread.
    public func cycleDone(_ agent: Agent, _ report: CycleReport) {
        var c = agent.counters
        c.cycleAirTime = []
        c.cycleLowerBound = []
        let id = agent.readerConfig.id
        let tags = agent.tagsInField, up = agent.readerHealthy, good = agent.lastGoodPollMs,
            name = agent.session.reader.name
        let interval = agent.config.intervalMs, location = agent.readerConfig.location
        field.cycleDone(
            reader: id, tags: tags, up: up, lastGoodPollMs: good, name: name, intervalMs: interval, location: location)
        locked {
            guard var h = handles[id] else { return }
            let before = counters[id] ?? AgentCounters()
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
            counters[id] = c
        }
    }

    /// A reading taken, into the field state (the polling jobs feed `field` directly; this is for callers that
    /// hold only the metrics). `units`: the fields' units, as the configuration has them now.
    public func readingTaken(_ r: Reading, asset: String?, units: [String: String]) {
        field.setUnits(units)
        field.readingTaken(r, asset: asset)
    }

    /// How many events have been recorded: the pages' cache makes a page again when it moves.
    public var eventCount: Int { locked { events } }
    private var events = 0

    /// An event recorded: counted (the pages' cache), and into the field state.
    public func eventRecorded(_ e: Event, asset: String?) {
        // The state first: a page made between the two is made again for the new count, never kept without it.
        field.eventRecorded(e, asset: asset)
        locked { events += 1 }
    }

    /// The Prometheus series that follow the field state (on the thread that changed it): a reading's numeric
    /// decoded fields as `vlogger_field_value{reader,uid,asset,field,unit}` (the plant's values, for Grafana and
    /// alerts), removed when the tag leaves that reader's field; a violation as `vlogger_rule_violation{rule,uid,
    /// asset}` = 1 while it lasts.
    private func fieldChanged(_ change: FieldState.Change) {
        locked {
            switch change {
            case let .values(v):
                for value in v.values {
                    let n: Double
                    switch value.value {
                    case .integer(let i): n = Double(i)
                    case .number(let d) where d.isFinite: n = d
                    default: continue
                    }
                    let reader = v.reader ?? ""
                    let key = "\(reader)|\(v.uid)|\(value.name)"
                    let gauge =
                        fieldGauges[key]?.gauge
                        ?? Gauge(
                            label: "vlogger_field_value",
                            dimensions: [
                                ("reader", reader), ("uid", v.uid.description), ("asset", v.asset ?? ""),
                                ("field", value.name), ("unit", value.unit ?? ""),
                            ], factory: factory)
                    fieldGauges[key] = (v.uid, gauge)
                    gauge.record(n)
                }
            case let .alarm(a):
                let key = "\(a.rule)|\(a.uid)"
                let gauge =
                    violationGauges[key]
                    ?? Gauge(
                        label: "vlogger_rule_violation",
                        dimensions: [("rule", a.rule), ("uid", a.uid.description), ("asset", a.asset ?? "")],
                        factory: factory)
                violationGauges[key] = gauge
                gauge.record(1)
            case let .alarmEnded(rule, uid, _):
                violationGauges.removeValue(forKey: "\(rule)|\(uid)")?.destroy()
            case let .departed(uid, reader, _):
                let prefix = "\(reader ?? "")|\(uid)|"
                for (k, f) in fieldGauges where k.hasPrefix(prefix) {
                    f.gauge.destroy()
                    fieldGauges[k] = nil
                }
            case .reader, .arrived, .overflow, .alarmAcknowledged:
                break
            }
        }
    }

    /// The store writer's counters as they are now: read again by every scrape of /metrics and every /healthz, so
    /// readings dropped while the store cannot commit (a full disk) show as they happen, not when commits return.
    public var writerStats: (@Sendable () -> StoreWriter.Stats)?

    /// Takes the writer's counters now (see `writerStats`).
    func refreshWriter() {
        if let s = writerStats?() { storeUpdated(s) }
    }

    /// After each commit (and each failed one), from the writer's thread.
    public func storeUpdated(_ s: StoreWriter.Stats, commitSeconds: Double? = nil) {
        locked {
            // Called from several threads (the writer's, a scrape, a drop), each with a snapshot taken before the
            // lock: an older snapshot after a newer one must not count backwards (a counter only grows), so each
            // total moves only up.
            committed.increment(by: max(0, s.committedReadings - reported.committedReadings))
            droppedReadings.increment(by: max(0, s.droppedReadings - reported.droppedReadings))
            droppedEvents.increment(by: max(0, s.droppedEvents - reported.droppedEvents))
            failedCommits.increment(by: max(0, s.failedCommits - reported.failedCommits))
            var s = s
            s.committedReadings = max(s.committedReadings, reported.committedReadings)
            s.droppedReadings = max(s.droppedReadings, reported.droppedReadings)
            s.droppedEvents = max(s.droppedEvents, reported.droppedEvents)
            s.failedCommits = max(s.failedCommits, reported.failedCommits)
            queueDepth.record(s.queued)
            storeUp.record(s.lastError == nil ? 1 : 0)
            if let commitSeconds { commitTime.recordNanoseconds(Int64(commitSeconds * 1e9)) }
            reported = s
            writer = s
        }
    }

    /// Takes a place for a live stream client when fewer than `limit` are served (checked and counted at once);
    /// false: it is refused.
    func streamTryOpen(limit: Int) -> Bool {
        locked {
            guard streamCount < limit else { return false }
            streamCount += 1
            streamClients.record(streamCount)
            return true
        }
    }

    /// A live stream client went; `dropped`: the stream ended it (it did not take what was sent in time).
    func streamClosed(dropped: Bool) {
        locked {
            streamCount -= 1
            streamClients.record(streamCount)
            if dropped { streamDropped.increment() }
        }
    }

    public func reloaded(ok: Bool) { locked { reloads[ok ? "ok" : "failed"]?.increment() } }

    public var readerStatus: [ReaderStatus] {
        let readers = field.readers
        let counters = locked { self.counters }
        return readers.map { r in
            ReaderStatus(
                id: r.id, location: r.location, name: r.name, intervalMs: r.intervalMs,
                counters: counters[r.id] ?? AgentCounters(), tags: r.tags, up: r.up, lastGoodPollMs: r.lastGoodPollMs)
        }
    }

    /// Healthy when every reader answers and had a good poll within 3 of its intervals (or 90 s of
    /// back-off), and the store commits.
    public func health(now: Millis = Millis.now()) -> (healthy: Bool, json: String) {
        refreshWriter()
        refreshServers()
        let readers = readerStatus
        return locked {
            var allOK = writer.lastError == nil
            var parts: [HealthJSON.Reader] = []
            for r in readers {
                let staleAfter = max(r.intervalMs * 3, 90_000)
                let recent = r.lastGoodPollMs.map { now - $0 <= staleAfter } ?? (now - startedMs <= staleAfter)
                let ok = r.up && recent
                allOK = allOK && ok
                parts.append(
                    .init(
                        id: r.id, location: r.location, driver: r.name, status: ok ? "ok" : "unhealthy", up: r.up,
                        lastSuccessfulPoll: WireTime(r.lastGoodPollMs), cycles: r.counters.cycles,
                        tagsInField: r.tags.count))
            }
            // Outputs (fleet sync, …): their own status; a failing output does not make the gateway unhealthy (it
            // keeps logging locally and the output catches up by itself), but the backlog is here for whoever
            // watches it. An output with a legacy name is also shown under it, as before outputs.
            func output(_ st: OutputStatus) -> HealthJSON.Output {
                let oldest = st.backlog.values.compactMap(\.oldest).min().map { max(0, now - $0) / 1000 }
                return .init(
                    status: st.up ? "ok" : st.lastSuccessMs == nil && st.lastError == nil ? "starting" : "failing",
                    backlogRows: st.backlog.values.reduce(0) { $0 + $1.rows }, oldestUnsentSeconds: oldest,
                    oldestUnsyncedSeconds: st.legacyName != nil ? oldest : nil,
                    lastSuccess: WireTime(st.lastSuccessMs), lastError: st.lastError, connected: st.connected,
                    refusedRows: st.refused > 0 ? st.refused : nil, failures: st.failures)
            }
            let h = HealthJSON(
                status: allOK ? "ok" : "unhealthy", reader: parts.first?.driver, readerUp: parts.first?.up,
                lastSuccessfulPoll: parts.first?.lastSuccessfulPoll,
                store: writer.lastError == nil ? "ok" : writer.lastError?.description ?? "failing",
                queueDepth: writer.queued, readingsDropped: writer.droppedReadings, writesQueued: writesQueued?(),
                cycles: readers.reduce(0) { $0 + $1.counters.cycles },
                tagsInField: readers.reduce(0) { $0 + $1.tags.count },
                legacy: outputs.compactMap { st in st.legacyName.map { ($0, output(st)) } },
                outputs: outputs.isEmpty && servers.isEmpty ? nil : outputs.map { ($0.name, output($0)) },
                servers: servers.map { e in
                    // A server's trouble does not make the gateway unhealthy either: its clients see it.
                    (
                        e.name,
                        HealthJSON.Server(
                            status: e.last == nil ? "starting" : "ok", listening: e.last?.listening,
                            counts: (e.last?.counts ?? []).map { ($0.name, $0.value) })
                    )
                }, readers: parts)
            return (allOK, String(decoding: WireJSON.encode(h), as: UTF8.self))
        }
    }

    /// The Prometheus text exposition format (version 0.0.4), each family with its `# HELP` (`MetricHelp`).
    public func prometheusText() -> [UInt8] {
        refreshWriter()
        refreshServers()
        return MetricHelp.annotate(registry.emitToBuffer(), extra: locked { serverHelp })
    }

    /// A range rule's limit as a dashboard draws it: `vlogger_rule_limit{rule,field,bound,unit}`.
    public struct RuleLimit: Equatable, Sendable {
        public var rule, field, bound, unit: String
        public var value: Double
    }

    /// The limits of `rules`' range rules (their watched field's min and max), with the fields' units.
    public static func limits(_ rules: RuleSet, units: [String: String]) -> [RuleLimit] {
        rules.rules.flatMap { r -> [RuleLimit] in
            guard let w = r.check.watchedField else { return [] }
            let unit = units[w.name] ?? ""
            return [("min", w.min), ("max", w.max)].compactMap { bound, value in
                value.map { RuleLimit(rule: r.name, field: w.name, bound: bound, unit: unit, value: $0) }
            }
        }
    }

    private var infoGauge: Gauge?
    private var limitGauges: [Gauge] = []

    /// `vlogger_gateway_info{gateway,site} 1` and the rules' limits, at start and after each reload (a limit of a
    /// rule no longer there goes).
    public func describe(gateway: String, site: String?, limits: [RuleLimit]) {
        locked {
            infoGauge?.destroy()
            let info = Gauge(
                label: "vlogger_gateway_info", dimensions: [("gateway", gateway), ("site", site ?? "")],
                factory: factory)
            info.record(1)
            infoGauge = info
            for g in limitGauges { g.destroy() }
            limitGauges = limits.map { l in
                let g = Gauge(
                    label: "vlogger_rule_limit",
                    dimensions: [("rule", l.rule), ("field", l.field), ("bound", l.bound), ("unit", l.unit)],
                    factory: factory)
                g.record(l.value)
                return g
            }
        }
    }
}

/// `/healthz`: the gateway's state (snake_case like every JSON of vlogger; docs/json.md).
struct HealthJSON: Encodable {
    struct Reader: Encodable {
        var id: String
        var location: String?
        var driver: String
        var status: String
        var up: Bool
        var lastSuccessfulPoll: WireTime?
        var cycles: Int
        var tagsInField: Int
        enum CodingKeys: String, CodingKey {
            case id, location, driver, status, up, lastSuccessfulPoll = "last_successful_poll", cycles
            case tagsInField = "tags_in_field"
        }
    }
    struct Output: Encodable {
        var status: String
        var backlogRows: Int
        var oldestUnsentSeconds: Int64?
        var oldestUnsyncedSeconds: Int64?
        var lastSuccess: WireTime?
        var lastError: String?
        var connected: Bool?
        var refusedRows: Int?
        var failures: [String: Int]
        enum CodingKeys: String, CodingKey {
            case status, backlogRows = "backlog_rows", oldestUnsentSeconds = "oldest_unsent_seconds"
            case oldestUnsyncedSeconds = "oldest_unsynced_seconds", lastSuccess = "last_success"
            case lastError = "last_error", connected, refusedRows = "refused_rows", failures
        }
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(status, forKey: .status)
            try c.encode(backlogRows, forKey: .backlogRows)
            try c.encodeIfPresent(oldestUnsentSeconds, forKey: .oldestUnsentSeconds)
            try c.encodeIfPresent(oldestUnsyncedSeconds, forKey: .oldestUnsyncedSeconds)
            try c.encodeIfPresent(lastSuccess, forKey: .lastSuccess)
            try c.encodeIfPresent(lastError, forKey: .lastError)
            try c.encodeIfPresent(connected, forKey: .connected)
            try c.encodeIfPresent(refusedRows, forKey: .refusedRows)
            var f = c.nestedContainer(keyedBy: WireKey.self, forKey: .failures)
            for (k, n) in failures.sorted(by: { $0.key < $1.key }) { try f.encode(n, forKey: WireKey(k)) }
        }
    }
    var status: String
    /// The first reader's, at the top level as before several readers.
    var reader: String?
    var readerUp: Bool?
    var lastSuccessfulPoll: WireTime?
    var store: String
    var queueDepth: Int
    var readingsDropped: Int
    var writesQueued: Int?
    var cycles: Int
    var tagsInField: Int
    /// Outputs with a name from before outputs (`sync`), under it too.
    var legacy: [(String, Output)]
    var outputs: [(String, Output)]?
    /// The servers ([opcua]), among the outputs.
    struct Server: Encodable {
        var status: String
        var listening: String?
        var counts: [(String, Int)]
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: WireKey.self)
            try c.encode(status, forKey: WireKey("status"))
            try c.encodeIfPresent(listening, forKey: WireKey("listening"))
            for (k, n) in counts { try c.encode(n, forKey: WireKey(k)) }
        }
    }
    var servers: [(String, Server)] = []
    var readers: [Reader]

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: WireKey.self)
        try c.encode(status, forKey: WireKey("status"))
        try c.encodeIfPresent(reader, forKey: WireKey("reader"))
        try c.encodeIfPresent(readerUp, forKey: WireKey("reader_up"))
        try c.encodeIfPresent(lastSuccessfulPoll, forKey: WireKey("last_successful_poll"))
        try c.encode(store, forKey: WireKey("store"))
        try c.encode(queueDepth, forKey: WireKey("queue_depth"))
        try c.encode(readingsDropped, forKey: WireKey("readings_dropped"))
        try c.encodeIfPresent(writesQueued, forKey: WireKey("writes_queued"))
        try c.encode(cycles, forKey: WireKey("cycles"))
        try c.encode(tagsInField, forKey: WireKey("tags_in_field"))
        for (name, o) in legacy { try c.encode(o, forKey: WireKey(name)) }
        if let outputs {
            var o = c.nestedContainer(keyedBy: WireKey.self, forKey: WireKey("outputs"))
            for (name, out) in outputs { try o.encode(out, forKey: WireKey(name)) }
            for (name, server) in servers { try o.encode(server, forKey: WireKey(name)) }
        }
        try c.encode(readers, forKey: WireKey("readers"))
    }
}
