import ArgumentParser
import Dispatch
import Foundation
import ISO15693
import Logging
import VLoggerCore

/// `--config` and `--store`, shared by the agent and every command that reads the store.
struct ConfigOptions: ParsableArguments {
    @Option(help: "Configuration file (TOML).")
    var config = "Config/vlogger.toml"

    @Option(help: "Store file (SQLite); overrides [store] path of the configuration.")
    var store: String?

    func load() throws -> AgentConfig {
        do { return try AgentConfig.load(config) } catch { throw VLoggerError("\(error)") }
    }

    /// The store path: --store, else the configuration's (when the file exists), else vlogger.db.
    func storePath() throws -> String {
        if let store { return store }
        if FileManager.default.fileExists(atPath: config) { return try load().storePath }
        return "vlogger.db"
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the polling agent: inventory, plan reads, rules, batched store writes.",
        discussion: """
            Each cycle finds the tags in the field, reads each tag's plan (multi-block, chunked to the chip), \
            decodes its fields, checks the rules and queues readings and events; batches commit to the store \
            by size or time. SIGINT or SIGTERM stops polling, commits the last batch and exits 0. \
            With the simulated reader, the field folder's scenario.json (if any) is played against the run's clock.
            """
    )

    @OptionGroup var options: ConfigOptions

    @Option(help: "Stop after this long (e.g. 30s, 10m, 2h).")
    var duration: String?

    @Option(help: "Stop after this many poll cycles.")
    var cycles: Int?

    @Option(help: "Reader driver, overriding [reader] driver.")
    var reader: ReaderKind?

    @Option(help: "Simulated field folder, overriding [reader] field.")
    var field: String?

    @Option(help: "Poll interval, overriding [polling] interval (e.g. 500ms, 0s).")
    var interval: String?

    @Flag(help: "Simulated time: sleeping between cycles moves a virtual clock instead of waiting (simulator demos).")
    var fastClock = false

    @Option(help: "Log level on stderr: error, warning, notice, info, debug (debug logs each commit and cycle).")
    var logLevel: LogLevel = .notice

    @Option(help: ArgumentHelp("Serve /healthz, /metrics and the status page on HOST:PORT (e.g. 127.0.0.1:9715), overriding [service] listen.",
                               discussion: "Read-only; bind to 127.0.0.1 unless a reverse proxy or firewall guards it."))
    var listen: String?

    func validate() throws {
        if let cycles, cycles < 1 { throw ValidationError("--cycles must be at least 1") }
        if let duration { do { _ = try DurationText.parse(duration) } catch { throw ValidationError("--duration: \(error)") } }
        if let interval { do { _ = try DurationText.parse(interval) } catch { throw ValidationError("--interval: \(error)") } }
    }

