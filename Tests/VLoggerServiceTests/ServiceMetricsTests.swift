import Foundation
import VLoggerStore
import VLoggerModel
import ISO15693
import Logging
import Readers
import TagSimulator
import TestDrivers
import Testing
import VLoggerCore
@testable import VLoggerService
import DriverSim
import VLoggerOutbox

/// Health and metrics of the service, per reader, from real agent cycles on the simulator.
@Suite(.drivers) struct ServiceMetricsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let config = """
        [[reader]]
        id = "dock-1"
        location = "Dock door 1"
        [[reader]]
        id = "line-2"
        driver = "sim"
        field = "other"
        interval = "500ms"
        [[plan]]
        name = "cage"
        match.model = "MB89R118"
          [[plan.read]]
          first = 0xF8
        """

    /// An agent for reader `index` of the configuration over the demo's cage tag, and a store in a scratch file.
    func agent(_ c: AgentConfig, _ index: Int, _ reader: TagReader? = nil) throws -> Agent {
        let folder = try FieldFolder(url: Self.root.appendingPathComponent("Config/demo-field"))
        let field = SimulatedField()
        for t in folder.field.tags where t.uid.description == "E008010000004212" {
            field.add(SimulatedTag(image: t.image))
        }
        let sim = SimulatorReader(field: field)
        try sim.fieldOn()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("svc-\(UUID().uuidString).db").path
        let store = try Store(path: path)
        return Agent(
            config: c, reader: c.readers[index], rules: RuleSet(), register: nil,
            session: ReaderSession(reader: reader ?? sim),
            writer: StoreWriter(store: store), clock: SimulatedClock(start: 1_763_800_000_000))
    }

    /// An output's series: `connected` only for an output that keeps a connection, refused rows counted by their
    /// total (the consumer reports a running count), and every series gone when a reload removes the output.
    @Test func outputSeriesConnectedRefusedAndRemoval() throws {
        let m = ServiceMetrics(readers: [], intervalMs: { _ in 1000 }, startedMs: 1_763_800_000_000)
        m.enableOutput(name: "hook", title: "Webhook", tables: [.events])
        m.enableOutput(name: "pg", title: "Fleet sync", tables: [.readings])
        m.outputUpdated(
            "hook", backlog: [.events: (0, nil)], sent: [.events: 3], error: nil, connected: true, refused: 2)
        m.outputUpdated("hook", backlog: [.events: (0, nil)], sent: [:], error: nil, connected: false, refused: 5)
        m.outputUpdated("pg", backlog: [.readings: (4, nil)], sent: [:], error: nil)
        var text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(text.contains("vlogger_output_connected{output=\"hook\"} 0"), "\(text)")
        #expect(!text.contains("vlogger_output_connected{output=\"pg\"}"))
        #expect(text.contains("vlogger_output_refused_rows_total{output=\"hook\"} 5"), "\(text)")
        let health = m.health(now: 1_763_800_001_000).json
        #expect(health.contains(#""connected":false"#) && health.contains(#""refused_rows":5"#), "\(health)")
        m.disableOutput(name: "hook")
        text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(!text.contains("output=\"hook\""), "\(text)")
        #expect(text.contains("vlogger_output_backlog_rows{output=\"pg\",table=\"readings\"} 4"), "\(text)")
        #expect(!m.health(now: 1_763_800_001_000).json.contains("\"hook\""))
    }

    /// A server ([opcua]) reports its counts when asked: gauges as they are, counters by their running total (a
    /// counter only grows by what the total grew); "starting" until it listens; the gateway's health untouched.
    @Test func aServersCountsAreSeriesAndPartOfHealth() throws {
        let m = ServiceMetrics(readers: [], intervalMs: { _ in 1000 }, startedMs: 1_763_800_000_000)
        final class Box: @unchecked Sendable {
            let lock = NSLock()
            var status: ServerStatus?
            func set(_ s: ServerStatus) { lock.withLock { status = s } }
            func get() -> ServerStatus? { lock.withLock { status } }
        }
        let box = Box()
        m.enableServer(name: "opcua") { box.get() }
        var health = m.health(now: 1_763_800_001_000)
        #expect(health.json.contains(#""opcua":{"status":"starting"}"#), "\(health.json)")
        func status(sessions: Int, refused: Int) -> ServerStatus {
            ServerStatus(
                listening: "opc.tcp://127.0.0.1:4840",
                counts: [
                    .init("sessions", sessions, help: "Sessions open now."),
                    .init("refused_certificates", refused, counter: true, help: "Certificates refused."),
                ])
        }
        box.set(status(sessions: 3, refused: 2))
        var text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(text.contains("# HELP vlogger_output_sessions Sessions open now.\n"), "\(text)")
        #expect(text.contains(#"vlogger_output_sessions{output="opcua"} 3"#), "\(text)")
        #expect(text.contains(#"vlogger_output_refused_certificates_total{output="opcua"} 2"#), "\(text)")
        box.set(status(sessions: 1, refused: 5))
        text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(text.contains(#"vlogger_output_sessions{output="opcua"} 1"#), "\(text)")
        #expect(text.contains(#"vlogger_output_refused_certificates_total{output="opcua"} 5"#), "\(text)")
        health = m.health(now: 1_763_800_001_000)
        #expect(
            health.json.contains(
                #""opcua":{"listening":"opc.tcp://127.0.0.1:4840","refused_certificates":5,"sessions":1,"status":"ok"}"#
            ), "\(health.json)")
    }

    @Test func countersAndHealthPerReader() throws {
        let c = try AgentConfig.parse(Self.config, file: "t.toml")
        let m = ServiceMetrics(
            readers: c.readers, intervalMs: { c.specialized(for: $0).intervalMs }, startedMs: 1_763_800_000_000)
        let a = try agent(c, 0)
        for _ in 0..<3 { m.cycleDone(a, a.cycle()) }
        let text = String(decoding: m.prometheusText(), as: UTF8.self)
        // Three cycles of dock-1, one arrival, three readings of block 0xF8; line-2 has not polled yet.
        #expect(text.contains("vlogger_cycles_total{reader=\"dock-1\"} 3"), "\(text)")
        #expect(
            text.contains("vlogger_tags_seen_total{reader=\"dock-1\"} 1")
                && text.contains("vlogger_readings_total{reader=\"dock-1\"} 3"))
        #expect(
            text.contains("vlogger_reader_up{reader=\"line-2\"} 1")
                && text.contains("vlogger_cycle_air_time_seconds_count{reader=\"dock-1\"} 3"))
        let (ok, json) = m.health(now: 1_763_800_000_000 + 1000)
        func readers(_ json: String) throws -> [[String: Any]] {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            return try #require(o["readers"] as? [[String: Any]], "\(json)")
        }
        let first = try readers(json).first
        #expect(
            ok && first?["id"] as? String == "dock-1" && first?["location"] as? String == "Dock door 1"
                && first?["cycles"] as? Int == 3, "\(json)")
        // line-2 (500 ms) has had no good poll for 3 intervals, but the 90 s grace for a start holds; past it, unhealthy.
        let (late, lateJSON) = m.health(now: 1_763_800_000_000 + 91_000)
        let line2 = try readers(lateJSON).first { $0["id"] as? String == "line-2" }
        // No location configured: the member is left out (docs/json.md).
        #expect(
            !late && line2?["status"] as? String == "unhealthy" && line2?["location"] == nil
                && line2?["driver"] as? String == "", "\(lateJSON)")
    }

    @Test func aFailingStoreMakesTheServiceUnhealthyAndIsCounted() throws {
        let c = try AgentConfig.parse(Self.config, file: "t.toml")
        let m = ServiceMetrics(readers: [c.readers[0]], intervalMs: { _ in 1000 }, startedMs: Millis.now())
        var s = StoreWriter.Stats()
        s.failedCommits = 2
        s.queued = 40
        s.droppedReadings = 7
        s.lastError = StoreError("database or disk is full", code: 13)
        m.storeUpdated(s)
        let (ok, json) = m.health()
        #expect(
            !ok && json.contains("\"store\":\"database or disk is full\"") && json.contains("\"queue_depth\":40")
                && json.contains("\"readings_dropped\":7"))
        let text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(
            text.contains("vlogger_store_up 0") && text.contains("vlogger_readings_dropped_total 7")
                && text.contains("vlogger_store_failed_commits_total 2"), "\(text)")
        s.lastError = nil
        s.committedReadings = 10
        m.storeUpdated(s, commitSeconds: 0.004)
        let after = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(
            after.contains("vlogger_store_up 1") && after.contains("vlogger_readings_committed_total 10")
                && after.contains("vlogger_batch_commit_seconds_count 1"))
        // The drop counter only ever goes up: the same stats again add nothing.
        m.storeUpdated(s)
        #expect(String(decoding: m.prometheusText(), as: UTF8.self).contains("vlogger_readings_dropped_total 7"))
    }

    /// The plant's state in /metrics: a numeric decoded field as `vlogger_field_value` with its reader, tag, asset and
    /// unit (gone when the tag leaves that reader's field), a violation as `vlogger_rule_violation` = 1 until it
    /// ends. Read back with Prometheus's text format rules (a sample line: name{labels} value).
    @Test func fieldValuesAndViolationsAreSeries() throws {
        let c = try AgentConfig.parse(Self.config, file: "t.toml")
        let m = ServiceMetrics(readers: c.readers, intervalMs: { _ in 1000 })
        let uid = try UID(parsing: "E008010000004212")
        let r = Reading(
            time: 1, gateway: "gw", reader: "dock-1", location: nil, uid: uid, first: 0xF8, count: 1, data: [0],
            decoded: [("temperature", .number(24.5)), ("cage", .text("B7")), ("record", .integer(3))])
        m.readingTaken(r, asset: "CAGE-12", units: ["temperature": "°C"])
        var text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(
            text.contains(
                #"vlogger_field_value{reader="dock-1",uid="E008010000004212",asset="CAGE-12",field="temperature",unit="°C"} 24.5"#
            ), "\(text)")
        #expect(text.contains(#"field="record",unit=""} 3"#) && !text.contains(#"field="cage""#))
        func event(_ kind: Event.Kind, _ name: String) -> Event {
            Event(
                time: 2, gateway: "gw", reader: "dock-1", uid: uid, kind: kind, name: name, severity: .critical,
                detail: "")
        }
        m.eventRecorded(event(.violation, "cold room temperature"), asset: "CAGE-12")
        text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(
            text.contains(
                #"vlogger_rule_violation{rule="cold room temperature",uid="E008010000004212",asset="CAGE-12"} 1"#),
            "\(text)")
        m.eventRecorded(event(.violationEnded, "cold room temperature"), asset: "CAGE-12")
        m.eventRecorded(event(.departure, ""), asset: "CAGE-12")
        text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(!text.contains("vlogger_rule_violation{") && !text.contains("vlogger_field_value{"), "\(text)")
    }

    /// Issue 46, item 9: readings dropped at the queue limit while the store cannot commit show at once in
    /// `vlogger_readings_dropped_total`, the queue depth and /healthz, not only when commits return (on 6b52d4c they
    /// stayed 0 and flat until then). Here the writer never commits (not started): every add past the limit drops.
    @Test func dropsShowAsTheyHappen() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("drops-\(UUID().uuidString).db").path
        let store = try Store(path: path)
        defer {
            store.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        let writer = StoreWriter(store: store, gateway: "gw", batchSize: 1000, queueLimit: 64)
        let m = ServiceMetrics(readers: [], intervalMs: { _ in 1000 }, startedMs: 1_763_800_000_000)
        m.writerStats = { writer.stats }
        let seen = LockedCount()
        writer.onDrop = { readings, _ in seen.set(readings) }
        for i in 0..<200 {
            writer.add(
                Reading(
                    time: 1_763_800_000_000 + Millis(i), gateway: "gw", reader: "r", location: nil,
                    uid: try UID(parsing: "E004010812345601"), first: 0, count: 1, data: [1, 2, 3, 4], decoded: []))
        }
        let dropped = writer.stats.droppedReadings
        #expect(dropped >= 200 - 64 && seen.value == dropped, "\(dropped) \(seen.value)")
        let text = String(decoding: m.prometheusText(), as: UTF8.self)
        #expect(text.contains("vlogger_readings_dropped_total \(dropped)"), "\(text)")
        #expect(text.contains("vlogger_queue_depth \(writer.stats.queued)"), "\(text)")
        #expect(m.health(now: 1_763_800_001_000).json.contains("\"readings_dropped\":\(dropped)"))
    }
}

