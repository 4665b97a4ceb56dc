import Foundation
import ISO15693
import Logging
import Testing
import VLoggerModel
import VLoggerOutbox
import VLoggerService
import VLoggerStore
import VLoggerSync

/// The fleet sync into a central cluster (bench/cluster/cluster.sh: three PostgreSQL nodes under Patroni with etcd,
/// HAProxy, PgBouncer in transaction mode; skipped without those packages, required in CI). Facts relied on are in
/// docs/reference/fleet-engines.md: Patroni's synchronous mode promotes only a standby that has every acknowledged
/// commit, its asynchronous mode can lose acknowledged commits (§1), HAProxy cuts the sessions of a node that stops
/// being the leader (§2), PgBouncer's transaction pooling keeps no session state between transactions (§3).
@Suite(
    .serialized,
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/patroni")
            || ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_CLUSTER"] == "1",
        "no Patroni, etcd, HAProxy, PgBouncer"))
struct ClusterSyncTests {
    typealias CLI = CLITests
    static let script = CLI.root.appendingPathComponent("bench/cluster/cluster.sh").path

    struct Cluster {
        let dir: String
        let env: [String: String]
        var rw: Int { Int(env["VLOGGER_CLUSTER_RW_PORT"] ?? "") ?? 0 }
        var pooler: Int { Int(env["VLOGGER_CLUSTER_PGBOUNCER_PORT"] ?? "") ?? 0 }
        var nodes: [Int] { (env["VLOGGER_CLUSTER_NODE_PORTS"] ?? "").split(separator: ",").compactMap { Int($0) } }
        var passwordFile: String { env["VLOGGER_CLUSTER_PASSWORD_FILE"] ?? "" }

