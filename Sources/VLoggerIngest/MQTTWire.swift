/// MQTT 3.1.1 control packets as a subscriber needs them (OASIS MQTT 3.1.1, docs/reference/mqtt-subscriber.md):
/// the client encodes CONNECT, SUBSCRIBE, PUBACK, PINGREQ and DISCONNECT, and decodes what a broker sends it
/// (CONNACK, SUBACK, PUBLISH, PUBACK, PINGRESP). Written here rather than taken from libmosquitto, which
/// acknowledges a QoS 1 message as soon as it has read it: the fan-in must acknowledge only after the
/// central database has committed the row.
public enum MQTTWire {
    public struct Malformed: Error, CustomStringConvertible, Sendable, Equatable {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { "a malformed MQTT packet from the broker: \(reason)" }
    }

    /// A packet from the broker.
    public enum Packet: Equatable, Sendable {
        /// §3.2: the session-present flag and the return code (0 accepted).
        case connack(sessionPresent: Bool, code: UInt8)
        /// §3.3: `packetID` nil at QoS 0.
        case publish(Publish)
        /// §3.4 (an answer to a PUBLISH of ours; a subscriber sends none, so it is only checked).
        case puback(UInt16)
        /// §3.9: one return code per filter (0x00–0x02 the granted QoS, 0x80 refused).
        case suback(packetID: UInt16, codes: [UInt8])
        case unsuback(UInt16)
        case pingresp
    }

