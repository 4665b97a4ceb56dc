import ArgumentParser
import Foundation
import VLoggerStore
import VLoggerModel
import Readers
import Logging
import VLoggerCore
import VLoggerService
import VLoggerConfig

/// `--config` and `--store`, shared by the agent and every command that reads the store.
struct ConfigOptions: ParsableArguments {
    @Option(help: ConfigPath.help)
    var config = ConfigPath.found

    @Option(help: "Store file (SQLite); overrides [store] path of the configuration.")
    var store: String?

    func load() throws -> AgentConfig {
        return try ConfigPath.load(config)
    }

    /// Opens the store (read-only for commands that only read it), with a one-line error.
    func openStore(readOnly: Bool = false) throws -> Store {
        do { return try Store(path: try storePath(), readOnly: readOnly) } catch let e as StoreError {
            throw VLoggerError("\(e)")
        }
    }

    /// The gateway id of the configuration (for rows of a store that lack it), or empty without one.
    var gatewayID: String { (try? AgentConfig.load(config))?.gatewayID ?? "" }

    /// How times are shown to a person: the configuration's `[gateway] time-zone`, else the system's zone.
    var localTime: LocalTime { (try? AgentConfig.load(config))?.localTime ?? LocalTime(zone: TimeZone.current) }

    /// The store path: --store, else the configuration's; without either, an error that names the file looked for.
    func storePath() throws -> String {
        if let store { return store }
        if FileManager.default.fileExists(atPath: config) { return try load().storePath }
        throw VLoggerError(
            "\(config): no such configuration file (\(ConfigPath.origin(config))), and no --store: which store is meant?"
        )
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Run the gateway: a polling job per reader (inventory, plan reads, rules), the store writer, the HTTP listener.",
        discussion: """
            Each reader's job finds the tags in its field, reads each tag's plan (multi-block, chunked to the chip), \
            decodes its fields, checks the rules and hands readings and events to the store writer, which commits \
            them in batches by size or time on its own thread: a slow, locked or full store never delays polling. \
            SIGINT or SIGTERM stops polling after the current cycle, commits what is queued and exits 0; SIGHUP \
            reloads the configuration, rules and register. With the simulated reader, the field folder's \
            scenario.json (if any) is played against the run's clock.
            """
    )

    @OptionGroup var options: ConfigOptions

    @Option(
        help: ArgumentHelp(
            "Stop after this long (e.g. 30s, 10m, 2h) of the run's time.",
            discussion:
                "The run's time is the wall clock's, but under --clock-rate N it is the fast clock's: --duration 1h --clock-rate 60 stops after one minute of wall time; under --fast-clock it is the virtual clock's."
        ))
    var duration: String?

    @Option(help: "Stop each reader after this many poll cycles.")
    var cycles: Int?

    @Option(
        name: [.customLong("driver"), .customLong("reader")],
        help: "Reader driver, overriding the driver of the configuration's only reader (--reader: its older name).")
    var reader: ReaderKind?

    @Option(help: "Simulated field folder, overriding the field of the configuration's only reader.")
    var field: String?

    @Option(help: "Poll interval, overriding [polling] interval (e.g. 500ms, 0s).")
    var interval: String?

    @Flag(help: "Simulated time: sleeping between cycles moves a virtual clock instead of waiting (simulator demos).")
    var fastClock = false

    @Option(
        help: ArgumentHelp(
            "Run time N times faster (e.g. 60: a minute a second) for readers, scenario and audit schedules alike; simulated readers only.",
            discussion:
                "For demos and tests of schedules: readings and audits are stamped with the fast clock's time, and --duration counts it (--duration 1h --clock-rate 60: one minute of wall time)."
        )
    )
    var clockRate: Double?

    @Option(
        help: "With --clock-rate: the time the fast clock starts at (ISO 8601, e.g. 2026-11-23T05:59:00Z); default now."
    )
    var clockStart: String?

    @Option(help: "Log level on stderr: error, warning, notice, info, debug (debug logs each commit and cycle).")
    var logLevel: Logger.Level = .notice

    @Option(
        help: ArgumentHelp(
            "Serve /healthz, /metrics and the status page on HOST:PORT or [IPv6]:PORT (e.g. 127.0.0.1:9715), overriding [service] listen.",
            discussion: "Read-only; bind to a loopback address unless a reverse proxy or firewall guards it."))
    var listen: String?

