import Dispatch
import Foundation
import VLoggerStore
import VLoggerModel
import Hummingbird
import HummingbirdCore
import ISO15693
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
import UnixSignals
import VLoggerCore
import VLoggerSync
import VLoggerMQTT
import VLoggerWebhook

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
    /// Runs the outputs' jobs; a reload swaps the outputs that changed.
    let outputsJob: OutputsJob
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
    /// Whether the listener may serve the write API at all (a loopback address).
    private var apiTokenAllowed = false
    /// The audit settings and schedules in force, and how often they were replaced (SIGHUP): the audit
    /// scheduler plans again when the count moves.
    let audits: NIOLockedValueBox<(settings: AuditSettings, version: Int)>

    public init(options: GatewayOptions, logger: Logger) throws(VLoggerError) {
        self.options = options
        self.logger = logger
        let config: AgentConfig, rules: RuleSet, register: AssetRegister?
        do { (config, rules, register) = try options.overrides.load(options.configPath) } catch let e as VLoggerError {
            throw e
        } catch { throw VLoggerError("\(error)") }
        self.config = config
        audits = NIOLockedValueBox((config.audit, 0))
        for w in config.warnings + config.secretFileProblems().warnings { logger.warning("\(w)") }
        do {
            // The lock first: a second run must not check or migrate the store the first one is using.
            runLock = try StoreRunLock(storePath: config.storePath)
            store = try Store(path: config.storePath)
            try store.registerFields(config.fieldInfos)
        } catch { throw VLoggerError("\(error)") }
        Self.importRegister(config, into: store, logger: logger)
        let serviceMetrics = ServiceMetrics(
            readers: config.readers, intervalMs: { config.specialized(for: $0).intervalMs })
        metrics = serviceMetrics
        do {
            outputs = try Self.outputs(
                config, store: store, logger: logger, readerUp: { serviceMetrics.readersUp() })
        } catch {
            throw VLoggerError("\(error)")
        }
        writer = StoreWriter(
            store: store, gateway: config.gatewayID, batchSize: config.batchSize,
            flushIntervalMs: config.flushIntervalMs, queueLimit: config.queueLimit)
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
        do {
            try store.expireWrites()
            try pendingWrites.refresh(from: store)
        } catch { throw VLoggerError("\(error)") }
        let (writer, metrics) = (self.writer, self.metrics)
        let pending = pendingWrites
        metrics.writesQueued = { pending.count }
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
        services.append(.init(service: WriterJob(gateway: self), serviceName: "store writer"))
        if let listen = config.listen {
            services.append(
                .init(service: try makeListener(try ListenAddress(parsing: listen)), serviceName: "HTTP listener"))
            services.append(
                .init(service: RefusalLogJob(refusals: refusals, logger: logger), serviceName: "refusal log"))
        }
        for j in jobs {
            services.append(.init(service: j, serviceName: "polling \(j.agent.readerConfig.id)"))
        }
        services.append(.init(service: WriteQueueJob(gateway: self), serviceName: "write queue"))
        if let keep = config.keepMs {
            services.append(
                .init(
                    service: RetentionJob(
                        store: store, logger: logger, keepMs: keep, keepFor: { [outputsJob] in outputsJob.names }),
                    serviceName: "retention"))
        }
        // Always there: a SIGHUP may bring schedules to a configuration that had none.
        services.append(.init(service: AuditJob(gateway: self), serviceName: "audit scheduler"))
        let signals = SignalJob(gateway: self)
        services.append(.init(service: signals, serviceName: "signals"))
        services.append(
            .init(service: NotifyJob(gateway: self, waitsForListener: config.listen != nil), serviceName: "sd_notify"))
        services.append(
            .init(
                service: BoundJob(jobs: jobs), successTerminationBehavior: .gracefullyShutdownGroup,
                serviceName: "run bound"))
        // The group's own messages (each service starting and stopping) only from warnings up.
        var groupLogger = logger
        groupLogger.logLevel = max(logger.logLevel, .warning)
        let group = ServiceGroup(configuration: .init(services: services, logger: groupLogger))
        self.group.withLockedValue { $0 = group }
        defer { runLock.release() }
        try await group.run()
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

    func writerFinished(_ ok: Bool) { lock.withLock { committedAll = ok } }

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
            // A token file that cannot be read fails the whole reload, before anything is swapped in; so do outputs
            // that cannot be made (a password file gone).
            let newToken = config.listen != nil && apiTokenAllowed ? try Self.apiToken(fresh.apiTokenFile) : nil
            let newReadToken =
                config.listen != nil ? try Self.apiToken(fresh.readTokenFile, key: "read-token-file") : nil
            let metrics = self.metrics
            let freshOutputs = try Self.outputs(
                fresh, store: store, logger: logger, readerUp: { metrics.readersUp() })
            writer.register(fields: fresh.fieldInfos)
            Self.importRegister(fresh, into: store, logger: logger)
            for j in jobs { j.reload(fresh, rules, register) }
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

    // MARK: HTTP

    /// An API token (the write API's `api-token-file`, the read API's `read-token-file`): the first line of the
    /// file, at least 16 characters; nil without a file.
    static func apiToken(_ file: String?, key: String = "api-token-file") throws -> String? {
        guard let file else { return nil }
        let text: String
        do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
            throw VLoggerError("[service] \(key) \(file): cannot read it (\(error.localizedDescription))")
        }
        let token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard token.count >= 16 else {
            throw VLoggerError("[service] \(key) \(file): the token must be at least 16 characters")
        }
        return token
    }

    private func makeListener(_ address: ListenAddress) throws -> some Service {
        if !address.isLoopback {
            logger.warning(
                "the listener is bound to \(address), which is not a loopback address: /metrics and the status page are readable from the network; put a firewall or an authenticating reverse proxy in front of it"
            )
        }
        let router = Router()
        // The bearer token would cross the network in clear: the write API is served on loopback only (a TLS
        // reverse proxy on the same machine can put it on the network).
        apiTokenAllowed = address.isLoopback
        if config.apiTokenFile != nil && !address.isLoopback {
            logger.error(
                "the write API is off: the listener \(address) is not a loopback address and vlogger does not serve TLS, so its bearer token would cross the network in clear. Listen on 127.0.0.1 and put a TLS reverse proxy in front, or remove api-token-file"
            )
        }
        apiToken.replace(apiTokenAllowed ? try Self.apiToken(config.apiTokenFile) : nil)
        readToken.replace(try Self.apiToken(config.readTokenFile, key: "read-token-file"))
        if !address.isLoopback && config.readTokenFile != nil {
            logger.warning(
                "the read API on \(address) takes its bearer token over plain HTTP (vlogger serves no TLS): anyone on the path can read the token; put a TLS reverse proxy in front"
            )
        }
        router.add(
            middleware: HostAllowListMiddleware(allowed: HostAllowList(address: address, extra: config.allowedHosts)))
        router.add(middleware: ReadOnlyMiddleware(token: apiToken, writablePaths: ["/api/writes", "/api/v1/writes"]))
        let (metrics, store, config) = (self.metrics, self.store, self.config)
        let unit = config.fieldInfos.first { $0.name == config.chartField }?.unit
        let health: @Sendable (Request, BasicRequestContext) async -> Response = { _, _ in
            let (ok, json) = metrics.health()
            return .text(json + "\n", status: ok ? .ok : .serviceUnavailable, type: "application/json")
        }
        let prometheus: @Sendable (Request, BasicRequestContext) async -> Response = { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.prometheusText())))
        }
        let page: @Sendable (Request, BasicRequestContext) async -> Response = { _, _ in
            // The store is read on a worker thread, never on the event loop.
            let html = await Blocking.run {
                StatusPage.render(
                    metrics: metrics, store: store, gateway: config.gatewayID, chartField: config.chartField, unit: unit
                )
            }
            return .text(html, type: "text/html; charset=utf-8")
        }
        let audit: @Sendable (Request, BasicRequestContext) async -> Response = { _, context in
            guard let id = context.parameters.get("id", as: Int64.self) else {
                return .text("not an audit id\n", status: .badRequest)
            }
            let html = await Blocking.run { () -> String? in
                guard let a = try? store.audit(id) else { return nil }
                return AuditReport.html(a, history: (try? store.audits(location: a.location, limit: 30)) ?? [])
            }
            return html.map { .text($0, type: "text/html; charset=utf-8") }
                ?? .text("no audit \(id)\n", status: .notFound)
        }
        for (path, handler) in [
            ("/healthz", health), ("/metrics", prometheus), ("/", page), ("/index.html", page), ("/audits/:id", audit),
        ] {
            router.get(RouterPath(path), use: handler)
            // HEAD: the same status and headers, no body.
            router.head(RouterPath(path)) { request, context -> Response in
                let r = await handler(request, context)
                return Response(status: r.status, headers: r.headers, body: .init())
            }
        }
        // The routes are always there; without a token (no api-token-file, or removed by a reload) the
        // middleware answers 404 before them.
        let access = ReadAccess(loopback: address.isLoopback, token: readToken)
        StreamAPI.add(to: router, store: store, gateway: config.gatewayID, wakeup: outputWakeup, access: access)
        ReadAPI.add(to: router, store: store, metrics: metrics, gateway: config.gatewayID, access: access)
        WriteAPI.add(
            to: router, token: apiToken, readers: Set(config.readers.map(\.id)), store: store, logger: logger,
            refusals: refusals)
        var http = HTTP1Channel.Configuration(idleTimeout: .seconds(30))
        http.httpDecoder.maxHeaderFieldCount = 100
        let app = Application(
            router: router, server: .http1(configuration: http),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "vlogger"),
            onServerRunning: { [self] channel in
                listenerUp(ListenAddress(host: address.host, port: channel.localAddress?.port ?? address.port))
            },
            logger: logger)
        return ListenerService(app: app, address: address)
    }
}

