import Foundation
import ISO15693
import TestDrivers
import Testing
@testable import Readers
import DriverSim

/// The driver registry: what `--reader`, `[[reader]] driver` and `vlogger devices` read.
@Suite(.drivers) struct DriverRegistryTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func namesAreUniqueAndEveryKindIsADriver() throws {
        let names = ReaderDrivers.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(ReaderKind.allCases.map(\.rawValue) == names)
        #expect(names.starts(with: ["sim", "pcsc", "libnfc", "feig"]))
        #expect(ReaderKind.default.rawValue == "sim")
        let feig = try #require(ReaderKind(rawValue: "feig")), pcsc = try #require(ReaderKind(rawValue: "pcsc"))
        let sim = try #require(ReaderKind(rawValue: "sim")), libnfc = try #require(ReaderKind(rawValue: "libnfc"))
        #expect(ReaderKind(rawValue: "proxmark3") == nil)
        // A FEIG reader resolves collisions itself (its [0xB0] Inventory; Tests/FEIGTests/FEIG-FACTS.md §2) and has
        // a buffered read mode ([0x22] Read Buffer, §6).
        #expect(feig.driver.capabilities == [.iso15693, .readerSideInventory, .bufferedRead, .hostProtocol])
        // libnfc has no ISO 15693 modulation (docs/reference/reader-paths.md §1); the others carry it.
        #expect(!libnfc.driver.capabilities.contains(.iso15693))
        #expect(sim.driver.capabilities.contains([.iso15693, .slotMarkers, .simulatedField, .drivenClock]))
        #expect(pcsc.driver.capabilities == [.iso15693])
        // Only the drivers that can poll tags give a sample [[reader]]; a FEIG device string is checked by its driver.
        #expect(ReaderDrivers.all.filter { $0.sampleReader != nil }.map(\.name) == ["sim", "pcsc", "feig", "pn5180"])
        // A PN5180 sends 16-slot inventories with EOF slot markers (docs/reference/pn5180.md §4).
        let pn5180 = try #require(ReaderKind(rawValue: "pn5180"))
        #expect(pn5180.driver.capabilities == [.iso15693, .slotMarkers] && pn5180.driver.checkDevice(nil) != nil)
        #expect(feig.driver.checkDevice(nil) != nil && feig.driver.checkDevice("tcp://10.0.0.21") == nil)
        #expect(feig.driver.remote(device: "tcp://10.0.0.21")?.port == 10001)
        #expect(pcsc.driver.checkDevice("0") == nil && pcsc.driver.remote(device: "0") == nil)
    }

    @Test func aDriverNobodyRegisteredIsNotAKind() {
        let before = ReaderDrivers.all.map(\.name)
        #expect(ReaderKind(rawValue: "registry-probe") == nil)
        // `bootstrap` keeps the first of two drivers with one name.
        ReaderDrivers.bootstrap(ReaderDrivers.all + [SimulatorDriver()])
        #expect(ReaderDrivers.all.map(\.name) == before)
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
        #expect(
            (try? SimulatorDriver().devices(field: "/nonexistent/field", configured: []))?.first?.detail
                == "not a field folder")
        #expect(SimulatorDriver().preflight(field: "/nonexistent/field", device: nil) != nil)
    }
}
