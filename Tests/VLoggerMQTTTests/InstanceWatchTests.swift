import Foundation
import Testing

@testable import VLoggerMQTT

/// Issue 46, item 15: which store publishes as a gateway id on a broker. The rules are this project's own (the
/// announcement is vlogger's retained message, docs/integrating.md): another store's announcement made within
/// `freshMs` is a conflict, reported once; this store's own, an old one (a replaced store's last retained
/// message) and anything that is not an announcement are not.
@Suite struct InstanceWatchTests {
    static let now: Int64 = 1_795_000_000_000

    static func other(_ instance: String, at ms: Int64) -> [UInt8] {
        InstanceWatch.Announcement(instance: instance, host: "gw-b", clientID: "vlogger-gw-mqtt", timeMs: ms).json
    }

    @Test func anotherStoresFreshAnnouncementIsAConflictOnce() throws {
        let w = InstanceWatch(instance: "aaaa", host: "gw-a", clientID: "vlogger-gw-mqtt")
        // Its own announcement, as the broker sends it back (retained, or live): nothing.
        #expect(w.received(w.announce(now: Self.now), now: Self.now + 10) == nil)
        // Another store's, 10 s old: a conflict, once however often it is said.
        let c = try #require(w.received(Self.other("bbbb", at: Self.now - 10_000), now: Self.now))
        #expect(c.instance == "bbbb" && c.host == "gw-b")
        #expect(w.received(Self.other("bbbb", at: Self.now), now: Self.now + 60_000) == nil)
        #expect(w.takePending().map(\.instance) == ["bbbb"])
        #expect(w.takePending().isEmpty)
        // A third store's: reported too.
        #expect(w.received(Self.other("cccc", at: Self.now), now: Self.now)?.instance == "cccc")
    }

    @Test func anOldAnnouncementIsAReplacedStoreNotAConflict() {
        let w = InstanceWatch(instance: "aaaa", host: "gw-a", clientID: "c", freshMs: 150_000)
        #expect(w.received(Self.other("old0", at: Self.now - 150_001), now: Self.now) == nil)
        // A time far ahead (a wrong clock on the other gateway) is fresh; one outside the years 1970–9999 is not a
        // time (nor one that cannot be subtracted).
        #expect(w.received(Self.other("ahead", at: Self.now + 3_600_000), now: Self.now)?.instance == "ahead")
        for ms in ["-9223372036854775808", "9223372036854775807", "253402300800000", "-1"] {
            let payload = #"{"instance": "wrap", "time_ms": \#(ms)}"#
            #expect(w.received(Array(payload.utf8), now: Self.now) == nil, "\(ms)")
        }
    }

    @Test func whatIsNotAnAnnouncementIsIgnored() {
        let w = InstanceWatch(instance: "aaaa", host: "gw-a", clientID: "c")
        for payload in [
            "online", "", "{}", "[1]", #"{"instance": 5, "time_ms": 1}"#, #"{"instance": "", "time_ms": 1}"#,
            #"{"instance": "x", "time_ms": "1"}"#, #"{"instance": "x", "time_ms": 1e300}"#,
            #"{"instance": "\#(String(repeating: "x", count: 65))", "time_ms": 1}"#,
        ] {
            #expect(w.received(Array(payload.utf8), now: Self.now) == nil, "\(payload)")
        }
        #expect(w.received(Array(repeating: 0x20, count: 5000), now: Self.now) == nil)
    }

    @Test func theHeartbeatIsDueOncePerInterval() {
        let w = InstanceWatch(instance: "aaaa", host: "h", clientID: "c", heartbeatMs: 60_000)
        #expect(w.due(now: Self.now))
        _ = w.announce(now: Self.now)
        #expect(!w.due(now: Self.now + 59_999))
        #expect(w.due(now: Self.now + 60_000))
        // The announcement is the documented JSON.
        let text = String(decoding: w.announce(now: 1_795_000_000_250), as: UTF8.self)
        #expect(
            text
                == #"{"client_id":"c","host":"h","instance":"aaaa","time":"2026-11-18T11:06:40.250Z","time_ms":1795000000250}"#
        )
    }
}

/// Issue 46, item 14: libmosquitto's own reconnects (its network thread, between the output's rounds) wait at most
/// 30 s, as the output's rounds do (OutputBackoffTests), so a broker back after an outage is reached within 30 s.
@Suite struct ReconnectCapTests {
    @Test func libmosquittoReconnectsWithinThirtySeconds() {
        #expect(MQTTClient.reconnectCapSeconds == 30)
    }
}