/// The Hummingbird application, with a failure to bind said in the project's words.
struct ListenerService<App: Service>: Service {
    let app: App
    let address: ListenAddress

    func run() async throws {
        do { try await app.run() } catch {
            throw VLoggerError(
                "cannot serve HTTP on \(address): \(error); is another process listening there (ss -ltnp), or is the address not this machine's? Change [service] listen or --listen"
            )
        }
    }
}

/// The `Host` names the listener answers (RFC 9110 §7.2): IP literals, `localhost`, this machine's own name and
/// the configuration's `allowed-hosts`. A page on another site whose name an attacker points at 127.0.0.1 (DNS
/// rebinding) sends its own name as Host and is answered 421 Misdirected Request (RFC 9110 §15.5.20).
struct HostAllowList: Sendable {
    let names: Set<String>
    let any: Bool

    init(address: ListenAddress, extra: [String]) {
        var n: Set<String> = ["localhost", address.host.lowercased()]
        var buf = [CChar](repeating: 0, count: 256)
        if gethostname(&buf, buf.count) == 0 {
            let me = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
            n.insert(me)
            if let short = me.split(separator: ".").first { n.insert(String(short)) }
            // The fully qualified name, as the resolver gives it (a scrape by FQDN where gethostname is short).
            var hints = addrinfo()
            hints.ai_flags = AI_CANONNAME
            var list: UnsafeMutablePointer<addrinfo>?
            if getaddrinfo(me, nil, &hints, &list) == 0, let first = list {
                if let c = first.pointee.ai_canonname { n.insert(String(cString: c).lowercased()) }
                freeaddrinfo(first)
            }
        }
        n.formUnion(extra.map { $0.hasSuffix(".") ? String($0.dropLast()) : $0 })
        names = n
        any = extra.contains("*")
    }

