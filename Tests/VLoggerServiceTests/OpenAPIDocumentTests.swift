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
}