    @Option(
        help: ArgumentHelp(
            "Also print each reading and event to stdout as it is committed: jsonl (one JSON object per line).",
            discussion:
                "For a program that reads the gateway's output (Telegraf's inputs.execd, Node-RED's exec node); the closing summary then goes to stderr."
        ))
    var emit: LineFormat?

    @Flag(
        help: "One cycle of each reader, with plans and rules applied; nothing stored, nothing sent (use with --print)."
    )
    var once = false

    @Option(help: "With --once: print the cycle's readings and events to stdout: jsonl.")
    var print: LineFormat?

    enum LineFormat: String, ExpressibleByArgument, CaseIterable { case jsonl }

    func validate() throws {
        if print != nil && !once { throw ValidationError("--print is for --once (the running service has --emit)") }
        if once {
            if print == nil { throw ValidationError("--once needs --print jsonl (what to do with the cycle's rows)") }
            for (given, name) in [
                (emit != nil, "--emit"), (duration != nil, "--duration"), (cycles != nil, "--cycles"),
                (listen != nil, "--listen"), (clockRate != nil, "--clock-rate"), (fastClock, "--fast-clock"),
            ] where given {
                throw ValidationError("\(name) does not go with --once (one cycle of each reader, nothing kept)")
            }
        }
        if let cycles, cycles < 1 { throw ValidationError("--cycles must be at least 1") }
        if let duration {
            do { _ = try DurationText.parse(duration) } catch { throw ValidationError("--duration: \(error)") }
        }
        if let interval {
            do { _ = try DurationText.parse(interval) } catch { throw ValidationError("--interval: \(error)") }
        }
        if let clockRate, !(clockRate.isFinite && clockRate >= 1 && clockRate <= 100_000) {
            throw ValidationError("--clock-rate: a factor from 1 to 100000")
        }
        if clockStart != nil && clockRate == nil { throw ValidationError("--clock-start is for --clock-rate") }
        if clockRate != nil && fastClock {
            throw ValidationError("--clock-rate and --fast-clock are two kinds of simulated time; give one")
        }
        if let clockStart {
            do { _ = try TimeSpec.parse(clockStart, now: Millis.now()) } catch {
                throw ValidationError("--clock-start: \(error)")
            }
        }
        if let listen, !listen.isEmpty {
            do { _ = try ListenAddress(parsing: listen) } catch { throw ValidationError("--listen: \(error)") }
        }
    }