    /// Whether a Host header value (`name[:port]`, `[v6]:port`) is one of ours; a request without one is
    /// answered (HTTP/1.0 clients send none, and a browser always does).
    func allows(_ host: String?) -> Bool {
        guard let host, !any else { return true }
        var name = host.lowercased()
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            return ListenAddress.ipv6(String(name[name.index(after: name.startIndex)..<close])) != nil
        }
        if let colon = name.lastIndex(of: ":") { name = String(name[..<colon]) }
        if name.hasSuffix(".") { name.removeLast() }
        return ListenAddress.ipv4(name) != nil || names.contains(name)
    }
}

struct HostAllowListMiddleware<Context: RequestContext>: RouterMiddleware {
    let allowed: HostAllowList

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let host = request.head.authority ?? request.headers.first(where: { $0.name.canonicalName == "host" })?.value
        guard allowed.allows(host) else {
            return Response(
                status: .misdirectedRequest, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        string: "this gateway does not answer to that host name; add it to [service] allowed-hosts\n")))
        }
        return try await next(request, context)
    }
}

/// GET and HEAD only, but for POST to the write API when it is configured; the write API's paths answer 404
/// while there is no token (none configured, or removed by a reload).
struct ReadOnlyMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: APIToken
    let writablePaths: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let apiOn = token.isSet
        // The write API's paths: the old ones under /api/ and POST /api/v1/writes (the read API under /api/v1/ is
        // not gated by the write token).
        let writeAPI =
            (request.uri.path.hasPrefix("/api/") && !request.uri.path.hasPrefix("/api/v1/"))
            || (request.method == .post && request.uri.path == "/api/v1/writes")
        if !apiOn && writeAPI {
            return Response(
                status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "no write API: set [service] api-token-file to enable it\n"))
            )
        }
        guard
            request.method == .get || request.method == .head
                || (request.method == .post && writablePaths.contains(request.uri.path))
        else {
            if writeAPI && !apiOn {
                return Response(
                    status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                    body: .init(
                        byteBuffer: ByteBuffer(string: "no write API: set [service] api-token-file to enable it\n")))
            }
            // Allow lists what the path takes (RFC 9110 §10.2.1): POST too where the write API is.
            let post = writablePaths.contains(request.uri.path)
            return Response(
                status: .methodNotAllowed,
                headers: [.allow: post ? "GET, HEAD, POST" : "GET, HEAD", .contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: post ? "GET, HEAD or POST\n" : "read-only: GET or HEAD\n")))
        }
        let response = try await next(request, context)
        return response
    }
}

