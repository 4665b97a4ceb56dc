import Foundation
import Hummingbird
import Logging
import ISO15693
import NIOCore
import VLoggerCore
import VLoggerModel
import VLoggerStore

/// `GET /api/v1/stream`: readings and events as Server-Sent Events (WHATWG HTML, "Server-sent events"), as they
/// are committed. Each event's `data` is the row's JSON as every output has it (`OutboxJSON`: the export's names
/// plus `key` and `table`), its `event` is `reading` or `event`, and its `id` is `R-E`, the local ids of the last
/// reading and the last event sent. A client that reconnects with `Last-Event-ID: R-E` (browsers' EventSource
/// does it by itself) gets every row after those, so it misses nothing and gets nothing twice; without one, the
/// stream starts at the rows committed from then on. Filters: `reader`, `uid`, `kind` (`reading`, `event`, or
/// event kinds: `violation`, `arrival`, …; several comma-separated). A comment line every 15 s keeps proxies
/// from closing an idle stream.
///
/// Many clients, some hostile, cannot take the listener from the others: at most `[service] stream-clients` are
/// served at once (more are answered 503 with Retry-After); streams read the store and encode rows in turns (two
/// at a time, `StreamClients.turns`), so 500 clients replaying the whole store leave the worker threads to
/// `/healthz` and the API; and a client that has not taken a write within `[service] stream-write-timeout` is
/// dropped. What waits for a client is bounded: one batch (at most 100 rows of each table) and the connection's
/// write buffer (SwiftNIO's high-water mark, 64 KiB), beyond the kernel's socket buffer. A dropped client that
/// reconnects with its Last-Event-ID misses nothing.
enum StreamAPI {
    static func badRequest(_ e: StreamQuery.BadRequest) -> Response {
        let body = WireJSON.encode(WireError(e.message, parameter: e.parameter)) + [0x0A]
        return Response(
            status: .badRequest, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `access`: who may read (loopback, or the read token on another address).
    static func add(
        to router: Router<BasicRequestContext>, store: Store, gateway: String, wakeup: Wakeup, access: ReadAccess,
        clients: StreamClients
    ) {
        let router = router.group().add(middleware: ReadTokenMiddleware(access: access))
        router.get("/api/v1/stream") { request, _ -> Response in
            // A place among the clients, taken now (given back when the stream ends, or when this answer is dropped).
            guard let slot = StreamSlot(clients.metrics, limit: clients.limit) else {
                let body =
                    WireJSON.encode(
                        WireError(
                            "the stream serves \(clients.limit) clients at once ([service] stream-clients); try again later",
                            parameter: "")) + [0x0A]
                return Response(
                    status: .serviceUnavailable, headers: [.contentType: "application/json", .retryAfter: "5"],
                    body: .init(byteBuffer: ByteBuffer(bytes: body)))
            }
            let params = request.uri.queryParameters.map { (String($0.key), String($0.value)) }
            let q: StreamQuery
            do {
                q = try StreamQuery.parse(params, lastEventID: request.headers[.init("Last-Event-ID")!])
            } catch let e as StreamQuery.BadRequest {
                return badRequest(e)
            } catch { return badRequest(StreamQuery.BadRequest(parameter: "", message: "\(error)")) }
            let start: (Int64, Int64)
            if let after = q.after {
                start = after
            } else {
                start = await Blocking.run {
                    ((try? store.newestID(.readings)) ?? 0, (try? store.newestID(.events)) ?? 0)
                }
            }
            let headers: HTTPFields = [
                .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache",
            ]
            return Response(
                status: .ok, headers: headers,
                body: .init { writer in
                    do {
                        try await stream(
                            q, from: start, store: store, gateway: gateway, wakeup: wakeup, clients: clients,
                            to: &writer)
                        try await finish(&writer, within: clients.currentTimeout)
                    } catch let slow as SlowStreamClient {
                        slot.close(dropped: true)
                        if let n = clients.dropped.record(slow.description) {
                            clients.logger.warning("\(StreamClients.line(n, slow.description))")
                        }
                        throw slow
                    } catch {
                        slot.close(dropped: false)
                        throw error
                    }
                    slot.close(dropped: false)
                })
        }
    }

    /// Sends rows after `from` until the client goes or the service stops.
    static func stream(
        _ q: StreamQuery, from: (Int64, Int64), store: Store, gateway: String, wakeup: Wakeup,
        clients: StreamClients, to writer: inout any ResponseBodyWriter
    ) async throws {
        // Batches of 100 rows of each table (about 30 KB): what waits for a client that is slow to read.
        var follower = RowFollower(readings: q.readings, events: q.events, after: from, limit: 100)
        // The retry hint (ms) and a first comment, so that the client sees the stream open at once.
        try await send(
            ByteBuffer(string: "retry: 2000\n: vlogger stream from \(from.0)-\(from.1)\n\n"), to: &writer,
            within: clients.currentTimeout)
        var lastSent = ContinuousClock.now
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let seen = wakeup.current
            // Reading the store and encoding the rows in a turn; sending them after it (a slow client holds no turn).
            await clients.turns.take()
            let batch = await follower.next(store)
            var out: [UInt8] = []
            for (table, row, position) in batch.rows where wanted(q, table, row) {
                out += Array(
                    "id: \(position.0)-\(position.1)\nevent: \(table == .readings ? "reading" : "event")\ndata: ".utf8)
                OutboxJSON.append(table, row, gateway: gateway, jsonFields: TableDescription.jsonFields, to: &out)
                out += [0x0A, 0x0A]
            }
            // Rows filtered out: a comment says where the stream is (EventSource resumes from the last event it
            // got, so a resume scans those rows again; none is sent twice).
            if out.isEmpty && !batch.rows.isEmpty {
                out = Array(": at \(follower.after.0)-\(follower.after.1)\n\n".utf8)
            }
            await clients.turns.give()
            if !out.isEmpty {
                try await send(ByteBuffer(bytes: out), to: &writer, within: clients.currentTimeout)
                lastSent = .now
            } else if ContinuousClock.now - lastSent > .seconds(15) {
                try await send(ByteBuffer(string: ": keep-alive\n\n"), to: &writer, within: clients.currentTimeout)
                lastSent = .now
            }
            if !batch.full { await wakeup.wait(after: seen, timeoutMs: 1000) }
        }
    }

    /// Writes `buffer` to the client, which must take it within `limit` (SwiftNIO suspends a write while the
    /// connection's buffer is above its high-water mark, so a client that does not read holds the write);
    /// otherwise the write is cancelled and `SlowStreamClient` thrown, which closes the connection.
    static func send(_ buffer: ByteBuffer, to writer: inout any ResponseBodyWriter, within limit: Duration)
        async throws
    {
        let box = UncheckedBox(writer)
        guard
            try await Deadline.race(
                limit,
                {
                    var w = box.value
                    try await w.write(buffer)
                })
        else { throw SlowStreamClient(bytes: buffer.readableBytes, limit: limit) }
    }

    /// Ends the response (the chunked encoding's last chunk), with the same deadline as every write.
    static func finish(_ writer: inout any ResponseBodyWriter, within limit: Duration) async throws {
        let box = UncheckedBox(writer)
        guard try await Deadline.race(limit, { try await box.value.finish(nil) }) else {
            throw SlowStreamClient(bytes: 0, limit: limit)
        }
    }

    static func wanted(_ q: StreamQuery, _ table: SyncTable, _ row: OutboxRow) -> Bool {
        if let reader = q.reader, row.value("reader", in: table).text != reader { return false }
        if let uid = q.uid, row.value("uid", in: table).text != uid.description { return false }
        if table == .events, let kinds = q.eventKinds {
            guard let k = row.value("kind", in: table).text, kinds.contains(k) else { return false }
        }
        return true
    }
}

/// One live stream client's place among `[service] stream-clients`: taken (checked and counted at once) before the
/// answer, given back once, when the stream ends or when the answer is dropped without being streamed.
final class StreamSlot: @unchecked Sendable {
    private let metrics: ServiceMetrics
    private let lock = NSLock()
    private var open = true

