import Crypto
import Foundation
import Logging
import OPCUA

/// The server without its sockets: configuration, address space, sessions, services, methods and the
/// subscriptions' cycle. `OPCUAServer` puts it on SwiftNIO; tests drive it directly.
public final class ServerCore: @unchecked Sendable {
    public let configuration: ServerConfiguration
    public let addressSpace: AddressSpace
    let logger: Logger
    let clock: @Sendable () -> Date
    let decodingLimits: DecodingLimits
    let sessions: SessionTable
    let subscriptionIds = SubscriptionIds()
    private(set) var services: Services!
    public let methods = MethodTable()
    /// From a value's sampling to the Publish answer that carries it (the last 100,000, seconds).
    public let publishLatency = LatencyLog()
    /// Refused certificates logged lately (one line per certificate and ten minutes).
    public let refusals = RefusalLog()
    /// Password checks, at most 5 a second (10 at once) across the server.
    public let passwordChecks = PasswordThrottle()
    private let lock = NSLock()
    private var channels: [ObjectIdentifier: SecureChannel] = [:]
    private var nextChannelId: UInt32 = 1
    public let startTime: Date
    private var _boundPort: Int?
    /// The port the listener bound (the configured one may be 0: any free port).
    public var port: Int {
        get { lock.withLock { _boundPort ?? configuration.port } }
        set { lock.withLock { _boundPort = newValue } }
    }

    /// Operations in one request (Read's nodes, Browse's descriptions …).
    static let maxOperations = 10_000
    static let maxContinuationPoints = 10

    public init(
        configuration: ServerConfiguration, addressSpace: AddressSpace, logger: Logger = Logger(label: "vlogger.opcua"),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.addressSpace = addressSpace
        self.logger = logger
        self.clock = clock
        self.decodingLimits = DecodingLimits(
            maxStringLength: Int(configuration.limits.maxMessageSize),
            maxByteStringLength: Int(configuration.limits.maxMessageSize),
            maxArrayLength: 100_000, maxDepth: 64)
        self.sessions = SessionTable(limit: configuration.maxSessions)
        self.startTime = clock()
        self.services = Services(server: self)
        serverNodes()
        methods.add(object: NodeId(2253), method: NodeId(11492)) { call in
            // GetMonitoredItems (OPC 10000-5 §9.1): the server and client handles of a subscription's items.
            guard call.arguments.count == 1, case .scalar(.uInt32(let id)) = call.arguments[0] else {
                return .failure(.badInvalidArgument)
            }
            guard let (servers, clients) = call.session.subscriptions.handles(id) else {
                return .failure(.badSubscriptionIdInvalid)
            }
            return .success([
                .array(.uInt32, servers.map { .uInt32($0) }), .array(.uInt32, clients.map { .uInt32($0) }),
            ])
        }
    }

    func now() -> Date { clock() }

    func log(_ message: String) { logger.info("\(message)") }

