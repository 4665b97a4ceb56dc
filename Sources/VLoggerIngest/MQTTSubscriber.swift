import Foundation
import TCPConnect
import VLoggerModel

#if canImport(Glibc)
    import Glibc
#endif

/// Why the subscriber's connection ended or never started.
public struct IngestError: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable {
        /// No TCP connection, or the broker closed it.
        case connection
        /// The broker refused the CONNECT or the subscription.
        case refused
        /// The broker sent what MQTT 3.1.1 does not allow.
        case protocolError = "protocol"
        /// The central database.
        case database
        /// A setting or argument.
        case settings
    }
    public let kind: Kind
    public let message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}

/// A blocking MQTT 3.1.1 subscriber over plain TCP that acknowledges QoS 1 messages only when told to: the fan-in
/// takes a batch (`receive`), commits it centrally, then acknowledges it (`acknowledge`). With `cleanSession`
/// false the broker keeps the subscription and every unacknowledged message while the subscriber is away, and
/// sends them again at the next connection (§4.4), so a crash between the commit and the PUBACK costs a message
/// delivered twice (which the central key refuses), never one lost.
///
/// One thread at a time uses it (the ingest's loop, off the cooperative pool); it is not shared.
public final class MQTTSubscriber: @unchecked Sendable {
    public struct Options: Sendable {
        public var host: String
        public var port: Int
        public var clientID: String
        public var username: String?
        public var password: [UInt8]?
        public var keepAliveSeconds = 30
        public var cleanSession = false
        public var filters: [String] = ["vlogger/#"]
        public var connectTimeoutMs = 5000
        /// The largest packet taken (the protocol's own limit by default: a broker's `message_size_limit` or
        /// `max_payload` bounds what it sends; a packet refused here would come back first at every connection).
        public var maxPacket = MQTTWire.maxRemainingLength
        public init(host: String, port: Int, clientID: String) {
            self.host = host
            self.port = port
            self.clientID = clientID
        }
    }

    public let options: Options
    var fd: Int32 = -1
    var reader: MQTTWire.Reader
    var queued: [MQTTWire.Publish] = []
    var lastSent = Clock.now
    var lastReceived = Clock.now
    var pingOut = false
    /// Packet ids of QoS 1 messages handed out by `receive` and not yet acknowledged: a message that comes again
    /// with one of them (NATS resends after its `ack_wait`, with DUP set) is the same message, already in hand,
    /// and is dropped, so that no id is acknowledged twice (a second PUBACK could acknowledge a new message the
    /// broker gave that id meanwhile).
    var held = Set<UInt16>()
    /// Packet ids acknowledged on this connection. A message with DUP set and one of these ids is a resend that
    /// crossed our PUBACK: it is handed out without its id (stored again, which the key refuses, and never
    /// acknowledged again: by now the broker may have given the id to a new message).
    var acked = Set<UInt16>()
    /// Whether the broker had a session for this client id (CONNACK's flag).
    public private(set) var sessionPresent = false

    enum Clock {
        static var now: UInt64 {
            var t = timespec()
            clock_gettime(CLOCK_MONOTONIC, &t)
            return UInt64(t.tv_sec) * 1000 + UInt64(t.tv_nsec) / 1_000_000
        }
    }

