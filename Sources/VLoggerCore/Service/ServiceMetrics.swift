import Foundation
import ISO15693

/// A histogram with fixed buckets, in the Prometheus sense (cumulative counts per upper bound).
public struct Histogram: Sendable {
    public let bounds: [Double]
    public private(set) var counts: [Int]
    public private(set) var sum = 0.0
    public private(set) var count = 0

    public init(bounds: [Double]) {
        self.bounds = bounds
        counts = Array(repeating: 0, count: bounds.count)
    }

    public mutating func observe(_ v: Double) {
        for (i, b) in bounds.enumerated() where v <= b { counts[i] += 1 }
        sum += v
        count += 1
    }
}

/// What the service knows about itself, shared between the agent's thread (which updates it after each
/// cycle and commit) and the HTTP thread (which reads it). Every access holds the lock.
public final class ServiceMetrics: @unchecked Sendable {
    private let lock = NSLock()
    private var counters = AgentCounters()
    private var tags: [UID] = []
    private var readerName = ""
    private var readerUp = true
    private var lastGoodPollMs: Millis?
    private var storeOK = true
    private var storeError: String?
    private var queueDepth = 0
    private var commitLatency = Histogram(bounds: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
    private var cycleAir = Histogram(bounds: [0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2])
    private var reloads: [String: Int] = ["ok": 0, "failed": 0]
    private var committedReadings = 0
    public let startedMs: Millis
    public var intervalMs: Millis

    public init(startedMs: Millis = Millis.now(), intervalMs: Millis = 1000) {
        self.startedMs = startedMs
        self.intervalMs = intervalMs
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// After each cycle, from the agent's thread.
    public func cycleDone(_ agent: Agent, _ report: CycleReport) {
        let c = agent.counters
        let t = agent.tagsInField
        let up = agent.readerHealthy, good = agent.lastGoodPollMs, name = agent.session.reader.name
        let w = agent.writer.stats
        let depth = w.queued, committed = w.committedReadings
        let err = w.lastError
        locked {
            var trimmed = c
            trimmed.cycleAirTime = []
            trimmed.cycleLowerBound = []
            counters = trimmed
            tags = t
            readerUp = up
            lastGoodPollMs = good
            readerName = name
            queueDepth = depth
            committedReadings = committed
            storeOK = err == nil
            storeError = err?.description
            if !report.readerFailed { cycleAir.observe(report.airTime.microseconds / 1_000_000) }
        }
    }

    public func commitDone(seconds: Double) { locked { commitLatency.observe(seconds) } }
    public func reloaded(ok: Bool) { locked { reloads[ok ? "ok" : "failed", default: 0] += 1 } }

    /// Healthy when the reader answers, a good poll happened within 3 intervals (or 90 s of back-off),
    /// and the store commits.
    public func health(now: Millis = Millis.now()) -> (healthy: Bool, json: String) {
        locked {
            let staleAfter = max(intervalMs * 3, 90_000)
            let recent = lastGoodPollMs.map { now - $0 <= staleAfter } ?? (now - startedMs <= staleAfter)
            let healthy = readerUp && recent && storeOK
            var o: [UInt8] = []
            func field(_ k: String, _ v: String, quoted: Bool = true) {
                if o.count > 1 { o.append(0x2C) }
                JSONText.appendQuoted(k, to: &o)
                o.append(0x3A)
                if quoted { JSONText.appendQuoted(v, to: &o) } else { o += Array(v.utf8) }
            }
            o.append(0x7B)
            field("status", healthy ? "ok" : "unhealthy")
            field("reader", readerName)
            field("readerUp", readerUp ? "true" : "false", quoted: false)
            field("lastSuccessfulPoll", lastGoodPollMs.map(TimeSpec.format) ?? "null", quoted: lastGoodPollMs != nil)
            field("store", storeOK ? "ok" : (storeError ?? "failing"))
            field("queueDepth", String(queueDepth), quoted: false)
            field("cycles", String(counters.cycles), quoted: false)
            field("tagsInField", String(tags.count), quoted: false)
            o.append(0x7D)
            return (healthy, String(decoding: o, as: UTF8.self))
        }
    }

    public var tagsInField: [UID] { locked { tags } }

    /// The Prometheus text exposition format (version 0.0.4).
    public func prometheusText(now: Millis = Millis.now()) -> String {
        locked {
            var out = ""
            func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
                out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
                for s in samples { out += "\(name)\(s.labels.isEmpty ? "" : "{\(s.labels)}") \(s.value)\n" }
            }
            func histogram(_ name: String, _ help: String, _ h: Histogram) {
                out += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
                for (b, c) in zip(h.bounds, h.counts) { out += "\(name)_bucket{le=\"\(b)\"} \(c)\n" }
                out += "\(name)_bucket{le=\"+Inf\"} \(h.count)\n\(name)_sum \(h.sum)\n\(name)_count \(h.count)\n"
            }
            func label(_ v: String) -> String { v.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n") }
            metric("vlogger_cycles_total", "counter", "Poll cycles run.", [("", String(counters.cycles))])
            metric("vlogger_tags_seen_total", "counter", "Tag arrivals (a tag entering the field).", [("", String(counters.arrivals))])
            metric("vlogger_tag_departures_total", "counter", "Tags that left the field.", [("", String(counters.departures))])
            metric("vlogger_tags_in_field", "gauge", "Tags in the field now.", [("", String(tags.count))])
            metric("vlogger_readings_total", "counter", "Readings taken (queued for the store).", [("", String(counters.readings))])
            metric("vlogger_readings_committed_total", "counter", "Readings committed to the store.", [("", String(committedReadings))])
            metric("vlogger_exchanges_total", "counter", "Frames exchanged with tags.", [("", String(counters.exchanges))])
            metric("vlogger_errors_total", "counter", "Errors by kind (read-timeout, read-crc, inventory-reader, ndef-not-formatted, ...).",
                   counters.errors.sorted { $0.key < $1.key }.map { ("kind=\"\(label($0.key))\"", String($0.value)) })
            metric("vlogger_rule_violations_total", "counter", "Rule violations (counted when they start).", [("", String(counters.violations))])
            histogram("vlogger_batch_commit_seconds", "Time to commit one batch to the store.", commitLatency)
            metric("vlogger_queue_depth", "gauge", "Records waiting for the next commit.", [("", String(queueDepth))])
            histogram("vlogger_cycle_air_time_seconds", "Air time of one poll cycle (inventory and reads).", cycleAir)
            metric("vlogger_reader_up", "gauge", "1 when the reader answered the last inventory.", [("", readerUp ? "1" : "0")])
            metric("vlogger_last_successful_poll_timestamp_seconds", "gauge", "When the last cycle with a working reader ended.",
                   [("", lastGoodPollMs.map { String(Double($0) / 1000) } ?? "0")])
            metric("vlogger_store_up", "gauge", "1 when the last commit succeeded.", [("", storeOK ? "1" : "0")])
            metric("vlogger_config_reloads_total", "counter", "Configuration reloads (SIGHUP) by result.",
                   reloads.sorted { $0.key < $1.key }.map { ("result=\"\($0.key)\"", String($0.value)) })
            metric("vlogger_start_time_seconds", "gauge", "When the service started.", [("", String(Double(startedMs) / 1000))])
            return out
        }
    }
}