    /// `count` random bytes (nonces, tokens, continuation points).
    public static func random(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    func header(_ request: RequestHeader, now: Date, result: StatusCode = .good) -> ResponseHeader {
        ResponseHeader(timestamp: DateTime(now), requestHandle: request.requestHandle, serviceResult: result)
    }

    // MARK: Channels

    /// A new connection's channel, or nil when `maxChannels` are open.
    public func connect(send: @escaping @Sendable ([UInt8]) -> Void, close: @escaping @Sendable () -> Void)
        -> SecureChannel?
    {
        lock.withLock {
            guard channels.count < configuration.maxChannels else { return nil }
            let c = SecureChannel(server: self, send: send, close: close)
            channels[ObjectIdentifier(c)] = c
            return c
        }
    }

    func newChannelId() -> UInt32 {
        lock.withLock {
            defer { nextChannelId = nextChannelId &+ 1 == 0 ? 1 : nextChannelId &+ 1 }
            return nextChannelId
        }
    }

    func channelClosed(_ c: SecureChannel) { _ = lock.withLock { channels.removeValue(forKey: ObjectIdentifier(c)) } }

    public var channelCount: Int { lock.withLock { channels.count } }

    /// The monitored items of every session.
    public func monitoredItemCount() -> Int { sessions.all.reduce(0) { $0 + $1.subscriptions.itemCount } }

    private var refusedCertificates = 0
    private var failedActivations = 0
    private var pendingOutput = 0

    /// Bytes handed to a connection to send, and then written to its socket (or dropped with it).
    func output(queued n: Int) { lock.withLock { pendingOutput += n } }
    func output(written n: Int) { lock.withLock { pendingOutput -= n } }

    /// A secure channel refused for its client certificate (untrusted, expired, unreadable …).
    func certificateRefused() { lock.withLock { refusedCertificates += 1 } }
    /// An ActivateSession that failed (a wrong password, a bad signature, a refused identity).
    func activationFailed() { lock.withLock { failedActivations += 1 } }

    /// What the server holds now and what it refused since it started, for /metrics and /healthz.
    public struct Statistics: Sendable, Equatable {
        public var connections: Int
        public var sessions: Int
        public var subscriptions: Int
        public var monitoredItems: Int
        public var refusedCertificates: Int
        public var failedActivations: Int
        /// Answers waiting for clients that have not taken them yet (bytes).
        public var pendingOutputBytes: Int
    }

    public func statistics() -> Statistics {
        let (refused, failed, connections, pending) = lock.withLock {
            (refusedCertificates, failedActivations, channels.count, pendingOutput)
        }
        return Statistics(
            connections: connections, sessions: sessions.count, subscriptions: subscriptionIds.count,
            monitoredItems: monitoredItemCount(), refusedCertificates: refused, failedActivations: failed,
            pendingOutputBytes: pending)
    }

    /// Closes every connection (the server stops).
    func closeAll() {
        for c in lock.withLock({ Array(channels.values) }) {
            c.fail(TransportError(.badServerHalted, "the server stops"))
        }
    }
    public var sessionCount: Int { sessions.count }

    /// The subscriptions' cycle and the timeouts: called every few milliseconds.
    public func tick() {
        let now = clock()
        for s in sessions.purge(now: now) {
            s.subscriptions.removeAll()
            log("session \(s.number) '\(s.name)' timed out")
        }
        for s in sessions.all { s.subscriptions.tick(now: now) }
        for c in lock.withLock({ Array(channels.values) }) { c.tick(now: now) }
    }

    /// Reports an event to every subscriber of the Server object's events.
    public func post(_ event: ServerEvent) {
        let now = clock()
        for s in sessions.all { s.subscriptions.post(event, now: now) }
    }

    // MARK: The Server object

    /// The values of namespace 0's Server object that the server knows (OPC 10000-5 §6.3.1).
    private func serverNodes() {
        let space = addressSpace
        let start = DateTime(startTime)
        func held(_ id: UInt32, _ v: Variant) {
            space.setValue(NodeId(id), DataValue(value: v, sourceTimestamp: start))
        }
        space.setSource(NodeId(2255)) { DataValue(value: .array(.string, space.namespaces.map { .string($0) })) }
        held(2254, .array(.string, [.string(configuration.applicationUri)]))
        let clock = self.clock
        space.setSource(NodeId(2258)) { DataValue(value: .scalar(.dateTime(DateTime(clock())))) }
        space.setSource(NodeId(2256)) { [configuration] in
            let status = ServerStatusDataType(
                startTime: start, currentTime: DateTime(clock()), state: .running,
                buildInfo: Self.buildInfo(configuration, start), secondsTillShutdown: 0,
                shutdownReason: LocalizedText(nil))
            return DataValue(value: .scalar(.extensionObject(status.extensionObject)))
        }
        held(2257, .scalar(.dateTime(start)))
        held(2259, .scalar(.int32(ServerState.running.rawValue)))
        held(2260, .scalar(.extensionObject(Self.buildInfo(configuration, start).extensionObject)))
        held(2261, .scalar(.string(configuration.productName)))
        held(2262, .scalar(.string(configuration.productUri)))
        held(2263, .scalar(.string(configuration.manufacturerName)))
        held(2264, .scalar(.string(configuration.softwareVersion)))
        held(2265, .scalar(.string(configuration.buildNumber)))
        held(2266, .scalar(.dateTime(start)))
        held(2992, .scalar(.uInt32(0)))
        held(2993, .scalar(.localizedText(LocalizedText(nil))))
        held(2267, .scalar(.byte(255)))
        held(2994, .scalar(.boolean(false)))
        held(2269, .array(.string, [.string("http://opcfoundation.org/UA-Profile/Server/MicroEmbeddedDevice2017")]))
        held(2271, .array(.string, [.string("en")]))
        held(2272, .scalar(.double(SubscriptionSet.minIntervalMs)))
        held(2735, .scalar(.uInt16(UInt16(Self.maxContinuationPoints))))
        held(2736, .scalar(.uInt16(0)))
        held(2737, .scalar(.uInt16(0)))
        held(3704, .array(.extensionObject, []))
        held(11702, .scalar(.uInt32(100_000)))
        held(11703, .scalar(.uInt32(0)))
        for id: UInt32 in [11705, 11707, 11709, 11710, 11711, 11712, 11713, 11714] {
            held(id, .scalar(.uInt32(UInt32(Self.maxOperations))))
        }
        held(2294, .scalar(.boolean(false)))
        held(3709, .scalar(.int32(RedundancySupport.none.rawValue)))
    }

    private static func buildInfo(_ c: ServerConfiguration, _ start: DateTime) -> BuildInfo {
        BuildInfo(
            productUri: c.productUri, manufacturerName: c.manufacturerName, productName: c.productName,
            softwareVersion: c.softwareVersion, buildNumber: c.buildNumber, buildDate: start)
    }
}

extension ServerCore {
    /// The executor the server's method calls run on (its own threads, not Swift's shared pool): a caller that
    /// blocks a thread while it waits for a call (a fuzzer) starts the call's task on it.
    public static var methodExecutor: any TaskExecutor { MethodExecutor.shared }

