import CMosquitto
import Foundation

/// Why an MQTT round failed, by kind (the kind is a metrics label and a /healthz value).
public struct MQTTError: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable {
        /// The broker could not be reached or refused the connection (not for credentials).
        case connect
        /// The broker refused the credentials or the client (CONNACK: bad user name or password, not authorised).
        case auth
        /// The TLS handshake failed (certificate not trusted, wrong host name, unreadable files).
        case tls
        /// No answer in time (CONNACK, or PUBACK of a batch).
        case timeout
        /// The connection dropped while a batch was in flight.
        case lost
        /// The client refused a publish (payload too large, …) or could not be set up.
        case client
        /// libmosquitto refused one message's topic or payload (not valid UTF-8 to it, too long): that message can
        /// never be sent; the output skips it with an event and goes on.
        case invalidMessage
        /// The broker refused a message (MQTT 5 PUBACK reason code 0x80 or above: not authorised, quota
        /// exceeded, payload format invalid, …).
        case refused
    }
    public var kind: Kind
    public var message: String
    public var description: String { message }
}

/// One connection to a broker through libmosquitto, its network loop on libmosquitto's own thread
/// (`mosquitto_loop_start`), which reconnects by itself after a drop with a delay that starts at a random 1–5 s
/// (so gateways that lost the same broker do not come back in lock-step) and doubles to 60 s.
///
/// Publishing is fire-and-collect: `publish` queues a message and returns its message id; `awaitAcks` returns
/// when the broker has acknowledged every id given (PUBACK at QoS 1; sent at QoS 0), and throws when the
/// connection drops first or the time runs out, so the caller knows whether the broker has the batch.
final class MQTTClient: @unchecked Sendable {
    /// A Last Will: what the broker publishes for the client when it loses the connection.
    struct Will: Sendable {
        var topic: String
        var payload: [UInt8]
        var qos: Int32 = 1
        var retain = true
    }

    struct Options: Sendable {
        var host: String
        var port: Int
        var clientID: String
        var cleanSession: Bool
        var keepAliveSeconds: Int
        var protocolVersion: Int32
        var username: String?
        var password: String?
        /// Where the password is read at each new connection (a rotated password file is used from the next one).
        var passwordSource: (@Sendable () -> String?)? = nil
        var tls: Bool
        var caFile: String?
        var certFile: String?
        var keyFile: String?
        /// The Will: the broker publishes it when the connection is lost.
        var will: Will?
        /// Messages in flight at once (QoS 1 awaiting PUBACK).
        var inflight: Int = 1000
    }

    private let mosq: OpaquePointer
    private let options: Options
    private let lock = NSLock()
    private var started = false
    private var connected = false
    private var connectWaiters: [UUID: CheckedContinuation<Void, any Error>] = [:]
    private var refusal: MQTTError?
    private var lastLog: String?
    /// Why the first TCP connect failed (errno's text: "Connection refused"), while the loop tries again.
    private var connectFailure: String?
    private var pending = Set<Int32>()
    private var early = Set<Int32>()
    /// Messages published beside the batches (the status topic, discovery, the instance announcement): their
    /// acknowledgements are not the batch's, and a refusal of one (a broker ACL without that topic) is logged, not
    /// a failed batch.
    private var aside = Set<Int32>()
    private var ackWaiter: (id: UUID, continuation: CheckedContinuation<Void, any Error>)?
    /// A message of this batch the broker refused (MQTT 5 reason code ≥ 0x80).
    private var rejected: MQTTError?
    /// The longest wait between libmosquitto's own reconnect attempts (seconds).
    static let reconnectCapSeconds: UInt32 = 30

    /// Called on the network thread after each successful connect (the status topic, discovery).
    var onConnect: (@Sendable (MQTTClient) -> Void)?
    /// Called on the network thread for each message of a subscription: the client, the topic, the payload, and
    /// whether the broker sent it as retained (at subscription) rather than live.
    var onMessage: (@Sendable (MQTTClient, String, [UInt8], Bool) -> Void)?
    /// Called when the broker refuses a message published beside the batches (`publishAside`), with what to log.
    var onAsideRefused: (@Sendable (String) -> Void)?
    /// The Will of the next connection, asked before each CONNECT (the first, and after each drop, before the
    /// network thread connects again): a Will that changes per connection (Sparkplug's NDEATH with its bdSeq).
    /// Nil: `options.will`, the same every time.
    var nextWill: (@Sendable () -> Will)?

