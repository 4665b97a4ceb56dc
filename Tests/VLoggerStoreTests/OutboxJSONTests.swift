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

/// The central side of the MQTT fan-in: `OutboxJSON.row(from:)` reads back what `append` wrote, for every table
/// and every kind of column, and refuses what it did not write with a reason.
@Suite struct OutboxJSONDecodeTests {
    /// A small seeded generator (SplitMix64, Steele, Lea and Flood 2014), so a failure names its seed.
    struct Mix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func value(_ c: OutboxColumn, _ g: inout Mix) -> OutboxValue {
        if Int.random(in: 0..<6, using: &g) == 0 { return .null }
        switch c.kind {
        case .integer: return .integer(Int64.random(in: -1_000_000...Int64.max, using: &g))
        case .bool: return .integer(Int64.random(in: 0...1, using: &g))
        case .time: return .integer(Int64.random(in: 0...253_402_300_799_999, using: &g))
        case .blob:
            return .blob((0..<Int.random(in: 0..<40, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) })
        case .text:
            let alphabet = Array("aZ09 -_/\"\\\n\t\u{1}é€😀,.")
            return .text(
                String((0..<Int.random(in: 0..<12, using: &g)).map { _ in alphabet.randomElement(using: &g)! }))
        case .json: return .text(#"[{"check":"uid","ok":false}]"#)
        }
    }