extension Response {
    static func text(_ s: String, status: HTTPResponse.Status = .ok, type: String = "text/plain; charset=utf-8")
        -> Response
    {
        Response(status: status, headers: [.contentType: type], body: .init(byteBuffer: ByteBuffer(string: s)))
    }
}

/// A value handed to another thread whose owner guarantees one user at a time (a reader session between
/// two cycles of its polling job).
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Blocking work (SQLite, reader I/O) off the concurrency pool's threads.
enum Blocking {
    static let queue = DispatchQueue(label: "vlogger.blocking", attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in queue.async { c.resume(returning: body()) } }
    }

    /// On a thread of its own, for work that lasts the whole run (a polling loop).
    static func thread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in
            let t = Thread { c.resume(returning: body()) }
            t.name = name
            t.start()
        }
    }
}

// MARK: The jobs

/// One reader's polling job: the agent's loop on a thread of its own; graceful shutdown (or
/// cancellation) stops it after the current cycle.
public final class PollingJob: Service, @unchecked Sendable {
    public let agent: Agent
    let cycles: Int?
    let durationMs: Millis?
    private let stop = StopSignal()
    private let lock = NSLock()
    private var pending: (AgentConfig, RuleSet, AssetRegister?)?
    private var progressMs = PollingJob.monotonicMs()
    /// Work that needs this reader (an audit's round), run on the polling thread between two cycles.
    private var work: [() -> Void] = []
    /// When this reader last saw each tag, in the run's time (for audits: not yet in the store, perhaps).
    private var sightings: [UID: Millis] = [:]
    private var prunedMs: Millis = 0
    private var polling = true
    let finished = AsyncStream<Void>.makeStream()

    static func monotonicMs() -> Millis { Millis(DispatchTime.now().uptimeNanoseconds / 1_000_000) }

    init(agent: Agent, cycles: Int?, durationMs: Millis?, metrics: ServiceMetrics) {
        self.agent = agent
        self.cycles = cycles
        self.durationMs = durationMs
        let window = agent.config.audit.elsewhereWindowMs
        agent.onCycle = { [unowned self] report in
            metrics.cycleDone(self.agent, report)
            let now = self.agent.clock.now()
            lock.withLock {
                progressMs = PollingJob.monotonicMs()
                for uid in report.tags { sightings[uid] = now }
                // Only what an audit can still use (the elsewhere window): the map stays small over months.
                if now - prunedMs > 60_000 {
                    sightings = sightings.filter { now - $0.value <= window }
                    prunedMs = now
                }
            }
        }
        // The plant's values and alarm state for /metrics (docs/operating.md).
        let units = Dictionary(
            agent.config.fieldInfos.map { ($0.name, $0.unit ?? "") }, uniquingKeysWith: { a, _ in a })
        agent.onReading = { [unowned self] r in
            metrics.readingTaken(r, asset: self.agent.register?.rows[r.uid.description]?["asset_id"], units: units)
        }
        agent.onEvent = { [unowned self] e in
            metrics.eventRecorded(e, asset: e.uid.flatMap { self.agent.register?.rows[$0.description]?["asset_id"] })
        }
        agent.duringWait = { [unowned self] in runQueuedWork() }
        agent.betweenCycles = { [unowned self] in
            runQueuedWork()
            guard
                let (c, r, reg) = lock.withLock({ () -> (AgentConfig, RuleSet, AssetRegister?)? in
                    defer { pending = nil }
                    return pending
                })
            else { return }
            self.agent.reload(config: c, rules: r, register: reg)
        }
    }

    var lastProgressMs: Millis { lock.withLock { progressMs } }

