import Foundation
import Hummingbird
import ISO15693
import Logging
import NIOCore
import VLoggerCore
import VLoggerStore
import VLoggerModel

/// The write API's bearer token as the service has it now: read at start and again on SIGHUP, so a rotated
/// token takes effect at once and the old one stops working; nil when `[service] api-token-file` is gone.
final class APIToken: @unchecked Sendable {
    private let lock = NSLock()
    private var token: [UInt8]?

    init(_ token: String?) { self.token = token.map { Array($0.utf8) } }

    var isSet: Bool { lock.withLock { token != nil } }

    func replace(_ new: String?) { lock.withLock { token = new.map { Array($0.utf8) } } }

    /// Whether an Authorization header carries the token: the scheme `Bearer` in any case (RFC 7235 §2.1: the
    /// scheme is case-insensitive), one space, the token compared in time independent of where it differs.
    func accepts(_ header: String?) -> Bool {
        guard let expected = lock.withLock({ token }), let header else { return false }
        let bytes = Array(header.utf8)
        guard bytes.count > 7, String(decoding: bytes[0..<6], as: UTF8.self).lowercased() == "bearer", bytes[6] == 0x20
        else { return false }
        let given = Array(bytes[7...])
        var diff = UInt8(given.count == expected.count ? 0 : 1)
        for i in 0..<max(given.count, expected.count) {
            diff |= (i < given.count ? given[i] : 0) ^ (i < expected.count ? expected[i] : 0)
        }
        return diff == 0
    }
}

/// Refused requests, logged at most once a minute with a count: 500 wrong tokens are one warning line, not 500.
/// The first refusal is logged at once; later ones are counted, and the count is said when the next line is
/// due (a refusal a minute or more after the last line) or by `drain()`, which `RefusalLogJob` calls once a
/// minute and at shutdown, so a burst is never left unreported.
final class RefusalLog: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var last = ""
    private var lastLogMs: Millis?
    let intervalMs: Millis
    private let now: @Sendable () -> Millis

    init(
        intervalMs: Millis = 60_000,
        now: @escaping @Sendable () -> Millis = { Millis(DispatchTime.now().uptimeNanoseconds / 1_000_000) }
    ) {
        self.intervalMs = intervalMs
        self.now = now
    }

    /// Counts a refusal (`what`: the request, as the log line names the last one); returns how many to report
    /// when a line is due now (nil: not yet).
    func record(_ what: String = "") -> Int? {
        lock.withLock {
            count += 1
            last = what
            let t = now()
            guard lastLogMs.map({ t - $0 >= intervalMs }) ?? true else { return nil }
            defer { count = 0 }
            lastLogMs = t
            return count
        }
    }

    /// The refusals counted since the last line, and the last one's description (nil when there were none);
    /// the count starts again from zero.
    func drain() -> (count: Int, last: String)? {
        lock.withLock {
            guard count > 0 else { return nil }
            defer { count = 0 }
            lastLogMs = now()
            return (count, last)
        }
    }

    static func line(_ n: Int, _ what: String) -> String {
        "write API: refused \(n) request\(n == 1 ? "" : "s") with a missing or wrong bearer token (the last: \(what)); further refusals are counted and logged at most once a minute"
    }
}

