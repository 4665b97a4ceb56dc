import Foundation
import Hummingbird
import ISO15693
import NIOCore
import ServiceLifecycle
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
enum StreamAPI {
    static func badRequest(_ e: StreamQuery.BadRequest) -> Response {
        let body = WireJSON.encode(WireError(e.message, parameter: e.parameter)) + [0x0A]
        return Response(
            status: .badRequest, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `access`: who may read (loopback, or the read token on another address).
    static func add(
        to router: Router<BasicRequestContext>, store: Store, gateway: String, wakeup: Wakeup, access: ReadAccess
    ) {
        router.get("/api/v1/stream") { request, _ -> Response in
            if let refused = access.refusal(request) { return refused }
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
                    try await stream(q, from: start, store: store, gateway: gateway, wakeup: wakeup, to: &writer)
                    try await writer.finish(nil)
                })
        }
    }

    /// Sends rows after `from` until the client goes or the service stops.
    static func stream(
        _ q: StreamQuery, from: (Int64, Int64), store: Store, gateway: String, wakeup: Wakeup,
        to writer: inout any ResponseBodyWriter
    ) async throws {
        var follower = RowFollower(readings: q.readings, events: q.events, after: from)
        // The retry hint (ms) and a first comment, so that the client sees the stream open at once.
        try await writer.write(ByteBuffer(string: "retry: 2000\n: vlogger stream from \(from.0)-\(from.1)\n\n"))
        var lastSent = ContinuousClock.now
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let seen = wakeup.current
            let batch = await follower.next(store)
            var out: [UInt8] = []
            for (table, row, position) in batch.rows where wanted(q, table, row) {
                out += Array(
                    "id: \(position.0)-\(position.1)\nevent: \(table == .readings ? "reading" : "event")\ndata: ".utf8)
                OutboxJSON.append(table, row, gateway: gateway, jsonFields: [NDEFFields.records], to: &out)
                out += [0x0A, 0x0A]
            }
            // Rows filtered out: a comment says where the stream is (EventSource resumes from the last event it
            // got, so a resume scans those rows again; none is sent twice).
            if out.isEmpty && !batch.rows.isEmpty {
                out = Array(": at \(follower.after.0)-\(follower.after.1)\n\n".utf8)
            }
            if !out.isEmpty {
                try await writer.write(ByteBuffer(bytes: out))
                lastSent = .now
            } else if ContinuousClock.now - lastSent > .seconds(15) {
                try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                lastSent = .now
            }
            if !batch.full { await wakeup.wait(after: seen, timeoutMs: 1000) }
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

/// Follows the store's readings and events in commit order from a pair of cursors (the local ids of the last
/// reading and event passed): each `next` gives the rows committed since, both tables merged by time (readings
/// first at the same millisecond), each row with the cursors after it. The live stream and `run --emit` use it.
struct RowFollower {
    let readings: Bool
    let events: Bool
    private(set) var after: (Int64, Int64)
    let limit = 500

    init(readings: Bool, events: Bool, after: (Int64, Int64)) {
        self.readings = readings
        self.events = events
        self.after = after
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

/// `vlogger run --emit jsonl`: the rows this run commits, also on stdout, one JSON line each (the same JSON as
/// the stream, MQTT and webhooks), for a program that reads the gateway's output (Telegraf's `inputs.execd`,
/// Node-RED's exec node). It stops after the store writer and prints what the last commit brought.
struct EmitJob: Service {
    let store: Store
    let gateway: String
    let wakeup: Wakeup
    let start: (Int64, Int64)

    func run() async {
        var follower = RowFollower(readings: true, events: true, after: start)
        func pass() async -> Bool {
            let batch = await follower.next(store)
            guard !batch.rows.isEmpty else { return false }
            var out: [UInt8] = []
            for (table, row, _) in batch.rows {
                OutboxJSON.append(table, row, gateway: gateway, jsonFields: [NDEFFields.records], to: &out)
                out.append(0x0A)
            }
            FileHandle.standardOutput.write(Data(out))
            return batch.full
        }
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let seen = wakeup.current
            if await pass() { continue }
            await cancelWhenGracefulShutdown { await wakeup.wait(after: seen, timeoutMs: 1000) }
        }
        while await pass() {}
    }
}
