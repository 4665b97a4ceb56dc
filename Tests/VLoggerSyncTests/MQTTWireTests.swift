import Testing

@testable import VLoggerIngest

/// The fan-in's MQTT 3.1.1 packets against the standard's own figures (OASIS MQTT 3.1.1, by section:
/// docs/reference/mqtt-subscriber.md). The brokers themselves (mosquitto, NATS) are in FanInTests.
@Suite struct MQTTWireTests {
    /// Table 2.4 of §2.2.3: each Remaining Length and its bytes, both ways.
    @Test(
        arguments: [
            (0, [0x00]), (127, [0x7F]), (128, [0x80, 0x01]), (16_383, [0xFF, 0x7F]), (16_384, [0x80, 0x80, 0x01]),
            (2_097_151, [0xFF, 0xFF, 0x7F]), (2_097_152, [0x80, 0x80, 0x80, 0x01]),
            (268_435_455, [0xFF, 0xFF, 0xFF, 0x7F]),
        ] as [(Int, [UInt8])])
    func remainingLengths(_ n: Int, _ bytes: [UInt8]) throws {
        var out: [UInt8] = []
        MQTTWire.appendLength(n, &out)
        #expect(out == bytes)
        // A header with that length: the reader waits for the body, and refuses one longer than it takes.
        var r = MQTTWire.Reader(maxPacket: 100)
        r.append([n == 0 ? 0xD0 : 0x30] + bytes)
        if n == 0 {
            #expect(try r.next() == .pingresp)
        } else if n <= 100 {
            #expect(try r.next() == nil)
        } else {
            #expect(throws: MQTTWire.Malformed("a packet of \(n) bytes, more than the 100 accepted")) { try r.next() }
        }
    }