/// `POST /api/writes` (queue a write, as `vlogger write --when-seen` does) and `GET /api/writes/ID`, for the
/// plant's other systems. Only with `Authorization: Bearer <token>` from `[service] api-token-file`; without
/// that setting the endpoints do not exist. A wrong or missing token is 401 and logged without the token.
///
/// Answers: 201 with the id (200 with the same id when an `Idempotency-Key` was used before); 400 for a body
/// that is not a valid request (the reason names the key); 422 for a valid request that cannot be carried out
/// (a reader this gateway does not have, a block past the end of a known tag, a full queue); 503 only when the
/// store itself fails (busy, disk), which is worth a retry.
enum WriteAPI {
    static func add(
        to router: Router<BasicRequestContext>, token: APIToken, readers: Set<String>, store: Store, logger: Logger,
        refusals: RefusalLog, queued: Wakeup
    ) {
        @Sendable func authorised(_ request: Request) -> Bool {
            if token.accepts(request.headers[.authorization]) { return true }
            let what =
                "\(request.method) \(request.uri.path), \(request.headers[.authorization] == nil ? "no" : "a wrong") token"
            if let n = refusals.record(what) { logger.warning("\(RefusalLog.line(n, what))") }
            return false
        }
        // POST /api/v1/writes, and its old path /api/writes, kept as an alias for one release.
        let queue: @Sendable (Request, BasicRequestContext) async -> Response = { request, context in
            guard authorised(request) else { return json(WireJSON.encode(WireError("unauthorized")), .unauthorized) }
            var request = request
            let body: ByteBuffer
            do { body = try await request.collectBody(upTo: 65_536) } catch {
                return json(WireJSON.encode(WireError("the body is larger than 64 KiB")), .contentTooLarge)
            }
            let write: QueuedWrite
            do throws(WriteRequest.Invalid) {
                var asked = try WriteRequest.parse(Data(body.readableBytesView), readers: readers)
                asked.origin = "api"
                write = asked
            } catch {
                return json(
                    WireJSON.encode(WireError(error.description)),
                    error.impossible ? .unprocessableContent : .badRequest)
            }
            var key: String?
            if let k = request.headers.first(where: { $0.name.canonicalName == "idempotency-key" })?.value {
                guard (1...200).contains(k.utf8.count),
                    k.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
                else {
                    return json(
                        WireJSON.encode(WireError("Idempotency-Key: 1 to 200 visible ASCII characters")), .badRequest)
                }
                key = k
            }
            let result: Result<(id: Int64, replayed: Bool, state: QueuedWrite.State), StoreError> = await Blocking.run {
                [key] in
                do throws(StoreError) { return .success(try store.enqueue(write, idempotencyKey: key)) } catch {
                    return .failure(error)
                }
            }
            switch result {
            case let .success((id, replayed, state)):
                if replayed {
                    return json(WireJSON.encode(QueuedJSON(id: id, state: state.rawValue, replayed: true)), .ok)
                }
                logger.notice(
                    "write API: queued \(write.operation.rawValue) \(id) to \(write.uid) (\(write.data.count) bytes from \(write.first))"
                )
                // Committed: the polling jobs' copy of the queue is refreshed now, not at the next 2 s poll.
                queued.signal()
                return json(WireJSON.encode(QueuedJSON(id: id, state: "queued", replayed: nil)), .created)
            case let .failure(e):
                // SQLite's own failures (code set) may pass; the store's refusals (no code) will not.
                return json(
                    WireJSON.encode(WireError(e.message)),
                    e.code == nil && !e.isFatal ? .unprocessableContent : .serviceUnavailable)
            }
        }
        router.post("/api/v1/writes", use: queue)
        router.post("/api/writes", use: queue)
        // The old path of one write (with the write token; /api/v1/writes/ID is the read API's).
        router.get("/api/writes/:id") { request, context -> Response in
            guard authorised(request) else { return json(WireJSON.encode(WireError("unauthorized")), .unauthorized) }
            guard let id = context.parameters.get("id", as: Int64.self) else {
                return json(WireJSON.encode(WireError("not a write id")), .badRequest)
            }
            let found = await Blocking.run { try? store.queuedWrite(id) }
            guard let w = found ?? nil else { return json(WireJSON.encode(WireError("no write \(id)")), .notFound) }
            return json(WireJSON.encode(QueuedWriteJSON(w)), .ok)
        }
    }

    static func json(_ bytes: [UInt8], _ status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

/// What POST /api/v1/writes answers: the write's id and state (`replayed` when the idempotency key was seen).
struct QueuedJSON: Encodable {
    var id: Int64
    var state: String
    var replayed: Bool?
}
