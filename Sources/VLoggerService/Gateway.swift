import Dispatch
import Foundation
import VLoggerStore
import VLoggerModel
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import VLoggerCore
import VLoggerConfig
import VLoggerOutbox

/// What `vlogger run` asks of the gateway.
public struct GatewayOptions: Sendable {
    public var configPath: String
    public var overrides = RunOverrides()
    /// Each polling job stops after this many cycles, or after this long; the service then stops.
    public var cycles: Int?
    public var durationMs: Millis?
    /// Sleeping between cycles moves a virtual clock (simulator demos).
    public var fastClock = false
    /// Time runs this many times faster, from `clockStart` (default now), for every job alike: readers,
    /// scenario, audit schedules (simulated readers only; tests and demos of schedules).
    public var clockRate: Double?
    public var clockStart: Millis?
    /// How long the last commit may keep failing at shutdown before giving up with an error.
    public var finalCommitTimeoutMs: Millis = 10_000
    /// Readings and events also to stdout as JSON lines as they are committed (`run --emit jsonl`).
    public var emit = false
    /// The binary's version (an OPC UA server's BuildInfo).
    public var version = "0"

    public init(configPath: String) { self.configPath = configPath }
}

/// What a run did, for `vlogger run`'s closing lines.
public struct GatewaySummary: Sendable {
    public var readers: [(id: String, counters: AgentCounters)]
    public var store: StoreWriter.Stats
    public var storePath: String
    /// False when the last records could not be committed at shutdown (they are counted in `store.queued`).
    public var committedAll: Bool
    /// The store's files were removed or replaced during the run: the run must not report success.
    public var problem: String?
}

/// The gateway service: one `ServiceGroup` that runs a polling job per reader (each on a thread of its
/// own, since reader I/O blocks), the store writer, the HTTP listener, SIGHUP reload and sd_notify.
/// Later jobs (audits, sync) are more services in the same group.
///
/// Start-up opens the store and every reader before anything runs, so a bad device or store fails the
/// command at once. SIGTERM or SIGINT shut the services down in reverse order of start: polling stops
/// after the current cycle of each reader, then the listener, then the writer commits what is left.
public final class Gateway: @unchecked Sendable {
    public let options: GatewayOptions
    public let config: AgentConfig
    public let store: Store
    public let writer: StoreWriter
    public let jobs: [PollingJob]
    public let metrics: ServiceMetrics
    /// The outputs this configuration enables, each a consumer of the store's outbox run by an `OutputJob`.
    public let outputs: [Output]
    /// Signalled after each commit of the store writer: the outputs' jobs wait for it between rounds.
    let outputWakeup = Wakeup()
    /// Signalled when the write API queued a write: the write queue's copy is refreshed at once.
    let writeQueued = Wakeup()
    /// Runs the outputs' jobs; a reload swaps the outputs that changed.
    let outputsJob: OutputsJob
    /// The servers others connect to ([opcua]): each a service of the group, reading the field state.
    let servers: [any OutputServer]
    /// The store's queued writes, as the polling jobs see them (refreshed every 2 s).
    public let pendingWrites = PendingWrites()
    /// The run's time for the jobs that are not a reader's (the audit scheduler): the wall clock, or the
    /// shared scaled clock of `--clock-rate`.
    let clock: any AgentClock & Sendable
    let logger: Logger
    private let lock = NSLock()
    private var committedAll = true
    /// One `vlogger run` per store (released when the run ends).
    private let runLock: StoreRunLock
    /// The running group, so that a job that cannot go on (the store writer) can stop the service.
    let group = NIOLockedValueBox<ServiceGroup?>(nil)
    /// The write API's token, replaced on SIGHUP.
    let apiToken = APIToken(nil)
    /// The read API's token (`[service] read-token-file`), replaced on SIGHUP.
    let readToken = APIToken(nil)
    /// Requests the write API refused (wrong or missing token), counted and logged at most once a minute.
    let refusals = RefusalLog()
    /// Live stream clients dropped for reading too slowly, logged at most once a minute.
    let slowStreamClients = RefusalLog()
    /// Whether the listener may serve the write API at all (a loopback address).
    private var apiTokenAllowed = false
    /// The audit settings and schedules in force, and how often they were replaced (SIGHUP): the audit
    /// scheduler plans again when the count moves.
    let audits: NIOLockedValueBox<(settings: AuditSettings, version: Int)>
    /// What the pages are made with: the configuration's names, units, limits and time zone, and the templates.
    let pages: NIOLockedValueBox<(PageContext, PageTemplates)>