    /// When this reader last saw each tag within the elsewhere window.
    var recentSightings: [UID: Millis] { lock.withLock { sightings } }

    private func runQueuedWork() {
        let items = lock.withLock { () -> [() -> Void] in
            defer { work = [] }
            return work
        }
        for item in items { item() }
    }

    /// Runs `body` with this reader's session between two of its cycles, at once when the job is waiting for
    /// its next cycle (the wait is nudged; regular polling waits only that long), or right away once polling
    /// has ended.
    func exclusive<T: Sendable>(_ body: @escaping @Sendable (ReaderSession) -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
            let session = UncheckedBox(agent.session)
            let queued = lock.withLock { () -> Bool in
                guard polling else { return false }
                work.append { c.resume(returning: body(session.value)) }
                return true
            }
            if queued { stop.nudge() } else { Blocking.queue.async { c.resume(returning: body(session.value)) } }
        }
    }

    /// Hands a reloaded configuration to the job; it is applied before the next cycle.
    func reload(_ c: AgentConfig, _ r: RuleSet, _ reg: AssetRegister?) { lock.withLock { pending = (c, r, reg) } }

    public func run() async {
        await withTaskCancellationOrGracefulShutdownHandler {
            await Blocking.thread("vlogger-poll-\(agent.readerConfig.id)") { [self] in
                agent.run(cycles: cycles, durationMs: durationMs, stop: stop)
                // Work queued after the last cycle runs here, on the same thread; later work runs at once.
                lock.withLock { polling = false }
                runQueuedWork()
            }
        } onCancelOrGracefulShutdown: { [stop] in
            stop.request()
        }
        // Done by itself (--cycles, --duration) or told to stop. The job returns only when the group shuts
        // it down, in its turn: a service that returns during another's shutdown is an error to the group.
        finished.continuation.yield()
        finished.continuation.finish()
        try? await gracefulShutdown()
    }
}

/// Starts the store writer's thread; at shutdown (it is the last service to stop) commits what is left.
struct WriterJob: Service {
    let gateway: Gateway

    func run() async {
        gateway.writer.start()
        try? await gracefulShutdown()
        let (writer, timeout) = (gateway.writer, gateway.options.finalCommitTimeoutMs)
        let ok = await Blocking.run { writer.finish(timeoutMs: timeout) }
        if !ok {
            gateway.logger.error(
                "the last \(writer.pendingCount) records could not be committed: \(writer.lastError?.description ?? "?")"
            )
        }
        gateway.writerFinished(ok)
    }
}

/// SIGHUP reloads the configuration; SIGTERM and SIGINT shut the group down gracefully (said in the log,
/// with the signal's name, before anything stops).
final class SignalJob: Service, @unchecked Sendable {
    let gateway: Gateway
    var group: NIOLockedValueBox<ServiceGroup?> { gateway.group }

    init(gateway: Gateway) { self.gateway = gateway }

    func run() async {
        for await signal in await UnixSignalsSequence(trapping: .sighup, .sigterm, .sigint).cancelOnGracefulShutdown() {
            if signal == .sighup {
                // Reading the files, planning schedules and importing the register block: off the async threads.
                let gateway = self.gateway
                await Blocking.run { gateway.reload() }
            } else {
                gateway.logger.notice(
                    "signal \(signal == .sigterm ? "SIGTERM" : "SIGINT"): stopping after the current cycle of each reader"
                )
                await group.withLockedValue { $0 }?.triggerGracefulShutdown()
            }
        }
    }
}

/// sd_notify: READY=1 once everything is up (after the listener is bound when there is one), WATCHDOG=1
/// while every polling job makes progress, STOPPING=1 when the shutdown begins.
struct NotifyJob: Service {
    let gateway: Gateway
    let waitsForListener: Bool

    func run() async {
        if !waitsForListener { gateway.notifyReady() }
        if let w = SystemdNotify.watchdogMs {
            // A reader in back-off cycles every 30 s at most: that counts as progress too.
            let window = max(w * 2 / 3, 35_000)
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(max(1, w / 3))) }
                if gateway.allPolledWithin(ms: window) { SystemdNotify.send("WATCHDOG=1") }
            }
        } else {
            try? await gracefulShutdown()
        }
        gateway.logger.notice("stopping: each reader finishes its cycle, then the last batch is committed")
        SystemdNotify.send("STOPPING=1")
    }
}

