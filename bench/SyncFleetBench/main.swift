import Foundation
import ISO15693
import Logging
import PostgresNIO
import ServiceLifecycle
import VLoggerCore
import VLoggerModel
import VLoggerService
import VLoggerStore
import VLoggerSync
import VLoggerOutbox

// Many gateways into one central PostgreSQL (not part of `swift test`; run by bench/sync-fleet-bench.sh, which
// starts the throw-away server and sets VLOGGER_TEST_PG_*):
//
//   sync-fleet-bench throughput N ROWS DIR     N gateways, each with a backlog of ROWS readings in a store of its
//                                              own, sync at once into a fresh database: total rows/s, the server's
//                                              CPU, the slowest gateway's catch-up
//   sync-fleet-bench live N SECONDS DIR [RATE] N gateways, each committing 160 readings a second (8 readers × 20
//                                              tags at 1 s; RATE: that many a second instead, at most 160) and
//                                              syncing by the service's own job (OutputJob, 1 s interval): the
//                                              delay from a reading's local commit to the server's commit (p50,
//                                              p99, max), the server's CPU, the rounds that failed and why
//   sync-fleet-bench catchup ROWS DIR          one gateway with a backlog of ROWS readings that goes on committing
//                                              160 a second while it catches up: the catch-up time and the live
//                                              rows' delay meanwhile
//   sync-fleet-bench reconnect N SECONDS DIR   N gateways as in `live`; the server is stopped (immediate) once they
//                                              all run and started again SECONDS later: when each gateway's sync
//                                              works again after the server is back (the back-off's jitter spreads
//                                              them)
//
// The server's CPU is read from /proc: the postmaster's own and reaped children's time plus its live children's
// (VLOGGER_PG_DIR/data/postmaster.pid). Gateways are syncers in this one process, each with its own store and id,
// sharing the machine's cores with the server. VLOGGER_FLEET_SYNC_PORT sends the gateways to another port than
// the maintenance connection's (PgBouncer in front of a cluster: bench/sync-fleet-pooled.sh).

let env = ProcessInfo.processInfo.environment
func fail(_ m: String) -> Never {
    FileHandle.standardError.write(Data("sync-fleet-bench: \(m)\n".utf8))
    exit(2)
}
let args = CommandLine.arguments
guard args.count >= 4 else { fail("usage: sync-fleet-bench throughput|live|catchup|reconnect … (see the source)") }
guard let port = env["VLOGGER_TEST_PG_PORT"].flatMap(Int.init), let passwordFile = env["VLOGGER_TEST_PG_PASSWORD_FILE"]
else { fail("VLOGGER_TEST_PG_PORT and VLOGGER_TEST_PG_PASSWORD_FILE are needed (bench/postgres/pg.sh start)") }
func number(_ i: Int, _ what: String) -> Int {
    guard i < args.count, let n = Int(args[i]), n > 0, n <= 10_000_000 else { fail("\(what): a positive number") }
    return n
}

let quiet: Logger = {
    var l = Logger(label: "vlogger.sync-fleet-bench")
    l.logLevel = .critical
    return l
}()

let syncPort = env["VLOGGER_FLEET_SYNC_PORT"].flatMap(Int.init) ?? port

func settings(_ database: String, port: Int = port) -> SyncSettings {
    var s = SyncSettings(
        host: "127.0.0.1", port: port, user: env["VLOGGER_TEST_PG_USER"] ?? "vlogger", database: database)
    s.sslMode = .disable
    s.passwordFile = passwordFile
    s.intervalMs = 1000
    return s
}

/// Runs one statement on the maintenance database.
func admin(_ sql: String) async throws {
    let s = settings("postgres")
    let conn = try await PostgresConnection.connect(
        configuration: .init(
            host: s.host, port: s.port, username: s.user, password: try s.password(), database: "postgres",
            tls: .disable), id: 1, logger: quiet)
    defer { Task { try? await conn.close() } }
    try await conn.query(PostgresQuery(unsafeSQL: sql), logger: quiet)
}

