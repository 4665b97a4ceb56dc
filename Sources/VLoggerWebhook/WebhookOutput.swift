import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import VLoggerConfig
import VLoggerOutbox
import VLoggerModel
import VLoggerStore

/// An HTTP endpoint as an output: each chosen row (an event of the kinds asked for, a finished audit, a write) is
/// POSTed as the JSON object the MQTT output publishes (`OutboxJSON`), signed with HMAC-SHA256 over the body in
/// `X-Vlogger-Signature: sha256=<hex>` when a secret is configured, with its row key in `X-Vlogger-Key`.
///
/// A 2xx answer acknowledges the row. A time-out, a refused connection, a 3xx (redirects are not followed), 401,
/// 403 or 407 (the receiver does not take this gateway's credentials: a secret rotated on one end first, a wrong
/// secret file; nothing about the row), 408, 429 or a 5xx ends the batch: the rows from there on are sent again
/// after the outputs' back-off (the cursor moved only over the acknowledged ones before, which are resent too;
/// receivers de-duplicate on the key). Any other 4xx is final for that row: it is recorded as an event (`error`,
/// `webhook-refused`), logged, and not sent again.
public final class WebhookOutput: OutboxConsumer, @unchecked Sendable {
    public let settings: WebhookSettings
    public let gateway: String
    let store: Store
    let client: HTTPClient
    let logger: Logger
    /// The signing secret, read again when its file changes (a rotation is used from the next delivery on).
    let secret: RotatingSecret

    public var name: String { settings.name }
    public var title: String { "webhook to \(Self.redacted(settings.url))" }
    public var tables: [SyncTable] { settings.tables }
    public var batchSize: Int { settings.batchSize }
    public var tablesIndependent: Bool { true }
    public var refusedRows: Int { refusedTotal.withLockedValue { $0 } }

    public init(
        settings: WebhookSettings, gateway: String, store: Store, logger: Logger = Logger(label: "vlogger.webhook")
    ) throws {
        self.settings = settings
        self.gateway = gateway
        self.store = store
        self.logger = logger
        do { secret = try settings.rotatingSecret() } catch {
            throw OutboxFailure(kind: "config", message: "\(error)")
        }
        var config = HTTPClient.Configuration()
        config.redirectConfiguration = .disallow
        // Every phase has a deadline: the connection, each read of the answer (a receiver that sends its headers and
        // then nothing), and the whole exchange (`send`), so a round and a shutdown never wait on a peer for longer.
        let timeout = TimeAmount.milliseconds(Int64(settings.timeoutMs))
        config.timeout = .init(connect: min(timeout, .seconds(10)), read: timeout)
        if let ca = settings.caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(ca)
            config.tlsConfiguration = tls
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
    }

    private let closed = NIOLockedValueBox(false)

    deinit {
        // An output made and never run (a configuration that failed later) still releases its client.
        if !closed.withLockedValue({ $0 }) { try? client.syncShutdown() }
    }

    /// The URL without its credentials (user information, query, path tokens: `URLRedaction`), for messages.
    static func redacted(_ url: String) -> String { URLRedaction.redact(url) }

