import Foundation
import VLoggerModel

/// Which store publishes as this gateway id on a broker (issue 46, item 15). Two gateways configured with the same
/// id publish different rows under the same keys (`gateway/table/id`), so a subscriber that de-duplicates on `key`
/// drops one gateway's rows. Each MQTT output publishes a retained announcement on `vlogger/{gateway}/instance` (its
/// store's instance id, this run's id, host, client id and time) when it connects and every `heartbeatMs`, and
/// subscribes to it. A conflict:
/// - another store's announcement received live (another gateway is connected now), whatever its time;
/// - another store's retained announcement made within `freshMs` of now, either side (two gateways with the same
///   client id take the connection from each other and never hear each other live; an older one is a replaced
///   store's last word, and a clock far off cannot make it fresh);
/// - this store's announcement received live from another run (a copy of the same store running twice: a cloned
///   SD card).
/// Each is reported once (an event and a log line), at most `maxReported` in all (a hostile publisher cannot grow
/// memory or flood the events), and answered with this run's own announcement so that the other side notices too.
/// The status topic keeps its `online`/`offline` payload, which subscribers and Home Assistant's availability
/// match on.
package final class InstanceWatch: @unchecked Sendable {
    package struct Announcement: Equatable {
        var instance: String
        var run: String
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
            out += Array(",\"run\":".utf8)
            JSONText.appendQuoted(run, to: &out)
            out += Array(",\"time\":\"".utf8)
            ValueText.appendTime(timeMs, to: &out)
            out += Array("\",\"time_ms\":\(timeMs)}".utf8)
            return out
        }

        /// Lower-case hex digits only, 1 to `max` of them.
        static func isHex(_ s: String, max: Int) -> Bool {
            !s.isEmpty && s.utf8.count <= max
                && s.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        }

        /// Text from the broker as a log line and an event may carry it: plain characters, at most 64.
        static func plain(_ s: String) -> String {
            var out = String.UnicodeScalarView()
            for c in s.unicodeScalars.prefix(64) { out.append(PlainText.isPlain(c) ? c : "_") }
            return String(out)
        }

        /// An announcement as a broker delivered it; nil for anything else (any payload may arrive on a topic): the
        /// instance is 32 lower-case hex digits (as a store makes it), the run up to 32, the time within 1970–9999.
        package static func parse(_ payload: [UInt8]) -> Announcement? {
            guard payload.count <= 4096,
                let o = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
                let instance = o["instance"] as? String, instance.utf8.count == 32, isHex(instance, max: 32),
                let n = o["time_ms"] as? NSNumber, let ms = Millis(exactly: n.doubleValue),
                (0...253_402_300_799_999).contains(ms)  // 1970 to the end of 9999, as times are printed
            else { return nil }
            let run = o["run"] as? String ?? ""
            guard run.isEmpty || isHex(run, max: 32) else { return nil }
            return Announcement(
                instance: instance, run: run, host: plain(o["host"] as? String ?? ""),
                clientID: plain(o["client_id"] as? String ?? ""), timeMs: ms)
        }
    }

    package let own: Announcement
    let heartbeatMs: Millis
    let freshMs: Millis
    let maxReported: Int
    private let lock = NSLock()
    private var lastAnnouncedMs: Millis?
    private var reported: Set<String> = []
    private var pending: [Announcement] = []

    package init(
        instance: String, host: String, clientID: String, heartbeatMs: Millis = 60_000, freshMs: Millis = 150_000,
        maxReported: Int = 8
    ) {
        let run = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        own = Announcement(instance: instance, run: run, host: host, clientID: clientID, timeMs: 0)
        self.heartbeatMs = heartbeatMs
        self.freshMs = freshMs
        self.maxReported = maxReported
    }

    static func topic(_ gatewayLevel: String) -> String { "vlogger/\(gatewayLevel)/instance" }

    /// This run's announcement made now, and noted as sent.
    func announce(now: Millis) -> [UInt8] {
        lock.withLock { lastAnnouncedMs = now }
        var a = own
        a.timeMs = now
        return a.json
    }

    /// Publishes this run's announcement now, retained, beside the batches (a refusal is logged by the client's
    /// `onAsideRefused`; a lost connection says it again at the next connect).
    func announce(on client: MQTTClient, topic: String) {
        _ = try? client.publishAside(topic: topic, payload: announce(now: Millis.now()), qos: 1, retain: true)
    }

    /// Whether the heartbeat is due.
    func due(now: Millis) -> Bool {
        lock.withLock { lastAnnouncedMs.map { now - $0 >= heartbeatMs } ?? true }
    }

    /// A message on the instance topic (`retained`: as the broker flagged it): the other's announcement when it is
    /// a new conflict, else nil.
    package func received(_ payload: [UInt8], retained: Bool, now: Millis) -> Announcement? {
        guard let a = Announcement.parse(payload) else { return nil }
        let key: String
        if a.instance == own.instance {
            // This store: its own earlier word (retained, or this run's) is none; another run live is a copy.
            guard !retained, !a.run.isEmpty, a.run != own.run else { return nil }
            key = "run " + a.run
        } else {
            if retained {
                let age = now.subtractingReportingOverflow(a.timeMs)
                guard !age.overflow, age.partialValue.magnitude <= UInt64(max(0, freshMs)) else { return nil }
            }
            key = a.instance
        }
        return lock.withLock {
            guard reported.count < maxReported, reported.insert(key).inserted else { return nil }
            pending.append(a)
            return a
        }
    }

    /// Conflicts noticed and not yet stored as events.
    func pendingConflicts() -> [Announcement] { lock.withLock { pending } }

    /// The first `n` pending conflicts were stored.
    func stored(_ n: Int) { lock.withLock { pending.removeFirst(min(n, pending.count)) } }

    /// What a conflict says (the event's detail and the log line).
    package static func describe(_ other: Announcement, own: Announcement, gateway: String, output: String) -> String {
        var out: [UInt8] = []
        ValueText.appendTime(other.timeMs, to: &out)
        let when = String(decoding: out, as: UTF8.self)
        let host = other.host.isEmpty ? "" : " on \(other.host)"
        if other.instance == own.instance {
            return
                "output \(output): this store (\(own.instance)) runs twice on this broker: run \(other.run)\(host), client id \(other.clientID), announced \(when), besides this run \(own.run) — a copy of the store (a cloned disk) runs as gateway '\(gateway)' too; their rows carry the same keys: give the copy its own store and [gateway] id"
        }
        return
            "output \(output): another gateway publishes as '\(gateway)' on this broker (store \(other.instance)\(host), client id \(other.clientID), announced \(when)); this one is store \(own.instance). Their rows carry the same keys, so a subscriber that de-duplicates on key drops one gateway's rows: give one of them another [gateway] id"
    }
}
