import Foundation
import ISO15693
import VLoggerStore

/// The JSON body of `POST /api/writes`: a queued write as another system asks for it.
public enum WriteRequest {
    public struct Invalid: Error, CustomStringConvertible, Sendable { public let description: String }

    /// `{"uid": "E0…", "block": "0xF9" | 249, "data": "hex", "flags": "option", "expires": "7d", "reader": "dock-3"}`.
    public static func parse(_ data: Data, now: Millis = Millis.now()) throws(Invalid) -> QueuedWrite {
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
            expires = now + d
        }
        let reader = o["reader"] as? String
        if o["reader"] != nil && reader == nil { throw Invalid(description: "reader: a reader id") }
        return QueuedWrite(created: now, uid: uid, first: first, data: bytes, flags: flags, reader: reader, expires: expires)
    }

}