    init?(_ metrics: ServiceMetrics, limit: Int) {
        guard metrics.streamTryOpen(limit: limit) else { return nil }
        self.metrics = metrics
    }

    /// Gives the place back (once; later calls do nothing).
    func close(dropped: Bool) {
        let was: Bool = lock.withLock {
            defer { open = false }
            return open
        }
        if was { metrics.streamClosed(dropped: dropped) }
    }

    deinit { close(dropped: false) }
}

/// A stream client did not take a write in time: it is dropped.
struct SlowStreamClient: Error, CustomStringConvertible {
    let bytes: Int
    let limit: Duration
    var description: String { "a client did not take \(bytes) bytes within \(limit)" }
}

/// What the live stream's clients share: how many may be served at once, the turns for reading the store, how long
/// a client may take to take a write, and the log of dropped clients (a line at most once a minute).
struct StreamClients: Sendable {
    let limit: Int
    let writeTimeout: Duration
    let turns: Turns
    let metrics: ServiceMetrics
    let dropped: RefusalLog
    let logger: Logger

    /// How long a write may wait for the client: `writeTimeout`, or at most 2 s once the service is stopping (a
    /// client that stopped reading does not hold the shutdown).
    var currentTimeout: Duration {
        Task.isShuttingDownGracefully ? min(writeTimeout, .seconds(2)) : writeTimeout
    }

    static func line(_ n: Int, _ what: String) -> String {
        "stream: dropped \(n) client\(n == 1 ? "" : "s") that did not read what was sent (the last: \(what); [service] stream-write-timeout); they may reconnect with their Last-Event-ID; said at most once a minute"
    }
}

/// Follows the store's readings and events in commit order from a pair of cursors (the local ids of the last
/// reading and event passed): each `next` gives the rows committed since, both tables merged by time (readings
/// first at the same millisecond), each row with the cursors after it. The live stream and `run --emit` use it.
struct RowFollower {
    let readings: Bool
    let events: Bool
    private(set) var after: (Int64, Int64)
    let limit: Int

    init(readings: Bool, events: Bool, after: (Int64, Int64), limit: Int = 500) {
        self.readings = readings
        self.events = events
        self.after = after
        self.limit = limit
    }

    /// The next rows; `full` when a table gave a whole batch (more may be waiting: ask again at once).
    mutating func next(_ store: Store) async -> (
        rows: [(table: SyncTable, row: OutboxRow, position: (Int64, Int64))], full: Bool
    ) {
        let (afterR, afterE, wantR, wantE, limit) = (after.0, after.1, readings, events, limit)
        let (rr, ee) = await Blocking.run { () -> ([OutboxRow], [OutboxRow]) in
            (
                wantR ? ((try? store.outbox(.readings, after: afterR, limit: limit)) ?? []) : [],
                wantE ? ((try? store.outbox(.events, after: afterE, limit: limit)) ?? []) : []
            )
        }
        var out: [(table: SyncTable, row: OutboxRow, position: (Int64, Int64))] = []
        for (table, row) in OutboxRow.mergedByTime(readings: rr, events: ee) {
            if table == .readings { after.0 = row.id } else { after.1 = row.id }
            out.append((table, row, after))
        }
        return (out, rr.count == limit || ee.count == limit)
    }
}
