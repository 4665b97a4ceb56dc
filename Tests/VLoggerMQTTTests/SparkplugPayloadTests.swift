import Foundation
import SwiftProtobuf
import Testing
import VLoggerStore
import VLoggerModel

@testable import VLoggerCore
@testable import VLoggerMQTT

/// Sparkplug B payloads and sequence numbers, by the rules of the Sparkplug 3.0 specification
/// (docs/reference/sparkplug-b.md, with the tck-ids) and the protobuf wire format (protobuf.dev, "Encoding":
/// a field's key is `field_number << 3 | wire_type`, varints little-endian base 128, wire type 0 varint, 2
/// length-delimited). The decoder nobody here wrote checks the same payloads in SparkplugTests (IntegrationTests).
@Suite struct SparkplugPayloadTests {
    /// tck-id-topics-nbirth-seq-num (NBIRTH has seq 0) and tck-id-payloads-sequence-num-incrementing (each next
    /// message one more, 255 followed by 0).
    @Test func seqStartsAtZeroOnBirthAndWrapsAfter255() {
        var s = SparkplugSequence()
        #expect(s.birth() == 0)
        var taken: [UInt64] = []
        for _ in 0..<300 { taken.append(s.take()) }
        #expect(taken.first == 1 && taken[254] == 255 && taken[255] == 0 && taken[256] == 1)
        #expect(s.birth() == 0 && s.take() == 1)
    }

    /// tck-id-topics-nbirth-bdseq-increment (0 first, one more per CONNECT) and the wrap after 255
    /// (tck-id-payloads-ndeath-bdseq).
    @Test func bdSeqCountsConnectionsAndWraps() {
        var b = SparkplugBirthDeathSequence()
        #expect(b.advance() == 0 && b.advance() == 1)
        var kept = SparkplugBirthDeathSequence(start: 254)
        #expect(kept.advance() == 255 && kept.advance() == 0)
    }

