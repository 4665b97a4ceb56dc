import Testing

@testable import VLoggerCore
@testable import VLoggerMQTT

/// Issue 46, item 2: a value that becomes a topic level (a reader's location, an asset id) never makes a topic
/// libmosquitto refuses. Facts from libmosquitto itself (Debian's libmosquitto 2.0): `mosquitto_publish` refuses a
/// topic with a control character (TAB, a C1 character) or a Unicode non-character (MOSQ_ERR_MALFORMED_UTF8); MQTT
/// 3.1.1 §1.5.3 and 5.0 §1.5.4 say such characters SHOULD NOT be in a UTF-8 string, and NUL MUST NOT.
@Suite struct TopicTests {
    static func output() throws -> MQTTOutput {
        var settings = try MQTTSettings(url: "mqtt://127.0.0.1:1")
        settings.topic = "vlogger/{gateway}/{location}/{kind}"
        return try MQTTOutput(settings: settings, gateway: "gw", probe: true)
    }

    @Test func libmosquittoRefusesControlCharactersAndNonCharactersAndLevelsNeverHaveThem() throws {
        let o = try Self.output()
        // (U+FFFE and U+FDD0 are built from their code points: a Swift literal may not hold a non-character.)
        let nonCharacters = [0xFFFE, 0xFDD0].map { String(Character(Unicode.Scalar(UInt32($0))!)) }
        for bad in ["cold\troom", "dock\u{85}door", "bay" + nonCharacters[0], "row" + nonCharacters[1], "tab\u{1}"] {
            // libmosquitto's own verdict on the raw value: refused, as a message that can never be sent.
            let refused = try o.publishOrRefuse("vlogger/gw/\(bad)/readings", [0x7B, 0x7D])
            #expect(refused?.kind == .invalidMessage, "\(bad.unicodeScalars.map { $0.value })")
            // The level made of it: the same characters become '_', and libmosquitto takes the topic (it fails only
            // for the missing connection).
            let level = MQTTOutput.level(bad)
            #expect(level.unicodeScalars.allSatisfy(MQTTOutput.topicSafe), "\(level)")
            #expect(throws: MQTTError.self) { _ = try o.publishOrRefuse("vlogger/gw/\(level)/readings", [0x7B, 0x7D]) }
            do { _ = try o.publishOrRefuse("vlogger/gw/\(level)/readings", [0x7B, 0x7D]) } catch {
                #expect(error.kind != .invalidMessage, "\(error)")
            }
        }
        #expect(MQTTOutput.level("cold\troom") == "cold_room")
        #expect(MQTTOutput.level("Kühlraum 3 · Süd") == "Kühlraum 3 · Süd")
        #expect(MQTTOutput.level("a/b+c#") == "a_b_c_")
    }

    /// NATS 2.9.10's MQTT listener closes the connection on '.' or a space in a topic (docs/reference/fleet-engines.md
    /// §5): with `nats-topics`, both become '_' in every level made of a value, and a template with them is refused.
    @Test func natsTopics() throws {
        #expect(MQTTOutput.level("hall.2 dock", nats: true) == "hall_2_dock")
        #expect(MQTTOutput.level("hall.2 dock") == "hall.2 dock")
        var settings = try MQTTSettings(url: "mqtt://127.0.0.1:1")
        settings.natsTopics = true
        let o = try MQTTOutput(settings: settings, gateway: "plant.hall 2", probe: true)
        #expect(o.statusTopic == "vlogger/plant_hall_2/status")
        #expect(o.stateTopic("E0.04") == "vlogger/plant_hall_2/tag/E0_04")
    }
}
