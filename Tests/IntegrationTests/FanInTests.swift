import Foundation
import Logging
import Testing
import VLoggerMQTT
import VLoggerIngest
import VLoggerModel
import VLoggerOutbox
import VLoggerService
import VLoggerStore

/// The MQTT fan-in: gateways publish with their MQTT output (QoS 1), `vlogger central ingest` takes the messages
/// from a persistent session and writes them into the central PostgreSQL, acknowledging after each commit
/// (docs/integrating.md, "MQTT fan-in"). Against mosquitto (bench/mqtt/broker.sh) and a three-node NATS cluster
/// with JetStream (bench/nats/nats.sh); the facts relied on are in docs/reference/fleet-engines.md §5–6 and
/// docs/reference/mqtt-subscriber.md. Skipped without the servers, required in CI.
@Suite(
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["VLOGGER_TEST_PG_PORT"] != nil
            || ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_POSTGRES"] == "1", "no PostgreSQL test server"))
struct FanInTests {
    typealias CLI = CLITests
    typealias Fault = SyncFaultTests

    static var pg: Fault.Cluster {
        let env = ProcessInfo.processInfo.environment
        return Fault.Cluster(
            dir: env["VLOGGER_PG_DIR"] ?? "", port: env["VLOGGER_TEST_PG_PORT"] ?? "",
            passwordFile: env["VLOGGER_TEST_PG_PASSWORD_FILE"] ?? "")
    }

    static func createDatabase(_ name: String) throws {
        _ = try Fault.psql(pg, "postgres", "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        _ = try Fault.psql(pg, "postgres", "CREATE DATABASE \(name)")
    }

    /// A `vlogger central ingest` process; its log says when it has subscribed.
    struct Ingest {
        let pid: pid_t
        let out: String
        let err: String

        static func start(_ brokers: [Int], db: String, dir: URL, extra: [String] = []) throws -> Ingest {
            let out = dir.appendingPathComponent("ingest.out").path
            let err = dir.appendingPathComponent("ingest.err").path
            let args =
                [
                    try CLI.binary().path, "central", "ingest", "--central",
                    "postgresql://vlogger@127.0.0.1:\(FanInTests.pg.port)/\(db)?sslmode=disable",
                    "--central-password-file", FanInTests.pg.passwordFile, "--batch-size", "2000",
                ] + brokers.flatMap { ["--broker", "mqtt://127.0.0.1:\($0)"] } + extra
            let pid = try Fault.spawn(#"exec "$@""#, args, stdout: out, stderr: err)
            return Ingest(pid: pid, out: out, err: err)
        }

        /// How many times the log says it subscribed.
        var subscriptions: Int {
            ((try? String(contentsOfFile: err, encoding: .utf8)) ?? "").components(separatedBy: "subscribed to").count
                - 1
        }

        func waitSubscribed(_ count: Int = 1) async throws {
            try await ClusterSyncTests.waitUntil(60, "a subscription (\(err))") {
                if subscriptions >= count { return true }
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    throw CLI.CLIFailure(
                        "ingest exited: \((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
                }
                return false
            }
        }

        func stop(_ signal: Int32) -> Int32 {
            kill(pid, signal)
            return Fault.wait(pid)
        }

        /// After a test that failed before it stopped the ingest: nothing left running.
        func cleanUp() {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == 0 {
                kill(pid, SIGKILL)
                _ = Fault.wait(pid)
            }
        }
    }

    static func count(_ db: String, _ table: String) -> Int {
        (try? Fault.psql(pg, db, "SELECT count(*) FROM \(table)"))?.first.flatMap { Int($0) } ?? -1
    }

    /// One table as text, row by row, in key order (`decoded` and `failed_checks` as jsonb, so that two equal JSON
    /// values compare equal however their text was spaced).
    static func dump(_ db: String, _ table: String, columns: String, order: String) throws -> [String] {
        try Fault.psql(pg, db, "SELECT \(columns) FROM \(table) ORDER BY \(order)")
    }

    /// A gateway of the demo field (polling, rules, a backlog of readings, writes and audits) with its [sync] to one
    /// database and an MQTT output publishing every table it publishes (readings, events, writes, audits with their
    /// results; tags are not MQTT rows) to mosquitto, shipped once each way; the ingest writes
    /// what the broker got into a second database. The two databases then hold the same rows, column by column:
    /// the fan-in reads back every table as the direct sync ships it.
    @Test(.enabled(if: mqttAvailable(), "no mosquitto")) func theFanInStoresWhatTheDirectSyncStores() async throws {
        let broker = try MQTTTests.Broker.start()
        defer { broker.stop() }
        try Self.createDatabase("fanin_direct")
        try Self.createDatabase("fanin_mqtt")
        let g = try Fault.gateway("gw-fanin", cluster: Self.pg, db: "fanin_direct", backlog: 3000)
        defer { try? FileManager.default.removeItem(at: g.dir) }
        var text = try String(contentsOfFile: g.config, encoding: .utf8)
        text += """

            [[output.mqtt]]
            url = "mqtt://127.0.0.1:\(broker.port)"
            qos = 1
            publish = ["readings", "events", "writes", "audits"]
            """
        try text.write(toFile: g.config, atomically: true, encoding: .utf8)
        // The session first (a persistent session keeps only what is published after it exists).
        let ingest = try Ingest.start([Int(broker.port) ?? 0], db: "fanin_mqtt", dir: g.dir, extra: ["--init-schema"])
        defer { ingest.cleanUp() }
        try await ingest.waitSubscribed()
        let run = try CLI.run(["run", "--config", g.config, "--cycles", "40"])
        #expect(run.code == 0, "\(run.err)")
        let sync = try CLI.run(["sync", "--config", g.config, "--init-schema"])
        #expect(sync.code == 0, "\(sync.err)")
        let direct = try CLI.run(["sync", "--config", g.config])
        #expect(direct.code == 0, "\(direct.err)")
        let send = try CLI.run(["outputs", "send", "--config", g.config])
        #expect(send.code == 0, "\(send.err)")
        let tables = ["readings", "events", "writes", "audits", "audit_results"]
        try await ClusterSyncTests.waitUntil(120, "every table in the ingest's database") {
            tables.allSatisfy { Self.count("fanin_mqtt", $0) == Self.count("fanin_direct", $0) }
        }
        #expect(ingest.stop(SIGTERM) == 0)
        let summary = (try? String(contentsOfFile: ingest.out, encoding: .utf8)) ?? ""
        #expect(summary.contains("ingested") && summary.contains(" 0 refused"), "\(summary)")
        let shapes: [(String, String, String)] = [
            (
                "readings",
                "gateway, local_id, time, reader, location, uid, asset_id, block, count, encode(data, 'hex'), encode(security, 'hex'), decoded::jsonb",
                "gateway, local_id"
            ),
            (
                "events",
                "gateway, local_id, time, reader, location, uid, asset_id, kind, name, severity, detail, origin",
                "gateway, local_id"
            ),
            (
                "writes",
                "gateway, local_id, time, uid, block, encode(data, 'hex'), flags, result, verified, exchanges, origin",
                "gateway, local_id"
            ),
            (
                "audits",
                "gateway, local_id, time, started, location, readers, rounds, trigger, present, missing, wrong_location, unexpected, failed_checks",
                "gateway, local_id"
            ),
            (
                "audit_results",
                "gateway, local_id, time, audit, uid, asset_id, status, registered_location, seen_location, seen_by, seen_rounds, first_seen, last_seen, failed_checks::jsonb",
                "gateway, local_id"
            ),
        ]
        for (table, columns, order) in shapes {
            let a = try Self.dump("fanin_direct", table, columns: columns, order: order)
            let b = try Self.dump("fanin_mqtt", table, columns: columns, order: order)
            #expect(!a.isEmpty, "\(table): no rows to compare")
            #expect(
                a == b,
                "\(table): \(zip(a, b).first { $0 != $1 }.map { "\($0.0)\n≠ \($0.1)" } ?? "counts \(a.count) vs \(b.count)")"
            )
        }
    }

    /// A batch whose commit takes longer than the keep-alive allows (a slow central) must not cost the broker's
    /// connection: the broker gives up on a client silent for one and a half keep-alives (MQTT 3.1.1 §3.1.2.10,
    /// docs/reference/mqtt-subscriber.md), and would send the batch again to the next one. Against mosquitto, with
    /// a keep-alive of 1 s and a "commit" of 3 s: a subscriber left alone is dropped; one waited for with
    /// `awaitTending` keeps its connection and goes on receiving.
    @Test func aLongCommitKeepsTheBrokersConnection() async throws {
        let broker = try MQTTTests.Broker.start()
        defer { broker.stop() }
        func subscriber(_ id: String) throws -> MQTTSubscriber {
            var o = MQTTSubscriber.Options(host: "127.0.0.1", port: Int(broker.port) ?? 0, clientID: id)
            o.keepAliveSeconds = 1
            o.filters = ["vlogger/keepalive/#"]
            let s = MQTTSubscriber(o)
            try s.connect()
            return s
        }
        let idle = try subscriber("keepalive-idle")
        let busy = try subscriber("keepalive-busy")
        defer {
            idle.close(graceful: true)
            busy.close(graceful: true)
        }
        let commit = Task { () async throws -> Int in
            try await Task.sleep(for: .seconds(3))
            return 7
        }
        #expect(try await CentralIngest.awaitTending(commit, busy, every: .milliseconds(200)) == 7)
        // The one left alone: the broker closed its connection (read now, at its next call).
        #expect(throws: IngestError.self) {
            try idle.tend()
            _ = try idle.receive(max: 1, waitMs: 300, lingerMs: 10)
        }
        #expect(!idle.isConnected)
        // The tended one is still connected and answers.
        try busy.tend()
        #expect(try busy.receive(max: 1, waitMs: 300, lingerMs: 10).isEmpty)
        #expect(busy.isConnected)
    }

    /// A three-node NATS cluster of the test's own (bench/nats/nats.sh).
    struct NATS {
        let dir: String
        let mqtt: [Int]
        static let script = CLI.root.appendingPathComponent("bench/nats/nats.sh").path

        static func start() throws -> NATS {
            let dir = "/tmp/vlogger-nats-test-\(UInt32.random(in: 0...UInt32.max))"
            let r = try Fault.shell(#"VLOGGER_NATS_DIR="$1" bash "$2" start"#, [dir, script])
            guard r.code == 0,
                let line = r.out.split(separator: "\n").first(where: { $0.contains("VLOGGER_NATS_MQTT_PORTS=") })
            else { throw CLI.CLIFailure("nats.sh start: \(r.out)\(r.err)") }
            let ports = line.split(separator: "=").last.map { $0.split(separator: ",").compactMap { Int($0) } } ?? []
            return NATS(dir: dir, mqtt: ports)
        }

        func ctl(_ args: String...) throws {
            let r = try Fault.shell(#"VLOGGER_NATS_DIR="$1" bash "$2" "${@:3}""#, [dir, Self.script] + args)
            guard r.code == 0 else { throw CLI.CLIFailure("nats.sh \(args): \(r.out)\(r.err)") }
        }

        /// The stream VLOGGER's message count.
        func streamMessages() throws -> Int {
            let r = try Fault.shell(#"VLOGGER_NATS_DIR="$1" bash "$2" stream"#, [dir, Self.script])
            let data = Data(r.out.utf8)
            let o = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            return ((o?["state"] as? [String: Any])?["messages"] as? Int) ?? -1
        }

        func stop() { _ = try? Fault.shell(#"VLOGGER_NATS_DIR="$1" bash "$2" stop"#, [dir, Self.script]) }
    }

    /// Ten gateways publish with their MQTT output (QoS 1, each to one of the three NATS nodes; a backlog and 160
    /// new readings a second each) while one NATS node after another is killed (SIGKILL) and started again, and
    /// `vlogger central ingest` is killed with SIGKILL twice and started again: in the end the central table holds
    /// every row of every gateway's store exactly once. Prints the figures, with what the stream VLOGGER (R3)
    /// captured meanwhile.
    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nats-server")
                || ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_NATS"] == "1", "no nats-server"))
    func jetStreamFanInSurvivesKilledNodesAndIngests() async throws {
        let nats = try NATS.start()
        defer { nats.stop() }
        let db = "fanin_nats"
        try Self.createDatabase(db)
        let dir = try CLI.scratch("fanin-nats", copying: [])
        defer { try? FileManager.default.removeItem(at: dir) }
        final class Running: @unchecked Sendable { var ingests: [Ingest] = [] }
        let running = Running()
        defer { for i in running.ingests { i.cleanUp() } }
        func startIngest(initSchema: Bool = false) throws -> Ingest {
            let i = try Ingest.start(nats.mqtt, db: db, dir: dir, extra: initSchema ? ["--init-schema"] : [])
            running.ingests.append(i)
            return i
        }
        var ingest = try startIngest(initSchema: true)
        try await ingest.waitSubscribed()
        var gateways: [(String, Store, MQTTOutput)] = []
        for i in 0..<10 {
            // One gateway id with a '.', which NATS 2.9 refuses in a topic: `nats-topics` makes it '_' there.
            let id = i == 9 ? "hall.2-gw-09" : String(format: "gw-%02d", i)
            let store = try Store(path: ClusterSyncTests.scratch("\(id).db"))
            try store.write(try ClusterSyncTests.readings(id, from: 0, count: 3000, time: Millis.now() - 3_600_000))
            var m = try MQTTSettings(url: "mqtt://127.0.0.1:\(nats.mqtt[i % 3])")
            m.qos = 1
            m.batchSize = 500
            m.intervalMs = 200
            m.replayRate = nil
            m.tagState = false
            m.publish = [.readings]
            m.natsTopics = true
            gateways.append(
                (id, store, try MQTTOutput(settings: m, gateway: id, store: store, logger: ClusterSyncTests.quiet)))
        }
        defer { for (_, s, _) in gateways { ClusterSyncTests.discard(s) } }
        let jobs = gateways.map { (_, store, output) in
            OutputJob(
                pump: OutboxPump(store: store, consumer: output),
                metrics: ServiceMetrics(readers: [], intervalMs: { _ in 1000 }), logger: ClusterSyncTests.quiet,
                intervalMs: 200)
        }
        let tasks = jobs.map { job in Task { await job.run() } }
        let stores = gateways.map { ($0.0, $0.1) }
        let writing = Task {
            var n = 3000
            while !Task.isCancelled {
                for (id, store) in stores {
                    _ = try? store.write(try ClusterSyncTests.readings(id, from: n, count: 16, time: Millis.now()))
                }
                n += 16
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        // A check that fails stops the jobs and the writer too.
        defer {
            writing.cancel()
            for t in tasks { t.cancel() }
        }
        func central() -> Int { Self.count(db, "readings") }
        let started = ContinuousClock.now
        var ingestKills = 0
        for (round, node) in ["n1", "n2"].enumerated() {
            let before = central()
            try await ClusterSyncTests.waitUntil(180, "rows flowing before round \(round + 1)") {
                central() >= before + 5000
            }
            // A node down (the ingest's own node in the first round: it is first in the list) for 3 s.
            try nats.ctl("kill", node)
            try await Task.sleep(for: .seconds(3))
            // The ingest killed mid-stream, and started again while the node is down.
            #expect(ingest.stop(SIGKILL) == 128 + SIGKILL)
            ingestKills += 1
            ingest = try startIngest()
            try nats.ctl("restart", node)
            try nats.ctl("wait-ready", "120")
            try await ingest.waitSubscribed()
        }
        writing.cancel()
        _ = await writing.value
        try await ClusterSyncTests.waitUntil(180, "every gateway's backlog published") {
            gateways.allSatisfy { (_, store, _) in ((try? store.outboxBacklog("mqtt", .readings).rows) ?? 1) == 0 }
        }
        for t in tasks { t.cancel() }
        try await ClusterSyncTests.awaitEnd(tasks, within: 90, "the 10 output jobs ending")
        // Each job closed its output as it ended; closing again must return (it once hung in libmosquitto).
        for (_, _, output) in gateways { await output.shutdown() }
        let local = try gateways.reduce(0) { $0 + (try $1.1.heldRows(.readings, after: 0, through: Int64.max).count) }
        try await ClusterSyncTests.waitUntil(180, "every row in the central (\(local))") { central() >= local }
        #expect(ingest.stop(SIGTERM) == 0)
        let elapsed = ContinuousClock.now - started
        for (id, store) in stores {
            let held = try store.heldRows(.readings, after: 0, through: Int64.max)
            let newest = try store.newestID(.readings)
            let row = try Fault.psql(
                Self.pg, db,
                "SELECT count(*), count(DISTINCT local_id), min(local_id), max(local_id) FROM readings WHERE gateway = '\(id)'"
            )
            #expect(row == ["\(held.count)|\(held.count)|\(held.lowest ?? 0)|\(newest)"], "\(id)")
        }
        // The stream VLOGGER captures the subjects too, but NATS acknowledges a QoS 1 publish without waiting for
        // a stream that captures it (docs/reference/fleet-engines.md §8): with nodes killed it may miss some (seen:
        // 84,837 messages for 89,200 rows), so it is reported, not relied on.
        let stream = try nats.streamMessages()
        #expect(stream > 0, "the stream VLOGGER holds no message")
        let summary = (try? String(contentsOfFile: ingest.out, encoding: .utf8)) ?? ""
        print(
            "MQTT fan-in through NATS JetStream: 10 gateways, \(local) rows each once in the central after 2 NATS node kills and \(ingestKills) SIGKILLs of the ingest, in \(elapsed); stream VLOGGER holds \(stream) messages; last ingest: \(summary.trimmingCharacters(in: .whitespacesAndNewlines))"
        )
    }
}
