import TestDrivers
import Testing

@testable import VLoggerService

/// The live stream's request: filters, where to resume (`R-E`, the ids of the last reading and event an
/// EventSource got, which browsers send back as Last-Event-ID when they reconnect), and a 400 naming the
/// parameter for anything else.
@Suite(.drivers) struct StreamQueryTests {
    @Test func filtersAndResume() throws {
        let q = try StreamQuery.parse(
            [("reader", "dock-3"), ("uid", "E008010000004212"), ("kind", "reading,violation")], lastEventID: "12-3")
        #expect(q.reader == "dock-3" && q.uid?.description == "E008010000004212")
        #expect(q.readings && q.events && q.eventKinds == ["violation"])
        #expect(q.after?.readings == 12 && q.after?.events == 3)
        let events = try StreamQuery.parse([("kind", "event")], lastEventID: nil)
        #expect(!events.readings && events.events && events.eventKinds == nil && events.after == nil)
        // The header wins over the parameter (a reconnecting EventSource sends the header).
        #expect(try StreamQuery.parse([("last_event_id", "1-1")], lastEventID: "5-6").after?.readings == 5)
    }

    @Test func badParametersNameThemselves() {
        for (params, header, parameter) in [
            ([("uid", "E0zz")], nil, "uid"), ([("kind", "bogus")], nil, "kind"), ([("limit", "5")], nil, "limit"),
            ([("reader", "")], nil, "reader"), ([], "12", "Last-Event-ID"), ([], "-1-2", "Last-Event-ID"),
            ([("last_event_id", "a-b")], nil, "last_event_id"),
        ] as [([(String, String)], String?, String)] {
            #expect(throws: StreamQuery.BadRequest.self) { try StreamQuery.parse(params, lastEventID: header) }
            do { _ = try StreamQuery.parse(params, lastEventID: header) } catch {
                #expect(error.parameter == parameter, "\(params) \(header ?? ""): \(error)")
            }
        }
    }
}

/// The read API's list queries: filters, cursor and page size, each checked (a page is 1 to 1000 rows, a cursor
/// 0 or more, times ISO 8601 with RFC 3339's leap second taken, kinds the event kinds).
@Suite(.drivers) struct ReadQueryTests {
    @Test func filtersCursorAndPage() throws {
        let q = try ReadQuery.parse(
            [
                ("uid", "E008010000004212"), ("reader", "dock-3"), ("since", "2026-11-26T00:00:00Z"),
                ("until", "2016-12-31T23:59:60Z"), ("after_id", "42"), ("limit", "1000"), ("kind", "violation"),
            ], events: true, now: 1_763_800_000_000)
        #expect(q.filter.uid?.description == "E008010000004212" && q.filter.reader == "dock-3")
        #expect(q.filter.since == 1_795_651_200_000 && q.afterID == 42 && q.limit == 1000)
        // 2016-12-31T23:59:59.999Z: the leap second as the last millisecond before the next minute.
        #expect(q.filter.until == 1_483_228_799_999)
        #expect(q.filter.kind == "violation")
        #expect(try ReadQuery.parse([], events: false, now: 0).limit == 100)
    }

    @Test func badValuesNameTheirParameter() {
        for (name, value, events) in [
            ("limit", "0", false), ("limit", "1001", false), ("after_id", "-1", false),
            ("uid", "0000000000000000", false),
            ("since", "yesterday", false), ("kind", "arrival", false), ("kind", "bogus", true), ("page", "2", false),
        ] {
            #expect(throws: StreamQuery.BadRequest.self) {
                try ReadQuery.parse([(name, value)], events: events, now: 0)
            }
            do { _ = try ReadQuery.parse([(name, value)], events: events, now: 0) } catch {
                #expect(error.parameter == name, "\(name)=\(value): \(error)")
            }
        }
        #expect(throws: StreamQuery.BadRequest.self) {
            try ReadQuery.parse([("limit", "5"), ("limit", "6")], events: false, now: 0)
        }
    }
}