    public init(options: GatewayOptions, logger: Logger) throws(VLoggerError) {
        self.options = options
        self.logger = logger
        let config: AgentConfig, rules: RuleSet, register: AssetRegister?
        do { (config, rules, register) = try options.overrides.load(options.configPath) } catch let e as VLoggerError {
            throw e
        } catch { throw VLoggerError("\(error)") }
        self.config = config
        audits = NIOLockedValueBox((config.audit, 0))
        pages = NIOLockedValueBox(
            (PageContext(config: config, rules: rules), try PageTemplates(folder: config.templatesFolder)))
        for w in config.warnings + config.secretFileProblems().warnings { logger.warning("\(w)") }
        do {
            // The lock first: a second run must not check or migrate the store the first one is using.
            runLock = try StoreRunLock(storePath: config.storePath)
            store = try Store(path: config.storePath)
            try store.registerFields(config.fieldInfos)
        } catch { throw VLoggerError("\(error)") }
        Self.importRegister(config, into: store, logger: logger)
        let serviceMetrics = ServiceMetrics(
            readers: config.readers, intervalMs: { config.specialized(for: $0).intervalMs }, units: config.fieldUnits)
        metrics = serviceMetrics
        serviceMetrics.describe(
            gateway: config.gatewayID, site: config.site, limits: ServiceMetrics.limits(rules, units: config.fieldUnits)
        )
        do {
            outputs = try Self.outputs(
                config, store: store, logger: logger, readerUp: { serviceMetrics.readersUp() })
        } catch {
            throw VLoggerError("\(error)")
        }
        let readerAccess = ReaderAccess(store: store, queued: writeQueued)
        let ackWriter = NIOLockedValueBox<StoreWriter?>(nil)
        do {
            var serverContext = OutputContext(
                gatewayID: config.gatewayID, site: config.site,
                readers: config.readers.map { OutputReader(id: $0.id, location: $0.location) },
                fields: config.fieldInfos, store: store, logger: logger, readerUp: { serviceMetrics.readersUp() },
                fieldState: serviceMetrics.field)
            serverContext.version = options.version
            serverContext.fieldAccess = readerAccess
            serverContext.alarmRules = rules.rules.map { r in
                let w = r.check.watchedField
                return AlarmRule(name: r.name, severity: r.severity, field: w?.name, low: w?.min, high: w?.max)
            }
            // An acknowledgement is an event of the store (with the client as origin) and marks the field state's
            // alarm; the store's writer is made below, before any server starts.
            let gateway = config.gatewayID
            serverContext.acknowledgeAlarm = { [ackWriter] ack in
                guard let writer = ackWriter.withLockedValue({ $0 }) else { return false }
                // The violation going on now, if it is the one acknowledged (else it ended: only the store hears).
                let alarm = serviceMetrics.field.alarms.first {
                    $0.rule == ack.rule && $0.uid == ack.uid && $0.since == ack.since
                }
                let e = Event(
                    time: ack.time, gateway: gateway, reader: alarm?.reader, location: alarm?.location, uid: ack.uid,
                    kind: .acknowledged, name: ack.rule, severity: .info, detail: ack.comment, origin: ack.origin)
                // Committed before the client is answered: an acknowledgement answered Good is never lost to a
                // crash within the flush interval.
                var batch = Batch()
                batch.events = [e]
                do { try writer.commit(batch) } catch { return false }
                if let alarm { serviceMetrics.eventRecorded(e, asset: alarm.asset) }
                return true
            }
            servers = try config.outputs.servers.map { try $0.makeServer(serverContext) }
            for server in servers { serviceMetrics.enableServer(name: server.name) { server.status() } }
        } catch {
            throw VLoggerError("\(error)")
        }
        writer = StoreWriter(
            store: store, gateway: config.gatewayID, batchSize: config.batchSize,
            flushIntervalMs: config.flushIntervalMs, queueLimit: config.queueLimit)
        ackWriter.withLockedValue { [writer] in $0 = writer }
        outputsJob = OutputsJob(
            outputs: outputs, store: store, metrics: metrics, logger: logger, wakeup: outputWakeup)
        var jobs: [PollingJob] = []
        var shared: ScaledClock?
        if let rate = options.clockRate {
            if let real = config.readers.first(where: { !$0.driver.driver.capabilities.contains(.drivenClock) }) {
                throw VLoggerError(
                    "--clock-rate is for simulated readers; reader \(real.id) uses the \(real.driver) driver, whose tags live in real time"
                )
            }
            shared = ScaledClock(start: options.clockStart ?? Millis.now(), rate: rate)
        }
        clock = shared ?? SystemClock()
        for rc in config.readers {
            let session: ReaderSession
            do {
                let (s, notYet) = try ReaderSession.openOrRetry(rc)
                session = s
                if let notYet {
                    logger.warning(
                        "reader \(rc.id) is not available yet (\(notYet)); the service starts and polling opens it as soon as it can, with back-off"
                    )
                }
            } catch {
                throw VLoggerError(config.readers.count == 1 ? "\(error)" : "reader \(rc.id): \(error)")
            }
            let clock: AgentClock = shared ?? (options.fastClock ? SimulatedClock() as AgentClock : SystemClock())
            let agent = Agent(
                config: config, reader: rc, rules: rules, register: register, session: session, writer: writer,
                clock: clock, logger: logger)
            agent.writeQueue = pendingWrites
            jobs.append(
                PollingJob(agent: agent, cycles: options.cycles, durationMs: options.durationMs, metrics: metrics))
        }
        self.jobs = jobs
        readerAccess.attach(jobs)
        do {
            try store.expireWrites()
            try pendingWrites.refresh(from: store)
        } catch { throw VLoggerError("\(error)") }
        let (writer, metrics) = (self.writer, self.metrics)
        let pending = pendingWrites
        metrics.writesQueued = { pending.count }
        metrics.writerStats = { writer.stats }
        // Drops at the queue limit (the store cannot commit and the queue is full): counted at once, and said at most
        // once a minute with how many so far.
        let dropLog = NIOLockedValueBox<(at: Millis, readings: Int)>((0, 0))
        writer.onDrop = { readings, events in
            metrics.storeUpdated(writer.stats)
            let now = Millis.now()
            let say: Int? = dropLog.withLockedValue { last in
                guard now - last.at >= 60_000 else { return nil }
                defer { last = (now, readings) }
                return readings - last.readings
            }
            if let say {
                logger.error(
                    "store: the queue is at its limit and the store cannot commit: \(say) readings dropped since the last line (\(readings) readings and \(events) events in all); said at most once a minute"
                )
            }
        }
        let wakeup = outputWakeup
        writer.onCommit = { r, e, last, seconds in
            wakeup.signal()
            logger.debug(
                "committed \(r) readings, \(e) events through reading id \(last) in \(String(format: "%.1f", seconds * 1000)) ms"
            )
            metrics.storeUpdated(writer.stats, commitSeconds: seconds)
        }
        let group = self.group
        writer.onFatal = { error in
            logger.critical("store: \(error)")
            Task { await group.withLockedValue { $0 }?.triggerGracefulShutdown() }
        }
        writer.onStateChange = { error, queued in
            if let error {
                logger.warning(
                    "store commit failed; \(queued) records kept and retried with back-off, polling goes on: \(error)")
            } else {
                logger.notice("store commits again; \(queued) records still queued")
            }
            metrics.storeUpdated(writer.stats)
        }
    }