    /// Calls a method as a client's session would, without a connection (the fuzzer and the benchmarks): the
    /// arguments checked against the method's InputArguments, then its handler. The session is one of its own, in
    /// no table; its name is the client's in the store's origin.
    public func call(_ request: CallMethodRequest, sessionName: String = "local") async -> CallMethodResult {
        let session = Session(
            id: NodeId(0), number: 0, authenticationToken: NodeId(0), name: sessionName, timeoutMs: 60_000,
            clientCertificate: nil, serverNonce: [], channelId: 0, securityMode: .none, now: now(),
            subscriptions: SubscriptionSet(server: self))
        return await methods.call(request, session: session, deadline: nil, space: addressSpace)
    }
}

/// Which refused certificates were logged lately (at most 1,000 remembered).
public final class RefusalLog: @unchecked Sendable {
    private let lock = NSLock()
    private var last: [String: Date] = [:]

    public init() {}

    /// True the first time in ten minutes a certificate is refused.
    public func shouldLog(_ fingerprint: String, now: Date = Date()) -> Bool {
        lock.withLock {
            if let t = last[fingerprint], now.timeIntervalSince(t) < 600 { return false }
            if last.count >= 1000 { last = last.filter { now.timeIntervalSince($0.value) < 600 } }
            if last.count >= 1000 { last.removeAll() }
            last[fingerprint] = now
            return true
        }
    }
}

/// How many password checks the server makes: each costs 210,000 PBKDF2 rounds on a connection's event loop, so a
/// client trying passwords as fast as it can would take the loops from everyone. A bucket of `burst` checks,
/// refilled at `perSecond`; a login past it is answered Bad_ServerTooBusy without a check (and tried again later).
public final class PasswordThrottle: @unchecked Sendable {
    private let lock = NSLock()
    let perSecond: Double
    let burst: Double
    private var tokens: Double
    private var last: Date?
    /// Logins answered Bad_ServerTooBusy since the start.
    public private(set) var refused = 0

    public init(perSecond: Double = 5, burst: Double = 10) {
        self.perSecond = perSecond
        self.burst = burst
        self.tokens = burst
    }

