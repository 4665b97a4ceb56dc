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
            do { write = try parse(Data(body.readableBytesView)) } catch { return json(["error": "\(error)"], .badRequest) }
            let id = await Blocking.run { try? store.enqueue(write) }
            guard let id else { return json(["error": "the store could not queue the write"], .serviceUnavailable) }
            logger.notice("write API: queued write \(id) to \(write.uid) (\(write.data.count) bytes from \(write.first))")
            return json(["id": id, "state": "queued"], .created)
        }
        router.get("/api/writes/:id") { request, context -> Response in
            guard authorised(request) else { return json(["error": "unauthorized"], .unauthorized) }
            guard let id = context.parameters.get("id", as: Int64.self) else { return json(["error": "not a write id"], .badRequest) }
            let found = await Blocking.run { (try? store.queuedWrites())?.first { $0.id == id } }
            guard let w = found else { return json(["error": "no write \(id)"], .notFound) }
            var o: [String: Any] = ["id": w.id, "uid": w.uid.description, "block": w.first.description, "data": Hex.format(w.data, separator: ""),
                                    "state": w.state.rawValue, "created": TimeSpec.format(w.created)]
            if let r = w.result { o["result"] = r }
            if let f = w.finished { o["finished"] = TimeSpec.format(f) }
            if let e = w.expires { o["expires"] = TimeSpec.format(e) }
            if let r = w.reader { o["reader"] = r }
            return json(o, .ok)
        }
    }

    struct Invalid: Error, CustomStringConvertible { let description: String }

    /// `{"uid": "E0…", "block": "0xF9" | 249, "data": "hex", "flags": "option", "expires": "7d", "reader": "dock-3"}`.
    static func parse(_ data: Data) throws(Invalid) -> QueuedWrite {
        guard let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw Invalid(description: "the body must be a JSON object") }
        let known: Set<String> = ["uid", "block", "data", "flags", "expires", "reader"]
        if let k = o.keys.first(where: { !known.contains($0) }) { throw Invalid(description: "unknown key '\(k)'; expected \(known.sorted().joined(separator: ", "))") }
        guard let uidText = o["uid"] as? String, let uid = try? UID(parsing: uidText) else { throw Invalid(description: "uid: a UID, E0 first (E008010000004212)") }
        let first: BlockNumber
        if let n = o["block"] as? Int, let b = BlockNumber(exactly: n) { first = b } else if let t = o["block"] as? String, let b = try? BlockNumber(parsing: t) { first = b } else {
            throw Invalid(description: "block: a block number, 0…0xFFFF (\"0xF9\" or 249)")
        }
        guard let hex = o["data"] as? String, let bytes = try? Hex.parse(hex), !bytes.isEmpty, bytes.count <= 2048 else {
            throw Invalid(description: "data: hex bytes, 1 to 2048 (whole blocks of the tag)")
        }
        var flags: RequestFlags?
        if let f = o["flags"] {
            guard let t = f as? String, let parsed = try? RequestFlags(parsing: t), !parsed.contains(.select) else { throw Invalid(description: "flags: names like option,high or a byte like 0x42 (no select)") }
            flags = parsed
        }
        var expires: Millis?
        if let e = o["expires"] {
            guard let t = e as? String, let d = try? DurationText.parse(t) else { throw Invalid(description: "expires: a duration like 7d or 12h") }
            expires = Millis.now() + d
        }
        let reader = o["reader"] as? String
        if o["reader"] != nil && reader == nil { throw Invalid(description: "reader: a reader id") }
        return QueuedWrite(created: Millis.now(), uid: uid, first: first, data: bytes, flags: flags, reader: reader, expires: expires)
    }

    static func json(_ object: [String: Any], _ status: HTTPResponse.Status) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