    func run() async throws {
        if once {
            try runOnce()
            return
        }
        var o = GatewayOptions(configPath: options.config)
        o.version = BuildInfo.version
        o.emit = emit != nil
        o.overrides = RunOverrides(
            reader: reader, field: field, intervalMs: try interval.map(DurationText.parse), store: options.store,
            listen: listen)
        o.cycles = cycles
        o.durationMs = try duration.map(DurationText.parse)
        o.fastClock = fastClock
        o.clockRate = clockRate
        o.clockStart = try clockStart.map { try TimeSpec.parse($0, now: Millis.now()).millis }
        // Logging goes through swift-log, to stderr in journald's priority-prefixed form.
        let level = logLevel
        let logger = Logger(label: "vlogger") { _ in JournalLogHandler(level: level) }
        let gateway = try Gateway(options: o, logger: logger)
        let s = try await gateway.run()
        func line(_ c: AgentCounters) -> String {
            "\(c.cycles) cycles: \(c.readings) readings, \(c.arrivals) arrivals, \(c.departures) departures, \(c.violations) violations, \(c.errorTotal) errors"
                + (c.errors.isEmpty
                    ? ""
                    : " (" + c.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                        + ")")
        }
        func median(_ v: [Double]) -> Double { v.isEmpty ? 0 : v.sorted()[v.count / 2] }
        var total = AgentCounters()
        for (_, c) in s.readers {
            total.cycles += c.cycles
            total.readings += c.readings
            total.arrivals += c.arrivals
            total.departures += c.departures
            total.violations += c.violations
            total.exchanges += c.exchanges
            for (k, n) in c.errors { total.errors[k, default: 0] += n }
        }
        var out = [line(total)]
        for (id, c) in s.readers {
            if s.readers.count > 1 { out.append("reader \(id): " + line(c)) }
            // The median cycle's own bound, and the median of each cycle's air time over its own bound (not
            // two medians of different cycles).
            let pairs = zip(c.cycleAirTime, c.cycleLowerBound).map { ($0.microseconds, $1.microseconds) }.sorted {
                $0.0 < $1.0
            }
            let mid = pairs.isEmpty ? (0, 0) : pairs[pairs.count / 2]
            let ratio = median(pairs.filter { $0.1 > 0 }.map { $0.0 / $0.1 })
            out.append(
                "\(s.readers.count > 1 ? "reader \(id): " : "")air time per cycle: median \(String(format: "%.2f", mid.0 / 1000)) ms, lower bound for that cycle's reads \(String(format: "%.2f", mid.1 / 1000)) ms; median ratio per cycle \(String(format: "%.2f", ratio)); \(c.exchanges) exchanges"
            )
        }
        out.append(
            "store \(s.storePath): \(s.store.committedReadings) readings and \(s.store.committedEvents) events committed in \(s.store.commits) batches"
                + (s.store.droppedReadings > 0 ? ", \(s.store.droppedReadings) readings dropped (queue limit)" : ""))
        // With --emit, stdout is the rows' and the summary goes beside the log.
        if emit != nil {
            FileHandle.standardError.write(Data((out.joined(separator: "\n") + "\n").utf8))
        } else {
            Swift.print(out.joined(separator: "\n"))
        }
        if let problem = s.problem { throw VLoggerError(problem) }
        if !s.committedAll {
            throw VLoggerError(
                "\(s.store.lastError?.description ?? "the store does not commit"); \(s.store.queued) queued records could not be written"
            )
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

extension Run {
    /// `--once --print jsonl`: each reader's one cycle, with the configuration's plans and rules, into a scratch
    /// store that is removed afterwards; its readings and events printed in commit order as the stream and the
    /// outputs have them. Nothing is kept and nothing is sent (no outputs, no listener, no queued writes).
    func runOnce() throws {
        let overrides = RunOverrides(
            reader: reader, field: field, intervalMs: try interval.map(DurationText.parse), store: nil, listen: nil)
        let (c, rules, register): (AgentConfig, RuleSet, AssetRegister?)
        do { (c, rules, register) = try overrides.load(options.config) } catch { throw VLoggerError("\(error)") }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-once-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let store: Store
        do { store = try Store(path: scratch.appendingPathComponent("once.db").path) } catch {
            throw VLoggerError("\(error)")
        }
        defer { store.close() }
        try? store.registerFields(c.fieldInfos)
        // The register's asset ids, so the rows carry them as the service's would.
        do { _ = try AssetRegister.importConfigured(c, into: store) } catch { throw VLoggerError("\(error)") }
        let writer = StoreWriter(store: store, gateway: c.gatewayID, batchSize: 100_000, flushIntervalMs: 3_600_000)
        var failed: [String] = []
        for rc in c.readers {
            let session: ReaderSession
            do { session = try ReaderSession.open(rc) } catch {
                failed.append("reader \(rc.id): \(error)")
                continue
            }
            let agent = Agent(
                config: c, reader: rc, rules: rules, register: register, session: session, writer: writer,
                clock: SystemClock())
            let report = agent.cycle()
            agent.wakeQuietTags()
            if report.readerFailed { failed.append("reader \(rc.id): the cycle failed (see the events)") }
        }
        guard writer.commitNow() else { throw VLoggerError("the scratch store did not commit") }
        let rows: [(table: SyncTable, row: OutboxRow)]
        do {
            rows = OutboxRow.mergedByTime(
                readings: try store.outbox(.readings, after: 0, limit: 10_000_000),
                events: try store.outbox(.events, after: 0, limit: 10_000_000))
        } catch { throw VLoggerError("\(error)") }
        var out: [UInt8] = []
        for (table, row) in rows {
            // No key: the scratch store's ids are not the gateway's (a key would clash with a stored row's).
            OutboxJSON.append(
                table, row, gateway: c.gatewayID, jsonFields: TableDescription.jsonFields, keyed: false, to: &out)
            out.append(0x0A)
        }
        FileHandle.standardOutput.write(Data(out))
        for f in failed { FileHandle.standardError.write(Data("\(f)\n".utf8)) }
        if !failed.isEmpty { throw ExitCode(1) }
    }
}
