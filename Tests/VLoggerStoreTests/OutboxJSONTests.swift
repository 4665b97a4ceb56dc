import Foundation
import ISO15693
import Testing
import VLoggerModel

@testable import VLoggerStore

/// Rows as the JSON outputs (MQTT, webhooks) send them: one object per row, each member once, the export's
/// names and formats, a key that names the row.
@Suite struct OutboxJSONTests {
    static func object(_ table: SyncTable, _ row: OutboxRow) throws -> (text: String, object: [String: Any]) {
        var out: [UInt8] = []
        OutboxJSON.append(table, row, gateway: "gw-1", jsonFields: ["ndef"], to: &out)
        let text = String(decoding: out, as: UTF8.self)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(out)) as? [String: Any], "\(text)")
        // Each member once (JSONSerialization would keep one of two silently).
        var names: [String] = []
        let ok = out.withUnsafeBufferPointer { p in
            JSONMembers.scan(p) { key, _ in names.append(String(decoding: p[key], as: UTF8.self)) }
        }
        #expect(ok && names.count == Set(names).count, "\(names)")
        return (text, o)
    }

    @Test func aReadingAnEventAndAWrite() throws {
        let s = try Store(path: scratchPath("outbox-json.db"))
        var b = Batch()
        b.readings = [
            Reading(
                time: 1_763_800_000_250, gateway: "gw-1", reader: "dock-0", location: "Dock 0",
                uid: try UID(parsing: "E008010000004212"), first: 0xF8, count: 1, data: [0x66, 0x08, 0xC2, 0x01],
                decoded: [
                    ("temperature", .number(21.5)), ("uid", .text("on the tag")), ("table", .integer(3)),
                    ("ndef", .json(#"[{"type":"T","text":"hi"}]"#)),
                ])
        ]
        b.events = [
            Event(
                time: 1_763_800_000_300, gateway: "gw-1", reader: "dock-0", uid: try UID(parsing: "E008010000004212"),
                kind: .violation, name: "too-warm", severity: .critical, detail: "temperature is 25.5")
        ]
        b.writes = [
            WriteRecord(
                time: 1_763_800_000_400, gateway: "gw-1", uid: try UID(parsing: "E008010000004212"), first: 0x100,
                data: [1, 2, 3, 4], flags: [.highDataRate], result: "ok", verified: true, exchanges: 2)
        ]
        try s.write(b)
        let reading = try Self.object(.readings, try s.outbox(.readings, after: 0, limit: 1)[0])
        #expect(
            reading.object["key"] as? String == "gw-1/readings/1" && reading.object["table"] as? String == "readings")
        #expect(reading.object["time"] as? String == "2025-11-22T08:26:40.250Z")
        #expect(reading.object["block"] as? String == "0xF8" && reading.object["data"] as? String == "6608C201")
        #expect(reading.object["uid"] as? String == "E008010000004212")
        // Fields named like a fixed member are prefixed, as in the export; the NDEF records are nested JSON.
        #expect(reading.object["field_uid"] as? String == "on the tag" && reading.object["field_table"] as? Int == 3)
        #expect(reading.object["temperature"] as? Double == 21.5)
        #expect((reading.object["ndef"] as? [[String: String]])?.first?["text"] == "hi", "\(reading.text)")
        let event = try Self.object(.events, try s.outbox(.events, after: 0, limit: 1)[0])
        #expect(event.object["kind"] as? String == "violation" && event.object["table"] as? String == "events")
        let write = try Self.object(.writes, try s.outbox(.writes, after: 0, limit: 1)[0])
        #expect(write.object["block"] as? String == "0x0100" && write.object["flags"] as? String == "0x02")
        #expect(write.object["verified"] as? Int == 1 && write.object["data"] as? String == "01020304")
    }
}
