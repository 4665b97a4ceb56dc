import Foundation
import VLoggerModel
import VLoggerStore

/// A request to the read API's lists (`GET /api/v1/readings`, `/api/v1/events`): its filters, where the page
/// starts and how long it is. Parsed from the query string, which comes from outside: every value is checked
/// before use, and a bad one is a `StreamQuery.BadRequest` naming the parameter.
public struct ReadQuery: Equatable, Sendable {
    public var filter = RowFilter()
    public var afterID: Int64 = 0
    public var limit = 100

    public static let maxLimit = 1000

    public init() {}

    /// `events`: whether `kind` is taken (the events list).
    public static func parse(_ params: [(String, String)], events: Bool, now: Millis) throws(StreamQuery.BadRequest)
        -> ReadQuery
    {
        var q = ReadQuery()
        var seen = Set<String>()
        for (name, value) in params {
            guard seen.insert(name).inserted else {
                throw StreamQuery.BadRequest(parameter: name, message: "given twice")
            }
            switch name {
            case "uid": q.filter.uid = try StreamQuery.uid(value)
            case "reader": q.filter.reader = try StreamQuery.reader(value)
            case "since", "until":
                guard !value.isEmpty, value.utf8.count <= 40 else {
                    throw StreamQuery.BadRequest(parameter: name, message: "1 to 40 characters")
                }
                let t: Millis
                do { t = try TimeSpec.parse(value, now: now).millis } catch {
                    throw StreamQuery.BadRequest(parameter: name, message: "\(error)")
                }
                if name == "since" { q.filter.since = t } else { q.filter.until = t }
            case "after_id":
                guard let n = Int64(value), n >= 0 else {
                    throw StreamQuery.BadRequest(parameter: "after_id", message: "a row id, 0 or more")
                }
                q.afterID = n
            case "limit":
                guard let n = Int(value), (1...maxLimit).contains(n) else {
                    throw StreamQuery.BadRequest(parameter: "limit", message: "1 to \(maxLimit)")
                }
                q.limit = n
            case "kind" where events:
                guard Event.Kind(rawValue: value) != nil else {
                    throw StreamQuery.BadRequest(
                        parameter: "kind",
                        message: "one of \(Event.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                q.filter.kind = value
            default:
                throw StreamQuery.BadRequest(
                    parameter: name,
                    message:
                        "unknown parameter (uid, reader, since, until, after_id, limit\(events ? ", kind" : ""))")
            }
        }
        return q
    }
}
