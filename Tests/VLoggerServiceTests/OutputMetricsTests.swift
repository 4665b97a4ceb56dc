import Foundation
import TestDrivers
import Testing
import VLoggerCore
import VLoggerModel
import VLoggerStore

@testable import VLoggerService
import VLoggerOutbox

/// Every output shows its backlog, the age of its oldest unsent row, its last success and its failures by
/// kind, in /healthz and /metrics, from the same code (issue "One description per table, and outputs as
/// consumers of the store's outbox", item 4). The fleet sync keeps its older names (`"sync"` in /healthz,
/// `vlogger_sync_*`) beside the new ones.
@Suite(.drivers) struct OutputMetricsTests {
    @Test func twoOutputsAreShownApartByTheSameCode() throws {
        let m = ServiceMetrics(readers: [], intervalMs: { _ in 1000 }, startedMs: 1_763_800_000_000)
        m.enableOutput(name: "postgres", title: "Fleet sync to PostgreSQL", legacyName: "sync", tables: [.readings])
        m.enableOutput(name: "late", title: "A late output", tables: [.readings, .events])
        let now: Millis = 1_763_800_060_000
        m.outputUpdated("postgres", backlog: [.readings: (0, nil)], sent: [.readings: 120], error: nil, now: now)
        m.outputUpdated(
            "late", backlog: [.readings: (30, now - 42_000), .events: (2, now - 5000)], sent: [:],
            error: OutboxFailure(kind: "timeout", message: "no answer in 5 s"), now: now)
        m.outputUpdated(
            "late", backlog: [.readings: (30, now - 42_000), .events: (2, now - 5000)], sent: [:],
            error: OutboxFailure(kind: "timeout", message: "no answer in 5 s"), now: now)
        let health = m.health(now: now).json
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(health.utf8)) as? [String: Any], "\(health)")
        let outputs = try #require(json["outputs"] as? [String: [String: Any]], "\(health)")
        #expect(outputs["postgres"]?["status"] as? String == "ok")
        #expect(outputs["postgres"]?["backlog_rows"] as? Int == 0)
        #expect(outputs["postgres"]?["last_success"] as? String == "2025-11-22T08:27:40.000Z")
        #expect(outputs["late"]?["status"] as? String == "failing")
        #expect(outputs["late"]?["backlog_rows"] as? Int == 32)
        #expect(outputs["late"]?["oldest_unsent_seconds"] as? Int == 42)
        #expect(outputs["late"]?["last_error"] as? String == "no answer in 5 s")
        #expect((outputs["late"]?["failures"] as? [String: Int]) == ["timeout": 2])
        // The older object of the fleet sync, as before outputs.
        #expect((json["sync"] as? [String: Any])?["status"] as? String == "ok", "\(health)")
        // A failing output does not make the gateway unhealthy: it keeps logging and catches up by itself.
        #expect(json["status"] as? String == "ok")

        let text = String(decoding: m.prometheusText(), as: UTF8.self)
        for line in [
            "vlogger_output_up{output=\"postgres\"} 1", "vlogger_output_up{output=\"late\"} 0",
            "vlogger_output_backlog_rows{output=\"late\",table=\"readings\"} 30",
            "vlogger_output_oldest_unsent_age_seconds{output=\"late\",table=\"readings\"} 42",
            "vlogger_output_rows_sent_total{output=\"postgres\",table=\"readings\"} 120",
            "vlogger_output_failures_total{output=\"late\",kind=\"timeout\"} 2",
            "vlogger_output_last_success_timestamp_seconds{output=\"postgres\"} 1763800060",
            "vlogger_sync_up 1", "vlogger_sync_rows_sent_total{table=\"readings\"} 120",
        ] {
            #expect(text.contains(line), "\(line)\n\(text)")
        }
        // The late output has no legacy names.
        #expect(!text.contains("vlogger_sync_backlog_rows{table=\"events\"}"))
    }
}

/// Issue 46, item 14: after a 2-minute broker outage the MQTT output of 6b52d4c had not reconnected 70 s after the
/// broker was back, because its rounds backed off to 300 s. An output's back-off is now capped at 30 s (twice the
/// interval when that is longer), so a destination back after an outage of any length is tried again within 30 s;
/// libmosquitto's own reconnects are capped at 30 s too (InstanceWatchTests's suite file). The waits are drawn with jitter: every draw is checked.
@Suite struct OutputBackoffTests {
    @Test func afterAnyOutageTheNextTryIsWithinThirtySeconds() {
        var g = SystemRandomNumberGenerator()
        for interval: Millis in [100, 1000, 5000, 15_000] {
            var b = OutputJob.backoff(intervalMs: interval)
            // 2 minutes, 1 hour, a day of failures: never a wait over 30 s.
            for n in 1...500 {
                let w = b.failed(using: &g)
                #expect(w >= 2 * max(interval, 1000) && w <= 30_000, "interval \(interval), failure \(n): \(w) ms")
            }
        }
        // A longer interval (an hourly sync on a metered link) backs off to twice the interval, not less.
        var hourly = OutputJob.backoff(intervalMs: 3_600_000)
        #expect(hourly.ceiling(after: 10) == 7_200_000)
        #expect(hourly.failed(using: &g) == 7_200_000)
    }
}