/// Returns when every polling job has done its cycles or duration (--cycles, --duration), which shuts the
/// group down.
struct BoundJob: Service {
    let jobs: [PollingJob]

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            for j in jobs {
                group.addTask { for await _ in j.finished.stream.cancelOnGracefulShutdown() {} }
            }
        }
    }
}

/// Runs the configured audit schedules: at start, once for a schedule that missed its time while the service
/// was down (not once per missed slot); then at each fire time. Each round borrows the location's readers
/// from their polling jobs between two cycles, so regular polling pauses only for the audit's own rounds.
struct AuditJob: Service {
    let gateway: Gateway

    /// The next fire time of each schedule after `ms`, worked out on a blocking thread (a schedule with
    /// windows may look through years of calendar days): never on the cooperative pool.
    static func plan(_ schedules: [AuditSchedule], afterMs ms: Millis) async -> [(AuditSchedule, Millis)] {
        await Blocking.run { schedules.compactMap { s in s.next(afterMs: ms).map { (s, $0) } } }
    }

    func run() async {
        let store = gateway.store, clock = gateway.clock
        var (settings, version) = gateway.audits.withLockedValue { $0 }
        for s in settings.schedules {
            let last = await Blocking.run { try? store.lastAuditStart(trigger: s.trigger) }
            let missed = await Blocking.run { s.missed(lastRun: last, now: clock.now()) }
            if missed {
                gateway.logger.notice(
                    "audit schedule '\(s.name)' (\(s)) missed its time while the service was down: running it once now")
                await runAudit(s, settings)
            }
        }
        var announce = true
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let due = await Self.plan(settings.schedules, afterMs: clock.now())
            if announce {
                for s in settings.schedules {
                    let next = due.first { $0.0.name == s.name }.map { TimeSpec.format($0.1) } ?? "never"
                    gateway.logger.info("audit schedule '\(s.name)' (\(s)): next \(next)")
                }
                announce = false
            }
            // Nothing to schedule (none configured, or none that fires): wait for a reload or the shutdown. A
            // service that returns would end the whole group.
            let soonest = due.map(\.1).min()
            switch await wait(untilMs: soonest, version: version) {
            case .shutdown:
                return
            case .reloaded:
                (settings, version) = gateway.audits.withLockedValue { $0 }
                announce = true
            case .reached:
                let t = clock.now()
                for (s, at) in due where at <= t { await runAudit(s, settings) }
            }
        }
    }

    enum Wake { case reached, reloaded, shutdown }

    /// Waits until the run's clock reaches `ms` (for ever when nil), the schedules are reloaded, or the
    /// shutdown begins. A reload is noticed within a second.
    func wait(untilMs ms: Millis?, version: Int) async -> Wake {
        let clock = gateway.clock
        while ms.map({ clock.now() < $0 }) ?? true {
            if gateway.audits.withLockedValue({ $0.version }) != version { return .reloaded }
            let real = ms.map { min(1000, clock.realMs(until: $0)) } ?? 1000
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(max(1, real))) } } catch
            { return .shutdown }
            if Task.isShuttingDownGracefully || Task.isCancelled { return .shutdown }
        }
        return .reached
    }

    /// Waits until the run's clock reaches `ms`; false when the shutdown began first.
    func wait(untilMs ms: Millis) async -> Bool {
        let clock = gateway.clock
        while clock.now() < ms {
            let real = clock.realMs(until: ms)
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(max(1, real))) } } catch
            { return false }
        }
        return true
    }

    func runAudit(_ schedule: AuditSchedule, _ settings: AuditSettings) async {
        let g = gateway
        let locations =
            schedule.location.map { [$0] }
            ?? Array(Set(g.jobs.map { Auditor.location(of: $0.agent.readerConfig) })).sorted()
        // Each location has its own readers: their audits run side by side, at the schedule's time.
        await withTaskGroup(of: Void.self) { group in
            for location in locations { group.addTask { await audit(location, for: schedule, settings) } }
        }
    }

    func audit(_ location: String, for schedule: AuditSchedule, _ settings: AuditSettings) async {
        let g = gateway, store = g.store
        let jobs = g.jobs.filter { Auditor.location(of: $0.agent.readerConfig) == location }
        guard !jobs.isEmpty else { return }
        let started = g.clock.now()
        guard let register = await Blocking.run({ try? store.assets() }) else {
            g.logger.error("audit '\(schedule.name)' of \(location): the register cannot be read")
            return
        }
        var lastSeen = await Blocking.run { (try? store.lastSeen(register.map(\.uid))) ?? [:] }
        // What the polling jobs saw and the store writer has not committed yet counts too.
        for other in g.jobs {
            let rc = other.agent.readerConfig
            for (uid, t) in other.recentSightings where t > (lastSeen[uid]?.time ?? Millis.min) {
                lastSeen[uid] = (t, rc.id, Auditor.location(of: rc))
            }
        }
        var seen: [UID: Auditor.Sighting] = [:]
        for round in 0..<max(1, settings.rounds) {
            if round > 0 {
                guard await wait(untilMs: g.clock.now() + settings.spacingMs) else {
                    g.logger.warning(
                        "audit '\(schedule.name)' of \(location) stopped by the shutdown after \(round) of \(settings.rounds) rounds; nothing stored"
                    )
                    return
                }
            }
            var counted = Set<UID>()
            for job in jobs {
                let clock = g.clock
                // Every tag answers the round's inventory: the polling job's quiet tags are woken first.
                let agent = UncheckedBox(job.agent)
                let (found, t) = await job.exclusive { _ in
                    ((try? agent.value.inventoryEveryTag())?.map(\.uid) ?? [], clock.now())
                }
                Auditor.merge(found, at: t, by: job.agent.readerConfig.id, round: &counted, into: &seen)
            }
        }
        var checks: [UID: [String]] = [:]
        for job in jobs {
            let mine = register.filter { $0.location == location && seen[$0.uid]?.reader == job.agent.readerConfig.id }
            guard !mine.isEmpty else { continue }
            let results = await job.exclusive { session in mine.map { ($0.uid, Auditor.checks($0, session)) } }
            for (uid, c) in results { checks[uid] = c }
        }
        let record = Auditor.result(
            location: location, readers: jobs.map(\.agent.readerConfig.id), register: register, seen: seen,
            checks: checks,
            lastSeen: lastSeen, started: started, finished: g.clock.now(), gateway: g.config.gatewayID,
            settings: settings, trigger: schedule.trigger)
        let id = await Blocking.run { try? store.saveAudit(record) }
        g.logger.notice(
            "audit \(id.map(String.init) ?? "(not stored)") '\(schedule.name)' of \(location): \(record.count(.present)) present, \(record.count(.missing)) missing, \(record.count(.wrongLocation)) wrong location, \(record.count(.unexpected)) unexpected, \(record.failedChecks) failed checks"
        )
    }
}

