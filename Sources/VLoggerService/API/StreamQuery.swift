import Foundation
import ISO15693
import VLoggerModel

/// What a client of the live stream (`GET /api/v1/stream`, docs/integrating.md) asks for: filters and where to
/// resume. Parsed from the query string and the Last-Event-ID header, which come from outside: every value is
/// checked, and a bad one is a `BadRequest` naming the parameter.
public struct StreamQuery: Equatable, Sendable {
    public init() {}

    public var reader: String?
    public var uid: UID?
    public var readings = true
    public var events = true
    /// Only events of these kinds (nil: every kind).
    public var eventKinds: Set<String>?
    /// Where to start: the ids after which rows are sent (nil: from the newest).
    public var after: (readings: Int64, events: Int64)?

    public static func == (a: StreamQuery, b: StreamQuery) -> Bool {
        a.reader == b.reader && a.uid == b.uid && a.readings == b.readings && a.events == b.events
            && a.eventKinds == b.eventKinds && a.after?.readings == b.after?.readings
            && a.after?.events == b.after?.events
    }

    /// A request that cannot be served: 400 with `{"error": …, "parameter": …}`.
    public struct BadRequest: Error, Equatable {
        public var parameter: String
        public var message: String
        public init(parameter: String, message: String) {
            self.parameter = parameter
            self.message = message
        }
    }

    /// Parses the query string's parameters and the Last-Event-ID header (`R-E`, both ids 0 or more).
    public static func parse(_ params: [(String, String)], lastEventID: String?) throws(BadRequest) -> StreamQuery {
        var q = StreamQuery()
        for (name, value) in params {
            switch name {
            case "reader": q.reader = try reader(value)
            case "uid": q.uid = try uid(value)
            case "kind":
                var readings = false, events = false
                var kinds = Set<String>()
                for k in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                    switch k {
                    case "reading": readings = true
                    case "event": events = true
                    case _ where Event.Kind(rawValue: k) != nil: kinds.insert(k)
                    default:
                        throw BadRequest(
                            parameter: "kind",
                            message:
                                "'\(k.prefix(40))' is not reading, event or an event kind (\(Event.Kind.allCases.map(\.rawValue).joined(separator: ", ")))"
                        )
                    }
                }
                q.readings = readings
                q.events = events || !kinds.isEmpty
                q.eventKinds = events || kinds.isEmpty ? nil : kinds
            case "last_event_id":
                q.after = try cursor(value, parameter: "last_event_id")
            default:
                throw BadRequest(
                    parameter: name, message: "unknown parameter (reader, uid, kind, last_event_id)")
            }
        }
        if let lastEventID, !lastEventID.isEmpty {
            q.after = try cursor(lastEventID, parameter: "Last-Event-ID")
        }
        return q
    }

    /// A `uid` parameter: a UID, E0 first.
    public static func uid(_ value: String) throws(BadRequest) -> UID {
        do { return try UID(parsing: value) } catch {
            throw BadRequest(parameter: "uid", message: "not a UID (16 hex digits, E0 first): \(error)")
        }
    }

    /// A `reader` parameter: a reader id of 1 to 64 characters.
    public static func reader(_ value: String) throws(BadRequest) -> String {
        guard !value.isEmpty, value.utf8.count <= 64 else {
            throw BadRequest(parameter: "reader", message: "a reader id is 1 to 64 characters")
        }
        return value
    }

    public static func cursor(_ text: String, parameter: String) throws(BadRequest) -> (Int64, Int64) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let r = Int64(parts[0]), let e = Int64(parts[1]), r >= 0, e >= 0 else {
            throw BadRequest(
                parameter: parameter, message: "'\(text.prefix(40))' is not R-E (the ids of an event of this stream)")
        }
        return (r, e)
    }
}