func freshDatabase(_ name: String) async throws {
    try await admin("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    try await admin("CREATE DATABASE \(name)")
}

/// The server's CPU seconds so far (user + system of the postmaster, its reaped children and its live ones).
func serverCPU() -> Double {
    guard let dir = env["VLOGGER_PG_DIR"],
        let pidText = try? String(contentsOfFile: dir + "/data/postmaster.pid", encoding: .utf8),
        let pid = pidText.split(separator: "\n").first.flatMap({ Int($0) })
    else { return .nan }
    func ticks(_ p: Int, withChildren: Bool) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(p)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let f = stat[stat.index(after: close)...].split(separator: " ")
        // Fields after the command: state is f[0]; utime f[11], stime f[12], cutime f[13], cstime f[14].
        guard f.count > 14 else { return 0 }
        let own = (Int(f[11]) ?? 0) + (Int(f[12]) ?? 0)
        return withChildren ? own + (Int(f[13]) ?? 0) + (Int(f[14]) ?? 0) : own
    }
    var total = ticks(pid, withChildren: true)
    if let children = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) {
        for c in children.split(separator: " ").compactMap({ Int($0) }) { total += ticks(c, withChildren: false) }
    }
    return Double(total) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// The readings of one gateway's cycle: 8 readers × 20 tags, block 0xF8, 8 bytes and two decoded fields (the
/// demo cage sensor's shape), all at `time`.
func cycle(gateway: String, time: Millis, serial: inout UInt64, rate: Int = 160) -> [Reading] {
    var out: [Reading] = []
    out.reserveCapacity(160)
    for r in 0..<8 {
        for t in 0..<20 where r * 20 + t < rate {
            serial &+= 1
            let uid = UID(manufacturer: .nxp, serial: UInt64(0x10_0000 + r * 20 + t))
            let v = Int16(2150 + Int(serial % 300))
            out.append(
                Reading(
                    time: time, gateway: gateway, reader: "reader-\(r)", location: "hall-\(r)", uid: uid, first: 0xF8,
                    count: 1,
                    data: [
                        UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8), 0xC2, 0x01, 0x42, 0x37, 0,
                        UInt8(truncatingIfNeeded: serial),
                    ],
                    security: [0], decoded: [("temperature", .number(Double(v) / 100)), ("humidity", .number(45))]))
        }
    }
    return out
}

/// A gateway: its store (with `backlog` readings, one cycle a second going back from now) and its syncer.
func gateway(_ i: Int, backlog: Int, dir: String, database: String) throws -> (Store, Syncer) {
    let id = String(format: "gw-%04d", i)
    let path = "\(dir)/\(id).db"
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    let store = try Store(path: path)
    var serial: UInt64 = 0
    let now = Millis.now()
    var batch = Batch()
    var written = 0
    var second = Millis(backlog / 160 + 1)
    while written < backlog {
        var rows = cycle(gateway: id, time: now - second * 1000, serial: &serial)
        if rows.count > backlog - written { rows.removeLast(rows.count - (backlog - written)) }
        batch.readings.append(contentsOf: rows)
        written += rows.count
        second -= 1
        if batch.readings.count >= 50_000 {
            _ = try store.write(batch)
            batch = Batch()
        }
    }
    if !batch.readings.isEmpty { _ = try store.write(batch) }
    let syncer = try Syncer(
        settings: settings(database, port: syncPort), store: store, gateway: id, site: "bench", logger: quiet)
    return (store, syncer)
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}
func ms(_ d: Duration) -> Double { Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15 }
func f1(_ x: Double) -> String { String(format: "%.1f", x) }

/// Readings a gateway committed and when, and when the server had each: the delay of every reading from its
/// local commit to the server's commit, taken as the sync's session returns from a delivery.
final class Delays: @unchecked Sendable {
    private let lock = NSLock()
    /// Commits in id order: the last id of each and its time.
    private var commits: [(last: Int64, at: ContinuousClock.Instant)] = []
    private var seen = Set<Int64>()
    private var samples: [Double] = []
    private var acks: [ContinuousClock.Instant] = []
    /// Readings up to this id are a backlog, not live: not measured.
    var floor: Int64 = 0

