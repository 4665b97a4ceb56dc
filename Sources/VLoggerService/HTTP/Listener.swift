import Dispatch
import Foundation
import Hummingbird
import HummingbirdCore
import ISO15693
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
import VLoggerCore
import VLoggerModel
import VLoggerStore
import VLoggerConfig

/// The HTTP listener, built from what it serves: the status page, `/healthz`, `/metrics`, the audit reports, the
/// read API and its stream, and the write API (loopback only), behind the Host allow-list and the read-only gate.
struct HTTPListener {
    let config: AgentConfig
    let store: Store
    let metrics: ServiceMetrics
    /// The write API's token and the read API's, replaced on SIGHUP.
    let apiToken: APIToken
    let readToken: APIToken
    let refusals: RefusalLog
    /// Live stream clients dropped for reading too slowly, logged at most once a minute.
    let slowStreamClients: RefusalLog
    /// Signalled after each commit: the live stream's wake-up.
    let wakeup: Wakeup
    /// Signalled when the write API queued a write (the write queue job copies the queue at once).
    let writeQueued: Wakeup
    let logger: Logger
    /// Called once the socket is bound, with its address (the port the system chose when 0 was asked).
    let bound: @Sendable (ListenAddress) -> Void
    /// What the pages are made with (replaced on SIGHUP).
    let pages: NIOLockedValueBox<(PageContext, PageTemplates)>
    /// The run's time (the records' clock: the wall's, or `--clock-rate`'s).
    let now: @Sendable () -> Millis

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

    /// The listener on `address`, its routes and middleware; the tokens are read from their files now.
    func make(_ address: ListenAddress) throws -> some Service {
        if !address.isLoopback {
            logger.warning(
                "the listener is bound to \(address), which is not a loopback address: /metrics and the status page are readable from the network; put a firewall or an authenticating reverse proxy in front of it"
            )
        }
        let router = Router()
        // The bearer token would cross the network in clear: the write API is served on loopback only (a TLS
        // reverse proxy on the same machine can put it on the network).
        let apiTokenAllowed = address.isLoopback
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
        let (metrics, store, config, wakeup, bound) = (self.metrics, self.store, self.config, self.wakeup, self.bound)
        let health: @Sendable (Request, BasicRequestContext) async -> Response = { _, _ in
            let (ok, json) = metrics.health()
            return .text(json + "\n", status: ok ? .ok : .serviceUnavailable, type: "application/json")
        }
        let prometheus: @Sendable (Request, BasicRequestContext) async -> Response = { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.prometheusText())))
        }
        let (pages, now) = (self.pages, self.now)
        // The pages read the store on a worker thread, never on the event loop.
        // A page is made at most once a second per address while no event happens, however many ask (a browser's
        // live update, a reverse proxy's check, a flood): the others wait for it and get the same page. An event (an
        // alarm's start or end, an arrival) makes the next request make it again.
        let cache = PageCache()
        let page: @Sendable (Request, BasicRequestContext) async -> Response = { request, _ in
            let q = request.uri.queryParameters
            // The cache key is the page's state, not the query: a field the configuration does not chart or a range
            // that is not one of the page's shows the default, so it is the default's page (a flood of distinct query
            // strings costs one page).
            let charted = pages.withLockedValue { $0.0.numericFields }
            let field = q["field"].map(String.init).flatMap { charted.contains($0) ? $0 : nil }
            let range = q["range"].map(String.init).flatMap { ChartRange(rawValue: $0) == nil ? nil : $0 }
            let html = await cache.page("/?\(field ?? "")&\(range ?? "")#\(metrics.eventCount)") {
                await Blocking.run {
                    let (context, templates) = pages.withLockedValue { $0 }
                    return templates.render(
                        Pages.status(
                            metrics: metrics, store: store, context: context, field: field, range: range, now: now()),
                        "status")
                }
            }
            return .html(html)
        }
        let tag: @Sendable (Request, BasicRequestContext) async -> Response = { request, context in
            guard let text = context.parameters.get("uid"), let uid = try? UID(parsing: text) else {
                return .text("not a UID (16 hex digits, E0 first)\n", status: .badRequest)
            }
            let range = request.uri.queryParameters["range"].map(String.init).flatMap {
                ChartRange(rawValue: $0) == nil ? nil : $0
            }
            let html = await cache.page("/tags/\(uid)?\(range ?? "")#\(metrics.eventCount)") {
                await Blocking.run {
                    let (context, templates) = pages.withLockedValue { $0 }
                    return templates.render(
                        Pages.tag(uid, metrics: metrics, store: store, context: context, range: range, now: now()),
                        "tag")
                }
            }
            return .html(html)
        }
        let audit: @Sendable (Request, BasicRequestContext) async -> Response = { _, context in
            guard let id = context.parameters.get("id", as: Int64.self) else {
                return .text("not an audit id\n", status: .badRequest)
            }
            let html = await Blocking.run { () -> String? in
                guard let a = try? store.audit(id) else { return nil }
                let (context, templates) = pages.withLockedValue { $0 }
                return Pages.auditReport(
                    a, history: (try? store.audits(location: a.location, limit: 30)) ?? [],
                    assets: (try? store.assets()) ?? [], context: context, links: true, templates: templates)
            }
            return html.map { .html($0) } ?? .text("no audit \(id)\n", status: .notFound)
        }
        // A read token, once configured on a network address, covers every read surface: the pages and /metrics
        // too, not only the read API (/healthz stays open for monitors: it says whether the gateway works, not what
        // it read). Without a token they are served as before; on loopback always.
        let covered = router.group().add(
            middleware: ReadTokenMiddleware(
                access: ReadAccess(loopback: address.isLoopback, token: readToken), always: false))
        for (path, handler, open) in [
            ("/healthz", health, true), ("/metrics", prometheus, false), ("/", page, false),
            ("/index.html", page, false), ("/audits/:id", audit, false), ("/tags/:uid", tag, false),
        ] {
            let routes: any RouterMethods<BasicRequestContext> = open ? router : covered
            routes.get(RouterPath(path), use: handler)
            // HEAD: the same status and headers, no body.
            routes.head(RouterPath(path)) { request, context -> Response in
                let r = await handler(request, context)
                return Response(status: r.status, headers: r.headers, body: .init())
            }
        }
        // The routes are always there; without a token (no api-token-file, or removed by a reload) the
        // middleware answers 404 before them.
        let access = ReadAccess(loopback: address.isLoopback, token: readToken)
        let clients = StreamClients(
            limit: config.streamClients, writeTimeout: .milliseconds(config.streamWriteTimeoutMs), turns: Turns(2),
            metrics: metrics, dropped: slowStreamClients, logger: logger)
        StreamAPI.add(
            to: router, store: store, gateway: config.gatewayID, wakeup: wakeup, access: access, clients: clients)
        ReadAPI.add(to: router, store: store, metrics: metrics, gateway: config.gatewayID, access: access)
        WriteAPI.add(
            to: router, token: apiToken, readers: Set(config.readers.map(\.id)), store: store, logger: logger,
            refusals: refusals, queued: writeQueued)
        var http = HTTP1Channel.Configuration(idleTimeout: .seconds(30))
        http.httpDecoder.maxHeaderFieldCount = 100
        let app = Application(
            router: router, server: .http1(configuration: http),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "vlogger"),
            onServerRunning: { channel in
                bound(ListenAddress(host: address.host, port: channel.localAddress?.port ?? address.port))
            },
            logger: logger)
        return ListenerService(app: app, address: address)
    }
}

