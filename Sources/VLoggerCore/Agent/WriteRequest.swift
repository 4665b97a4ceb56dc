import Foundation
import ISO15693
import VLoggerStore

/// The JSON body of `POST /api/writes`: a queued write as another system asks for it.
public enum WriteRequest {
    public struct Invalid: Error, CustomStringConvertible, Sendable { public let description: String }

    /// `{"uid": "E0…", "block": "0xF9" | 249, "data": "hex", "flags": "option", "expires": "7d", "reader": "dock-3"}`;
    /// `"lock": true` locks the blocks after writing them, or without `data` locks the one block, and only
    /// with `"yes": true` (a lock is irreversible).
    public static func parse(_ data: Data, now: Millis = Millis.now()) throws(Invalid) -> QueuedWrite {
        guard let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw Invalid(description: "the body must be a JSON object") }
        let known: Set<String> = ["uid", "block", "data", "flags", "expires", "reader", "lock", "yes"]
        if let k = o.keys.first(where: { !known.contains($0) }) { throw Invalid(description: "unknown key '\(k)'; expected \(known.sorted().joined(separator: ", "))") }
        guard let uidText = o["uid"] as? String, let uid = try? UID(parsing: uidText) else { throw Invalid(description: "uid: a UID, E0 first (E008010000004212)") }
        let first: BlockNumber
        if let n = o["block"] as? Int, let b = BlockNumber(exactly: n) { first = b } else if let t = o["block"] as? String, let b = try? BlockNumber(parsing: t) { first = b } else {
            throw Invalid(description: "block: a block number, 0…0xFFFF (\"0xF9\" or 249)")
        }
        func flag(_ key: String) throws(Invalid) -> Bool {
            guard let v = o[key] else { return false }
            // Only JSON true and false: Foundation gives NSNumber for them and for 1 and 0 alike, and only a
            // boolean's NSNumber is of the boolean's own class (objCType "c"); a test holds that 1 is refused.
            guard let n = v as? NSNumber, type(of: n) == type(of: NSNumber(value: true)) else { throw Invalid(description: "\(key): true or false") }
            return n.boolValue
        }
        let lock = try flag("lock"), yes = try flag("yes")
        if o["yes"] != nil && !lock { throw Invalid(description: "yes: confirms a lock; there is no \"lock\": true") }
        if lock && !yes { throw Invalid(description: "lock: a lock is irreversible (the blocks can never be written again); send \"yes\": true with it") }
        var bytes: [UInt8] = []
        if !(lock && o["data"] == nil) {
            guard let hex = o["data"] as? String, let b = try? Hex.parse(hex), !b.isEmpty, b.count <= 2048 else {
                throw Invalid(description: "data: hex bytes, 1 to 2048 (whole blocks of the tag)")
            }
            bytes = b
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
        return QueuedWrite(created: now, uid: uid, first: first, data: bytes, flags: flags, reader: reader, expires: expires,
                           operation: !lock ? .write : bytes.isEmpty ? .lock : .writeLock)
    }

}
