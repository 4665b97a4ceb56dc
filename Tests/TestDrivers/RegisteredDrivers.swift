import Foundation
import LinkedDrivers
import LinkedOutputs
import Readers
import Testing
import VLoggerOutbox

/// The drivers and output kinds the executable registers (LinkedDrivers, LinkedOutputs), registered for the tests. swift-testing has no
/// set-up for a whole target: every suite of a test target that reads a configuration or opens a reader by its
/// driver's name carries `.drivers`. Every suite registers the same list (the test targets share one process), so none
/// sees fewer drivers than it needs while another registers; `extra` adds a test's own driver to it, for good (the
/// list only grows, so a suite running beside it keeps the test's driver too).
public struct RegisteredDrivers: SuiteTrait, TestTrait, TestScoping {
    public static var linked: [any ReaderDriver] { LinkedDrivers.all }
    public var extra: [any ReaderDriver] = []
    /// Output kinds of a test's own, registered beside the linked ones (for good, as `extra`).
    public var extraOutputs: [any OutputKind] = []
    private static let lock = NSLock()
    nonisolated(unsafe) private static var added: [any ReaderDriver] = []
    nonisolated(unsafe) private static var addedOutputs: [any OutputKind] = []

    public init(extra: [any ReaderDriver] = [], outputs: [any OutputKind] = []) {
        self.extra = extra
        extraOutputs = outputs
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        Self.lock.withLock {
            Self.added += extra.filter { d in !Self.added.contains { $0.name == d.name } }
            Self.addedOutputs += extraOutputs.filter { k in !Self.addedOutputs.contains { $0.section == k.section } }
            ReaderDrivers.bootstrap(Self.linked + Self.added)
            OutputKinds.bootstrap(LinkedOutputs.all + Self.addedOutputs)
        }
        try await function()
    }
}

extension Trait where Self == RegisteredDrivers {
    public static var drivers: Self { RegisteredDrivers() }
}

extension Trait where Self == RegisteredDrivers {
    /// The linked drivers and output kinds, and `outputs` of a test's own.
    public static func drivers(outputs: [any OutputKind]) -> Self { RegisteredDrivers(outputs: outputs) }
}

/// A file named `name` in a new scratch folder (a store, a configuration).
public func scratchPath(_ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent(name).path
}
