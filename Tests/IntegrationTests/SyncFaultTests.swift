import Foundation
import ISO15693
import Testing
import VLoggerStore
import VLoggerModel

/// Fleet sync through faults, against the throw-away PostgreSQL of bench/postgres/pg.sh (skipped without it;
/// required in CI): three gateways (`vlogger run` processes with separate stores and gateway ids, each with a
/// backlog to ship and the demo field to poll) sync to one server while the server is restarted (an immediate
/// shutdown, as in a crash) at least 50 times and each gateway is SIGKILLed at least 5 times while it ships.
/// Afterwards the central rows equal the union of the local stores, row for row: no duplicates, no gaps.
@Suite(
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["VLOGGER_TEST_PG_PORT"] != nil
            || ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_POSTGRES"] == "1", "no PostgreSQL test server"))
struct SyncFaultTests {
    typealias CLI = CLITests

    /// A cluster of this test's own (bench/postgres/pg.sh in a folder of its own): restarting it must not
    /// disturb the other PostgreSQL tests, which run meanwhile on the shared one.
    struct Cluster {
        let dir: String, port: String, passwordFile: String
        static let script = CLI.root.appendingPathComponent("bench/postgres/pg.sh").path

        static func start() throws -> Cluster {
            let dir = "/tmp/vlogger-pg-fault-\(UInt32.random(in: 0...UInt32.max))"
            let r = try SyncFaultTests.shell(#"VLOGGER_PG_DIR="$1" bash "$2" start"#, [dir, script])
            guard r.code == 0,
                let port = r.out.range(of: #"VLOGGER_TEST_PG_PORT=(\d+)"#, options: .regularExpression).map({
                    String(r.out[$0].dropFirst("VLOGGER_TEST_PG_PORT=".count))
                })
            else {
                throw CLI.CLIFailure("pg.sh start: \(r.out)\(r.err)")
            }
            return Cluster(dir: dir, port: port, passwordFile: dir + "/password")
        }

        /// An immediate restart: no checkpoint, every connection cut, the WAL replayed.
        func restart() throws -> (code: Int32, out: String, err: String) {
            try SyncFaultTests.shell(#"VLOGGER_PG_DIR="$1" bash "$2" restart"#, [dir, Self.script])
        }

        func stop() { _ = try? SyncFaultTests.shell(#"VLOGGER_PG_DIR="$1" bash "$2" stop"#, [dir, Self.script]) }
    }

    /// Starts `bash -c script` with stdin from /dev/null and stdout and stderr appended to files. posix_spawn and
    /// waitpid here, not Foundation's Process: its waitUntilExit was seen to hang on a child that had exited
    /// while other suites started processes at the same time.
    static func spawn(_ script: String, _ args: [String], stdout: String, stderr: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        // Nothing else of this test process (other suites' sockets and pipes) goes to the child, or to a
        // postmaster the child starts: the shell closes every descriptor above 2 before it runs the script.
        let closing =
            "for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\" 2>/dev/null; done; "
        let argv: [UnsafeMutablePointer<CChar>?] =
            (["/bin/bash", "-c", closing + script, "bash"] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/bin/bash", &actions, nil, argv, environ)
        guard rc == 0 else { throw CLI.CLIFailure("posix_spawn: \(String(cString: strerror(rc)))") }
        return pid
    }

    /// Waits for a child started by `spawn`; its exit code (128 + n when killed by signal n).
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            if errno != EINTR { return -1 }
        }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// Runs a shell script with its output in files (never pipes: a postmaster started meanwhile must not hold
    /// them), returning the exit code and the output.
    static func shell(_ script: String, _ args: [String]) throws -> (code: Int32, out: String, err: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-sh-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out").path, err = dir.appendingPathComponent("err").path
        let code = wait(
            try spawn(
                #"cd "$1" && shift && "$@""#, [CLI.root.path, "bash", "-c", script, "bash"] + args, stdout: out,
                stderr: err))
        return (
            code, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        )
    }

    /// psql on the test server: unaligned, '|'-separated rows; bounded (10 s to connect, 2 min in all).
    static func psql(_ cluster: Cluster, _ db: String, _ sql: String) throws -> [String] {
        let r = try shell(
            #"PGPASSWORD=$(cat "$1") PGCONNECT_TIMEOUT=10 timeout 120 psql -X -q -At -F'|' -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$2" -U vlogger -d "$3" -c "$4""#,
            [cluster.passwordFile, cluster.port, db, sql])
        guard r.code == 0 else { throw CLI.CLIFailure("psql: \(r.err)") }
        return r.out.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// One gateway: a copy of the demo field polled every 100 ms, a store with `backlog` readings already in it
    /// (so shipping goes on while it is killed), and a [sync] section shipping every 200 ms in batches of 100.
    struct Gateway {
        let id: String, dir: URL, config: String, store: String, log: URL
    }

    static func gateway(_ id: String, cluster: Cluster, db: String, backlog: Int) throws -> Gateway {
        let s = try AgentCLITests.setup(interval: "100ms", batch: 50, flush: "300ms")
        var text = try String(contentsOfFile: s.config, encoding: .utf8)
        text =
            text.replacingOccurrences(of: "id = \"gw-demo-01\"", with: "id = \"\(id)\"") + """

                [sync]
                url = "postgresql://vlogger@127.0.0.1:\(cluster.port)/\(db)"
                password-file = "\(cluster.passwordFile)"
                sslmode = "disable"
                batch-size = 100
                interval = "200ms"
                """
        try text.write(toFile: s.config, atomically: true, encoding: .utf8)
        let store = try Store(path: s.store)
        var batch = Batch()
        for i in 0..<backlog {
            batch.readings.append(
                Reading(
                    time: 1_763_800_000_000 + Millis(i) * 1000, gateway: id, reader: "cage-room", location: "backlog",
                    uid: try UID(parsing: String(format: "E0040108%08X", i % 11)), first: 0xF8, count: 1,
                    data: [UInt8(i & 0xFF), UInt8((i >> 8) & 0xFF), 0x5A, 0xA5]))
        }
        // Writes and audits in the backlog too (the demo field's polling adds readings, events and tags).
        for i in 0..<(backlog / 100) {
            batch.writes.append(
                WriteRecord(
                    time: 1_763_800_000_000 + Millis(i) * 60_000, gateway: id,
                    uid: try UID(parsing: "E004010800000003"),
                    first: BlockNumber(UInt16(i % 28)), data: [UInt8(i & 0xFF), 0, 0, 1],
                    flags: i % 2 == 0 ? .highDataRate : nil,
                    result: "ok", verified: i % 3 != 0, exchanges: 2))
        }
        _ = try store.write(batch)
        for i in 0..<(backlog / 1000) {
            let t = 1_763_800_000_000 + Millis(i) * 3_600_000
            var results: [AuditResult] = []
            for k in 0..<5 {
                let missing = k == 4
                results.append(
                    AuditResult(
                        uid: try UID(parsing: String(format: "E0040108000000%02X", k)), assetID: "A-\(k)",
                        status: missing ? .missing : .present, registeredLocation: "Cold room, cage 12",
                        seenLocation: missing ? nil : "Cold room, cage 12", seenBy: missing ? nil : "cage-room",
                        seenRounds: missing ? 0 : 3, firstSeen: missing ? nil : t, lastSeen: missing ? nil : t + 2000))
            }
            _ = try store.saveAudit(
                AuditRecord(
                    started: t, finished: t + 3000, gateway: id, location: "Cold room, cage 12", readers: ["cage-room"],
                    rounds: 3, trigger: "schedule", results: results))
        }
        store.close()
        let log = s.dir.appendingPathComponent("gateway.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        return Gateway(id: id, dir: s.dir, config: s.config, store: s.store, log: log)
    }

    /// Rows of `table` the gateway has not had acknowledged (from its store, read while it runs).
    static func backlog(_ g: Gateway) -> Int {
        guard let store = try? Store(path: g.store, readOnly: true) else { return -1 }
        defer { store.close() }
        return SyncTable.allCases.reduce(0) { $0 + ((try? store.outboxBacklog("postgres", $1).rows) ?? 0) }
    }

    /// How many times the gateway's log says it started polling.
    static func starts(_ g: Gateway) -> Int {
        ((try? String(contentsOf: g.log, encoding: .utf8)) ?? "").components(separatedBy: "polling with simulator")
            .count - 1
    }

    /// Whether the server has readings of `g` past its local cursor (nil: the server did not answer, restarting).
    static func serverAhead(_ g: Gateway, cluster: Cluster, db: String) -> Bool? {
        guard let store = try? Store(path: g.store, readOnly: true),
            let cursor = try? store.outboxCursor("postgres", .readings)
        else { return nil }
        store.close()
        guard
            let max = try? psql(
                cluster, db, "SELECT coalesce(max(local_id), 0) FROM readings WHERE gateway = '\(g.id)'"
            ).first.flatMap({ Int64($0) })
        else { return nil }
        return max > cursor
    }

    @Test func threeGatewaysThroughFiftyServerRestartsAndFiveKillsEach() throws {
        let cluster = try Cluster.start()
        defer { cluster.stop() }
        let db = "vlogger_fault"
        _ = try Self.psql(cluster, "postgres", "CREATE DATABASE \(db)")
        let gateways = try (1...3).map { try Self.gateway("gw-fault-\($0)", cluster: cluster, db: db, backlog: 20_000) }
        defer { for g in gateways { try? FileManager.default.removeItem(at: g.dir) } }
        let schema = try Self.shell(
            #""$@""#,
            [
                try CLI.binary().path, "sync", "--config", gateways[0].config, "--store", gateways[0].store,
                "--init-schema",
            ])
        try #require(schema.code == 0, "\(schema.out)\(schema.err)")

        let restartsWanted = 50, killsWanted = 5
        let lock = NSLock()
        nonisolated(unsafe) var serverDone = false
        nonisolated(unsafe) var kills = [Int](repeating: 0, count: gateways.count)
        nonisolated(unsafe) var killsWithBacklog = [Int](repeating: 0, count: gateways.count)
        nonisolated(unsafe) var killsServerAhead = [Int](repeating: 0, count: gateways.count)
        nonisolated(unsafe) var failures: [String] = []
        let group = DispatchGroup()
        let started = Date()
        // Each gateway: start, let it run 0.4 to 2 s, SIGKILL it (noting whether rows were still to ship), again,
        // until the server's restarts are done and it has been killed enough.
        for (i, g) in gateways.enumerated() {
            DispatchQueue.global().async(group: group) {
                while true {
                    let done = lock.withLock { serverDone && kills[i] >= killsWanted }
                    if done { break }
                    do {
                        let pid = try Self.spawn(
                            #"cd "$1" && exec "$2" run --config "$3" --store "$4""#,
                            [g.dir.path, try CLI.binary().path, g.config, g.store], stdout: "/dev/null",
                            stderr: g.log.path)
                        Thread.sleep(forTimeInterval: Double.random(in: 0.4...2.0))
                        let pending = Self.backlog(g)
                        kill(pid, SIGKILL)
                        _ = Self.wait(pid)
                        // Killed between the server's COMMIT and the local cursor's move: the server has rows past
                        // the cursor (they are resent, and ignored, by the next round).
                        let ahead = Self.serverAhead(g, cluster: cluster, db: db)
                        lock.withLock {
                            kills[i] += 1
                            if pending > 0 { killsWithBacklog[i] += 1 }
                            if ahead == true { killsServerAhead[i] += 1 }
                        }
                    } catch {
                        lock.withLock { failures.append("\(g.id): \(error)") }
                        break
                    }
                }
            }
        }
        // The server: an immediate restart (no checkpoint, the WAL replayed, every connection cut) every
        // 0.1 to 0.6 s.
        var restarts = 0
        while restarts < restartsWanted {
            Thread.sleep(forTimeInterval: Double.random(in: 0.1...0.6))
            let r = try cluster.restart()
            if r.code != 0 { lock.withLock { failures.append("restart \(restarts + 1): \(r.err)") }; break }
            restarts += 1
        }
        lock.withLock { serverDone = true }
        group.wait()
        let chaos = Date().timeIntervalSince(started)
        #expect(failures.isEmpty, "\(failures)")

        // The server stays up now: each gateway, started once more, catches up by itself with every row it
        // stored during the faults (then stops, SIGTERM).
        var catchUp: [Double] = []
        for g in gateways {
            let target = try Store(path: g.store, readOnly: true)
            let stored = try target.outbox(.readings, after: 0, limit: 10_000_000).last?.id ?? 0
            target.close()
            let startsBefore = Self.starts(g)
            let t0 = Date()
            let pid = try Self.spawn(
                #"cd "$1" && exec "$2" run --config "$3" --store "$4""#,
                [g.dir.path, try CLI.binary().path, g.config, g.store], stdout: "/dev/null", stderr: g.log.path)
            // Up first (its signal handling in place, so the SIGTERM below is a graceful stop).
            while Self.starts(g) == startsBefore && Date().timeIntervalSince(t0) < 15 {
                Thread.sleep(forTimeInterval: 0.05)
            }
            var caughtUp = false
            while Date().timeIntervalSince(t0) < 30 {
                if let n = try? Self.psql(
                    cluster, db, "SELECT coalesce(max(local_id), 0) FROM readings WHERE gateway = '\(g.id)'"
                ).first.flatMap({ Int64($0) }), n >= stored {
                    caughtUp = true
                    break
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            catchUp.append(Date().timeIntervalSince(t0))
            kill(pid, SIGTERM)
            let code = Self.wait(pid)
            #expect(caughtUp && code == 0, "\(g.id): caught up \(caughtUp), exit \(code)")
        }

        // Each gateway's one-shot sync sends what the last run stored after its last round.
        for g in gateways {
            let r = try Self.shell(#""$@""#, [try CLI.binary().path, "sync", "--config", g.config, "--store", g.store])
            #expect(r.code == 0, "\(g.id): \(r.out)\(r.err)")
            #expect(Self.backlog(g) == 0)
        }

        // Row for row: the central (gateway, local id, time, uid, data) of each table against each store's.
        var figures: [String] = []
        var totalDuplicates = 0, totalGaps = 0, totalExtra = 0, totalRows = 0
        for table in SyncTable.allCases {
            // Tags are one row per gateway and tag (their last state); the other tables one per local row.
            let key = table.isUpserted ? "uid" : "local_id"
            let dups = try Self.psql(
                cluster, db, "SELECT count(*) - count(DISTINCT (gateway, \(key))) FROM \(table.rawValue)")
            let duplicates = Int(dups.first ?? "") ?? -1
            totalDuplicates += duplicates
            let detail = table == .readings ? "encode(data, 'hex')" : table == .events ? "detail" : "''"
            let time = table.isUpserted ? "last_seen" : "time"
            for g in gateways {
                let uid = table.columns.contains { $0.name == "uid" } ? "coalesce(uid, '')" : "''"
                let central = try Self.psql(
                    cluster, db,
                    """
                    SELECT \(table.isUpserted ? "''" : "local_id"), (extract(epoch FROM \(time)) * 1000)::bigint, \(uid), \(detail)
                    FROM \(table.rawValue) WHERE gateway = '\(g.id)' ORDER BY \(key)
                    """)
                let store = try Store(path: g.store, readOnly: true)
                var local = try store.outbox(table, after: 0, limit: 10_000_000).map { r in
                    let data =
                        table == .readings
                        ? (r.value("data", in: table).blob ?? []).map { String(format: "%02x", $0) }.joined()
                        : table == .events ? r.value("detail", in: table).text ?? "" : ""
                    return
                        "\(table.isUpserted ? "" : String(r.id))|\(r.time)|\(r.value("uid", in: table).text ?? "")|\(data)"
                }
                if table.isUpserted {
                    local.sort {
                        $0.split(separator: "|", omittingEmptySubsequences: false)[2]
                            < $1.split(separator: "|", omittingEmptySubsequences: false)[2]
                    }
                }
                store.close()
                let c = Set(central), l = Set(local)
                let gaps = l.subtracting(c).count, extra = c.subtracting(l).count
                totalGaps += gaps
                totalExtra += extra
                totalRows += local.count
                #expect(
                    central == local,
                    "\(g.id) \(table.rawValue): \(central.count) central, \(local.count) local, \(gaps) missing, \(extra) not local"
                )
                figures.append("\(g.id) \(table.rawValue): \(local.count) local = \(central.count) central")
            }
            #expect(duplicates == 0, "\(table.rawValue): \(duplicates) duplicates")
        }
        let logs = gateways.map { (try? String(contentsOf: $0.log, encoding: .utf8)) ?? "" }
        // The gateways saw the server go away (a failed round) and come back (a round that caught up).
        // Every gateway saw the server go away.
        #expect(
            logs.allSatisfy { $0.contains("output postgres (Fleet sync to PostgreSQL) failed") },
            "\(logs.map { $0.suffix(3000) })")
        #expect(kills.allSatisfy { $0 >= killsWanted } && restarts >= restartsWanted)
        #expect(totalDuplicates == 0 && totalGaps == 0 && totalExtra == 0)
        print(
            """
            sync fault test: \(String(format: "%.1f", chaos)) s of faults, \(restarts) server restarts (immediate), \
            kills per gateway \(kills) (with rows still to ship: \(killsWithBacklog); between the server's commit and the \
            cursor's move: \(killsServerAhead)); catch-up after the faults \(catchUp.map { String(format: "%.1f s", $0) }); \(totalRows) rows, \
            duplicates = \(totalDuplicates), gaps = \(totalGaps), rows not local = \(totalExtra)
            """ + "\n  " + figures.joined(separator: "\n  "))
    }
}