    @Test(arguments: SyncTable.allCases) func everyRowReadsBackAsItWasWritten(_ table: SyncTable) throws {
        var g = Mix(state: 15693)
        for n in 1...300 {
            var values = table.columns.map { Self.value($0, &g) }
            // What the writer makes of them: block numbers and flags are written as hex numbers, within Int64.
            for (i, c) in table.columns.enumerated() where c.name == "decoded" {
                values[i] =
                    n % 3 == 0
                    ? .null
                    : .text(#"{"temperature":21.5,"label":"a\"b","uid":"on the tag","ndef":[{"type":"T"}],"n":-3}"#)
            }
            let gateway = table == .tags ? "" : "gw-\(n % 7)"
            let row = OutboxRow(
                id: Int64(n), time: Int64.random(in: 0...253_402_300_799_999, using: &g), gateway: gateway,
                values: values)
            var out: [UInt8] = []
            OutboxJSON.append(table, row, gateway: "gw-own", jsonFields: ["ndef"], to: &out)
            let back = try OutboxJSON.row(from: out)
            var expected = row
            if expected.gateway.isEmpty { expected.gateway = "gw-own" }
            // Columns that the JSON does not carry (not exported) come back as no value.
            let exported = Set(table.tableDescription.exported.map(\.name))
            for (i, c) in table.columns.enumerated() where !exported.contains(c.name) && c.name != "decoded" {
                expected.values[i] = .null
            }
            #expect(back.table == table)
            #expect(back.row == expected, "\(String(decoding: out, as: UTF8.self))")
        }
    }

    @Test func aBatchMessageIsEachOfItsRows() throws {
        var out: [UInt8] = [0x5B]
        for id in 1...3 {
            if id > 1 { out.append(0x2C) }
            OutboxJSON.append(
                .events,
                OutboxRow(
                    id: Int64(id), time: 1_000, gateway: "gw-1",
                    values: [
                        .text("r"), .null, .null, .null,
                        .text("error"), .text("x"), .text("warning"), .text("d"), .null,
                    ]), gateway: "gw-1", to: &out)
        }
        out += Array(#",{"table":"events"}]"#.utf8)
        let rows = OutboxJSON.rows(from: out)
        #expect(rows.count == 4)
        #expect(rows.prefix(3).compactMap { try? $0.get().row.id } == [1, 2, 3])
        #expect(throws: OutboxJSON.Invalid.self) { try rows[3].get() }
        #expect(OutboxJSON.rows(from: Array("[]".utf8)).isEmpty)
    }

    /// Messages the gateway publishes that are not rows (its status, a tag's retained state) and damaged rows:
    /// refused with the reason, never a row with a guessed value.
    @Test(arguments: [
        ("online", "not one JSON object"),
        (#"{"gateway":"gw-1","uid":"E0","values":{}}"#, "no 'table'"),
        (#"{"key":null,"table":"events","gateway":"gw-1","time":"2026-01-01T00:00:00.000Z"}"#, "no 'key'"),
        (
            #"{"key":"gw-2/events/1","table":"events","gateway":"gw-1","time":"2026-01-01T00:00:00.000Z"}"#,
            "is not gw-1/events/"
        ),
        (
            #"{"key":"gw-1/events/0","table":"events","gateway":"gw-1","time":"2026-01-01T00:00:00.000Z"}"#,
            "is not gw-1/events/"
        ),
        (
            #"{"key":"gw-1/events/1","table":"events","gateway":"gw-1","time":"2026-02-30T00:00:00.000Z"}"#,
            "is not a time"
        ),
        (#"{"key":"gw-1/events/1","table":"events","gateway":"gw-1"}"#, "no 'time'"),
        (#"{"key":"gw-1/events/1","table":"events","table":"events","gateway":"gw-1"}"#, "'table' twice"),
        (
            #"{"key":"gw-1/writes/1","table":"writes","gateway":"gw-1","time":"2026-01-01T00:00:00.000Z","block":"0x1FFFFFFFFFFFFFFFF"}"#,
            "not a hex number"
        ),
        (
            #"{"key":"gw-1/writes/1","table":"writes","gateway":"gw-1","time":"2026-01-01T00:00:00.000Z","data":"ABC"}"#,
            "not hex bytes"
        ),
        (
            #"{"key":"gw-1/writes/1","table":"writes","gateway":"gw-1","time":"2026-01-01T00:00:00.000Z","exchanges":9223372036854775808}"#,
            "not a whole number"
        ),
        (
            #"{"key":"gw-1/writes/1","table":"writes","gateway":"gw-1","time":"2026-01-01T00:00:00.000Z","exchanges":1.5}"#,
            "not a whole number"
        ),
        (#"{"key":"gw-1/nothing/1","table":"nothing","gateway":"gw-1"}"#, "not a table this vlogger ships"),
    ]) func notARow(_ text: String, _ reason: String) {
        #expect {
            try OutboxJSON.row(from: Array(text.utf8))
        } throws: { e in
            (e as? OutboxJSON.Invalid)?.reason.contains(reason) == true
        }
    }

    /// A newer gateway's row with a column this version lacks: read without it, not refused (refused rows are
    /// acknowledged and gone).
    @Test func aColumnOfANewerGatewayIsLeftOut() throws {
        let text =
            #"{"key":"gw-1/events/1","table":"events","gateway":"gw-1","time":"2026-01-01T00:00:00.000Z","kind":"error","name":"n","severity":"warning","detail":"d","colour":"red"}"#
        let r = try OutboxJSON.row(from: Array(text.utf8))
        #expect(r.table == .events && r.row.id == 1 && r.row.value("kind", in: .events).text == "error")
    }

    /// The edges of the time form (`ValueText.appendTime`'s), checked against Foundation's ISO 8601 reading.
    @Test func timesAtTheirEdges() throws {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for text in [
            "1970-01-01T00:00:00.000Z", "2000-02-29T23:59:59.999Z", "2026-11-29T04:43:45.027Z",
            "9999-12-31T23:59:59.999Z", "1900-03-01T00:00:00.001Z",
        ] {
            let date = try #require(f.date(from: text))
            #expect(
                OutboxJSON.parseTime(Array(text.utf8)) == Int64((date.timeIntervalSince1970 * 1000).rounded()),
                "\(text)")
        }
        for bad in [
            "2026-11-29T04:43:45Z", "2026-13-01T00:00:00.000Z", "1900-02-29T00:00:00.000Z", "2026-11-29T24:00:00.000Z",
            "2026-11-29 04:43:45.027Z",
        ] {
            #expect(OutboxJSON.parseTime(Array(bad.utf8)) == nil, "\(bad)")
        }
    }
}