    func committed(last: Int64) {
        lock.withLock { commits.append((last, .now)) }
    }
    /// The server has these readings (a batch it committed).
    func delivered(_ ids: [Int64]) {
        let now = ContinuousClock.now
        lock.withLock {
            acks.append(now)
            for id in ids where id > floor && seen.insert(id).inserted {
                // The first commit whose last id is at or after this one.
                var lo = 0, hi = commits.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if commits[mid].last < id { lo = mid + 1 } else { hi = mid }
                }
                if lo < commits.count { samples.append(ms(now - commits[lo].at)) }
            }
        }
    }
    private(set) var rounds = 0
    /// Rounds that failed, by the error's first words.
    private(set) var failures: [String: Int] = [:]
    func round() { lock.withLock { rounds += 1 } }
    func failed(_ error: any Error) {
        let text = String("\(error)".prefix(60))
        lock.withLock { failures[text, default: 0] += 1 }
    }
    func reset() {
        lock.withLock {
            samples = []
            rounds = 0
            failures = [:]
        }
    }
    var all: [Double] { lock.withLock { samples } }
    func firstAcknowledgement(after t: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        lock.withLock { acks.first { $0 > t } }
    }
}

/// The fleet sync as it is, with a probe on each delivery.
struct Probe: OutboxConsumer {
    let inner: Syncer
    let delays: Delays
    var name: String { inner.name }
    var title: String { inner.title }
    var tables: [SyncTable] { inner.tables }
    var batchSize: Int { inner.batchSize }
    var liveEvery: Duration? { inner.liveEvery }
    var tablesIndependent: Bool { inner.tablesIndependent }
    func describe(_ error: any Error) -> OutboxFailure { inner.describe(error) }
    func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
        do {
            let value = try await inner.withSession { session in
                try await body(Session(inner: session, delays: delays))
            }
            delays.round()
            return value
        } catch {
            delays.failed(error)
            throw error
        }
    }
    struct Session: OutboxSession {
        let inner: any OutboxSession
        let delays: Delays
        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            let n = try await inner.deliver(table, rows)
            if table == .readings { delays.delivered(rows.map(\.id)) }
            return n
        }
    }
}

/// One gateway's live side: a cycle of 160 readings committed every second, until cancelled.
func produce(_ store: Store, gateway: String, delays: Delays, rate: Int = 160) async {
    var serial: UInt64 = 1_000_000
    // Gateways started together would all commit in the same millisecond each second: spread over the second.
    try? await Task.sleep(for: .milliseconds(Int.random(in: 0..<1000)))
    while !Task.isCancelled {
        let rows = cycle(gateway: gateway, time: Millis.now(), serial: &serial, rate: rate)
        var b = Batch()
        b.readings = rows
        if (try? store.write(b)) != nil, let last = try? store.newestID(.readings) {
            delays.committed(last: last)
        }
        try? await Task.sleep(for: .seconds(1))
    }
}

/// The fleet sync's own service job for one gateway, with the delay probe on its pump.
func job(_ store: Store, _ syncer: Syncer, delays: Delays) -> OutputJob {
    let pump = OutboxPump(store: store, consumer: Probe(inner: syncer, delays: delays))
    let metrics = ServiceMetrics(readers: [], intervalMs: { _ in 1000 })
    return OutputJob(pump: pump, metrics: metrics, logger: quiet, intervalMs: syncer.settings.intervalMs)
}