    static let initialised: Bool = {
        mosquitto_lib_init()
        return true
    }()

    init(_ options: Options) throws(MQTTError) {
        _ = Self.initialised
        self.options = options
        guard let m = mosquitto_new(options.clientID, options.cleanSession, nil) else {
            throw MQTTError(kind: .client, message: "libmosquitto could not create a client (out of memory?)")
        }
        // Every stored property is set from here on: a throw below runs deinit, which destroys `m` (so the paths
        // below do not).
        mosq = m
        try configure()
    }

    /// Sets the options, the Will and the callbacks (again after `reset`, which clears them all).
    private func configure() throws(MQTTError) {
        let m = mosq
        mosquitto_user_data_set(m, Unmanaged.passUnretained(self).toOpaque())
        func check(_ rc: Int32, _ what: String) throws(MQTTError) {
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                throw MQTTError(kind: .client, message: "\(what): \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        try check(
            mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, options.protocolVersion), "the MQTT protocol version")
        try check(
            mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, Int32(max(1, min(65535, options.inflight)))),
            "messages in flight")
        if let user = options.username {
            try check(mosquitto_username_pw_set(m, user, options.password), "the user name and password")
        }
        if options.tls {
            // Without a CA file, the system's CAs (Debian: /etc/ssl/certs).
            let rc = mosquitto_tls_set(
                m, options.caFile, options.caFile == nil ? "/etc/ssl/certs" : nil, options.certFile, options.keyFile,
                nil)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                throw MQTTError(
                    kind: .tls,
                    message:
                        "TLS set-up (ca-file \(options.caFile ?? "system CAs"), cert-file \(options.certFile ?? "none"), key-file \(options.keyFile ?? "none")): \(String(cString: mosquitto_strerror(rc)))"
                )
            }
        }
        if nextWill == nil, let will = options.will {
            try setWill(will)
        }
        // Reconnects back off exponentially from a few seconds to at most 30 s (a broker back after an outage is
        // reached within 30 s).
        mosquitto_reconnect_delay_set(m, UInt32.random(in: 1...5), Self.reconnectCapSeconds, true)
        mosquitto_connect_callback_set(m) { _, obj, rc in
            guard let obj else { return }
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().connected(rc)
        }
        mosquitto_disconnect_callback_set(m) { _, obj, rc in
            guard let obj else { return }
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().disconnected(rc)
        }
        mosquitto_message_callback_set(m) { _, obj, message in
            guard let obj, let message, let topic = message.pointee.topic else { return }
            let client = Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue()
            let count = Int(max(0, message.pointee.payloadlen))
            var payload: [UInt8] = []
            if count > 0, let p = message.pointee.payload {
                payload = Array(UnsafeRawBufferPointer(start: p, count: count))
            }
            client.onMessage?(client, String(cString: topic), payload, message.pointee.retain)
        }
        // The MQTT 5 form: it has the PUBACK's reason code (the plain one is called whatever the code).
        mosquitto_publish_v5_callback_set(m) { _, obj, mid, reason, _ in
            guard let obj else { return }
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().acknowledged(mid, reason: reason)
        }
        mosquitto_log_callback_set(m) { _, obj, level, text in
            guard let obj, let text, level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().logged(String(cString: text))
        }
    }

    private func setWill(_ will: Will) throws(MQTTError) {
        let rc = will.payload.withUnsafeBytes { p in
            mosquitto_will_set(mosq, will.topic, Int32(p.count), p.baseAddress, will.qos, will.retain)
        }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(
                kind: .client, message: "the Will (\(will.topic)): \(String(cString: mosquitto_strerror(rc)))")
        }
    }

    /// Subscribes (from `onConnect`: a clean session forgets subscriptions with the connection).
    func subscribe(_ topic: String, qos: Int32) throws(MQTTError) {
        let rc = mosquitto_subscribe(mosq, nil, topic, qos)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(
                kind: .client, message: "subscribe to \(topic) on \(where_): \(String(cString: mosquitto_strerror(rc)))"
            )
        }
    }

    /// Ends the connection (no Will: a clean leave). The network thread does not connect again; the next
    /// `connect` after `reset` does.
    func disconnect() {
        mosquitto_disconnect(mosq)
    }

    /// Back to a client that never connected: the network thread stopped (forced: a thread inside a reconnect
    /// would not stop by itself), every queued and unacknowledged message dropped (the next round sends them
    /// again from the cursor; left queued, each failed round would add one more copy), the options and callbacks
    /// set again. After a failed connect or batch, the next round starts from here.
    func reset() async {
        await Self.offPool { [self] in _ = mosquitto_loop_stop(self.mosq, true) }
        let obj = Unmanaged.passUnretained(self).toOpaque()
        _ = mosquitto_reinitialise(mosq, options.clientID, options.cleanSession, obj)
        let failure: MQTTError?
        do {
            try configure()
            failure = nil
        } catch {
            failure = error
        }
        lock.withLock {
            started = false
            connected = false
            refusal = failure
            lastLog = nil
            connectFailure = nil
            pending.removeAll()
            early.removeAll()
            rejected = nil
        }
    }

    /// Runs a blocking libmosquitto call (a thread join) on a thread of its own, not the cooperative pool's.
    static func offPool(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let t = Thread {
                body()
                c.resume()
            }
            t.start()
        }
    }

    deinit {
        mosquitto_loop_stop(mosq, true)
        mosquitto_destroy(mosq)
    }

    var isConnected: Bool { lock.withLock { connected } }

    /// Connects (the first time: starts the network loop) and returns once the broker accepted the connection;
    /// throws a typed error when it refuses it or does not answer within `timeout`.
    func connect(within timeout: Duration) async throws {
        let start: Bool = lock.withLock {
            defer { started = true }
            return !started
        }
        if start {
            if let nextWill {
                do { try setWill(nextWill()) } catch {
                    lock.withLock { started = false }
                    throw error
                }
            }
            if let user = options.username, let source = options.passwordSource {
                _ = mosquitto_username_pw_set(mosq, user, source())
            }
            var rc = mosquitto_connect_async(mosq, options.host, Int32(options.port), Int32(options.keepAliveSeconds))
            if rc == MOSQ_ERR_ERRNO.rawValue {
                let why = String(cString: strerror(errno))
                lock.withLock { connectFailure = why }
            }
            if rc == MOSQ_ERR_SUCCESS.rawValue || rc == MOSQ_ERR_ERRNO.rawValue {
                // A refused or unreachable first try is retried by the loop, like a dropped connection.
                rc = mosquitto_loop_start(mosq)
            }
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                let why = lock.withLock { lastLog }
                await reset()
                if rc == MOSQ_ERR_TLS.rawValue {
                    throw MQTTError(
                        kind: .tls,
                        message: "TLS with \(where_) failed: \(why ?? String(cString: mosquitto_strerror(rc)))")
                }
                throw MQTTError(
                    kind: .connect,
                    message: "cannot connect to \(where_): \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        do {
            try await waitForConnection(timeout)
        } catch {
            // A refusal, a failed TLS handshake or no answer: start the next attempt from a fresh client (the
            // network thread may have ended for good: libmosquitto's loop returns on some errors).
            await reset()
            throw error
        }
    }

    private func waitForConnection(_ timeout: Duration) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.connection() }
            group.addTask {
                try await Task.sleep(for: timeout)
                let (why, tcp) = self.lock.withLock { (self.lastLog, self.connectFailure) }
                if let tcp, why.map(Self.isTLS) != true {
                    // The broker's host answered, but not on that port (or not at all): not a slow broker.
                    throw MQTTError(
                        kind: .connect,
                        message: "cannot connect to \(self.where_): \(tcp) (tried again for \(timeout))")
                }
                throw MQTTError(
                    kind: why.map(Self.isTLS) == true ? .tls : .timeout,
                    message:
                        "no connection to \(self.where_) within \(timeout)\(why.map { " (libmosquitto: \($0))" } ?? "")"
                )
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Returns when connected, throws when the broker refused the connection or the task is cancelled.
    private func connection() async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let done: Result<Void, any Error>? = lock.withLock {
                    if connected { return .success(()) }
                    if let refusal { return .failure(refusal) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    connectWaiters[id] = c
                    return nil
                }
                if let done { c.resume(with: done) }
            }
        } onCancel: {
            let c = self.lock.withLock { self.connectWaiters.removeValue(forKey: id) }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Starts a batch: what earlier batches left unacknowledged is forgotten (it is resent, the cursor did not
    /// move). Message ids count up and wrap at 65535, so a late PUBACK of a forgotten message cannot be taken for
    /// one of this batch unless 65,535 messages were published in between.
    func beginBatch() {
        lock.withLock {
            pending.removeAll()
            early.removeAll()
            rejected = nil
        }
    }

    /// Queues a message beside the batches (`aside`); returns its message id.
    @discardableResult
    func publishAside(topic: String, payload: [UInt8], qos: Int, retain: Bool) throws(MQTTError) -> Int32 {
        let mid = try publish(topic: topic, payload: payload, qos: qos, retain: retain)
        lock.withLock {
            if pending.remove(mid) != nil { aside.insert(mid) }
            if aside.count > 1000 { aside.removeAll() }  // acknowledgements lost with a connection
        }
        return mid
    }

    /// Queues one message; returns its message id.
    func publish(topic: String, payload: [UInt8], qos: Int, retain: Bool) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { p in
            mosquitto_publish(mosq, &mid, topic, Int32(p.count), p.baseAddress, Int32(qos), retain)
        }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            let lost: Set<Int32> = [MOSQ_ERR_NO_CONN.rawValue, MOSQ_ERR_CONN_LOST.rawValue]
            let invalid: Set<Int32> = [
                MOSQ_ERR_INVAL.rawValue, MOSQ_ERR_MALFORMED_UTF8.rawValue, MOSQ_ERR_PAYLOAD_SIZE.rawValue,
                MOSQ_ERR_OVERSIZE_PACKET.rawValue,
            ]
            var kind = MQTTError.Kind.client
            if lost.contains(rc) { kind = .lost } else if invalid.contains(rc) { kind = .invalidMessage }
            throw MQTTError(
                kind: kind, message: "publish to \(topic) on \(where_): \(String(cString: mosquitto_strerror(rc)))")
        }
        lock.withLock {
            if early.remove(mid) == nil { pending.insert(mid) }
        }
        return mid
    }

    /// Returns when the broker has acknowledged every message published since `beginBatch`; throws when the
    /// connection drops first, the broker refuses one (MQTT 5), the task is cancelled, or after `timeout`.
    func awaitAcks(timeout: Duration) async throws {
        let id = UUID()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                        let done: Result<Void, any Error>? = self.lock.withLock {
                            if let r = self.rejected { return .failure(r) }
                            if self.pending.isEmpty { return .success(()) }
                            if !self.connected {
                                return .failure(
                                    MQTTError(kind: .lost, message: "the connection to \(self.where_) is down"))
                            }
                            if Task.isCancelled { return .failure(CancellationError()) }
                            self.ackWaiter = (id, c)
                            return nil
                        }
                        if let done { c.resume(with: done) }
                    }
                } onCancel: {
                    let c: CheckedContinuation<Void, any Error>? = self.lock.withLock {
                        guard let w = self.ackWaiter, w.id == id else { return nil }
                        self.ackWaiter = nil
                        return w.continuation
                    }
                    c?.resume(throwing: CancellationError())
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                let (c, left): (CheckedContinuation<Void, any Error>?, Int) = self.lock.withLock {
                    guard let w = self.ackWaiter, w.id == id else { return (nil, self.pending.count) }
                    self.ackWaiter = nil
                    return (w.continuation, self.pending.count)
                }
                let e = MQTTError(
                    kind: .timeout,
                    message: "\(self.where_) acknowledged the batch only in part within \(timeout) (\(left) left)")
                c?.resume(throwing: e)
                throw e
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Publishes `final` (the status topic's `offline`, Sparkplug's NDEATH), waits up to `timeout` for it, and
    /// disconnects (the Will is not sent: this is a clean leave).
    ///
    /// A client whose network loop is not running (never started, or closed already: the output job closes its
    /// consumer when it ends, and so may its owner) is left alone. A second `mosquitto_disconnect` after the forced
    /// `mosquitto_loop_stop` of the first close waited for ever on a mutex the cancelled network thread had held
    /// (seen: ten outputs shut down twice after their brokers had been killed and restarted).
    func close(final: Will?, timeout: Duration) async {
        guard lock.withLock({ started }) else { return }
        if let final, isConnected {
            beginBatch()
            _ = try? publish(topic: final.topic, payload: final.payload, qos: Int(final.qos), retain: final.retain)
            try? await awaitAcks(timeout: timeout)
        }
        mosquitto_disconnect(mosq)
        // DISCONNECT on the wire before the thread stops (else the broker sees a lost connection and publishes the
        // Will after the clean goodbye): up to 1 s for the disconnect callback.
        for _ in 0..<100 where isConnected {
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Forced: a network thread inside a reconnect would not see the disconnect and never stop.
        await Self.offPool { [self] in _ = mosquitto_loop_stop(self.mosq, true) }
        lock.withLock {
            started = false
            connected = false
        }
    }

    var where_: String { "\(options.tls ? "mqtts" : "mqtt")://\(options.host):\(options.port)" }

    static func isTLS(_ log: String) -> Bool {
        log.contains("SSL") || log.contains("TLS") || log.contains("certificate")
    }

    // MARK: The network thread's callbacks

    private func connected(_ rc: Int32) {
        if rc == 0 {
            let waiters = lock.withLock {
                connected = true
                refusal = nil
                lastLog = nil
                connectFailure = nil
                defer { connectWaiters.removeAll() }
                return Array(connectWaiters.values)
            }
            onConnect?(self)
            for w in waiters { w.resume() }
        } else {
            // CONNACK refused: 4/5 in MQTT 3.1.1, 134/135 (and 140) in MQTT 5 are credentials and authorisation.
            let kind: MQTTError.Kind = [4, 5, 134, 135, 138, 140].contains(rc) ? .auth : .connect
            let e = MQTTError(
                kind: kind,
                message: "\(where_) refused the connection: \(String(cString: mosquitto_connack_string(rc)))"
            )
            let waiters = lock.withLock {
                refusal = e
                defer { connectWaiters.removeAll() }
                return Array(connectWaiters.values)
            }
            for w in waiters { w.resume(throwing: e) }
        }
    }

    private func disconnected(_ rc: Int32) {
        // The network thread connects again by itself: with the next Will.
        if let nextWill { try? setWill(nextWill()) }
        let waiter = lock.withLock {
            connected = false
            defer { ackWaiter = nil }
            return ackWaiter?.continuation
        }
        waiter?.resume(
            throwing: MQTTError(
                kind: .lost,
                message:
                    "the connection to \(where_) dropped with messages unacknowledged (\(String(cString: mosquitto_strerror(rc))))"
            ))
    }

    private func acknowledged(_ mid: Int32, reason: Int32) {
        let besideTheBatch: Bool = lock.withLock { aside.remove(mid) != nil }
        if besideTheBatch {
            if reason >= 0x80 {
                onAsideRefused?(
                    "\(where_) refused a message beside the rows (a status, discovery or instance message; MQTT 5 reason code 0x\(String(reason, radix: 16, uppercase: true)): \(String(cString: mosquitto_reason_string(reason)))); check the broker's ACL for this client"
                )
            }
            return
        }
        if reason >= 0x80 {
            // Refused: the batch fails (and is sent again); the cursor must not move over this message.
            let e = MQTTError(
                kind: .refused,
                message:
                    "\(where_) refused a message (MQTT 5 reason code 0x\(String(reason, radix: 16, uppercase: true)): \(String(cString: mosquitto_reason_string(reason))))"
            )
            let waiter: CheckedContinuation<Void, any Error>? = lock.withLock {
                rejected = rejected ?? e
                defer { ackWaiter = nil }
                return ackWaiter?.continuation
            }
            waiter?.resume(throwing: e)
            return
        }
        let waiter: CheckedContinuation<Void, any Error>? = lock.withLock {
            if pending.remove(mid) == nil { early.insert(mid) }
            guard pending.isEmpty, let w = ackWaiter else { return nil }
            ackWaiter = nil
            return w.continuation
        }
        waiter?.resume()
    }

    private func logged(_ text: String) {
        // A failed TLS handshake ends the attempt with no CONNACK: said now, not after the connect timeout.
        let tls = Self.isTLS(text)
        let waiters: [CheckedContinuation<Void, any Error>] = lock.withLock {
            lastLog = text
            guard tls, !connected else { return [] }
            defer { connectWaiters.removeAll() }
            return Array(connectWaiters.values)
        }
        let e = MQTTError(kind: .tls, message: "TLS with \(where_) failed: \(text)")
        for w in waiters { w.resume(throwing: e) }
    }
}
