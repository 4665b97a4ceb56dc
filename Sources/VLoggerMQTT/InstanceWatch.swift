import Foundation
import VLoggerModel

/// Which store publishes as this gateway id on a broker (issue 46, item 15). Two gateways configured with the same
/// id publish different rows under the same keys (`gateway/table/id`), so a subscriber that de-duplicates on `key`
/// drops one gateway's rows. Each MQTT output publishes a retained announcement on `vlogger/{gateway}/instance`
/// (its store's instance id, host, client id and time) when it connects and every `heartbeatMs`, and subscribes to
/// it: an announcement from another store, made within `freshMs` of now (a gateway that is alive; an old store's
/// last retained message is older), is a conflict, reported once per other store (an event and a log line), and
/// answered with this store's own announcement so that the other side notices too. The status topic keeps its
/// `online`/`offline` payload, which subscribers and Home Assistant's availability match on.
package final class InstanceWatch: @unchecked Sendable {
    package struct Announcement: Equatable {
        var instance: String
        var host: String
        var clientID: String
        var timeMs: Millis

        var json: [UInt8] {
            var out: [UInt8] = Array("{\"client_id\":".utf8)
            JSONText.appendQuoted(clientID, to: &out)
            out += Array(",\"host\":".utf8)
            JSONText.appendQuoted(host, to: &out)
            out += Array(",\"instance\":".utf8)
            JSONText.appendQuoted(instance, to: &out)
            out += Array(",\"time\":\"".utf8)
            ValueText.appendTime(timeMs, to: &out)
            out += Array("\",\"time_ms\":\(timeMs)}".utf8)
            return out
        }

        /// An announcement as a broker delivered it; nil for anything else (any payload may arrive on a topic).
        package static func parse(_ payload: [UInt8]) -> Announcement? {
            guard payload.count <= 4096,
                let o = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
                let instance = o["instance"] as? String, !instance.isEmpty, instance.utf8.count <= 64,
                let n = o["time_ms"] as? NSNumber, let ms = Millis(exactly: n.doubleValue),
                (0...253_402_300_799_999).contains(ms)  // 1970 to the end of 9999, as times are printed
            else { return nil }
            func text(_ key: String) -> String { String((o[key] as? String ?? "").prefix(256)) }
            return Announcement(instance: instance, host: text("host"), clientID: text("client_id"), timeMs: ms)
        }
    }

    package let own: Announcement
    let heartbeatMs: Millis
    let freshMs: Millis
    private let lock = NSLock()
    private var lastAnnouncedMs: Millis?
    private var reported: Set<String> = []
    private var pending: [Announcement] = []

    package init(
        instance: String, host: String, clientID: String, heartbeatMs: Millis = 60_000, freshMs: Millis = 150_000
    ) {
        own = Announcement(instance: instance, host: host, clientID: clientID, timeMs: 0)
        self.heartbeatMs = heartbeatMs
        self.freshMs = freshMs
    }

    static func topic(_ gatewayLevel: String) -> String { "vlogger/\(gatewayLevel)/instance" }

    /// This store's announcement made now, and noted as sent.
    func announce(now: Millis) -> [UInt8] {
        lock.withLock { lastAnnouncedMs = now }
        var a = own
        a.timeMs = now
        return a.json
    }

    /// Whether the heartbeat is due.
    func due(now: Millis) -> Bool {
        lock.withLock { lastAnnouncedMs.map { now - $0 >= heartbeatMs } ?? true }
    }

    /// A message on the instance topic: the other store's announcement when it is a new conflict (another store,
    /// fresh, not reported before), else nil. A time far ahead of `now` (a wrong clock) counts as fresh.
    package func received(_ payload: [UInt8], now: Millis) -> Announcement? {
        guard let a = Announcement.parse(payload), a.instance != own.instance else { return nil }
        let age = now.subtractingReportingOverflow(a.timeMs)
        guard !age.overflow, age.partialValue <= freshMs else { return nil }
        return lock.withLock {
            guard reported.insert(a.instance).inserted else { return nil }
            pending.append(a)
            return a
        }
    }

    /// Conflicts noticed and not yet stored as events (taken once).
    func takePending() -> [Announcement] {
        lock.withLock {
            defer { pending = [] }
            return pending
        }
    }

    /// What a conflict says (the event's detail and the log line).
    package static func describe(_ other: Announcement, own: Announcement, gateway: String, output: String) -> String {
        var out: [UInt8] = []
        ValueText.appendTime(other.timeMs, to: &out)
        return
            "output \(output): another gateway publishes as '\(gateway)' on this broker (store \(other.instance)\(other.host.isEmpty ? "" : " on \(other.host)"), client id \(other.clientID), announced \(String(decoding: out, as: UTF8.self))); this one is store \(own.instance). Their rows carry the same keys, so a subscriber that de-duplicates on key drops one gateway's rows: give one of them another [gateway] id"
    }
}
