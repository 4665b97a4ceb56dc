import Foundation
import ISO15693
import Testing
@testable import Readers

/// The driver registry: what `--reader`, `[[reader]] driver` and `vlogger devices` read.
@Suite struct DriverRegistryTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func namesAreUniqueAndEveryKindIsADriver() {
        let names = ReaderDrivers.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(ReaderKind.allCases.map(\.rawValue) == names)
        #expect(
            ReaderKind(rawValue: "feig") == .feig && ReaderKind(rawValue: "pcsc") == .pcsc
                && ReaderKind(rawValue: "proxmark3") == nil)
        // A FEIG reader resolves collisions itself (its [0xB0] Inventory; Tests/FEIGTests/FEIG-FACTS.md §2).
        #expect(ReaderKind.feig.driver.capabilities == [.iso15693, .readerSideInventory])
        // libnfc has no ISO 15693 modulation (docs/reference/reader-paths.md §1); the others carry it.
        #expect(!ReaderKind.libnfc.driver.capabilities.contains(.iso15693))
        #expect(ReaderKind.sim.driver.capabilities.contains([.iso15693, .slotMarkers, .simulatedField]))
        #expect(ReaderKind.pcsc.driver.capabilities == [.iso15693])
    }

    @Test func theSimulatorPlaysItsScenarioOnlyWhenGivenTheRunTime() throws {
        // Config/demo-field/scenario.json: the Tag-it tool E007800000007777 leaves at 6 s.
        let opened = try SimulatorDriver().open(
            field: Self.root.appendingPathComponent("Config/demo-field").path, device: nil)
        let sim = try #require(opened.reader as? SimulatorReader)
        let tool = try UID(parsing: "E007800000007777")
        #expect(sim.field.tags.contains { $0.uid == tool })
        opened.runTime?(5_000)
        #expect(sim.field.tags.contains { $0.uid == tool })
        opened.runTime?(6_000)
        #expect(!sim.field.tags.contains { $0.uid == tool })
        #expect(opened.deferredError?() == nil)
    }

    @Test func aMissingFieldFolderIsATypedDeviceError() {
        #expect(throws: ReaderError.self) { try SimulatorDriver().open(field: "/nonexistent/field", device: nil) }
        #expect((try? SimulatorDriver().devices(field: "/nonexistent/field"))?.first?.detail == "not a field folder")
    }
}