let mode = args[1]
do {
    switch mode {
    case "throughput":
        let n = number(2, "gateways"), rows = number(3, "rows"), dir = args[4]
        let db = "fleet_tp_\(n)"
        try await freshDatabase(db)
        var gateways: [(Store, Syncer)] = []
        for i in 0..<n { gateways.append(try gateway(i, backlog: rows, dir: dir, database: db)) }
        _ = try await gateways[0].1.initSchema()
        let cpu0 = serverCPU()
        let start = ContinuousClock.now
        let finish = try await withThrowingTaskGroup(of: Double.self) { group in
            for (_, syncer) in gateways {
                group.addTask {
                    let r = try await syncer.syncOnce()
                    guard r.sent[.readings] == rows else { throw SyncError(.server, "sent \(r.sent) of \(rows)") }
                    return ms(ContinuousClock.now - start)
                }
            }
            var out: [Double] = []
            for try await t in group { out.append(t) }
            return out.sorted()
        }
        let wall = ms(ContinuousClock.now - start) / 1000
        let cpu = serverCPU() - cpu0
        let total = n * rows
        print(
            "throughput: \(n) gateways × \(rows) readings = \(total) rows in \(f1(wall * 1000)) ms: \(Int(Double(total) / wall)) rows/s; "
                + "server CPU \(String(format: "%.2f", cpu)) s (\(String(format: "%.2f", cpu / wall)) cores, \(String(format: "%.1f", cpu * 1e6 / Double(total))) µs per row); "
                + "gateways done after p50 \(f1(percentile(finish, 0.5))) ms, max \(f1(finish.last ?? .nan)) ms")
        for (store, _) in gateways { store.close() }
        try await admin("DROP DATABASE \(db) WITH (FORCE)")

    case "live", "reconnect":
        let n = number(2, "gateways")
        let seconds = number(3, mode == "live" ? "seconds" : "seconds of outage")
        let rate = args.count > 5 ? min(160, number(5, "readings a second per gateway")) : 160
        let outage = seconds
        let dir = args[4]
        let db = "fleet_\(mode)_\(n)"
        try await freshDatabase(db)
        var gateways: [(Store, Syncer, Delays)] = []
        for i in 0..<n {
            let (s, y) = try gateway(i, backlog: 0, dir: dir, database: db)
            gateways.append((s, y, Delays()))
        }
        _ = try await gateways[0].1.initSchema()
        let group = ServiceGroup(
            configuration: .init(
                services: gateways.map { g in
                    ServiceGroupConfiguration.ServiceConfiguration(
                        service: Live(store: g.0, syncer: g.1, delays: g.2, rate: rate))
                }, logger: quiet))
        let running = Task { try await group.run() }
        // Warm-up: every gateway's first round (connect, schema check) out of the figures.
        try await Task.sleep(for: .seconds(n > 100 ? 10 : 3))
        for g in gateways { g.2.reset() }
        if mode == "live" {
            let cpu0 = serverCPU()
            let start = ContinuousClock.now
            try await Task.sleep(for: .seconds(seconds))
            let wall = ms(ContinuousClock.now - start) / 1000
            let cpu = serverCPU() - cpu0
            let all = gateways.flatMap { $0.2.all }.sorted()
            let rounds = gateways.reduce(0) { $0 + $1.2.rounds }
            var failures: [String: Int] = [:]
            for g in gateways { failures.merge(g.2.failures, uniquingKeysWith: +) }
            let failed = failures.values.reduce(0, +)
            let tooMany = failures.filter { $0.key.contains("too many") || $0.key.contains("53300") }.values
                .reduce(0, +)
            print(
                "live: \(n) gateways × \(rate) readings/s for \(seconds) s (sync interval 1 s): \(all.count) readings reached the server (\(Int(Double(all.count) / wall)) rows/s); "
                    + "delay from local commit to server commit p50 \(f1(percentile(all, 0.5))) ms, p99 \(f1(percentile(all, 0.99))) ms, max \(f1(all.last ?? .nan)) ms; "
                    + "\(rounds) sync rounds (\(f1(Double(rounds) / wall))/s, one connection each); server CPU \(String(format: "%.2f", cpu / wall)) cores (\(String(format: "%.1f", cpu * 1e6 / Double(max(1, all.count)))) µs per row, \(String(format: "%.2f", cpu * 1000 / Double(max(1, rounds)))) ms per round); "
                    + "\(failed) rounds failed (\(tooMany) of them 'too many connections')"
                    + (failures.isEmpty
                        ? ""
                        : ": "
                            + failures.sorted { $0.value > $1.value }.prefix(3).map { "\($0.value)× \($0.key)" }
                            .joined(separator: "; "))
            )
        } else {
            // The restart: immediate (as a crash), by the script that started the server, at a known time.
            guard let ctl = env["VLOGGER_TEST_PG_CTL"] else { fail("VLOGGER_TEST_PG_CTL is needed for reconnect") }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/bash")
            p.arguments = [ctl, "outage", String(outage)]
            p.standardOutput = FileHandle.nullDevice
            let down = ContinuousClock.now
            try p.run()
            p.waitUntilExit()
            let back = ContinuousClock.now
            // Each gateway's first acknowledged batch after the server is back.
            var firsts = [Double?](repeating: nil, count: n)
            let deadline = back.advanced(by: .seconds(120))
            while ContinuousClock.now < deadline && firsts.contains(where: { $0 == nil }) {
                for (i, g) in gateways.enumerated() where firsts[i] == nil {
                    if let at = g.2.firstAcknowledgement(after: back) {
                        firsts[i] = ms(at - back)
                    }
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            let got = firsts.compactMap { $0 }.sorted()
            var histogram: [Int: Int] = [:]
            for t in got { histogram[Int(t / 1000), default: 0] += 1 }
            print(
                "reconnect: \(n) gateways (sync interval 1 s, back-off from 2 s doubling to 5 min with jitter); the server down \(f1(ms(back - down) / 1000)) s (immediate stop, \(outage) s, start); "
                    + "\(got.count) of \(n) synced again within 120 s, after the server was back: first \(f1(got.first ?? .nan)) ms, p50 \(f1(percentile(got, 0.5))) ms, last \(f1(got.last ?? .nan)) ms, "
                    + "spread \(f1((got.last ?? .nan) - (got.first ?? .nan))) ms; per second after: "
                    + histogram.keys.sorted().map { "\($0)s:\(histogram[$0] ?? 0)" }.joined(separator: " "))
        }
        running.cancel()
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        for g in gateways { g.0.close() }
        try await admin("DROP DATABASE \(db) WITH (FORCE)")

    case "catchup":
        let rows = number(2, "rows"), dir = args[3]
        let db = "fleet_catchup"
        try await freshDatabase(db)
        let (store, syncer) = try gateway(0, backlog: rows, dir: dir, database: db)
        _ = try await syncer.initSchema()
        let delays = Delays()
        delays.floor = try store.newestID(.readings)
        let producer = Task { await produce(store, gateway: "gw-0000", delays: delays) }
        try await Task.sleep(for: .milliseconds(100))
        let cpu0 = serverCPU()
        let pump = OutboxPump(store: store, consumer: Probe(inner: syncer, delays: delays))
        let start = ContinuousClock.now
        let r = try await pump.round()
        let took = ms(ContinuousClock.now - start) / 1000
        let cpu = serverCPU() - cpu0
        producer.cancel()
        // The live rows' delays: the round's live passes send them; the cursor jumps over them at the end.
        let all = delays.all.sorted()
        print(
            "catch-up: a backlog of \(rows) readings (one cycle a second) and 160 live readings a second: round of \(r.sent[.readings] ?? 0) readings in \(String(format: "%.2f", took)) s "
                + "(\(Int(Double(r.sent[.readings] ?? 0) / took)) rows/s, server CPU \(String(format: "%.2f", cpu / took)) cores); live readings committed meanwhile reached the server after "
                + "p50 \(f1(percentile(all, 0.5))) ms, p99 \(f1(percentile(all, 0.99))) ms, max \(f1(all.last ?? .nan)) ms (\(all.count) readings)"
        )
        store.close()
        try await admin("DROP DATABASE \(db) WITH (FORCE)")

    default:
        fail("unknown mode \(mode)")
    }
} catch {
    fail("\(error)")
}

/// One gateway as a service: its producer and the fleet sync's job.
struct Live: Service {
    let store: Store
    let syncer: Syncer
    let delays: Delays
    var rate = 160
    func run() async throws {
        let producer = Task { await produce(store, gateway: syncer.gateway, delays: delays, rate: rate) }
        await job(store, syncer, delays: delays).run()
        producer.cancel()
    }
}