/// Copies the store's queued writes for the polling jobs every 2 s (a write queued by `vlogger write
/// --when-seen` while the service runs is made within about 2 s of its tag being in a field).
struct WriteQueueJob: Service {
    let gateway: Gateway

    func run() async {
        let (store, pending) = (gateway.store, gateway.pendingWrites)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(2)) } } catch { return }
            await Blocking.run {
                _ = try? store.expireWrites()
                try? pending.refresh(from: store)
            }
        }
    }
}

/// `[store] keep`: a minute after start and then every hour, deletes the rows older than `keep`, a few
/// thousand per transaction; never one that an enabled output (fleet sync, …) has not had acknowledged (those
/// are counted and logged, and go at a later round once every output has them).
struct RetentionJob: Service {
    let store: Store
    let logger: Logger
    let keepMs: Millis
    /// The names of the enabled outputs (asked at each pass: a reload may change them).
    let keepFor: @Sendable () -> [String]

    func run() async {
        var first = true
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let wait: Duration = first ? .seconds(60) : .seconds(3600)
            first = false
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) } } catch { return }
            let cutoff = Millis.now() - keepMs
            let (store, keepFor) = (self.store, self.keepFor())
            let result: Result<PruneReport, StoreError> = await Blocking.run {
                do throws(StoreError) {
                    return .success(try store.prune(before: cutoff, keepFor: keepFor))
                } catch { return .failure(error) }
            }
            switch result {
            case .success(let r):
                let held =
                    r.totalHeld > 0
                    ? "; \(r.totalHeld) older rows kept until every output (\(keepFor.joined(separator: ", "))) has them"
                    : ""
                if r.totalDeleted > 0 || r.totalHeld > 0 {
                    let parts = SyncTable.allCases.compactMap { t in
                        r.deleted[t].flatMap { $0 > 0 ? "\($0) \(t.rawValue)" : nil }
                    }.joined(separator: ", ")
                    logger.notice(
                        "retention: deleted \(r.totalDeleted) rows from before \(TimeSpec.format(cutoff)) (\(parts))\(held)"
                    )
                }
            case .failure(let e):
                logger.warning("retention: \(e); nothing more deleted this round")
            }
        }
    }
}

