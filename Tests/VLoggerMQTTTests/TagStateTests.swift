import Foundation
import Testing
import VLoggerModel
import VLoggerStore

@testable import VLoggerMQTT

/// The retained tag state and Home Assistant's ids (issue 47, item 3): facts from docs/reference/
/// home-assistant-mqtt-discovery.md (HA's topic matcher allows `[a-zA-Z0-9_-]` in node and object ids; the units HA
/// allows per device class) and the rows' own times.
@Suite struct TagStateTests {
    static func row(_ table: SyncTable, time: Millis, _ values: [String: OutboxValue]) -> OutboxRow {
        let columns = table.columns.map(\.name)
        var cells = [OutboxValue](repeating: .null, count: columns.count)
        for (k, v) in values { if let i = columns.firstIndex(of: k) { cells[i] = v } }
        return OutboxRow(id: 1, time: time, gateway: "gw", values: cells)
    }

    /// A sensor log's record, read after a newer reading, does not put its old value back as the current one; the
    /// alarms follow violation and violation_ended; the units come with the values.
    @Test func newerValuesWinAndAlarmsFollowTheEvents() throws {
        var s = TagStates(units: ["temperature": "°C"])
        let uid = OutboxValue.text("E008010000004212")
        s.take(.readings, Self.row(.readings, time: 2000, ["uid": uid, "decoded": .text(#"{"temperature":4.5}"#)]))
        s.take(.readings, Self.row(.readings, time: 1000, ["uid": uid, "decoded": .text(#"{"temperature":9.0}"#)]))
        s.take(.events, Self.row(.events, time: 2100, ["uid": uid, "kind": .text("violation"), "name": .text("cold")]))
        var out = s.changed(gateway: "gw")
        #expect(out.count == 1)
        var o = try #require(try JSONSerialization.jsonObject(with: Data(out[0].payload)) as? [String: Any])
        #expect((o["values"] as? [String: Any])?["temperature"] as? Double == 4.5, "\(o)")
        #expect((o["units"] as? [String: Any])?["temperature"] as? String == "°C")
        #expect(o["alarms"] as? [String] == ["cold"] && o["time"] as? String == "1970-01-01T00:00:02.100Z")
        s.take(
            .events,
            Self.row(.events, time: 2200, ["uid": uid, "kind": .text("violation_ended"), "name": .text("cold")]))
        out = s.changed(gateway: "gw")
        o = try #require(try JSONSerialization.jsonObject(with: Data(out[0].payload)) as? [String: Any])
        #expect((o["alarms"] as? [String])?.isEmpty == true && o["asset_id"] == nil, "\(o)")
        #expect(s.changed(gateway: "gw").isEmpty)
    }

    @Test func homeAssistantIdsAndDeviceClasses() {
        #expect(HomeAssistant.id("plant:gw-01") == "plant_gw-01" && HomeAssistant.id("") == "_")
        #expect(HomeAssistant.id("Kühlraum 1.2") == "K_hlraum_1_2")
        #expect(HomeAssistant.deviceClass(field: "temperature", unit: "°C") == ("°C", "temperature"))
        #expect(HomeAssistant.deviceClass(field: "rel_humidity", unit: "%") == ("%", "humidity"))
        #expect(HomeAssistant.deviceClass(field: "fill", unit: "%") == ("%", nil))
        // HA lists the micro sign as U+03BC; the plan's U+00B5 is written as HA has it.
        #expect(HomeAssistant.deviceClass(field: "v", unit: "\u{00B5}V") == ("\u{03BC}V", "voltage"))
        #expect(HomeAssistant.deviceClass(field: "adc0", unit: nil) == (nil, nil))
    }
}
