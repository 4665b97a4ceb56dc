import Foundation
import OPCUA

/// One session (OPC 10000-4 §5.6): made by CreateSession, bound to a channel and a user by ActivateSession,
/// ended by CloseSession or by its timeout running out without a request.
public final class Session: @unchecked Sendable {
    public let id: NodeId
    /// The session's number in this server's run (log lines name it).
    public let number: UInt32
    public let authenticationToken: NodeId
    public let name: String
    public let timeoutMs: Double
    let clientCertificate: ApplicationCertificate?
    /// The security mode of the channel that made it.
    let securityMode: MessageSecurityMode
    let subscriptions: SubscriptionSet

    /// What changes: set by a request's connection, read by the server's tick (its timeout) and by others (one
    /// session may be used from two channels at once), so under a lock.
    private struct State {
        var serverNonce: [UInt8]
        var channelId: UInt32
        var activated = false
        var user: String?
        var clientApplicationUri: String?
        var closed = false
        var lastUsed: Date
        var continuations: [[UInt8]: Continuation] = [:]
    }
    private let lock = NSLock()
    private var state: State

    /// The nonce the next ActivateSession signs (and a password ends with).
    var serverNonce: [UInt8] {
        get { lock.withLock { state.serverNonce } }
        set { lock.withLock { state.serverNonce = newValue } }
    }
    var channelId: UInt32 {
        get { lock.withLock { state.channelId } }
        set { lock.withLock { state.channelId = newValue } }
    }
    var activated: Bool {
        get { lock.withLock { state.activated } }
        set { lock.withLock { state.activated = newValue } }
    }
    public internal(set) var user: String? {
        get { lock.withLock { state.user } }
        set { lock.withLock { state.user = newValue } }
    }
    /// Whether the session ended (closed by its client, or its timeout ran out): what it started stops.
    public internal(set) var isClosed: Bool {
        get { lock.withLock { state.closed } }
        set { lock.withLock { state.closed = newValue } }
    }
    /// The ApplicationUri the client gave in CreateSession (its certificate's, where it has one).
    public internal(set) var clientApplicationUri: String? {
        get { lock.withLock { state.clientApplicationUri } }
        set { lock.withLock { state.clientApplicationUri = newValue } }
    }
    var lastUsed: Date {
        get { lock.withLock { state.lastUsed } }
        set { lock.withLock { state.lastUsed = newValue } }
    }
    /// Browse results not yet given, and the page size the Browse asked for (BrowseNext gives pages of it).
    struct Continuation {
        var limit: Int
        var rest: [ReferenceDescription]
    }

    /// Keeps the rest of a Browse behind a new continuation point; nil when the session holds `max` already.
    func keep(_ c: Continuation, max: Int) -> [UInt8]? {
        lock.withLock {
            guard state.continuations.count < max else { return nil }
            let point = ServerCore.random(16)
            state.continuations[point] = c
            return point
        }
    }

    /// The rest behind a continuation point, which is then released (nil: none such).
    func take(_ point: [UInt8]) -> Continuation? { lock.withLock { state.continuations.removeValue(forKey: point) } }

    init(
        id: NodeId, number: UInt32, authenticationToken: NodeId, name: String, timeoutMs: Double,
        clientCertificate: ApplicationCertificate?,
        serverNonce: [UInt8], channelId: UInt32, securityMode: MessageSecurityMode, now: Date,
        subscriptions: SubscriptionSet
    ) {
        self.securityMode = securityMode
        self.id = id
        self.number = number
        self.authenticationToken = authenticationToken
        self.name = name
        self.timeoutMs = timeoutMs
        self.clientCertificate = clientCertificate
        self.state = State(serverNonce: serverNonce, channelId: channelId, lastUsed: now)
        self.subscriptions = subscriptions
    }

    /// A session not activated within 30 s goes (however long a timeout it asked for): made and abandoned
    /// sessions cannot hold the table.
    func expired(at now: Date) -> Bool {
        let (lastUsed, activated) = lock.withLock { (state.lastUsed, state.activated) }
        return now.timeIntervalSince(lastUsed) * 1000 > (activated ? timeoutMs : min(timeoutMs, 30_000))
    }

    /// ConditionRefresh (OPC 10000-9 §5.5.7) for one of this session's subscriptions, with the conditions' current
    /// events: Good, Bad_SubscriptionIdInvalid or Bad_NothingToDo.
    public func refreshConditions(subscription: UInt32, _ conditions: [ServerEvent]) -> StatusCode {
        subscriptions.refresh(subscription: subscription, conditions: conditions, now: subscriptions.server.clock())
    }
}

/// The server's sessions, at most `limit`: an expired one is dropped when a new one is asked for, so abandoned
/// sessions never hold memory beyond their timeout.
final class SessionTable: @unchecked Sendable {
    private let lock = NSLock()
    private var byToken: [NodeId: Session] = [:]
    private var nextId: UInt32 = 1
    let limit: Int

    init(limit: Int) { self.limit = limit }

    var count: Int { lock.withLock { byToken.count } }
    var all: [Session] { lock.withLock { Array(byToken.values) } }

    /// A new session, or nil when `limit` live sessions are open.
    func create(
        name: String, timeoutMs: Double, clientCertificate: ApplicationCertificate?, channelId: UInt32,
        securityMode: MessageSecurityMode, now: Date, nonceLength: Int, subscriptions: SubscriptionSet
    ) -> Session? {
        let expired = purge(now: now)
        for s in expired { s.subscriptions.removeAll() }
        return lock.withLock {
            guard byToken.count < limit else { return nil }
            let number = nextId
            nextId &+= 1
            // Both in namespace 0, which every server has: a client that maps the server's namespaces onto its own
            // (open62541 does) sends a token of a namespace the server lacks back under another index.
            let session = Session(
                id: NodeId(namespace: 0, .opaque(ServerCore.random(16))), number: number,
                authenticationToken: NodeId(namespace: 0, .opaque(ServerCore.random(32))), name: name,
                timeoutMs: timeoutMs, clientCertificate: clientCertificate,
                serverNonce: ServerCore.random(max(32, nonceLength)), channelId: channelId, securityMode: securityMode,
                now: now,
                subscriptions: subscriptions)
            byToken[session.authenticationToken] = session
            return session
        }
    }

    /// The session of an authentication token, if it has not expired.
    func find(_ token: NodeId, now: Date) -> Session? {
        lock.withLock {
            guard let s = byToken[token] else { return nil }
            if s.expired(at: now) {
                byToken[token] = nil
                s.isClosed = true
                s.subscriptions.removeAll()
                return nil
            }
            return s
        }
    }

    func remove(_ session: Session) {
        lock.withLock { byToken[session.authenticationToken] = nil }
        session.isClosed = true
        session.subscriptions.removeAll()
    }

    /// Drops the sessions whose timeout ran out; answers them.
    @discardableResult
    func purge(now: Date) -> [Session] {
        lock.withLock {
            let gone = byToken.values.filter { $0.expired(at: now) }
            for s in gone { byToken[s.authenticationToken] = nil }
            for s in gone { s.isClosed = true }
            return gone
        }
    }
}