/// A count set from another thread.
final class LockedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func set(_ v: Int) { lock.withLock { n = v } }
    var value: Int { lock.withLock { n } }
}

/// Issue 47, item 10: `/metrics` had no `# HELP` on any of its families, and `promtool check metrics` (Prometheus's
/// own linter, Debian's `prometheus` package) exited 3. Every family now has one, right before its `# TYPE` (text
/// format 0.0.4), the rule limits and the gateway's info are series, and promtool finds nothing to say.
@Suite(.drivers) struct MetricHelpTests {
    /// A service's metrics with every family the service exports given a series: cycles of a real agent, a reading
    /// and a violation, outputs (one with the fleet sync's older names), a failed round, a reload, the limits.
    static func exercised() throws -> ServiceMetrics {
        let c = try AgentConfig.parse(ServiceMetricsTests.config, file: "t.toml")
        let m = ServiceMetrics(
            readers: c.readers, intervalMs: { c.specialized(for: $0).intervalMs }, startedMs: 1_763_800_000_000)
        let a = try ServiceMetricsTests().agent(c, 0)
        for _ in 0..<3 { m.cycleDone(a, a.cycle()) }
        let uid = try UID(parsing: "E008010000004212")
        m.readingTaken(
            Reading(
                time: 1, gateway: "gw", reader: "dock-1", location: nil, uid: uid, first: 0xF8, count: 1, data: [0],
                decoded: [("temperature", .number(9.5))]), asset: "CAGE-12", units: ["temperature": "°C"])
        m.eventRecorded(
            Event(
                time: 2, gateway: "gw", reader: "dock-1", uid: uid, kind: .violation, name: "cold", severity: .critical,
                detail: "temperature = 9.5 is above 8"), asset: "CAGE-12")
        m.enableOutput(name: "postgres", title: "Fleet sync to PostgreSQL", legacyName: "sync", tables: [.readings])
        m.enableOutput(name: "hook", title: "Webhook", tables: [.events])
        m.outputUpdated(
            "postgres", backlog: [.readings: (3, 1_763_800_000_000)], sent: [.readings: 7],
            error: OutboxFailure(kind: "timeout", message: "no answer"), now: 1_763_800_001_000)
        m.outputUpdated(
            "hook", backlog: [.events: (0, nil)], sent: [.events: 1], error: nil, connected: true, refused: 1)
        m.reloaded(ok: true)
        m.enableServer(name: "opcua") {
            ServerStatus(
                listening: "opc.tcp://127.0.0.1:4840",
                counts: [
                    .init("sessions", 2, help: "Sessions open now."),
                    .init("failed_activations", 1, counter: true, help: "Activations refused."),
                ])
        }
        let rules = try RuleSet.parse(
            """
            [[rule]]
            name = "cold"
            kind = "range"
            field = "temperature"
            min = 2
            max = 8
            """, file: "rules.toml")
        m.describe(
            gateway: "gw-1", site: "Plant 1", limits: ServiceMetrics.limits(rules, units: ["temperature": "°C"]))
        return m
    }

