import Foundation
import ISO15693
import Testing
import VLoggerModel

@testable import VLoggerStore

/// Who asked for a write, or for what an event reports (`origin`, docs/json.md): one description line per table
/// (`TableDescription.events`, `.writes`) and the records' values, and the column is stored, exported (CSV and
/// JSON lines, last), and shipped by the outbox (the JSON of MQTT, webhooks and the read API). The central table
/// and export: `SyncTests` and `ServiceTests.theCentralExportIsTheLocalExportAcrossThreeGateways`.
@Suite struct OriginTests {
    static let uid = UID(manufacturer: .nxp, serial: 0x4212)

    static func store() throws -> Store {
        let s = try Store(path: scratchPath("origin.db"))
        var b = Batch()
        b.writes = [
            WriteRecord(
                time: 1_763_800_000_000, gateway: "gw-1", uid: uid, first: BlockNumber(0xF8), data: [1, 2, 3, 4],
                flags: nil, result: "ok", verified: true, exchanges: 2, origin: "cli"),
            WriteRecord(
                time: 1_763_800_000_001, gateway: "gw-1", uid: uid, first: BlockNumber(0xF8), data: [1, 2, 3, 4],
                flags: nil, result: "ok (queued write 1)", verified: true, exchanges: 2, origin: "queue"),
        ]
        b.events = [
            Event(
                time: 1_763_800_000_002, gateway: "gw-1", uid: uid, kind: .writeDone, name: "1", severity: .info,
                detail: "done"),
            Event(
                time: 1_763_800_000_003, gateway: "gw-1", uid: uid, kind: .arrival, name: "", severity: .info,
                detail: "arrived"),
            Event(
                time: 1_763_800_000_004, gateway: "gw-1", uid: nil, kind: .auditFinished, name: "7", severity: .info,
                detail: "0 missing", origin: "api:plc-7"),
        ]
        try s.write(b)
        return s
    }

    /// The kind says who asked when it can (a queued write's outcome: the queue; a finished audit: the audit);
    /// what the agent sees by itself has none; an origin given wins.
    @Test func anEventsOriginIsItsKindsUnlessGiven() throws {
        func origin(_ kind: Event.Kind, _ given: String? = nil) -> String? {
            Event(time: 0, gateway: "g", uid: nil, kind: kind, name: "", severity: .info, detail: "", origin: given)
                .origin
        }
        #expect(origin(.writeDone) == "queue" && origin(.writeFailed) == "queue" && origin(.writeExpired) == "queue")
        #expect(origin(.auditFinished) == "audit")
        #expect(origin(.arrival) == nil && origin(.violation) == nil && origin(.readerDown) == nil)
        #expect(origin(.auditFinished, "opcua:ua-client") == "opcua:ua-client")
    }

    @Test func theExportsHaveTheOriginLast() throws {
        let s = try Self.store()
        let writes = try ExportGoldenTests.export(s, .writes, .csv).components(separatedBy: "\r\n")
        #expect(writes[0] == "time,gateway,uid,block,data,flags,result,verified,exchanges,origin")
        #expect(writes[1].hasSuffix(",ok,1,2,cli") && writes[2].hasSuffix(",1,2,queue"), "\(writes)")
        let events = try ExportGoldenTests.export(s, .events, .csv).components(separatedBy: "\r\n")
        #expect(events[0].hasSuffix(",severity,detail,origin"), "\(events[0])")
        #expect(events[1].hasSuffix(",done,queue") && events[2].hasSuffix(",arrived,"), "\(events)")
        #expect(events[3].hasSuffix(",0 missing,api:plc-7"), "\(events)")
        // JSON lines: a member where there is an origin, none where there is not (docs/json.md: no nulls).
        let lines = try ExportGoldenTests.export(s, .events, .jsonl).split(separator: "\n")
        #expect(lines[0].hasSuffix(#","detail":"done","origin":"queue"}"#), "\(lines[0])")
        #expect(!lines[1].contains("origin"), "\(lines[1])")
    }

    /// The outbox ships it: the row's value and the JSON that MQTT, webhooks and the read API send.
    @Test func theOutboxShipsTheOrigin() throws {
        let s = try Self.store()
        let rows = try s.outbox(.writes, after: 0, limit: 10)
        #expect(rows.map { $0.value("origin", in: .writes) } == [.text("cli"), .text("queue")])
        var json: [UInt8] = []
        OutboxJSON.append(.writes, rows[1], gateway: "gw-1", to: &json)
        #expect(String(decoding: json, as: UTF8.self).hasSuffix(#""exchanges":2,"origin":"queue"}"#))
        let events = try s.outbox(.events, after: 0, limit: 10)
        #expect(
            events.map { $0.value("origin", in: .events) } == [.text("queue"), .null, .text("api:plc-7")])
        // Read back as stored, not as the kind would say.
        #expect(try s.events(kind: .auditFinished).map(\.origin) == ["api:plc-7"])
    }

    /// A queued write keeps who queued it; a write queued before the column has none (its write is the queue's).
    @Test func aQueuedWriteKeepsWhoQueuedIt() throws {
        let s = try Store(path: scratchPath("queue.db"))
        let api = try s.enqueue(
            QueuedWrite(
                created: 1, uid: Self.uid, first: BlockNumber(4), data: [1, 2, 3, 4], origin: "api"),
            idempotencyKey: "k-1")
        let old = try s.enqueue(QueuedWrite(created: 2, uid: Self.uid, first: BlockNumber(5), data: [5, 6, 7, 8]))
        #expect(try s.queuedWrite(api.id)?.origin == "api" && s.queuedWrite(old)?.origin == nil)
        let json = String(
            decoding: WireJSON.encode(QueuedWriteJSON(try #require(try s.queuedWrite(api.id)))), as: UTF8.self)
        #expect(json.contains(#","origin":"api","#), "\(json)")
        // The same key again is the same write, whoever asks.
        #expect(
            try s.enqueue(
                QueuedWrite(created: 3, uid: Self.uid, first: BlockNumber(4), data: [1, 2, 3, 4], origin: "cli"),
                idempotencyKey: "k-1") == (api.id, true, .queued))
    }
}
