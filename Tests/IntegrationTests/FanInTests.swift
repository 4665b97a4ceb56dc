import Foundation
import Logging
import Testing
import VLoggerMQTT
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
}