    @Test func everyFamilyHasItsHelpBeforeItsType() throws {
        let text = String(decoding: try Self.exercised().prometheusText(), as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let types = lines.indices.filter { lines[$0].hasPrefix("# TYPE ") }
        #expect(types.count >= 30, "\(text)")
        for i in types {
            let family = lines[i].split(separator: " ")[2]
            #expect(i > 0 && lines[i - 1].hasPrefix("# HELP \(family) "), "\(family) has no HELP: \(text)")
        }
        // The limits of the range rule, in the field's unit, and the gateway's info.
        #expect(
            text.contains(#"vlogger_rule_limit{rule="cold",field="temperature",bound="max",unit="°C"} 8"#), "\(text)")
        #expect(text.contains(#"vlogger_rule_limit{rule="cold",field="temperature",bound="min",unit="°C"} 2"#))
        #expect(text.contains(#"vlogger_gateway_info{gateway="gw-1",site="Plant 1"} 1"#))
    }

    /// Every family the sources name (`label: "vlogger_…"`, the outputs' `vlogger_output_…` and the fleet sync's
    /// older `vlogger_sync_…`) has a help text, including those the test above cannot give a series.
    @Test func everyFamilyInTheSourcesHasAHelpText() throws {
        let source = try String(
            contentsOf: ServiceMetricsTests.root.appendingPathComponent("Sources/VLoggerService/ServiceMetrics.swift"),
            encoding: .utf8)
        let named = Set(source.matches(of: /label: "(vlogger_[a-z_]+)"/).map { String($0.1) })
        #expect(named.count >= 25)
        for family in named { #expect(MetricHelp.families[family] != nil, "\(family) has no help text") }
    }

    /// promtool, Prometheus's own checker, finds no problem in the exposition (it exited 3 on 6b52d4c).
    @Test func promtoolChecksTheExposition() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") else {
            #expect(
                ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_SERVICE_TOOLS"] != "1",
                "promtool (Debian's prometheus package) is required here")
            return
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        p.arguments = ["check", "metrics"]
        // A pipe per stream: one Pipe for two streams makes Foundation close its write end twice after the launch,
        // and the second close can hit a descriptor another test's socket has taken meanwhile.
        let input = Pipe(), output = Pipe(), errors = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = errors
        try p.run()
        input.fileHandleForWriting.write(Data(try Self.exercised().prometheusText()))
        try input.fileHandleForWriting.close()
        let said =
            String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            + String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0 && said.isEmpty, "promtool: \(said)")
    }
}