    func run() throws {
        let overrides = RunOverrides(reader: reader, field: field, intervalMs: try interval.map(DurationText.parse),
                                     store: options.store, listen: listen)
        let config: AgentConfig, rules: RuleSet, register: AssetRegister?
        do { (config, rules, register) = try overrides.load(options.config) } catch { throw VLoggerError("\(error)") }

        // Logging goes through swift-log, to stderr in journald's priority-prefixed form.
        let level = logLevel.swiftLogLevel
        let logger = Logger(label: "vlogger") { _ in JournalLogHandler(level: level) }
        let log: @Sendable (LogLevel, String) -> Void = { l, message in logger.log(level: l.swiftLogLevel, "\(message)") }
        let session = try ReaderSession.open(kind: config.readers[0].driver, field: config.readers[0].field, device: config.readers[0].device)
        let store: Store
        do { store = try Store(path: config.storePath) } catch { throw VLoggerError("\(error)") }
        do { try store.registerFields(config.fieldInfos) } catch { throw VLoggerError("\(error)") }
        let writer = StoreWriter(store: store, gateway: config.gatewayID, batchSize: config.batchSize,
                                 flushIntervalMs: config.flushIntervalMs, queueLimit: config.queueLimit)
        let clock: AgentClock = fastClock ? SimulatedClock() : SystemClock()
        let agent = Agent(config: config, rules: rules, register: register, session: session, writer: writer, clock: clock, log: log)

        // Health, metrics and the status page.
        let metrics = ServiceMetrics(intervalMs: config.intervalMs)
        writer.onCommit = { r, e, last, seconds in
            log(.debug, "committed \(r) readings, \(e) events through reading id \(last) in \(String(format: "%.1f", seconds * 1000)) ms")
            metrics.commitDone(seconds: seconds)
        }
        let watchdogMs = SystemdNotify.watchdogMs
        var lastWatchdog: Millis = 0
        agent.onCycle = { report in
            metrics.cycleDone(agent, report)
            if let w = watchdogMs, Millis.now() - lastWatchdog >= w / 3 {
                SystemdNotify.send("WATCHDOG=1")
                lastWatchdog = Millis.now()
            }
        }
        var server: HTTPServer?
        if let address = config.listen {
            let s = try HTTPServer(listen: address, handler: ServiceRoutes.handler(metrics: metrics, config: config))
            try s.start()
            server = s
            log(.notice, "serving /healthz, /metrics and the status page on http://\(s.host):\(s.port)/")
        }
        defer { server?.stop() }

        // SIGHUP: reload configuration, rules and register between cycles; a bad file keeps the old ones.
        let reload = StopSignal()
        agent.betweenCycles = {
            guard reload.isRequested else { return }
            reload.reset()
            agent.reloadFromDisk(options.config, overrides: overrides, metrics: metrics)
        }

        // SIGINT/SIGTERM: stop after the current exchange's cycle, commit, exit 0.
        let stop = StopSignal()
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            src.setEventHandler {
                if sig == SIGHUP {
                    log(.notice, "signal SIGHUP: reloading the configuration before the next cycle")
                    reload.request()
                    return
                }
                log(.notice, "signal \(sig == SIGINT ? "SIGINT" : "SIGTERM"): stopping after this cycle")
                SystemdNotify.send("STOPPING=1")
                stop.request()
            }
            src.resume()
            sources.append(src)
        }
        SystemdNotify.send("READY=1\nSTATUS=polling with \(session.reader.name)")
        defer { sources.forEach { $0.cancel() } }

        writer.onStateChange = { error, queued in
            if let error { log(.warning, "store commit failed; \(queued) records kept and retried with back-off: \(error)") } else {
                log(.notice, "store commits again; \(queued) records still queued")
            }
        }
        writer.start()
        agent.run(cycles: cycles, durationMs: try duration.map(DurationText.parse), stop: stop)
        guard writer.finish(timeoutMs: 10_000) else {
            throw VLoggerError("\(writer.lastError?.description ?? "the store does not commit"); \(writer.pendingCount) queued records could not be written")
        }
        store.close()
        let ws = writer.stats
        let c = agent.counters
        let air = c.cycleAirTime.map(\.microseconds).sorted()
        let bound = c.cycleLowerBound.map(\.microseconds).sorted()
        func median(_ v: [Double]) -> Double { v.isEmpty ? 0 : v[v.count / 2] }
        print("""
            \(c.cycles) cycles: \(c.readings) readings, \(c.arrivals) arrivals, \(c.departures) departures, \
            \(c.violations) violations, \(c.errorTotal) errors\(c.errors.isEmpty ? "" : " (" + c.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")")
            air time per cycle: median \(String(format: "%.2f", median(air) / 1000)) ms, lower bound for the same reads \(String(format: "%.2f", median(bound) / 1000)) ms; \(c.exchanges) exchanges
            store \(config.storePath): \(ws.committedReadings) readings and \(ws.committedEvents) events committed in \(ws.commits) batches\(ws.droppedReadings > 0 ? ", \(ws.droppedReadings) readings dropped (queue limit)" : "")
            """)
    }
}

extension LogLevel: ExpressibleByArgument {}