    @Test func aFifthLengthByteIsMalformed() {
        var r = MQTTWire.Reader()
        r.append([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
        #expect(throws: MQTTWire.Malformed.self) { try r.next() }
    }

    /// §3.2.2: `20 02 01 00` is a kept session accepted; return code 4 is a bad user name or password.
    @Test func connack() throws {
        var r = MQTTWire.Reader()
        r.append([0x20, 0x02, 0x01, 0x00, 0x20, 0x02, 0x00, 0x04])
        #expect(try r.next() == .connack(sessionPresent: true, code: 0))
        #expect(try r.next() == .connack(sessionPresent: false, code: 4))
        #expect(MQTTWire.connackReason(4) == "bad user name or password")
        var bad = MQTTWire.Reader()
        bad.append([0x20, 0x02, 0x02, 0x00])  // reserved flag bits set (§3.2.2.1)
        #expect(throws: MQTTWire.Malformed.self) { try bad.next() }
    }

    /// §3.1: CONNECT's bytes for client id "ingest", clean session 0, keep-alive 30 s, user "u", password "p".
    @Test func connect() throws {
        let p = try MQTTWire.connect(
            clientID: "ingest", cleanSession: false, keepAliveSeconds: 30, username: "u", password: Array("p".utf8))
        let body: [UInt8] =
            [0, 4, 0x4D, 0x51, 0x54, 0x54, 4, 0xC0, 0, 30, 0, 6] + Array("ingest".utf8) + [0, 1, 0x75, 0, 1, 0x70]
        #expect(p == [0x10, UInt8(body.count)] + body)
        #expect(throws: MQTTWire.Refused.self) {
            try MQTTWire.connect(
                clientID: "x", cleanSession: false, keepAliveSeconds: 30, username: nil, password: [1])
        }
        let clean = try MQTTWire.connect(
            clientID: "x", cleanSession: true, keepAliveSeconds: 0, username: nil, password: nil)
        #expect(clean[9] == 0x02)
    }

    /// §3.8 and §3.9: SUBSCRIBE `82 …` with its filter and QoS; SUBACK's codes.
    @Test func subscribeAndSuback() throws {
        let s = try MQTTWire.subscribe(packetID: 1, filters: [("vlogger/#", 1)])
        #expect(s == [0x82, 14, 0, 1, 0, 9] + Array("vlogger/#".utf8) + [1])
        var r = MQTTWire.Reader()
        r.append([0x90, 0x03, 0x00, 0x01, 0x01, 0x90, 0x03, 0x00, 0x02, 0x80, 0x90, 0x03, 0x00, 0x03, 0x03])
        #expect(try r.next() == .suback(packetID: 1, codes: [1]))
        #expect(try r.next() == .suback(packetID: 2, codes: [0x80]))
        #expect(throws: MQTTWire.Malformed.self) { try r.next() }  // 0x03 is no return code
    }

    /// §3.3: a QoS 1 PUBLISH with DUP set, its topic, packet id and payload; split across reads; PUBACK back.
    @Test func publishAndPuback() throws {
        let topic = Array("vlogger/gw-1/dock/reading".utf8)
        let payload = Array(#"{"key":"gw-1/readings/7"}"#.utf8)
        let body = [0, UInt8(topic.count)] + topic + [0x12, 0x34] + payload
        let packet = [0x3A, UInt8(body.count)] + body  // PUBLISH, DUP, QoS 1, no RETAIN
        var r = MQTTWire.Reader()
        r.append(packet.prefix(5))
        #expect(try r.next() == nil)
        r.append(packet.dropFirst(5))
        let expected = MQTTWire.Publish(
            topic: "vlogger/gw-1/dock/reading", payload: payload, qos: 1, packetID: 0x1234, dup: true, retain: false)
        #expect(try r.next() == .publish(expected))
        #expect(r.pending == 0)
        #expect(MQTTWire.puback(0x1234) == [0x40, 0x02, 0x12, 0x34])
        // QoS 0: no packet id; retained.
        var q0 = MQTTWire.Reader()
        q0.append([0x31, 5, 0, 1, 0x61, 0x6F, 0x6B])
        #expect(
            try q0.next()
                == .publish(
                    .init(topic: "a", payload: Array("ok".utf8), qos: 0, packetID: nil, dup: false, retain: true)))
    }

    @Test(
        arguments: [
            [0x36, 0x05, 0x00, 0x01, 0x61, 0x00, 0x01],  // QoS 3 (§3.3.1.2)
            [0x32, 0x05, 0x00, 0x01, 0x61, 0x00, 0x00],  // packet id 0 (§2.3.1)
            [0x32, 0x04, 0x00, 0x05, 0x61, 0x62],  // the topic runs past the packet
            [0x30, 0x03, 0x00, 0x01, 0x23],  // a wildcard in a topic name (§3.3.2.1)
            [0x30, 0x04, 0x00, 0x02, 0xC3, 0x28],  // not UTF-8
            [0x10, 0x00],  // CONNECT, which a broker never sends
            [0xD0, 0x01, 0x00],  // PINGRESP with a body
        ] as [[UInt8]])
    func malformed(_ bytes: [UInt8]) {
        var r = MQTTWire.Reader()
        r.append(bytes)
        #expect(throws: MQTTWire.Malformed.self) { try r.next() }
    }
}

/// Packet ids on one connection (MQTT 3.1.1 §2.3.1: an id is free again once its PUBACK is sent; §4.4: a resend
/// carries DUP). NATS sends an unacknowledged message again on the same connection after its `ack_wait`
/// (docs/reference/fleet-engines.md §7), so the same id can come twice, or cross the PUBACK.
@Suite struct SubscriberIDTests {
    static func message(_ id: UInt16, dup: Bool = false, _ text: String = "m") -> MQTTWire.Publish {
        MQTTWire.Publish(
            topic: "vlogger/gw/r/reading", payload: Array(text.utf8), qos: 1, packetID: id, dup: dup, retain: false)
    }

    @Test func eachIDIsAcknowledgedOnceAndAResendThatCrossedThePubackIsNeverAcknowledged() {
        let s = MQTTSubscriber(.init(host: "127.0.0.1", port: 1, clientID: "t"))
        var batch: [MQTTWire.Publish] = []
        s.take(Self.message(5), into: &batch)
        // The same message again while it is held: dropped (its first copy is in hand).
        s.take(Self.message(5, dup: true), into: &batch)
        #expect(batch.map(\.packetID) == [5])
        #expect(s.pubacks(batch) == [0x40, 0x02, 0x00, 0x05])
        #expect(s.pubacks(batch).isEmpty)  // never twice
        // A resend that crossed the PUBACK: kept (stored again, refused by the key) but without its id.
        var next: [MQTTWire.Publish] = []
        s.take(Self.message(5, dup: true), into: &next)
        #expect(next.count == 1 && next[0].packetID == nil && s.pubacks(next).isEmpty)
        // The broker then gives id 5 to a new message (no DUP): taken and acknowledged as usual.
        var third: [MQTTWire.Publish] = []
        s.take(Self.message(5, "new"), into: &third)
        #expect(third.map(\.packetID) == [5] && s.pubacks(third) == [0x40, 0x02, 0x00, 0x05])
    }
}