    /// True when a check may be made now (and takes its token).
    public func take(now: Date) -> Bool {
        lock.withLock {
            if let last { tokens = min(burst, tokens + max(0, now.timeIntervalSince(last)) * perSecond) }
            last = now
            guard tokens >= 1 else {
                refused += 1
                return false
            }
            tokens -= 1
            return true
        }
    }
}

/// The last latencies measured, for benchmarks and metrics.
public final class LatencyLog: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Double] = []
    private var next = 0
    static let capacity = 100_000

    func record(_ seconds: Double) {
        lock.withLock {
            if values.count < Self.capacity {
                values.append(seconds)
            } else {
                values[next] = seconds
                next = (next + 1) % Self.capacity
            }
        }
    }

    /// The latencies kept, and forgets them.
    public func drain() -> [Double] {
        lock.withLock {
            defer {
                values = []
                next = 0
            }
            return values
        }
    }
}

/// The methods the server answers Call for, each by (object, method): a method of an object's type instantiated on
/// the object (AutoID's `Scan` on each reader) has a node of its own per object. Handlers are asynchronous: a call
/// that waits for a reader answers when it is done, while the connection goes on with other requests (the Call's
/// answer comes later, like Publish's). Before a handler runs, the arguments are checked against the method's
/// `InputArguments` (OPC 10000-4 §5.11.2.2): too few is Bad_ArgumentsMissing, too many Bad_TooManyArguments, one
/// of another type Bad_InvalidArgument with Bad_TypeMismatch for that argument.
public final class MethodTable: @unchecked Sendable {
    /// One call as its handler sees it.
    public struct Call: Sendable {
        public let object: NodeId
        public let method: NodeId
        public let arguments: [Variant]
        public let session: Session
        /// When the client stops waiting (its request's timeout hint); nil without a hint.
        public let deadline: Date?
    }
    public typealias Handler = @Sendable (Call) async -> Result<[Variant], MethodFailure>
    public struct MethodFailure: Error {
        public let status: StatusCode
        /// One status per input argument (which one was wrong), or empty.
        public let argumentResults: [StatusCode]
        public init(_ status: StatusCode, arguments: [StatusCode] = []) {
            self.status = status
            self.argumentResults = arguments
        }
        public static let badInvalidArgument = MethodFailure(.badInvalidArgument)
        public static let badSubscriptionIdInvalid = MethodFailure(.badSubscriptionIdInvalid)
        /// Argument `index` of `count` is wrong (its own status Bad_InvalidArgument, or `status`).
        public static func argument(_ index: Int, of count: Int, _ status: StatusCode = .badInvalidArgument)
            -> MethodFailure
        {
            MethodFailure(
                .badInvalidArgument, arguments: (0..<count).map { $0 == index ? status : StatusCode.good })
        }
    }

    private let lock = NSLock()
    /// By object, then method.
    private var handlers: [NodeId: [NodeId: Handler]] = [:]
    private var waitUntil: @Sendable (Date) async -> Void = { date in
        try? await Task.sleep(for: .seconds(max(0, date.timeIntervalSinceNow)))
    }

    /// How a call waits for its deadline (a test steps it by hand).
    public func setWait(_ wait: @escaping @Sendable (Date) async -> Void) { lock.withLock { waitUntil = wait } }
    private var inFlight = 0
    /// Call requests answered later at once, across the server: past it a Call is Bad_TooManyOperations.
    static let maxInFlight = 64

    public func add(object: NodeId, method: NodeId, _ handler: @escaping Handler) {
        lock.withLock { handlers[object, default: [:]][method] = handler }
    }

    /// Removes every handler of `object` (a condition that went).
    public func remove(object: NodeId) {
        _ = lock.withLock { handlers.removeValue(forKey: object) }
    }

    /// Takes a place for a Call request (false: too many wait for their answers).
    func begin() -> Bool {
        lock.withLock {
            guard inFlight < Self.maxInFlight else { return false }
            inFlight += 1
            return true
        }
    }

    func end() { lock.withLock { inFlight -= 1 } }

