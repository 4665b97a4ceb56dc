import Foundation
import ISO15693
import VLoggerStore
import VLoggerModel

/// The JSON body of `POST /api/writes`: a queued write as another system asks for it.
public enum WriteRequest {
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public let description: String
        /// True for a well-formed request that cannot be carried out (HTTP 422), false for a malformed one (400).
        public var impossible = false
        public init(description: String, impossible: Bool = false) {
            self.description = description
            self.impossible = impossible
        }
    }

    /// How long a queued write may wait for its tag at the most (`expires`, `--expires`).
    public static let longestExpiryMs: Millis = 366 * 86_400_000

    /// `expires` as a duration from now: more than nothing, at most `longestExpiryMs`.
    public static func expiry(_ text: String, now: Millis) throws(Invalid) -> Millis {
        let d: Millis
        do { d = try DurationText.parse(text) } catch { throw Invalid(description: "expires: \(error)") }
        guard d > 0 else {
            throw Invalid(
                description: "expires: '\(text)' is already over; give a time to wait (e.g. 12h, 7d)", impossible: true)
        }
        guard d <= longestExpiryMs else {
            throw Invalid(
                description: "expires: '\(text)' is longer than a year (366d), the longest a write may wait",
                impossible: true)
        }
        return now + d
    }

    /// `{"uid": "E0…", "block": "0xF9" | 249, "data": "hex", "flags": "option", "expires": "7d", "reader": "dock-3"}`;
    /// `"lock": true` locks the blocks after writing them, or without `data` locks the one block, and only
    /// with `"yes": true` (a lock is irreversible). Read strictly (`StrictJSON`): each key once, each value of
    /// its own type (`"block": false` is not block 0, `2.49e2` not 249). `readers`: the gateway's reader ids,
    /// when known; a write for another reader would wait for ever.
    public static func parse(_ data: Data, now: Millis = Millis.now(), readers: Set<String>? = nil) throws(Invalid)
        -> QueuedWrite
    {
        let body: StrictJSON
        do { body = try StrictJSON.parse(data) } catch { throw Invalid(description: "\(error)") }
        guard let members = body.members else {
            throw Invalid(description: "the body must be a JSON object, not \(body.typeName)")
        }
        let known: Set<String> = ["uid", "block", "data", "flags", "expires", "reader", "lock", "yes"]
        if let k = members.first(where: { !known.contains($0.key) }) {
            throw Invalid(description: "unknown key '\(k.key)'; expected \(known.sorted().joined(separator: ", "))")
        }
        func string(_ key: String, _ expected: String) throws(Invalid) -> String? {
            guard let v = body[key] else { return nil }
            guard case let .string(t) = v else {
                throw Invalid(description: "\(key): \(expected), as a JSON string (not \(v.typeName))")
            }
            return t
        }
        guard let uidText = try string("uid", "a UID, E0 first (E008010000004212)") else {
            throw Invalid(description: "uid: missing; a UID, E0 first (E008010000004212)")
        }
        guard let uid = try? UID(parsing: uidText) else {
            throw Invalid(description: "uid: '\(uidText)' is not a UID, E0 first (E008010000004212)")
        }
        let first: BlockNumber
        switch body["block"] {
        case let .integer(n)?:
            guard let b = BlockNumber(exactly: Int(n)) else {
                throw Invalid(description: "block: \(n) is outside 0…0xFFFF", impossible: true)
            }
            first = b
        case let .string(t)?:
            guard let b = try? BlockNumber(parsing: t) else {
                throw Invalid(description: "block: '\(t)' is not a block number (\"0xF9\" or 249)")
            }
            first = b
        case let v?:
            throw Invalid(
                description: "block: a block number as an integer (249) or a string (\"0xF9\"), not \(v.typeName)")
        case nil:
            throw Invalid(description: "block: missing; a block number, 0…0xFFFF (\"0xF9\" or 249)")
        }
        func flag(_ key: String) throws(Invalid) -> Bool {
            guard let v = body[key] else { return false }
            guard case let .bool(b) = v else { throw Invalid(description: "\(key): true or false, not \(v.typeName)") }
            return b
        }
        let lock = try flag("lock"), yes = try flag("yes")
        if body["yes"] != nil && !lock {
            throw Invalid(description: "yes: confirms a lock; there is no \"lock\": true")
        }
        if lock && !yes {
            throw Invalid(
                description:
                    "lock: a lock is irreversible (the blocks can never be written again); send \"yes\": true with it")
        }
        var bytes: [UInt8] = []
        if !(lock && body["data"] == nil) {
            guard let hex = try string("data", "hex bytes") else {
                throw Invalid(description: "data: missing; hex bytes, 1 to 2048 (whole blocks of the tag)")
            }
            guard let b = try? Hex.parse(hex), !b.isEmpty, b.count <= 2048 else {
                throw Invalid(description: "data: hex bytes, 1 to 2048 (whole blocks of the tag)")
            }
            bytes = b
        }
        var flags: RequestFlags?
        if let t = try string("flags", "request flags") {
            guard let parsed = try? RequestFlags(parsing: t) else {
                throw Invalid(description: "flags: '\(t)' is not request flags (option, or a byte like 0x40)")
            }
            // The agent addresses the tag and picks the data rate itself; of the flags a client may ask for, a
            // queued write honours the Option flag only. Any other would be accepted and silently ignored.
            let ignored = parsed.subtracting(.option)
            guard ignored.isEmpty else {
                throw Invalid(
                    description:
                        "flags: \(t) asks for \(ignored), which a queued write does not honour; only option (0x40) can be asked for",
                    impossible: true)
            }
            flags = parsed
        }
        var expires: Millis?
        if let t = try string("expires", "a duration like 7d or 12h") { expires = try expiry(t, now: now) }
        let reader = try string("reader", "a reader id")
        if let reader, let readers, !readers.contains(reader) {
            throw Invalid(
                description:
                    "reader: this gateway has no reader '\(reader)' (\(readers.sorted().joined(separator: ", "))); the write would wait for ever",
                impossible: true)
        }
        return QueuedWrite(
            created: now, uid: uid, first: first, data: bytes, flags: flags, reader: reader, expires: expires,
            operation: !lock ? .write : bytes.isEmpty ? .lock : .writeLock)
    }
}
