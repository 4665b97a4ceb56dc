import Foundation
import TestDrivers
import Testing

@testable import VLoggerCore
import VLoggerMQTT
import VLoggerConfig
import VLoggerModel

/// `[[output.mqtt]]` as the configuration gives it: URLs in the mqtt:// and mqtts:// forms (default ports 1883 and
/// 8883, the IANA registrations for MQTT and secure MQTT), no credentials in a URL, topics without wildcards
/// (MQTT 3.1.1 §4.7.1: `+` and `#` are for subscriptions, not for a topic published to), typed errors with lines.
@Suite(.drivers) struct MQTTSettingsTests {
    @Test func urls() throws {
        let plain = try MQTTSettings(url: "mqtt://broker.plant.example")
        #expect(plain.host == "broker.plant.example" && plain.port == 1883 && !plain.tls)
        let tls = try MQTTSettings(url: "mqtts://[::1]:18883/")
        #expect(tls.host == "::1" && tls.port == 18883 && tls.tls && tls.url == "mqtts://[::1]:18883")
        #expect(try MQTTSettings(url: "mqtts://10.0.0.5").port == 8883)
        for (bad, says) in [
            ("http://broker", "is not mqtt://"), ("mqtt://gw:s3cret@broker", "does not go in the URL"),
            ("mqtt://broker:0", "not 1…65535"), ("mqtt://broker:99999", "not 1…65535"), ("mqtt://", "host is empty"),
            ("mqtt://broker/topic", "no path"), ("mqtt://[::1", "unclosed"),
        ] {
            #expect(throws: VLoggerError.self, "\(bad)") { try MQTTSettings(url: bad) }
            do { _ = try MQTTSettings(url: bad) } catch {
                #expect("\(error)".contains(says), "\(bad): \(error)")
                #expect(!"\(error)".contains("s3cret"))
            }
        }
    }

    static func parse(_ body: String) throws -> AgentConfig {
        try AgentConfig.parse("[gateway]\nid = \"gw-1\"\n" + body, file: "t.toml")
    }

    @Test func sectionsNamesAndWhatToPublish() throws {
        let c = try Self.parse(
            """
            [[output.mqtt]]
            url = "mqtt://127.0.0.1:1883"
            publish = ["audits", "readings"]
            [[output.mqtt]]
            url = "mqtts://broker:8883"
            name = "plant-bus"
            qos = 0
            topic = "site/{gateway}/{asset}/{kind}"
            username = "gw-1"
            password-env = "MQTT_PW"
            protocol = "5"
            messages = "batch"
            """)
        #expect(c.outputs.mqtt.map(\.name) == ["mqtt", "plant-bus"])
        // In the outbox's order, audits bringing their results.
        #expect(c.outputs.mqtt[0].publish == [.readings, .audits, .auditResults])
        #expect(
            c.outputs.mqtt[1].qos == 0 && c.outputs.mqtt[1].protocolVersion == .v5
                && c.outputs.mqtt[1].messages == .batch)
        #expect(try c.outputs.mqtt[1].password(environment: ["MQTT_PW": "pw"]) == "pw")
    }

    @Test func mistakesAreTypedErrorsWithTheirLine() {
        for (body, says) in [
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\ntopic = \"a/#\"", "wildcards"),
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\ntopic = \"a/{tag}\"", "{tag} is not a placeholder"),
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\nqos = 2", "out of range"),
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\npublish = [\"tags\"]", "'tags' is not one of"),
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\npassword-file = \"/x\"", "a password needs a username"),
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\nca-file = \"/x\"", "need an mqtts:// url"),
            ("[[output.mqtt]]\nurl = \"mqtts://b\"\ncert-file = \"/x\"", "go together"),
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\nname = \"postgres\"", "is taken"),
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\n[[output.mqtt]]\nurl = \"mqtt://c\"\nname = \"mqtt\"", "is taken"),
            ("[[output.mqtt]]\nurl = \"mqtt://b\"\ncolour = 1", "unknown key 'colour'"),
            ("[[output.mqtt]]\nqos = 1", "url is missing"),
        ] {
            #expect(throws: ConfigError.self, "\(body)") { try Self.parse(body) }
            do { _ = try Self.parse(body) } catch { #expect("\(error)".contains(says), "\(body): \(error)") }
        }
    }
}