    public init(_ options: Options) {
        self.options = options
        reader = MQTTWire.Reader(maxPacket: options.maxPacket)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    public var isConnected: Bool { fd >= 0 }
    var name: String { "mqtt://" + HostPort.text(options.host, options.port) }

    /// TCP, CONNECT, CONNACK, SUBSCRIBE at QoS 1 and its SUBACK. Messages the broker sends before the SUBACK (those
    /// a kept session held) are kept for `receive`.
    public func connect() throws(IngestError) {
        close(graceful: false)
        reader = MQTTWire.Reader(maxPacket: options.maxPacket)
        queued = []
        held = []
        acked = []
        pingOut = false
        fd = try Self.tcp(options.host, options.port, timeoutMs: options.connectTimeoutMs, name: name)
        let deadline = Clock.now + UInt64(options.connectTimeoutMs)
        do throws(IngestError) {
            let hello: [UInt8]
            do {
                hello = try MQTTWire.connect(
                    clientID: options.clientID, cleanSession: options.cleanSession,
                    keepAliveSeconds: options.keepAliveSeconds, username: options.username, password: options.password)
            } catch { throw IngestError(.settings, "\(name): \(error.reason)") }
            try send(hello)
            guard case .connack(let present, let code) = try awaitPacket(until: deadline, what: "CONNACK") else {
                throw IngestError(.protocolError, "\(name): the broker's first packet was not CONNACK")
            }
            guard code == 0 else {
                throw IngestError(.refused, "\(name) refused the connection: \(MQTTWire.connackReason(code))")
            }
            sessionPresent = present
            let packet: [UInt8]
            do {
                packet = try MQTTWire.subscribe(packetID: 1, filters: options.filters.map { ($0, 1) })
            } catch { throw IngestError(.settings, "\(name): \(error.reason)") }
            try send(packet)
            while true {
                switch try awaitPacket(until: deadline, what: "SUBACK") {
                case .suback(1, let codes):
                    guard codes.count == options.filters.count, !codes.contains(0x80) else {
                        throw IngestError(
                            .refused, "\(name) refused the subscription to \(options.filters.joined(separator: ", "))")
                    }
                    guard !codes.contains(0) else {
                        throw IngestError(
                            .refused,
                            "\(name) granted QoS 0 for \(options.filters.joined(separator: ", ")): messages would not be kept while the ingest is away"
                        )
                    }
                    return
                case .publish(let m): queued.append(m)
                case .pingresp: continue
                default: throw IngestError(.protocolError, "\(name): an unexpected packet before SUBACK")
                }
            }
        } catch {
            close(graceful: false)
            throw error
        }
    }

    /// The next messages: waits up to `waitMs` for the first; the batch then closes when it has `max`, when
    /// `lingerMs` have passed since its first message, or when nothing arrived for `idleMs` (a broker that stops at
    /// its window of unacknowledged messages, or a quiet fleet). An empty list when none came; the keep-alive is
    /// kept meanwhile.
    /// `maxBytes` closes it too once its payloads add up to that many bytes (a message may hold a batch of rows).
    public func receive(max: Int, waitMs: Int, lingerMs: Int, idleMs: Int = 20, maxBytes: Int = .max)
        throws(IngestError) -> [MQTTWire.Publish]
    {
        guard fd >= 0 else { throw IngestError(.connection, "\(name): not connected") }
        var out: [MQTTWire.Publish] = []
        let early = Swift.min(max, queued.count)
        for m in queued.prefix(early) { take(m, into: &out) }
        queued.removeFirst(early)
        var closes = Clock.now + UInt64(out.isEmpty ? waitMs : lingerMs)
        var bytes = out.reduce(0) { $0 + $1.payload.count }
        while out.count < max && bytes < maxBytes {
            let before = out.count
            while out.count < max, bytes < maxBytes, let p = try nextBuffered() {
                if case .publish(let m) = p {
                    take(m, into: &out)
                    bytes += m.payload.count
                }
            }
            if before == 0 && !out.isEmpty { closes = Clock.now + UInt64(lingerMs) }
            if out.count >= max || bytes >= maxBytes { break }
            try keepAlive()
            let now = Clock.now
            guard now < closes else { break }
            let wait = out.isEmpty ? closes - now : Swift.min(closes - now, UInt64(idleMs))
            guard try fill(timeoutMs: Int(Swift.min(wait, 1000))) else {
                if !out.isEmpty && wait <= UInt64(idleMs) { break }
                continue
            }
        }
        return out
    }

    func take(_ m: MQTTWire.Publish, into out: inout [MQTTWire.Publish]) {
        guard let id = m.packetID else { return out.append(m) }
        if held.contains(id) { return }
        if m.dup && acked.contains(id) {
            var copy = m
            copy.packetID = nil
            return out.append(copy)
        }
        acked.remove(id)
        held.insert(id)
        out.append(m)
    }

    /// PUBACK for each QoS 1 message, in the order they came (§4.6), in one write.
    public func acknowledge(_ messages: [MQTTWire.Publish]) throws(IngestError) {
        let out = pubacks(messages)
        guard !out.isEmpty else { return }
        try send(out)
    }

    /// The PUBACKs of `messages`: one per id held (an id is acknowledged once), which then counts as acknowledged.
    func pubacks(_ messages: [MQTTWire.Publish]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(messages.count * 4)
        for m in messages {
            if let id = m.packetID, held.remove(id) != nil {
                out += MQTTWire.puback(id)
                acked.insert(id)
            }
        }
        return out
    }

    /// Closes the connection; `graceful` sends DISCONNECT first (the broker then keeps the session without
    /// publishing a Will).
    public func close(graceful: Bool) {
        guard fd >= 0 else { return }
        if graceful {
            _ = MQTTWire.disconnect.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        Glibc.close(fd)
        fd = -1
    }

    // MARK: The socket

    /// A packet already read, or nil; PINGRESP and PUBACK are taken here.
    func nextBuffered() throws(IngestError) -> MQTTWire.Packet? {
        while true {
            let p: MQTTWire.Packet?
            do { p = try reader.next() } catch {
                close(graceful: false)
                throw IngestError(.protocolError, "\(name): \(error)")
            }
            guard let p else { return nil }
            switch p {
            case .pingresp, .puback, .unsuback, .suback: continue
            case .connack:
                close(graceful: false)
                throw IngestError(.protocolError, "\(name): a second CONNACK")
            case .publish: return p
            }
        }
    }

    func awaitPacket(until deadline: UInt64, what: String) throws(IngestError) -> MQTTWire.Packet {
        while true {
            let p: MQTTWire.Packet?
            do { p = try reader.next() } catch { throw IngestError(.protocolError, "\(name): \(error)") }
            if let p { return p }
            let now = Clock.now
            guard now < deadline else { throw IngestError(.connection, "\(name): no \(what) within the time allowed") }
            _ = try fill(timeoutMs: Int(deadline - now))
        }
    }

    /// The keep-alive alone, for a caller busy elsewhere (a batch being written): what arrived is read into the
    /// buffer (the next `receive` takes it), a PINGREQ goes when due.
    public func tend() throws(IngestError) {
        guard fd >= 0 else { throw IngestError(.connection, "\(name): not connected") }
        try keepAlive()
    }

    /// A PINGREQ when nothing was sent for half the keep-alive; the connection is given up when the broker said
    /// nothing for one and a half (§3.1.2.10 lets the broker wait that long before it gives up on us).
    func keepAlive() throws(IngestError) {
        let k = UInt64(options.keepAliveSeconds) * 1000
        guard k > 0 else { return }
        // What arrived while the caller was busy (a long commit) counts: read it before judging the broker silent.
        if Clock.now - lastReceived > k + k / 2 { _ = try fill(timeoutMs: 0) }
        let now = Clock.now
        if now - lastReceived > k + k / 2 {
            close(graceful: false)
            throw IngestError(.connection, "\(name): the broker said nothing for \(options.keepAliveSeconds * 3 / 2) s")
        }
        if now - lastSent >= k / 2 { try send(MQTTWire.pingreq) }
    }

    /// Reads what arrived within `timeoutMs`; false when nothing did.
    func fill(timeoutMs: Int) throws(IngestError) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let r = poll(&p, 1, Int32(Swift.max(0, timeoutMs)))
        if r < 0 {
            if errno == EINTR { return false }
            let reason = String(cString: strerror(errno))
            close(graceful: false)
            throw IngestError(.connection, "\(name): \(reason)")
        }
        guard r == 1 else { return false }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 {
            let reason = n == 0 ? "the broker closed the connection" : String(cString: strerror(errno))
            if n < 0, errno == EINTR || errno == EAGAIN { return false }
            close(graceful: false)
            throw IngestError(.connection, "\(name): \(reason)")
        }
        reader.append(buffer[0..<n])
        lastReceived = Clock.now
        return true
    }

    func send(_ bytes: [UInt8]) throws(IngestError) {
        var offset = 0
        while offset < bytes.count {
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&p, 1, 10_000) == 1 else {
                close(graceful: false)
                throw IngestError(.connection, "\(name): the broker takes no data for 10 s")
            }
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                let reason = String(cString: strerror(errno))
                close(graceful: false)
                throw IngestError(.connection, "\(name): \(reason)")
            }
            offset += n
        }
        lastSent = Clock.now
    }

    /// A non-blocking TCP connection to `host:port` within `timeoutMs`.
    static func tcp(_ host: String, _ port: Int, timeoutMs: Int, name: String) throws(IngestError) -> Int32 {
        guard (1...65535).contains(port) else { throw IngestError(.settings, "\(name): the port must be 1…65535") }
        switch TCPConnect.open(host: host, port: port, timeoutMs: timeoutMs) {
        case .success(let fd): return fd
        case .failure(let f): throw IngestError(.connection, "\(name): \(f.reason)")
        }
    }
}
