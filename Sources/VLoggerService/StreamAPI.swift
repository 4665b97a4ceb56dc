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
        var body: [UInt8] = Array("{\"error\":".utf8)
        JSONText.appendQuoted(e.message, to: &body)
        body += Array(",\"parameter\":".utf8)
        JSONText.appendQuoted(e.parameter, to: &body)
        body += Array("}\n".utf8)
        return Response(
            status: .badRequest, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `loopback`: whether the listener is on a loopback address; elsewhere the read API answers 403 (vlogger serves
    /// no TLS: put a reverse proxy with TLS and authentication in front, on the same machine).
    static func add(
        to router: Router<BasicRequestContext>, store: Store, gateway: String, wakeup: Wakeup, loopback: Bool
    ) {
        router.get("/api/v1/stream") { request, _ -> Response in
            guard loopback else {
                return Response(
                    status: .forbidden, headers: [.contentType: "application/json"],
                    body: .init(
                        byteBuffer: ByteBuffer(
                            string:
                                "{\"error\":\"the read API is served on a loopback listener only; put a reverse proxy with TLS and authentication in front\"}\n"
                        )))
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
        var (r, e) = from
        // The retry hint (ms) and a first comment, so that the client sees the stream open at once.
        try await writer.write(ByteBuffer(string: "retry: 2000\n: vlogger stream from \(r)-\(e)\n\n"))
        var lastSent = ContinuousClock.now
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let seen = wakeup.current
            let (afterR, afterE) = (r, e)
            let (readings, events) = await Blocking.run { () -> ([OutboxRow], [OutboxRow]) in
                let rr = q.readings ? ((try? store.outbox(.readings, after: afterR, limit: 500)) ?? []) : []
                let ee = q.events ? ((try? store.outbox(.events, after: afterE, limit: 500)) ?? []) : []
                return (rr, ee)
            }
            // Both tables in time order (readings first at the same millisecond), each in its own id order.
            var i = 0, j = 0
            var out: [UInt8] = []
            while i < readings.count || j < events.count {
                let takeReading =
                    j >= events.count || (i < readings.count && readings[i].time <= events[j].time)
                let row = takeReading ? readings[i] : events[j]
                let table: SyncTable = takeReading ? .readings : .events
                if takeReading {
                    r = row.id
                    i += 1
                } else {
                    e = row.id
                    j += 1
                }
                guard wanted(q, table, row) else { continue }
                out += Array("id: \(r)-\(e)\nevent: \(takeReading ? "reading" : "event")\ndata: ".utf8)
                OutboxJSON.append(table, row, gateway: gateway, jsonFields: [NDEFFields.records], to: &out)
                out += [0x0A, 0x0A]
            }
            // Rows filtered out: a comment says where the stream is (EventSource resumes from the last event it
            // got, so a resume scans those rows again; none is sent twice).
            if out.isEmpty && (!readings.isEmpty || !events.isEmpty) {
                out = Array(": at \(r)-\(e)\n\n".utf8)
            }
            if !out.isEmpty {
                try await writer.write(ByteBuffer(bytes: out))
                lastSent = .now
            } else if ContinuousClock.now - lastSent > .seconds(15) {
                try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                lastSent = .now
            }
            if readings.count < 500 && events.count < 500 {
                await wakeup.wait(after: seen, timeoutMs: 1000)
            }
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