    /// Runs the service group until a signal, or until every polling job has done its cycles or duration.
    public func run() async throws -> GatewaySummary {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        // Shut down in reverse order: the writer after the polling jobs, so it commits what they made; the outputs
        // after the writer, so their last round sends what it committed last.
        if options.emit {
            // First in the list: it stops last, after the writer's last commit, and prints that too.
            let start = ((try? store.newestID(.readings)) ?? 0, (try? store.newestID(.events)) ?? 0)
            services.append(
                .init(
                    service: EmitJob(store: store, gateway: config.gatewayID, wakeup: outputWakeup, start: start),
                    serviceName: "emit"))
        }
        services.append(.init(service: outputsJob, serviceName: "outputs"))
        for server in servers { services.append(.init(service: ServerJob(server: server), serviceName: server.name)) }
        services.append(
            .init(
                service: WriterJob(
                    writer: writer, finalCommitTimeoutMs: options.finalCommitTimeoutMs, logger: logger,
                    finished: { [self] ok in lock.withLock { committedAll = ok } }),
                serviceName: "store writer"))
        if let listen = config.listen {
            let address = try ListenAddress(parsing: listen)
            apiTokenAllowed = address.isLoopback
            let listener = HTTPListener(
                config: config, store: store, metrics: metrics, apiToken: apiToken, readToken: readToken,
                refusals: refusals, slowStreamClients: slowStreamClients, wakeup: outputWakeup,
                writeQueued: writeQueued, logger: logger,
                bound: { [self] in listenerUp($0) },
                pages: pages, now: { [clock] in clock.now() })
            services.append(.init(service: try listener.make(address), serviceName: "HTTP listener"))
            services.append(
                .init(
                    service: RefusalLogJob(
                        logs: [(refusals, RefusalLog.line), (slowStreamClients, StreamClients.line)], logger: logger),
                    serviceName: "refusal log"))
        } else {
            // The demo configuration has no listener: said, so that nobody waits for pages that are not served.
            logger.notice(
                "no HTTP listener: /healthz, /metrics, the pages and the API are not served ([service] listen is not set; --listen 127.0.0.1:9715 or listen = \"127.0.0.1:9715\" serves them)"
            )
        }
        for j in jobs {
            services.append(.init(service: j, serviceName: "polling \(j.agent.readerConfig.id)"))
        }
        services.append(
            .init(
                service: WriteQueueJob(store: store, pending: pendingWrites, queued: writeQueued),
                serviceName: "write queue"))
        if let keep = config.keepMs {
            services.append(
                .init(
                    service: RetentionJob(
                        store: store, logger: logger, keepMs: keep, keepFor: { [outputsJob] in outputsJob.names },
                        safetyWindows: { [outputsJob] in outputsJob.safetyWindows }),
                    serviceName: "retention"))
        }
        // Always there: a SIGHUP may bring schedules to a configuration that had none.
        services.append(
            .init(
                service: AuditJob(
                    store: store, clock: clock, jobs: jobs, gatewayID: config.gatewayID, audits: audits, logger: logger),
                serviceName: "audit scheduler"))
        let group = self.group
        services.append(
            .init(
                service: SignalJob(
                    logger: logger, reload: { [self] in reload() },
                    shutdown: { await group.withLockedValue { $0 }?.triggerGracefulShutdown() }),
                serviceName: "signals"))
        services.append(
            .init(
                service: NotifyJob(
                    waitsForListener: config.listen != nil, logger: logger, ready: { [self] in notifyReady() },
                    polledWithin: { [self] in allPolledWithin(ms: $0) }),
                serviceName: "sd_notify"))
        services.append(
            .init(
                service: BoundJob(jobs: jobs), successTerminationBehavior: .gracefullyShutdownGroup,
                serviceName: "run bound"))
        // The group's own messages (each service starting and stopping) only from warnings up.
        var groupLogger = logger
        groupLogger.logLevel = max(logger.logLevel, .warning)
        let serviceGroup = ServiceGroup(configuration: .init(services: services, logger: groupLogger))
        group.withLockedValue { $0 = serviceGroup }
        defer { runLock.release() }
        try await serviceGroup.run()
        store.close()
        var problem: String?
        if let lost = store.identityError {
            // Found by a batch (the writer stopped the service) or, with no batch after it (an idle gateway), at close.
            if committedAll { logger.critical("store: \(lost)") }
            problem = lost.message
        }
        if let note = store.closeProblem { logger.warning("\(note)") }
        return GatewaySummary(
            readers: jobs.map { ($0.agent.readerConfig.id, $0.agent.counters) }, store: writer.stats,
            storePath: config.storePath, committedAll: lock.withLock { committedAll }, problem: problem)
    }