/// One output of the gateway: a consumer of the store's outbox and how often its job runs a round.
public struct Output: Sendable {
    public let consumer: any OutboxConsumer
    /// Between rounds when there is nothing new (or, without `wakesOnCommit`, always).
    public let intervalMs: Millis
    /// Whether a round starts as soon as the store writer committed (a connection kept open: MQTT), rather than
    /// every `intervalMs` (a connection per round: the fleet sync).
    public var wakesOnCommit = false
    /// What it was made from (its settings as text, secrets not read): a reload restarts an output whose
    /// signature changed.
    public var signature = ""
}

extension Gateway {
    /// The registration list of outputs: every consumer of the outbox the configuration enables. The only place
    /// in the service that knows the kinds of output.
    /// `readerUp` says which readers work (a Sparkplug device per reader is born and dies with it).
    public static func outputs(
        _ config: AgentConfig, store: Store, logger: Logger,
        readerUp: @escaping @Sendable () -> [String: Bool] = { [:] }, probe: Bool = false
    ) throws -> [Output] {
        var out: [Output] = []
        if let settings = config.sync {
            out.append(
                Output(
                    consumer: try Syncer(
                        settings: settings, store: store, gateway: config.gatewayID, site: config.site, logger: logger),
                    intervalMs: settings.intervalMs, signature: "\(settings) \(config.gatewayID) \(config.site ?? "")"))
        }
        for m in config.mqtt where m.sparkplug != nil {
            let readers = config.readers.map { ($0.id, $0.location) }
            // bdSeq outlives a restart (hosts pair a Will with its NBIRTH by it): a file beside the store.
            let file = URL(fileURLWithPath: store.path).deletingLastPathComponent()
                .appendingPathComponent("sparkplug-\(m.name).bdseq")
            out.append(
                Output(
                    consumer: try SparkplugOutput(
                        settings: m, gateway: config.gatewayID, readers: readers, readerUp: readerUp,
                        bdSeqFile: store.path == ":memory:" ? nil : file, probe: probe, logger: logger),
                    intervalMs: m.intervalMs, wakesOnCommit: true,
                    signature: "\(m) \(config.gatewayID) \(config.readers.map { "\($0.id)@\($0.location ?? "")" })"))
        }
        for m in config.mqtt where m.sparkplug == nil {
            out.append(
                Output(
                    consumer: try MQTTOutput(
                        settings: m, gateway: config.gatewayID, readers: config.readers.map { ($0.id, $0.location) },
                        probe: probe, logger: logger),
                    intervalMs: m.intervalMs, wakesOnCommit: true,
                    signature: "\(m) \(config.gatewayID) \(config.readers.map { "\($0.id)@\($0.location ?? "")" })"))
        }
        for w in config.webhooks {
            out.append(
                Output(
                    consumer: try WebhookOutput(settings: w, gateway: config.gatewayID, store: store, logger: logger),
                    intervalMs: w.intervalMs, wakesOnCommit: true, signature: "\(w) \(config.gatewayID)"))
        }
        return out
    }
}

extension Gateway {
    /// `vlogger doctor`'s check of each MQTT broker at the protocol level: a probe connection (a client id of its
    /// own, no Will, nothing published) that logs in with the configured TLS files and credentials. Nothing is
    /// written to the store. The result per output: nil when the broker accepted the connection, else the failure.
    public static func probeBrokers(_ config: AgentConfig) async -> [(
        name: String, url: String, failure: OutboxFailure?
    )] {
        var logger = Logger(label: "vlogger.doctor")
        logger.logLevel = .critical
        var out: [(name: String, url: String, failure: OutboxFailure?)] = []
        for m in config.mqtt {
            let consumer: any OutboxConsumer
            do {
                consumer =
                    m.sparkplug != nil
                    ? try SparkplugOutput(settings: m, gateway: config.gatewayID, probe: true, logger: logger)
                    : try MQTTOutput(settings: m, gateway: config.gatewayID, probe: true, logger: logger)
            } catch {
                let f =
                    (error as? MQTTError).map { OutboxFailure(kind: $0.kind.rawValue, message: $0.message) }
                    ?? OutboxFailure(kind: "other", message: "\(error)")
                out.append((m.name, m.url, f))
                continue
            }
            do {
                try await consumer.withSession { _ in }
                out.append((m.name, m.url, nil))
            } catch {
                out.append((m.name, m.url, consumer.describe(error)))
            }
            await consumer.shutdown()
        }
        return out
    }
}