    public struct Publish: Equatable, Sendable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: UInt8
        public var packetID: UInt16?
        public var dup: Bool
        public var retain: Bool
        public init(topic: String, payload: [UInt8], qos: UInt8, packetID: UInt16?, dup: Bool, retain: Bool) {
            (self.topic, self.payload, self.qos, self.packetID, self.dup, self.retain) =
                (topic, payload, qos, packetID, dup, retain)
        }
    }

    /// §2.2.3: the largest Remaining Length the four bytes can say.
    public static let maxRemainingLength = 268_435_455

    /// The packets in a byte stream, taken out as they complete. A packet longer than `maxPacket` is refused
    /// before its bytes are waited for (a broker or a stranger cannot make the reader hold 256 MB).
    public struct Reader: Sendable {
        var buffer: [UInt8] = []
        var start = 0
        public let maxPacket: Int
        public init(maxPacket: Int = 16 << 20) { self.maxPacket = min(maxPacket, MQTTWire.maxRemainingLength) }

        public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
            if start > 0 && start * 2 >= buffer.count {
                buffer.removeFirst(start)
                start = 0
            }
            buffer.append(contentsOf: bytes)
        }

        /// Bytes received and not yet part of a returned packet.
        public var pending: Int { buffer.count - start }

        /// The next whole packet, nil while it is incomplete.
        public mutating func next() throws(Malformed) -> Packet? {
            guard buffer.count - start >= 2 else { return nil }
            var length = 0
            var multiplier = 1
            var i = start + 1
            while true {
                guard i < buffer.count else { return nil }
                guard i - start <= 4 else { throw Malformed("a Remaining Length of more than four bytes") }
                let b = buffer[i]
                length += Int(b & 0x7F) * multiplier
                multiplier *= 128
                i += 1
                if b & 0x80 == 0 { break }
            }
            guard length <= maxPacket else {
                throw Malformed("a packet of \(length) bytes, more than the \(maxPacket) accepted")
            }
            guard buffer.count - i >= length else { return nil }
            let first = buffer[start]
            let body = buffer[i..<(i + length)]
            start = i + length
            return try MQTTWire.decode(first, body)
        }
    }

    static func decode(_ first: UInt8, _ body: ArraySlice<UInt8>) throws(Malformed) -> Packet {
        let type = first >> 4
        let flags = first & 0x0F
        func id(_ at: Int) -> UInt16 { UInt16(body[at]) << 8 | UInt16(body[at + 1]) }
        switch type {
        case 2:
            guard flags == 0, body.count == 2, body[body.startIndex] & 0xFE == 0 else {
                throw Malformed("CONNACK is not two bytes with only the session-present flag")
            }
            return .connack(sessionPresent: body[body.startIndex] == 1, code: body[body.startIndex + 1])
        case 3:
            let qos = (flags >> 1) & 0x03
            guard qos < 3 else { throw Malformed("PUBLISH with QoS 3") }
            guard body.count >= 2 else { throw Malformed("PUBLISH without its topic") }
            let s = body.startIndex
            let topicLength = Int(id(s))
            var at = s + 2 + topicLength
            guard at <= body.endIndex else { throw Malformed("PUBLISH whose topic runs past the packet") }
            let topicBytes = body[(s + 2)..<at]
            guard !topicBytes.isEmpty, !topicBytes.contains(0), !topicBytes.contains(0x2B), !topicBytes.contains(0x23)
            else { throw Malformed("PUBLISH to an empty topic, or one with NUL or a wildcard") }
            guard let topic = String(validating: topicBytes, as: UTF8.self) else {
                throw Malformed("PUBLISH whose topic is not UTF-8")
            }
            var packetID: UInt16?
            if qos > 0 {
                guard at + 2 <= body.endIndex else { throw Malformed("PUBLISH at QoS \(qos) without its packet id") }
                let n = id(at)
                guard n != 0 else { throw Malformed("PUBLISH with packet id 0") }
                packetID = n
                at += 2
            }
            return .publish(
                Publish(
                    topic: topic, payload: Array(body[at...]), qos: qos, packetID: packetID, dup: flags & 0x08 != 0,
                    retain: flags & 0x01 != 0))
        case 4, 11:
            guard flags == 0, body.count == 2 else { throw Malformed("PUBACK or UNSUBACK is not two bytes") }
            let n = id(body.startIndex)
            return type == 4 ? .puback(n) : .unsuback(n)
        case 9:
            guard flags == 0, body.count >= 3 else { throw Malformed("SUBACK without a return code") }
            let codes = Array(body.dropFirst(2))
            guard codes.allSatisfy({ $0 <= 2 || $0 == 0x80 }) else {
                throw Malformed("SUBACK with a return code other than 0, 1, 2 or 0x80")
            }
            return .suback(packetID: id(body.startIndex), codes: codes)
        case 13:
            guard flags == 0, body.isEmpty else { throw Malformed("PINGRESP with a body") }
            return .pingresp
        default:
            throw Malformed("packet type \(type), which a broker does not send to a QoS 0/1 subscriber")
        }
    }

    // MARK: What the client sends

    static func appendLength(_ n: Int, _ out: inout [UInt8]) {
        var v = n
        repeat {
            var b = UInt8(v % 128)
            v /= 128
            if v > 0 { b |= 0x80 }
            out.append(b)
        } while v > 0
    }

    static func appendString(_ bytes: [UInt8], _ out: inout [UInt8]) {
        out.append(UInt8(bytes.count >> 8))
        out.append(UInt8(bytes.count & 0xFF))
        out.append(contentsOf: bytes)
    }

    static func packet(_ first: UInt8, _ body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [first]
        appendLength(body.count, &out)
        return out + body
    }

    public struct Refused: Error, CustomStringConvertible, Sendable {
        public let reason: String
        public var description: String { reason }
    }

    /// CONNECT (§3.1) at protocol level 4 (3.1.1). `cleanSession` false asks the broker to keep the session (the
    /// subscription and unacknowledged QoS 1 messages) while the client is away.
    public static func connect(
        clientID: String, cleanSession: Bool, keepAliveSeconds: Int, username: String?, password: [UInt8]?
    ) throws(Refused) -> [UInt8] {
        let id = Array(clientID.utf8)
        guard !id.isEmpty, id.count <= 65_535 else { throw Refused(reason: "a client id of 1 to 65,535 bytes") }
        guard (0...65_535).contains(keepAliveSeconds) else { throw Refused(reason: "a keep-alive of 0 to 65,535 s") }
        var body: [UInt8] = [0, 4, 0x4D, 0x51, 0x54, 0x54, 4]
        var flags: UInt8 = cleanSession ? 0x02 : 0
        if username != nil { flags |= 0x80 }
        if password != nil { flags |= 0x40 }
        guard password == nil || username != nil else {
            throw Refused(reason: "a password needs a user name (§3.1.2.9)")
        }
        body.append(flags)
        body.append(UInt8(keepAliveSeconds >> 8))
        body.append(UInt8(keepAliveSeconds & 0xFF))
        appendString(id, &body)
        if let username {
            guard username.utf8.count <= 65_535 else { throw Refused(reason: "a user name over 65,535 bytes") }
            appendString(Array(username.utf8), &body)
        }
        if let password {
            guard password.count <= 65_535 else { throw Refused(reason: "a password over 65,535 bytes") }
            appendString(password, &body)
        }
        return packet(0x10, body)
    }

    /// SUBSCRIBE (§3.8; its fixed header's flags are 0010).
    public static func subscribe(packetID: UInt16, filters: [(String, UInt8)]) throws(Refused) -> [UInt8] {
        guard packetID != 0, !filters.isEmpty else { throw Refused(reason: "SUBSCRIBE needs a packet id and a filter") }
        var body: [UInt8] = [UInt8(packetID >> 8), UInt8(packetID & 0xFF)]
        for (filter, qos) in filters {
            let f = Array(filter.utf8)
            guard !f.isEmpty, f.count <= 65_535, qos <= 2 else {
                throw Refused(reason: "a topic filter of 1 to 65,535 bytes and QoS 0 to 2")
            }
            appendString(f, &body)
            body.append(qos)
        }
        return packet(0x82, body)
    }

    public static func puback(_ packetID: UInt16) -> [UInt8] {
        [0x40, 2, UInt8(packetID >> 8), UInt8(packetID & 0xFF)]
    }
    public static let pingreq: [UInt8] = [0xC0, 0]
    public static let disconnect: [UInt8] = [0xE0, 0]

    /// CONNACK's return codes (§3.2.2.3).
    public static func connackReason(_ code: UInt8) -> String {
        switch code {
        case 0: return "accepted"
        case 1: return "the broker does not take MQTT 3.1.1"
        case 2: return "the client id was refused"
        case 3: return "the broker is unavailable"
        case 4: return "bad user name or password"
        case 5: return "not authorised"
        default: return "return code \(code)"
        }
    }
}
