import Foundation
import Hummingbird
import ISO15693
import Logging
import NIOCore
import VLoggerCore
import VLoggerStore

/// `POST /api/writes` (queue a write, as `vlogger write --when-seen` does) and `GET /api/writes/ID`, for the
/// plant's other systems. Only with `Authorization: Bearer <token>` from `[service] api-token-file`; without
/// that setting the endpoints do not exist. A wrong or missing token is 401 and logged without the token.
enum WriteAPI {
    static func add(to router: Router<BasicRequestContext>, token: String, store: Store, logger: Logger) {
        let expected = Array("Bearer \(token)".utf8)
        @Sendable func authorised(_ request: Request) -> Bool {
            let given = Array((request.headers[.authorization] ?? "").utf8)
            // Compared in time independent of where the first difference is.
            var diff = UInt8(given.count == expected.count ? 0 : 1)
            for i in 0..<max(given.count, expected.count) {
                diff |= (i < given.count ? given[i] : 0) ^ (i < expected.count ? expected[i] : 0)
            }
            if diff != 0 {
                logger.warning("write API: refused \(request.method) \(request.uri.path): \(request.headers[.authorization] == nil ? "no" : "a wrong") bearer token")
            }
            return diff == 0
        }
        router.post("/api/writes") { request, context -> Response in
            guard authorised(request) else { return json(["error": "unauthorized"], .unauthorized) }
            var request = request
            let body: ByteBuffer
            do { body = try await request.collectBody(upTo: 65_536) } catch { return json(["error": "the body is larger than 64 KiB"], .contentTooLarge) }
            let write: QueuedWrite
            do { write = try WriteRequest.parse(Data(body.readableBytesView)) } catch { return json(["error": "\(error)"], .badRequest) }
            let id = await Blocking.run { try? store.enqueue(write) }
            guard let id else { return json(["error": "the store could not queue the write"], .serviceUnavailable) }
            logger.notice("write API: queued \(write.operation.rawValue) \(id) to \(write.uid) (\(write.data.count) bytes from \(write.first))")
            return json(["id": id, "state": "queued"], .created)
        }
        router.get("/api/writes/:id") { request, context -> Response in
            guard authorised(request) else { return json(["error": "unauthorized"], .unauthorized) }
            guard let id = context.parameters.get("id", as: Int64.self) else { return json(["error": "not a write id"], .badRequest) }
            let found = await Blocking.run { try? store.queuedWrite(id) }
            guard let w = found ?? nil else { return json(["error": "no write \(id)"], .notFound) }
            var o: [String: Any] = ["id": w.id, "uid": w.uid.description, "block": w.first.description, "data": Hex.format(w.data, separator: ""),
                                    "operation": w.operation.rawValue, "state": w.state.rawValue, "created": TimeSpec.format(w.created)]
            if let r = w.result { o["result"] = r }
            if let f = w.finished { o["finished"] = TimeSpec.format(f) }
            if let e = w.expires { o["expires"] = TimeSpec.format(e) }
            if let r = w.reader { o["reader"] = r }
            return json(o, .ok)
        }
    }

    static func json(_ object: [String: Any], _ status: HTTPResponse.Status) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