    /// `[rules] register` into the store's asset register (at start and on SIGHUP), when it has an
    /// `asset_id` column; a register kept only for rules (uid and other columns) is left to the rules.
    static func importRegister(_ config: AgentConfig, into store: Store, logger: Logger) {
        guard let file = config.registerFile else { return }
        do {
            if let r = try AssetRegister.importConfigured(config, into: store) {
                logger.notice(
                    "asset register \(file): \(r.addedTotal) added, \(r.changedTotal) changed, \(r.unchanged) unchanged"
                )
            } else {
                logger.info(
                    "register \(file) has no asset_id column: used by the rules only, not imported as the asset register"
                )
            }
        } catch {
            logger.error("asset register \(file) not imported: \(error)")
        }
    }

    /// SIGHUP: loads the configuration, rules and register again; each polling job swaps them in before
    /// its next cycle. A file with an error is logged and the running configuration stays.
    func reload() {
        let path = options.configPath
        logger.notice("signal SIGHUP: reloading the configuration before the next cycle")
        do {
            let (fresh, rules, register) = try options.overrides.load(path)
            let freshPages = (
                PageContext(config: fresh, rules: rules), try PageTemplates(folder: fresh.templatesFolder)
            )
            // A token file that cannot be read fails the whole reload, before anything is swapped in; so do outputs
            // that cannot be made (a password file gone).
            let newToken =
                config.listen != nil && apiTokenAllowed ? try HTTPListener.apiToken(fresh.apiTokenFile) : nil
            let newReadToken =
                config.listen != nil ? try HTTPListener.apiToken(fresh.readTokenFile, key: "read-token-file") : nil
            let metrics = self.metrics
            let freshOutputs = try Self.outputs(
                fresh, store: store, logger: logger, readerUp: { metrics.readersUp() })
            writer.register(fields: fresh.fieldInfos)
            Self.importRegister(fresh, into: store, logger: logger)
            for j in jobs { j.reload(fresh, rules, register) }
            metrics.field.setUnits(fresh.fieldUnits)
            metrics.describe(
                gateway: fresh.gatewayID, site: fresh.site,
                limits: ServiceMetrics.limits(rules, units: fresh.fieldUnits))
            pages.withLockedValue { $0 = freshPages }
            let schedulesChanged = audits.withLockedValue { a -> Bool in
                guard a.settings != fresh.audit else { return false }
                a = (fresh.audit, a.version + 1)
                return true
            }
            var tokenNote = ""
            if config.listen != nil && apiTokenAllowed {
                let was = apiToken.isSet
                apiToken.replace(newToken)
                tokenNote =
                    fresh.apiTokenFile.map { "; write API token read again from \($0)" }
                    ?? (was ? "; write API off (no api-token-file)" : "")
            }
            if config.listen != nil {
                let was = readToken.isSet
                readToken.replace(newReadToken)
                tokenNote +=
                    fresh.readTokenFile.map { "; read API token read again from \($0)" }
                    ?? (was ? "; read API token removed (no read-token-file)" : "")
            }
            let outputsNote = outputsJob.apply(freshOutputs)
            metrics.reloaded(ok: true)
            let known = Set(config.readers.map(\.id)), now = Set(fresh.readers.map(\.id))
            var later = "reader drivers and devices, the store and the listener apply at the next start"
            if known != now {
                later +=
                    "; readers added or removed (\(now.symmetricDifference(known).sorted().joined(separator: ", "))) too"
            }
            let schedules =
                "\(fresh.audit.schedules.count) audit schedule\(fresh.audit.schedules.count == 1 ? "" : "s")\(schedulesChanged ? " (changed: planned again)" : "")"
            logger.notice(
                "SIGHUP: reloaded \(path): \(fresh.plans.count) plans, \(rules.rules.count) rules\(register.map { ", \($0.count) register entries" } ?? ""), \(schedules)\(tokenNote); \(outputsNote) (\(later))"
            )
        } catch {
            metrics.reloaded(ok: false)
            logger.error("SIGHUP: reload failed, the running configuration stays: \(error)")
        }
    }

    /// The listener was bound: say where, and tell systemd the service is ready.
    func listenerUp(_ address: ListenAddress) {
        logger.notice("serving /healthz, /metrics and the status page on http://\(address)/")
        notifyReady()
    }

    func notifyReady() {
        let readers =
            jobs.count == 1
            ? jobs[0].agent.session.reader.name
            : "\(jobs.count) readers: "
                + jobs.map { "\($0.agent.readerConfig.id) (\($0.agent.session.reader.name))" }.joined(separator: ", ")
        SystemdNotify.send("READY=1\nSTATUS=polling with \(readers)")
    }

    /// Whether every polling job finished a cycle within `ms` (for the systemd watchdog).
    func allPolledWithin(ms: Millis) -> Bool {
        let now = PollingJob.monotonicMs()
        return jobs.allSatisfy { now - $0.lastProgressMs <= ms }
    }

}