    func call(_ r: CallMethodRequest, session: Session, deadline: Date?, space: AddressSpace) async
        -> CallMethodResult
    {
        // The object's own method node, or its type's method of the same name (called on the instance).
        let method =
            lock.withLock({ handlers[r.objectId]?[r.methodId] }) != nil
            ? r.methodId : space.instanceMethod(of: r.objectId, declaredBy: r.methodId) ?? r.methodId
        guard let handler = lock.withLock({ handlers[r.objectId]?[method] }) else {
            if space.node(r.objectId) == nil { return CallMethodResult(statusCode: .badNodeIdUnknown) }
            return CallMethodResult(statusCode: .badMethodInvalid)
        }
        let arguments = r.inputArguments ?? []
        if let failure = Self.check(arguments, of: method, space) {
            return CallMethodResult(statusCode: failure.status, inputArgumentResults: failure.argumentResults)
        }
        let call = Call(
            object: r.objectId, method: method, arguments: arguments, session: session, deadline: deadline)
        guard let answer = await answer(handler, call, deadline: deadline) else {
            return CallMethodResult(statusCode: .badTimeout)
        }
        switch answer {
        case .success(let out): return CallMethodResult(statusCode: .good, outputArguments: out)
        case .failure(let f):
            return CallMethodResult(
                statusCode: f.status, inputArgumentResults: f.argumentResults.isEmpty ? nil : f.argumentResults)
        }
    }

    /// The handler's answer, or nil when the call's deadline (its request's timeout hint) passes first: the client
    /// is answered Bad_Timeout (OPC 10000-4, the RequestHeader's timeoutHint) and the handler goes on to its end (a write is made
    /// and recorded; a retry of it is answered from it).
    private func answer(_ handler: @escaping Handler, _ call: Call, deadline: Date?) async -> Result<
        [Variant], MethodFailure
    >? {
        guard let deadline else { return await handler(call) }
        let wait = lock.withLock { waitUntil }
        let first = FirstOnce()
        return await withCheckedContinuation { c in
            let timer = Task(executorPreference: MethodExecutor.shared) {
                await wait(deadline)
                if first.take() { c.resume(returning: nil) }
            }
            Task(executorPreference: MethodExecutor.shared) {
                let r = await handler(call)
                if first.take() { c.resume(returning: r) }
                timer.cancel()
            }
        }
    }

    /// True for the first caller only.
    private final class FirstOnce: @unchecked Sendable {
        private let lock = NSLock()
        private var taken = false
        func take() -> Bool {
            lock.withLock {
                defer { taken = true }
                return !taken
            }
        }
    }

    /// The arguments against the method's InputArguments property (none: no argument).
    static func check(_ arguments: [Variant], of method: NodeId, _ space: AddressSpace) -> MethodFailure? {
        var declared: [Argument] = []
        if let p = space.property(method, named: "InputArguments"),
            case .array(_, let items?, _) = space.node(p)?.value?.value
        {
            for case .extensionObject(let e) in items {
                guard let a = try? Argument(e) else { return MethodFailure(.badInternalError) }
                declared.append(a)
            }
        }
        if arguments.count < declared.count { return MethodFailure(.badArgumentsMissing) }
        if arguments.count > declared.count { return MethodFailure(.badTooManyArguments) }
        var results: [StatusCode] = []
        for (value, a) in zip(arguments, declared) {
            results.append(fits(value, a, space) ? .good : .badTypeMismatch)
        }
        guard results.allSatisfy(\.isGood) else { return MethodFailure(.badInvalidArgument, arguments: results) }
        return nil
    }

    /// Whether a value has an argument's built-in type and rank (a null value passes: the handler decides).
    private static func fits(_ value: Variant, _ a: Argument, _ space: AddressSpace) -> Bool {
        let type = space.builtInType(of: a.dataType)
        switch value {
        case .null: return true
        // ValueRank (OPC 10000-3 §5.6.2): -1 a scalar, -2 anything, -3 a scalar or one dimension, 0 one or more
        // dimensions, n exactly n.
        case .scalar(let s):
            guard [-1, -2, -3].contains(a.valueRank) else { return false }
            return type.map { $0 == s.type } ?? true
        case .array(let t, _, let dimensions):
            let rank = dimensions?.count ?? 1
            guard a.valueRank == -2 || (a.valueRank == -3 && rank == 1) || a.valueRank == 0 || Int(a.valueRank) == rank
            else {
                return false
            }
            return type.map { $0 == t } ?? true
        }
    }
}