    public func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
        try await body(Session(output: self))
    }

    public func describe(_ error: any Error) -> OutboxFailure {
        if let e = error as? OutboxFailure { return e }
        if error is HTTPClientError, "\(error)".contains("deadlineExceeded") || "\(error)".contains("readTimeout") {
            return OutboxFailure(kind: "timeout", message: "\(title): no answer within \(settings.timeoutMs) ms")
        }
        return OutboxFailure(kind: "connect", message: "\(title): \(error)")
    }

    public func shutdown() async {
        let first = closed.withLockedValue { done in
            defer { done = true }
            return !done
        }
        if first { try? await client.shutdown() }
    }

    /// The signature header's value: `sha256=` and the lower-case hex HMAC-SHA256 of the body.
    public static func signature(_ body: [UInt8], key: SymmetricKey) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: key)
        return "sha256=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether the row is one of those asked for.
    func wanted(_ table: SyncTable, _ row: OutboxRow) -> Bool {
        guard table == .events else { return true }
        // Its own refusals are never sent (an endpoint that refuses them would make one more each time).
        if row.value("name", in: table).text == "webhook-refused" { return false }
        return row.value("kind", in: table).text.map(settings.eventKinds.contains) ?? false
    }

    struct Session: OutboxSession {
        let output: WebhookOutput

        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            let o = output
            var delivered = 0
            var refused: [Event] = []
            for row in rows where o.wanted(table, row) {
                let rowKey = "\(row.gateway.isEmpty ? o.gateway : row.gateway)/\(table.rawValue)/\(row.id)"
                // Refused for good in an earlier try of this batch (which then failed on a later row): not again.
                if o.refusedBefore(rowKey) { continue }
                var body: [UInt8] = []
                OutboxJSON.append(table, row, gateway: o.gateway, to: &body)
                var used = o.secret.current
                var response = try await o.send(body, rowKey: rowKey, secret: used)
                // A 4xx just after the secret file changed: the receiver may already check the new secret. The row is
                // sent once more, signed with it, before it is given up.
                if (400..<500).contains(response.status), response.status != 408, response.status != 429,
                    o.secret.current != used
                {
                    used = o.secret.current
                    o.logger.notice(
                        "output \(o.name): \(o.title) answered \(response.status) to \(rowKey) after the secret file changed; sending it again with the new secret"
                    )
                    response = try await o.send(body, rowKey: rowKey, secret: used)
                }
                let code = response.status
                switch code {
                case 200..<300:
                    delivered += 1
                case 300..<400, 401, 403, 407, 408, 429, 500...:
                    // Redirects are not followed (a signed body goes where it was configured to): a moved
                    // endpoint is retried, and said, until the URL is corrected — not dropped. Credentials refused
                    // are the gateway's or the receiver's setting, not the row's: the rows wait until they match.
                    // Recorded refusals of this batch are kept even though the batch is sent again.
                    try o.record(refused)
                    let why =
                        [401, 403, 407].contains(code)
                        ? " (the receiver does not take this gateway's credentials: check secret-file on both ends; the rows wait)"
                        : ""
                    throw OutboxFailure(
                        kind: "http-\(code)",
                        message:
                            "\(o.title) answered \(code) \(response.reason) to \(rowKey)\(why); retrying with back-off"
                    )
                default:
                    o.logger.warning(
                        "output \(o.name): \(o.title) answered \(code) \(response.reason) to \(rowKey); not sent again"
                    )
                    o.rememberRefused(rowKey)
                    refused.append(
                        Event(
                            time: Millis.now(), gateway: o.gateway, uid: nil, kind: .error, name: "webhook-refused",
                            severity: .warning,
                            detail:
                                "output \(o.name): \(o.title) answered \(code) \(response.reason) to \(rowKey); not sent again (`vlogger outputs resend \(o.name) --from \(rowKey)` sends it and what follows again)"
                        ))
                }
            }
            try o.record(refused)
            return delivered
        }
    }

    /// `outputs status`: a HEAD request to the URL, within the timeout, signed with nothing and carrying no row. Any
    /// HTTP answer means the endpoint answers (a receiver that only takes POST says 405); a refused connection, a
    /// failed TLS handshake or silence is the failure.
    public func probe() async throws {
        var request = HTTPClientRequest(url: settings.url)
        request.method = .HEAD
        request.headers.add(name: "User-Agent", value: "vlogger (outputs status)")
        let deadline = NIODeadline.now() + .milliseconds(Int64(settings.timeoutMs))
        let response = try await client.execute(request, deadline: deadline)
        _ = try? await response.body.collect(upTo: 64 * 1024)
    }

    /// An answer's status line (its body is read and dropped within the deadline).
    struct Answer {
        var status: Int
        var reason: String
    }

    /// POSTs one row, signed with `secret`, and waits for the whole answer within `timeoutMs`: the connection, the
    /// head and the body (at most 64 KiB is read; a body that does not end in time fails the exchange, as a time-out).
    func send(_ body: [UInt8], rowKey: String, secret: String?) async throws -> Answer {
        var request = HTTPClientRequest(url: settings.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "vlogger")
        request.headers.add(name: "X-Vlogger-Key", value: rowKey)
        if let secret {
            request.headers.add(
                name: "X-Vlogger-Signature",
                value: WebhookOutput.signature(body, key: SymmetricKey(data: Data(secret.utf8))))
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        let deadline = NIODeadline.now() + .milliseconds(Int64(settings.timeoutMs))
        let client = self.client
        let prepared = request
        let timeoutMs = settings.timeoutMs
        let title = self.title
        return try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask {
                let response = try await client.execute(prepared, deadline: deadline)
                // The body is read (so the connection can be used again) and dropped; one over 64 KiB is not a failure.
                do { _ = try await response.body.collect(upTo: 64 * 1024) } catch is NIOTooManyBytesError {}
                return Answer(status: Int(response.status.code), reason: response.status.reasonPhrase)
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(timeoutMs))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let answer = first else {
                throw OutboxFailure(kind: "timeout", message: "\(title): no whole answer within \(timeoutMs) ms")
            }
            return answer
        }
    }

    private let refusedKeys = NIOLockedValueBox(Set<String>())
    private let refusedTotal = NIOLockedValueBox(0)

    /// Whether the endpoint refused this row for good already (this process's memory: a batch retried after a
    /// later row's 5xx does not send it, nor record it, twice).
    func refusedBefore(_ key: String) -> Bool { refusedKeys.withLockedValue { $0.contains(key) } }

    func rememberRefused(_ key: String) {
        refusedTotal.withLockedValue { $0 += 1 }
        refusedKeys.withLockedValue { keys in
            if keys.count >= 10_000 { keys.removeAll() }
            keys.insert(key)
        }
    }

    /// Stores the events of rows the endpoint refused for good.
    func record(_ events: [Event]) throws {
        guard !events.isEmpty else { return }
        var b = Batch()
        b.events = events
        do { _ = try store.write(b) } catch {
            throw OutboxFailure(kind: "store", message: "the local store: \(error)")
        }
    }
}