        static func start(_ mode: String) async throws -> Cluster {
            let dir = "/tmp/vlogger-cluster-test-\(UInt32.random(in: 0...UInt32.max))"
            let r = try await ClusterSyncTests.offThePool {
                try SyncFaultTests.shell(#"VLOGGER_CLUSTER_DIR="$1" bash "$2" start "$3""#, [dir, script, mode])
            }
            guard r.code == 0 else { throw CLI.CLIFailure("cluster.sh start: \(r.out)\(r.err)") }
            var env: [String: String] = [:]
            for word in r.out.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
                let kv = word.split(separator: "=", maxSplits: 1).map(String.init)
                if kv.count == 2 { env[kv[0]] = kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
            }
            return Cluster(dir: dir, env: env)
        }

        @discardableResult
        func ctl(_ args: String...) async throws -> String {
            let dir = self.dir
            let r = try await ClusterSyncTests.offThePool {
                try SyncFaultTests.shell(
                    #"VLOGGER_CLUSTER_DIR="$1" bash "$2" "${@:3}""#, [dir, ClusterSyncTests.script] + args)
            }
            guard r.code == 0 else { throw CLI.CLIFailure("cluster.sh \(args): \(r.out)\(r.err)") }
            return r.out.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func stop() {
            _ = try? SyncFaultTests.shell(
                #"VLOGGER_CLUSTER_DIR="$1" bash "$2" stop"#, [dir, ClusterSyncTests.script])
        }

        /// psql through a port (HAProxy's read-write one by default): unaligned, '|'-separated rows. Bounded (10 s
        /// to connect, 2 min in all): a query behind a lock a stuck transaction holds fails, it does not hang.
        func psql(_ sql: String, db: String = "postgres", port: Int? = nil) async throws -> [String] {
            let args = [passwordFile, "\(port ?? rw)", db, sql]
            let r = try await ClusterSyncTests.offThePool {
                try SyncFaultTests.shell(
                    #"PGPASSWORD=$(cat "$1") PGCONNECT_TIMEOUT=10 timeout 120 psql -X -q -At -F'|' -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$2" -U vlogger -d "$3" -c "$4""#,
                    args)
            }
            guard r.code == 0 else { throw CLI.CLIFailure("psql: \(r.err)") }
            return r.out.split(separator: "\n").map(String.init)
        }

        func settings(_ url: String) throws -> SyncSettings {
            var s = try SyncSettings(url: url)
            s.sslMode = .disable
            s.passwordFile = passwordFile
            s.batchSize = 2000
            s.intervalMs = 500
            // A step the cluster never answers (a commit whose standby went with a killed node) ends the round
            // within 30 s, not never: the jobs must end when the test stops them.
            s.answerTimeoutMs = 30_000
            return s
        }
        /// The three nodes in one URL: the sync finds the writable one.
        func nodesURL(_ db: String) -> String {
            "postgresql://vlogger@\(nodes.map { "127.0.0.1:\($0)" }.joined(separator: ","))/\(db)"
        }
        func portURL(_ port: Int, _ db: String) -> String { "postgresql://vlogger@127.0.0.1:\(port)/\(db)" }
    }

    /// Runs a blocking call (a child process waited for) on a thread of its own, not on one of the few threads
    /// that run every task of the test process (the syncers' jobs need them meanwhile).
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { k in
            Thread { k.resume(with: Result { try body() }) }.start()
        }
    }

    /// Polls `condition` every 100 ms until it holds; after `seconds`, fails the test naming `what`.
    static func waitUntil(_ seconds: Int, _ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !(try await condition()) {
            guard ContinuousClock.now < deadline else { throw CLI.CLIFailure("no \(what) within \(seconds) s") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Waits for `tasks` to end, for at most `seconds`: a job that does not end fails the test (naming `what`)
    /// instead of holding the lane until CI's own limit.
    static func awaitEnd(_ tasks: [Task<Void, Never>], within seconds: Int, _ what: String) async throws {
        final class Flag: @unchecked Sendable {
            private let lock = NSLock()
            private var value = false
            func set() { lock.withLock { value = true } }
            var isSet: Bool { lock.withLock { value } }
        }
        let ended = Flag()
        Task {
            for t in tasks { await t.value }
            ended.set()
        }
        try await waitUntil(seconds, what) { ended.isSet }
    }

    /// The schema, made as the service would make it: a round that fails is tried again (three times). A failure
    /// prints what each node's sessions were doing (seen once in a CI run: a node's first connection left its
    /// `SHOW transaction_read_only` unanswered for the whole 30 s limit, right after the cluster started).
    static func initSchema(_ syncer: Syncer, _ c: Cluster) async throws {
        for attempt in 1...3 {
            do {
                _ = try await syncer.initSchema()
                return
            } catch {
                print("cluster: initSchema attempt \(attempt) failed: \(error)")
                for port in c.nodes {
                    let rows =
                        (try? await c.psql(
                            "SELECT pid, backend_type, state, coalesce(wait_event_type, '-'), coalesce(wait_event, '-'), pg_is_in_recovery(), left(query, 60) FROM pg_stat_activity",
                            port: port)) ?? ["(no answer)"]
                    print("cluster: node \(port): " + rows.joined(separator: " / "))
                }
                if attempt == 3 { throw error }
            }
        }
    }

    static let quiet: Logger = {
        var l = Logger(label: "vlogger.cluster-test")
        l.logLevel = ProcessInfo.processInfo.environment["VLOGGER_CLUSTER_LOG"] == nil ? .critical : .debug
        return l
    }()

    static func readings(_ gateway: String, from: Int, count: Int, time: Millis) throws -> Batch {
        var b = Batch()
        for i in from..<(from + count) {
            b.readings.append(
                Reading(
                    time: time + Millis(i), gateway: gateway, reader: "dock", location: "cluster",
                    uid: try UID(parsing: String(format: "E0040108%08X", i % 13)), first: 0xF8, count: 1,
                    data: [UInt8(i & 0xFF), UInt8((i >> 8) & 0xFF), 0x5A, 0xA5]))
        }
        return b
    }

    /// Closes a store made in `scratch` and removes its folder.
    static func discard(_ store: Store) {
        store.close()
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: store.path).deletingLastPathComponent().path)
    }

    static func scratch(_ name: String) -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-cluster-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent(name).path
    }

    /// Every row of each gateway's store is in the central exactly once: the counts and the sums of local ids
    /// agree, and no (gateway, local id) is there twice.
    static func exactlyOnce(_ c: Cluster, _ db: String, _ stores: [(String, Store)]) async throws {
        for (id, store) in stores {
            let local = try store.heldRows(.readings, after: 0, through: Int64.max)
            let newest = try store.newestID(.readings)
            let central = try await c.psql(
                "SELECT count(*), count(DISTINCT local_id), coalesce(min(local_id), 0), coalesce(max(local_id), 0) FROM readings WHERE gateway = '\(id)'",
                db: db)
            #expect(central == ["\(local.count)|\(local.count)|\(local.lowest ?? 0)|\(newest)"], "\(id)")
        }
    }

    /// Synchronous replication, 20 gateways syncing (each with a backlog and 160 new readings a second, by the
    /// service's own output job), the leader's Patroni and postmaster killed with SIGKILL while a batch statement runs, three
    /// times in a row (the killed node rejoining in between): every row in the central exactly once, and no
    /// gateway restarted. Prints the time from each kill to the first row committed on the new leader.
    @Test func failoverWithSynchronousReplication() async throws {
        let c = try await Cluster.start("sync")
        defer { c.stop() }
        let db = "fleet_failover"
        _ = try await c.psql("CREATE DATABASE \(db)")
        var gateways: [(String, Store, Syncer)] = []
        for i in 0..<20 {
            let id = String(format: "gw-%02d", i)
            let store = try Store(path: Self.scratch("\(id).db"))
            try store.write(try Self.readings(id, from: 0, count: 5000, time: Millis.now() - 3_600_000))
            // Half find the leader among the nodes themselves, half go through HAProxy's read-write port.
            let url = i % 2 == 0 ? c.nodesURL(db) : c.portURL(c.rw, db)
            gateways.append(
                (
                    id, store,
                    try Syncer(
                        settings: try c.settings(url), store: store, gateway: id, site: "t", logger: Self.quiet)
                ))
        }
        defer { for (_, s, _) in gateways { Self.discard(s) } }
        try await Self.initSchema(gateways[0].2, c)
        // Each gateway its own metrics, as each is a service of its own.
        let jobs = gateways.map { (_, store, syncer) in
            OutputJob(
                pump: OutboxPump(store: store, consumer: syncer),
                metrics: ServiceMetrics(readers: [], intervalMs: { _ in 1000 }), logger: Self.quiet, intervalMs: 500)
        }
        let tasks = jobs.map { job in Task { await job.run() } }
        // New readings, 160 a second on each gateway, all along.
        let stores = gateways.map { ($0.0, $0.1) }
        let writing = Task {
            var n = 5000
            while !Task.isCancelled {
                for (id, store) in stores {
                    _ = try? store.write(try Self.readings(id, from: n, count: 16, time: Millis.now()))
                }
                n += 16
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        // A check that fails stops the jobs and the writer too (the stores go with the test).
        defer {
            writing.cancel()
            for t in tasks { t.cancel() }
        }
        func centralCount() async -> Int? {
            (try? await c.psql("SELECT count(*) FROM readings", db: db))?.first.flatMap { Int($0) }
        }
        var delays: [Double] = []
        var duringBatch = 0
        for round in 0..<3 {
            // Wait for rows to flow, then for a batch statement in progress, and kill the leader.
            try await Self.waitUntil(180, "rows flowing before kill \(round + 1)") {
                (await centralCount() ?? 0) >= 20_000 * (round + 1) / 2
            }
            for _ in 0..<100 {
                let active = try await c.psql(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%unnest(%' AND state = 'active' AND pid <> pg_backend_pid()"
                )
                if active.first != "0" {
                    duringBatch += 1
                    break
                }
            }
            let killed = try await c.ctl("kill-leader")
            let start = ContinuousClock.now
            // The first answer of the new leader, then its first row committed after that.
            var answered = 0
            try await Self.waitUntil(120, "a new leader after kill \(round + 1)") {
                guard let n = await centralCount() else { return false }
                answered = n
                return true
            }
            try await Self.waitUntil(120, "a row on the new leader after kill \(round + 1)") {
                (await centralCount() ?? answered) > answered
            }
            let d = ContinuousClock.now - start
            delays.append(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
            try await c.ctl("rejoin", killed)
            try await c.ctl("wait-replicas", "90")
        }
        writing.cancel()
        _ = await writing.value
        // Every gateway catches up by itself (the jobs were never restarted).
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            let behind = gateways.filter { (_, store, _) in
                ((try? store.outboxBacklog("postgres", .readings).rows) ?? 1) > 0
            }
            if behind.isEmpty { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        for t in tasks { t.cancel() }
        try await Self.awaitEnd(tasks, within: 90, "the 20 output jobs ending")
        try await Self.exactlyOnce(c, db, gateways.map { ($0.0, $0.1) })
        let sorted = delays.sorted()
        let total = await centralCount() ?? -1
        print(
            "cluster failover (synchronous): 20 gateways, 3 leader kills (\(duringBatch) with a batch being inserted): kill to first row on the new leader median \(String(format: "%.1f", sorted[1])) s, max \(String(format: "%.1f", sorted[2])) s; \(total) rows, each once"
        )
        #expect(delays.count == 3 && duringBatch >= 1)
    }

    /// Asynchronous replication loses acknowledged commits in a failover (docs/reference/fleet-engines.md §1, seen
    /// there with SIGSTOPped walsenders; here the replicas' walreceivers are stopped). The gateway notices at its
    /// next connection (the central's mark is below its cursor), sends the lost rows again from its store, and the
    /// central ends with each row once. Rows the store no longer holds (past `keep`, no safety window) are a gap:
    /// an event with their id range, and a line of `outputs status`.
    @Test func asynchronousFailoverLosesATailThatIsSentAgain() async throws {
        let c = try await Cluster.start("async")
        defer { c.stop() }
        let db = "fleet_lost_tail"
        _ = try await c.psql("CREATE DATABASE \(db)")
        let store = try Store(path: Self.scratch("gw.db"))
        defer { Self.discard(store) }
        var settings = try c.settings(c.nodesURL(db))
        settings.safetyWindowMs = 0
        let syncer = try Syncer(settings: settings, store: store, gateway: "gw-tail", site: "t")
        try await Self.initSchema(syncer, c)
        let old = Millis.now() - 10 * 86_400_000
        try store.write(try Self.readings("gw-tail", from: 0, count: 1000, time: old))
        #expect(try await syncer.syncOnce().sent[.readings] == 1000)
        func central() async throws -> Int {
            Int(try await c.psql("SELECT count(*) FROM readings WHERE gateway = 'gw-tail'", db: db).first ?? "") ?? -1
        }
        /// Rows committed on the leader only, acknowledged to the gateway, then a failover that loses them.
        func loseTheNext(_ count: Int, from: Int) async throws {
            try await c.ctl("wait-replicas", "90")
            try await c.ctl("cut")
            try store.write(try Self.readings("gw-tail", from: from, count: count, time: old))
            #expect(try await syncer.syncOnce().sent[.readings] == count)
            let killed = try await c.ctl("kill-leader")
            try await c.ctl("wait-leader", "90")
            try await c.ctl("rejoin", killed)
        }
        try await loseTheNext(500, from: 1000)
        // The new leader lacks what the gateway was told was committed.
        #expect(try await central() == 1000)
        #expect(try store.outboxCursor("postgres", .readings) == 1500)
        // The next round sees the central's mark (1000) below its cursor, and sends 1001…1500 again.
        let again = try await syncer.syncOnce()
        #expect(again.sent[.readings] == 500)
        #expect(try await central() == 1500)
        #expect(try store.latestEvent(named: "central-rewound")?.detail.contains("up to local id 1000 only") == true)
        try await Self.exactlyOnce(c, db, [("gw-tail", store)])

        // Lost again, but the store has since let the rows go (they are 10 days old, keep is 1 day, no window):
        // only the newest stays (ids go on from it). 1501…1999 cannot be sent again: a gap, said with its ids.
        try await loseTheNext(500, from: 1500)
        let pruned = try store.prune(before: Millis.now() - 86_400_000, keepFor: ["postgres"])
        #expect(pruned.deleted[.readings] == 1999)
        #expect(try await central() == 1500)
        _ = try await syncer.syncOnce()
        let gap = try #require(try store.latestEvent(named: "central-gap"))
        #expect(gap.detail.contains("499 of them (local ids 1501…1999)"), "\(gap.detail)")
        #expect(syncer.statusNotes().contains { $0.contains("last gap") && $0.contains("1501…1999") })
        #expect(try await central() == 1501)
        let newest = try await c.psql(
            "SELECT max(local_id) FROM readings WHERE gateway = 'gw-tail'", db: db)
        #expect(newest == ["2000"])
    }

    /// Through PgBouncer in transaction mode (a pool of 20 server connections): the sync's statements go
    /// through (no session state, unnamed statements), a batch sent twice leaves one row each (`ON CONFLICT DO
    /// NOTHING` in the batch's statement), and `doctor`'s probe finds the pooling mode.
    @Test func throughPgBouncerInTransactionMode() async throws {
        let c = try await Cluster.start("async")
        defer { c.stop() }
        let db = "fleet_pooled"
        _ = try await c.psql("CREATE DATABASE \(db)")
        let settings = try c.settings(c.portURL(c.pooler, db))
        var stores: [(String, Store)] = []
        var syncers: [Syncer] = []
        for i in 0..<5 {
            let id = "gw-pool-\(i)"
            let store = try Store(path: Self.scratch("\(id).db"))
            try store.write(try Self.readings(id, from: 0, count: 7000, time: Millis.now() - 60_000))
            stores.append((id, store))
            syncers.append(try Syncer(settings: settings, store: store, gateway: id, site: "t"))
        }
        defer { for (_, s) in stores { Self.discard(s) } }
        try await Self.initSchema(syncers[0], c)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for s in syncers { group.addTask { _ = try await s.syncOnce() } }
            try await group.waitForAll()
        }
        try await Self.exactlyOnce(c, db, stores)
        // The central's mark is where each gateway's cursor is.
        #expect(
            try await c.psql("SELECT DISTINCT last_id FROM gateway_marks WHERE tbl = 'readings'", db: db, port: nil)
                == [
                    "7000"
                ])
        // A resend (the cursor moved back by hand): nothing twice.
        try stores[0].1.rewindOutboxCursor("postgres", .readings, to: 3000)
        let again = try await syncers[0].syncOnce()
        #expect(again.sent[.readings] == 4000 && again.inserted[.readings] == 0)
        try await Self.exactlyOnce(c, db, stores)
        let probe = try #require(await settings.doctorProbe(Self.context))
        #expect(probe.failure == nil && probe.detail.contains("transaction pooling"), "\(probe.detail)")
        // HAProxy's port: one server connection per client.
        let direct = try #require(await (try c.settings(c.portURL(c.rw, db))).doctorProbe(Self.context))
        #expect(direct.failure == nil && direct.detail.contains("no transaction pooling"), "\(direct.detail)")
    }

    static let context = OutputContext(
        gatewayID: "gw-doctor", site: nil, readers: [], fields: [], store: nil, logger: quiet, readerUp: { [:] },
        probe: true)
}
