import Testing

@testable import VLoggerCore

/// The live stream's request: filters, where to resume (`R-E`, the ids of the last reading and event an
/// EventSource got, which browsers send back as Last-Event-ID when they reconnect), and a 400 naming the
/// parameter for anything else.
@Suite struct StreamQueryTests {
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
