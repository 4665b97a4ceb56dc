import Foundation
import TestDrivers
import Testing

@testable import VLoggerService

/// The document the service serves is the repository's openapi.json, as .ci/openapi-document.sh wrote it: a
/// change of the file without running the script again fails here.
@Suite(.drivers) struct OpenAPIDocumentTests {
    @Test func theServedDocumentIsTheFile() throws {
        let file = ServiceMetricsTests.root.appendingPathComponent("Sources/VLoggerService/API/openapi.json")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(
            OpenAPIDocument.json == text.trimmingCharacters(in: .newlines),
            "openapi.json changed: run bash .ci/openapi-document.sh")
        let parsed = try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any]
        #expect(parsed?["openapi"] as? String == "3.1.0")
    }

    /// Issue 47, item 10: `/api/v1/stream` was missing from the document. Every route the read API serves under
    /// /api/v1 (StreamAPI.swift, ReadAPI.swift) is in it, the stream as a text/event-stream that can resume with
    /// Last-Event-ID.
    @Test func everyRouteIsInTheDocument() throws {
        let parsed = try #require(
            try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        let paths = try #require(parsed["paths"] as? [String: Any])
        let root = ServiceMetricsTests.root.appendingPathComponent("Sources/VLoggerService")
        var routes = Set<String>()
        for file in ["ReadAPI.swift", "StreamAPI.swift"] {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for m in text.matches(of: /router\.get\("\/api\/v1(\/[^"]*)"/) { routes.insert(String(m.1)) }
        }
        #expect(routes.contains("/stream") && routes.count >= 8, "\(routes)")
        for route in routes where route != "/openapi.json" {
            let documented = route.replacingOccurrences(of: ":uid", with: "{uid}").replacingOccurrences(
                of: ":id", with: "{id}")
            #expect(paths[documented] != nil, "\(route) is served but not in openapi.json")
        }
        let stream = (paths["/stream"] as? [String: Any])?["get"] as? [String: Any]
        let ok = (stream?["responses"] as? [String: Any])?["200"] as? [String: Any]
        #expect((ok?["content"] as? [String: Any])?["text/event-stream"] != nil)
        let headers = (stream?["parameters"] as? [[String: Any]] ?? []).filter { $0["in"] as? String == "header" }
        #expect(headers.first?["name"] as? String == "Last-Event-ID")
    }
}
