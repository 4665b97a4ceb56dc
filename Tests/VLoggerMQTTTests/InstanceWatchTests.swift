import Foundation
import Testing

@testable import VLoggerMQTT

/// Issue 46, item 15: which store publishes as a gateway id on a broker. The rules are this project's own (the
/// announcement is vlogger's retained message, docs/integrating.md, "Instance"): another store's announcement heard
/// live, or retained and made within `freshMs` either side of now, is a conflict, reported once; this store's own
/// from another run heard live is a copy of the store; this run's own, a replaced store's old retained one and
/// anything that is not an announcement are not. MQTT 3.1.1 §3.3.1.3: a message sent because a subscription was
/// made carries RETAIN 1, one forwarded to an established subscription RETAIN 0.
@Suite struct InstanceWatchTests {
    static let now: Int64 = 1_795_000_000_000
    static let mine = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

    static func other(_ instance: String, at ms: Int64, run: String = "0b0b0b0b") -> [UInt8] {
        InstanceWatch.Announcement(instance: instance, run: run, host: "gw-b", clientID: "vlogger-gw-mqtt", timeMs: ms)
            .json
    }

    static func store(_ c: Character) -> String { String(repeating: c, count: 32) }

    @Test func anotherStoreHeardLiveIsAConflictOnceWhateverItsClock() throws {
        let w = InstanceWatch(instance: Self.mine, host: "gw-a", clientID: "vlogger-gw-mqtt")
        // Its own announcement, as the broker sends it back (live, or retained at the next connect): nothing.
        #expect(w.received(w.announce(now: Self.now), retained: false, now: Self.now + 10) == nil)
        #expect(w.received(w.announce(now: Self.now), retained: true, now: Self.now + 10) == nil)
        // Another store's, live, from a gateway whose clock is a day behind: a conflict, once.
        let c = try #require(
            w.received(Self.other(Self.store("b"), at: Self.now - 86_400_000), retained: false, now: Self.now))
        #expect(c.instance == Self.store("b") && c.host == "gw-b")
        #expect(w.received(Self.other(Self.store("b"), at: Self.now), retained: false, now: Self.now + 60_000) == nil)
        #expect(w.pendingConflicts().map(\.instance) == [Self.store("b")])
        w.stored(1)
        #expect(w.pendingConflicts().isEmpty)
    }

    @Test func aRetainedAnnouncementCountsOnlyWhenFresh() {
        let w = InstanceWatch(instance: Self.mine, host: "gw-a", clientID: "c", freshMs: 150_000)
        // A replaced store's last word, 150.001 s old, or from a clock far ahead: not a conflict.
        #expect(w.received(Self.other(Self.store("c"), at: Self.now - 150_001), retained: true, now: Self.now) == nil)
        #expect(w.received(Self.other(Self.store("c"), at: Self.now + 3_600_000), retained: true, now: Self.now) == nil)
        // Made 100 s ago (a gateway with the same client id, which took the connection over): a conflict.
        #expect(
            w.received(Self.other(Self.store("d"), at: Self.now - 100_000), retained: true, now: Self.now)?.instance
                == Self.store("d"))
    }

    @Test func thisStoreFromAnotherRunHeardLiveIsACopy() throws {
        let w = InstanceWatch(instance: Self.mine, host: "gw-a", clientID: "c")
        // This store's previous run, retained: nothing; another run of it, live: a copy (a cloned disk).
        #expect(w.received(Self.other(Self.mine, at: Self.now, run: "01"), retained: true, now: Self.now) == nil)
        let copy = try #require(
            w.received(Self.other(Self.mine, at: Self.now, run: "02"), retained: false, now: Self.now))
        let text = InstanceWatch.describe(copy, own: w.own, gateway: "gw", output: "mqtt")
        #expect(text.contains("runs twice") && text.contains("run 02"))
    }

    @Test func whatIsNotAnAnnouncementIsIgnoredAndConflictsAreBounded() {
        let w = InstanceWatch(instance: Self.mine, host: "gw-a", clientID: "c", maxReported: 8)
        let hex = Self.store("e")
        for payload in [
            "online", "", "{}", "[1]", #"{"instance": 5, "time_ms": 1}"#, #"{"instance": "", "time_ms": 1}"#,
            #"{"instance": "\#(hex)", "time_ms": "1"}"#, #"{"instance": "\#(hex)", "time_ms": 1e300}"#,
            #"{"instance": "\#(hex.uppercased())", "time_ms": 1}"#, #"{"instance": "x\#(hex)", "time_ms": 1}"#,
            #"{"instance": "\#(hex)", "time_ms": 1, "run": "not hex"}"#,
        ] {
            #expect(w.received(Array(payload.utf8), retained: false, now: Self.now) == nil, "\(payload)")
        }
        for ms in ["-9223372036854775808", "9223372036854775807", "253402300800000", "-1"] {
            let payload = #"{"instance": "\#(hex)", "time_ms": \#(ms)}"#
            #expect(w.received(Array(payload.utf8), retained: false, now: Self.now) == nil, "\(ms)")
        }
        #expect(w.received(Array(repeating: 0x20, count: 5000), retained: false, now: Self.now) == nil)
        // Text from the broker reaches the log and the events plain and short.
        let odd =
            #"{"instance": "\#(hex)", "time_ms": 1, "host": "a\nb\u0085c", "client_id": "\#(String(repeating: "x", count: 300))"}"#
        let a = InstanceWatch.Announcement.parse(Array(odd.utf8))
        #expect(a?.host == "a_b_c" && a?.clientID.count == 64)
        // A publisher inventing instances: at most eight conflicts are reported.
        var reported = 0
        for i in 0..<100 {
            let id = String(format: "%032x", i + 1)
            if w.received(Self.other(id, at: Self.now), retained: false, now: Self.now) != nil { reported += 1 }
        }
        #expect(reported == 8 && w.pendingConflicts().count == 8)
    }

    @Test func theHeartbeatIsDueOncePerInterval() {
        let w = InstanceWatch(instance: Self.mine, host: "h", clientID: "c", heartbeatMs: 60_000)
        #expect(w.due(now: Self.now))
        _ = w.announce(now: Self.now)
        #expect(!w.due(now: Self.now + 59_999))
        #expect(w.due(now: Self.now + 60_000))
        // The announcement is the documented JSON.
        let text = String(decoding: w.announce(now: 1_795_000_000_250), as: UTF8.self)
        #expect(
            text
                == #"{"client_id":"c","host":"h","instance":"\#(Self.mine)","run":"\#(w.own.run)","time":"2026-11-18T11:06:40.250Z","time_ms":1795000000250}"#
        )
        #expect(w.own.run.count == 16)
    }
}

/// Issue 46, item 14: libmosquitto's own reconnects (its network thread, between the output's rounds) wait at most
/// 30 s, as the output's rounds do (OutputBackoffTests), so a broker back after an outage is reached within 30 s.
@Suite struct ReconnectCapTests {
    @Test func libmosquittoReconnectsWithinThirtySeconds() {
        #expect(MQTTClient.reconnectCapSeconds == 30)
    }
}