    /// NDEATH: one metric `bdSeq`, Int64 (4) in `long_value`, and no seq (tck-id-topics-ndeath-payload,
    /// tck-id-topics-ndeath-seq), as bytes worked out by hand from the wire format: payload field 1 (timestamp,
    /// varint) = 08 01; field 2 (a metric, length-delimited) = 12 0D then the metric: field 1 name "bdSeq"
    /// (0A 05 62 64 53 65 71), field 3 timestamp (18 01), field 4 datatype 4 (20 04), field 11 long_value 0
    /// (key 11 << 3 = 0x58, then 00).
    @Test func deathBytesAsTheWireFormatHasThem() {
        let bytes = SparkplugPayloads.death(bdSeq: 0, at: 1)
        #expect(
            bytes == [
                0x08, 0x01, 0x12, 0x0D, 0x0A, 0x05, 0x62, 0x64, 0x53, 0x65, 0x71, 0x18, 0x01, 0x20, 0x04, 0x58, 0x00,
            ], "\(bytes.map { String($0, radix: 16) })")
    }

    /// NBIRTH's node metrics: bdSeq first, `Node Control/Rebirth` Boolean (11) false (tck-id-topics-nbirth-rebirth-
    /// metric), every metric with a timestamp and a datatype; a metric without a value yet is `is_null`; each
    /// reader's state as `Reader/<id>/Up`.
    @Test func nodeBirthHasBdSeqAndTheRebirthControl() throws {
        let bytes = SparkplugPayloads.encode(
            timestamp: 5, seq: 0,
            SparkplugPayloads.nodeBirth(
                bdSeq: 9, gateway: "gw-1", readers: [("cage-room", "Cold room", true), ("dock", nil, false)], at: 5))
        let p = try SparkplugBPayload(serializedBytes: bytes)
        #expect(p.hasSeq && p.seq == 0 && p.timestamp == 5)
        #expect(p.metrics.first?.name == "bdSeq" && p.metrics.first?.longValue == 9 && p.metrics.first?.datatype == 4)
        let rebirth = try #require(p.metrics.first { $0.name == "Node Control/Rebirth" })
        #expect(rebirth.datatype == 11 && rebirth.booleanValue == false)
        #expect(p.metrics.allSatisfy { $0.hasTimestamp && $0.hasDatatype })
        let empty = try #require(p.metrics.first { $0.name == "Event/Kind" })
        #expect(empty.isNull && empty.value == nil)
        #expect(p.metrics.first { $0.name == "Reader/cage-room/Up" }?.booleanValue == true)
        #expect(p.metrics.first { $0.name == "Reader/dock/Up" }?.booleanValue == false)
        #expect(p.metrics.first { $0.name == "Reader/cage-room/Location" }?.stringValue == "Cold room")
    }

    /// Issue 47, item 3: a tag is a device, and its first DBIRTH declares every field the plans can give (numbers
    /// Double 10, text and hex String 12, the NDEF records only in Reading/JSON), null until read
    /// (tck-id-operational-behavior-data-publish-dbirth-values: is_null and no value), each with its unit as the
    /// String property `engUnit`; the device is named by its asset id where the register has one.
    @Test func aTagsBirthDeclaresEveryFieldWithItsUnit() throws {
        let fields = SparkplugField.declared([
            FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "cage", unit: nil, kind: .text),
            FieldInfo(name: "serial", unit: nil, kind: .hex), FieldInfo(name: "ndef", unit: nil, kind: .json),
        ])
        let device = SparkplugDevice(uid: "E008010000004212", asset: "CAGE-12")
        #expect(device.id == "CAGE-12" && SparkplugDevice(uid: "E008010000004212", asset: "").id == "E008010000004212")
        let p = try SparkplugBPayload(
            serializedBytes: SparkplugPayloads.encode(
                timestamp: 5, seq: 1, SparkplugPayloads.deviceBirth(device, fields: fields, at: 5)))
        #expect(p.metrics.allSatisfy { $0.hasTimestamp && $0.hasDatatype })
        #expect(p.metrics.first { $0.name == "Properties/UID" }?.stringValue == "E008010000004212")
        #expect(p.metrics.first { $0.name == "Properties/Asset" }?.stringValue == "CAGE-12")
        let t = try #require(p.metrics.first { $0.name == "Field/temperature" })
        #expect(t.datatype == 10 && t.isNull && t.value == nil)
        #expect(t.properties.keys == ["engUnit"] && t.properties.values.first?.stringValue == "°C")
        #expect(t.properties.values.first?.type == 12)
        #expect(p.metrics.first { $0.name == "Field/cage" }?.datatype == 12)
        #expect(p.metrics.first { $0.name == "Field/serial" }?.datatype == 12)
        #expect(!p.metrics.contains { $0.name == "Field/ndef" })
        #expect(p.metrics.first { $0.name == "Field/cage" }?.hasProperties == false)
    }

    /// tck-id-payloads-metric-datatype-not-req: DATA metrics carry no datatype (nor properties); the birth said it.
    @Test func dataMetricsCarryNoDatatype() throws {
        var m = SparkplugMetric("Field/temperature", .double, .double(4.5), at: 7)
        m.unit = "°C"
        let p = try SparkplugBPayload(
            serializedBytes: SparkplugPayloads.encode(timestamp: 7, seq: 3, birth: false, [m]))
        #expect(p.metrics.first?.hasDatatype == false && p.metrics.first?.hasProperties == false)
        #expect(p.metrics.first?.doubleValue == 4.5)
    }

    /// A reading's metrics: its time on each, the decoded numbers as Double (10), text as String (12), booleans as
    /// Boolean (11); nested values and names with `/` only in Reading/JSON; the backlog flagged is_historical.
    @Test func aReadingsMetrics() {
        let fields = SparkplugPayloads.decodedFields(
            #"{"temperature":21.5,"ok":true,"label":"B7 \"x\"","records":[{"t":"T"}],"a/b":1,"n":null,"neg":-4e2}"#)
        #expect(fields.map(\.name) == ["label", "neg", "ok", "temperature"])
        #expect(fields.first { $0.name == "temperature" }?.value == .double(21.5))
        #expect(fields.first { $0.name == "neg" }?.value == .double(-400))
        #expect(fields.first { $0.name == "ok" }?.value == .boolean(true))
        #expect(fields.first { $0.name == "label" }?.value == .string("B7 \"x\""))
        #expect(SparkplugPayloads.decodedFields("not json").isEmpty && SparkplugPayloads.decodedFields(nil).isEmpty)
        let columns = SyncTable.readings.columns.map(\.name)
        var values = [OutboxValue](repeating: .null, count: columns.count)
        func set(_ n: String, _ v: OutboxValue) { if let i = columns.firstIndex(of: n) { values[i] = v } }
        set("reader", .text("cage-room"))
        set("uid", .text("E008010000004212"))
        set("block", .integer(0xF8))
        set("count", .integer(1))
        set("data", .blob([0x66, 0x08]))
        set("decoded", .text(#"{"temperature":21.5}"#))
        let row = OutboxRow(id: 7, time: 1_763_800_000_123, gateway: "gw-1", values: values)
        let m = SparkplugPayloads.metrics(.readings, row, gateway: "gw-1", jsonFields: [], historical: true)
        #expect(m.allSatisfy { $0.timestamp == 1_763_800_000_123 && $0.historical })
        // Where it was read: the device's properties (the tag is the device, not the reader).
        #expect(m.first { $0.name == "Properties/Reader" }?.value == .string("cage-room"))
        #expect(!m.contains { $0.name == "Properties/Location" || $0.value == nil }, "no nulls in data")
        #expect(m.first { $0.name == "Reading/Block" }?.value == .int64(0xF8))
        #expect(m.first { $0.name == "Reading/Data" }?.value == .bytes([0x66, 0x08]))
        #expect(m.first { $0.name == "Field/temperature" }?.type == .double)
        let json = m.first { $0.name == "Reading/JSON" }?.value
        guard case .string(let text) = json else {
            Issue.record("Reading/JSON is \(String(describing: json))")
            return
        }
        #expect(text.contains(#""key":"gw-1/readings/7""#), "\(text)")
    }

    /// What a host sends: a rebirth request (Tahu's form: the metric by name, Boolean true), the STATE JSON
    /// (`{"online": …, "timestamp": …}`, Sparkplug 3.0 host-topic-phid-*); anything else is not one.
    @Test func hostMessages() {
        let rebirth: [UInt8] =
            [0x08, 0x01, 0x12, 0x1A, 0x0A, 0x14] + Array("Node Control/Rebirth".utf8) + [0x20, 0x0B, 0x70, 0x01]
        #expect(SparkplugPayloads.isRebirthRequest(rebirth))
        var no = rebirth
        no[no.count - 1] = 0x00
        #expect(!SparkplugPayloads.isRebirthRequest(no))
        #expect(!SparkplugPayloads.isRebirthRequest([0xFF, 0xFF, 0xFF]))
        #expect(!SparkplugPayloads.isRebirthRequest(SparkplugPayloads.death(bdSeq: 1, at: 1)))
        let on = SparkplugPayloads.hostState(Array(#"{"online":true,"timestamp":1763800000000}"#.utf8))
        #expect(on?.online == true && on?.timestamp == 1_763_800_000_000)
        #expect(SparkplugPayloads.hostState(Array("ONLINE".utf8)) == nil)
        #expect(SparkplugPayloads.hostState(Array(#"{"online":"yes","timestamp":1}"#.utf8)) == nil)
    }

    @Test func topics() {
        let t = SparkplugTopics(group: "plant-1", edgeNode: "gw-1")
        #expect(t.topic(.nbirth) == "spBv1.0/plant-1/NBIRTH/gw-1")
        #expect(t.topic(.ddata, device: "cage-room") == "spBv1.0/plant-1/DDATA/gw-1/cage-room")
        #expect(SparkplugTopics.state(host: "scada") == "spBv1.0/STATE/scada")
    }

    /// The configuration: ids as topic levels without `/`, `+`, `#`; the keys of plain JSON refused with
    /// sparkplug = true; Sparkplug keys without it refused; QoS 0 and readings/events only.
    @Test func configuration() throws {
        let c = try AgentConfig.parse(
            "[gateway]\nid = \"gw-1\"\n[[output.mqtt]]\nurl = \"mqtt://b\"\nsparkplug = true\nsparkplug-group = \"plant-1\"\nsparkplug-primary-host = \"scada\"\n",
            file: "t.toml")
        #expect(
            c.outputs.mqtt.first?.sparkplug?.group == "plant-1"
                && c.outputs.mqtt.first?.sparkplug?.primaryHost == "scada")
        #expect(c.outputs.mqtt.first?.qos == 0)
        for (body, says) in [
            ("sparkplug = true\ntopic = \"x\"", "does not go with sparkplug"),
            ("sparkplug = true\npublish = [\"writes\"]", "readings and events only"),
            ("sparkplug = true\nsparkplug-group = \"a/b\"", "'/', '+' and '#'"),
            ("sparkplug-group = \"a\"", "needs sparkplug = true"),
        ] {
            #expect(throws: (any Error).self, "\(body)") {
                try AgentConfig.parse(
                    "[gateway]\nid = \"gw-1\"\n[[output.mqtt]]\nurl = \"mqtt://b\"\n\(body)\n", file: "t.toml")
            }
            do {
                _ = try AgentConfig.parse(
                    "[gateway]\nid = \"gw-1\"\n[[output.mqtt]]\nurl = \"mqtt://b\"\n\(body)\n", file: "t.toml")
            } catch { #expect("\(error)".contains(says), "\(body): \(error)") }
        }
    }
}