/// Pages made in the last second, by address: a request within a second of the last making gets that page (and
/// waits for it while it is being made), so a burst of requests costs one page, not one each. At most 256 addresses
/// are kept (older ones go first).
actor PageCache {
    private var entries: [String: (at: UInt64, page: Task<String, Never>)] = [:]
    private let maxAgeNs: UInt64 = 1_000_000_000
    /// Pages being made at once: at most two (each reads the store on a worker thread); the others wait their turn,
    /// so a flood of distinct pages cannot take every worker from /healthz and the API.
    private let turns = Turns(2)

    /// Stamps a made page with the time it was made.
    private func made(_ key: String) {
        if let e = entries[key] { entries[key] = (DispatchTime.now().uptimeNanoseconds, e.page) }
    }

    func page(_ key: String, make: @escaping @Sendable () async -> String) async -> String {
        let now = DispatchTime.now().uptimeNanoseconds
        // A page still being made (or waiting its turn) is shared; a made one for a second after it was made.
        if let e = entries[key], now < e.at || now - e.at < maxAgeNs { return await e.page.value }
        let task = Task {
            let page = await self.turns.during(make)
            self.made(key)
            return page
        }
        // Until it is made, the entry is stamped in the future: it is fresh for every request meanwhile.
        entries[key] = (UInt64.max, task)
        if entries.count > 256 { entries = entries.filter { now < $0.value.at || now - $0.value.at < maxAgeNs } }
        return await task.value
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
    /// A page: HTML, not cached (each load shows the state now).
    static func html(_ s: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: s)))
    }

    static func text(_ s: String, status: HTTPResponse.Status = .ok, type: String = "text/plain; charset=utf-8")
        -> Response
    {
        Response(status: status, headers: [.contentType: type], body: .init(byteBuffer: ByteBuffer(string: s)))
    }
}
