import Foundation
import VLoggerModel

/// Home Assistant MQTT discovery (docs/reference/home-assistant-mqtt-discovery.md, read from Home Assistant's MQTT
/// integration): the gateway is one device; each reader a tag scanner fed by the arrivals on the events topic (one
/// scan per arrival: the scanner fires on every message of its topic whose template gives a tag id, and gives one
/// only for an `arrival` of its reader); each tag's numeric field a sensor on the tag's retained state, with its
/// unit, a device class where the unit fits one, `state_class: measurement`, a `unique_id`, and the gateway's
/// status topic for availability. Every id in a discovery topic holds only `[A-Za-z0-9_-]` (HA drops a topic with
/// any other character, with a warning in its log).
enum HomeAssistant {
    static let prefix = "homeassistant"

    /// A discovery id: each character outside `[A-Za-z0-9_-]` becomes `_` (`gw:01` → `gw_01`); never empty.
    static func id(_ text: String) -> String {
        var out = ""
        for u in text.unicodeScalars {
            let v = u.value
            let plain =
                (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) || v == 0x5F
                || v == 0x2D
            out.unicodeScalars.append(plain ? u : "_")
        }
        return out.isEmpty ? "_" : out
    }

    /// The gateway's device (HA refuses a device without an identifier).
    struct Device: Encodable {
        var identifiers: [String]
        var name: String
        var manufacturer = "vlogger"
        var model = "ISO/IEC 15693 tag gateway"
    }

    static func device(gateway: String) -> Device {
        Device(identifiers: ["vlogger_\(id(gateway))"], name: "vlogger \(gateway)")
    }

    /// A tag scanner (`tag`: topic, value_template, device; HA removes any other key).
    struct TagScanner: Encodable {
        var topic: String
        var valueTemplate: String
        var device: Device
        enum CodingKeys: String, CodingKey { case topic, valueTemplate = "value_template", device }
    }

    /// The tag scanner of a reader on the topic its events are published on: a tag id only for its arrivals.
    static func tagScanner(gateway: String, reader: String, eventsTopic: String) -> (topic: String, payload: [UInt8]) {
        // Reader ids are letters, digits, '-', '_', '.', ':' (AgentConfig): nothing to escape in a Jinja string.
        let template =
            "{% if value_json.kind == 'arrival' and value_json.reader == '\(reader)' %}{{ value_json.uid }}{% endif %}"
        let config = TagScanner(topic: eventsTopic, valueTemplate: template, device: device(gateway: gateway))
        return ("\(prefix)/tag/vlogger_\(id(gateway))/\(id(reader))/config", WireJSON.encode(config))
    }

    /// A sensor (the keys of HA's MQTT sensor schema that vlogger sets).
    struct Sensor: Encodable {
        var name: String
        var uniqueID: String
        var stateTopic: String
        var valueTemplate: String
        var unit: String?
        var deviceClass: String?
        var stateClass = "measurement"
        var availabilityTopic: String
        var jsonAttributesTopic: String
        var jsonAttributesTemplate: String
        var device: Device
        enum CodingKeys: String, CodingKey {
            case name, device
            case uniqueID = "unique_id", stateTopic = "state_topic", valueTemplate = "value_template"
            case unit = "unit_of_measurement", deviceClass = "device_class", stateClass = "state_class"
            case availabilityTopic = "availability_topic", jsonAttributesTopic = "json_attributes_topic"
            case jsonAttributesTemplate = "json_attributes_template"
        }
    }

    /// The sensor of a tag's numeric field, on the tag's state topic.
    static func sensor(
        gateway: String, uid: String, asset: String?, field: String, unit: String?, stateTopic: String,
        statusTopic: String
    ) -> (topic: String, payload: [UInt8]) {
        let object = id("\(uid)_\(field)")
        let (unit, deviceClass) = deviceClass(field: field, unit: unit)
        let quoted = field.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
        let config = Sensor(
            name: "\(asset ?? uid) \(field)", uniqueID: "vlogger_\(id(gateway))_\(object)", stateTopic: stateTopic,
            valueTemplate: "{{ value_json['values']['\(quoted)'] }}", unit: unit, deviceClass: deviceClass,
            availabilityTopic: statusTopic, jsonAttributesTopic: stateTopic,
            jsonAttributesTemplate:
                "{{ {'uid': value_json.get('uid'), 'asset_id': value_json.get('asset_id'), 'reader': value_json.get('reader'), 'location': value_json.get('location'), 'alarms': value_json.get('alarms', [])} | tojson }}",
            device: device(gateway: gateway))
        return ("\(prefix)/sensor/vlogger_\(id(gateway))/\(object)/config", WireJSON.encode(config))
    }

    /// The device class a unit allows (HA refuses a unit its device class does not list, since 2025.7): °C, °F and
    /// K are temperatures; V, mV, μV, kV and MV voltages; % is a humidity or a battery level only when the field's
    /// name says which. Otherwise none (the unit stays). `µ` (U+00B5) is written as HA lists it, `μ` (U+03BC).
    static func deviceClass(field: String, unit: String?) -> (unit: String?, deviceClass: String?) {
        guard let raw = unit, !raw.isEmpty else { return (nil, nil) }
        let u = raw.replacingOccurrences(of: "\u{00B5}", with: "\u{03BC}")
        let name = field.lowercased()
        switch u {
        case "°C", "°F", "K": return (u, "temperature")
        case "V", "mV", "μV", "kV", "MV": return (u, "voltage")
        case "%" where name.contains("humid"): return (u, "humidity")
        case "%" where name.contains("batt"): return (u, "battery")
        default: return (u, nil)
        }
    }
}
