import Foundation
import ISO15693
import TagSimulator

/// What a kind of reader can do, as the client, the agent and `vlogger devices` need to know it.
public struct DriverCapabilities: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// It carries ISO 15693 frames at all (libnfc does not).
    public static let iso15693 = DriverCapabilities(rawValue: 1 << 0)
    /// 16-slot inventories with EOF slot markers; without, the client walks the UID tree with one-slot rounds.
    public static let slotMarkers = DriverCapabilities(rawValue: 1 << 1)
    /// The reader resolves collisions itself and returns the UIDs (a long-range reader's own inventory).
    public static let readerSideInventory = DriverCapabilities(rawValue: 1 << 2)
    /// A folder of tag images stands for the field (`field`, not `device`).
    public static let simulatedField = DriverCapabilities(rawValue: 1 << 3)
}

/// One device a driver sees.
public struct DeviceListing: Sendable {
    public var name: String
    public var detail: String
    public init(name: String, detail: String) {
        self.name = name
        self.detail = detail
    }
}

/// A reader a driver opened, with its field switched on.
public struct OpenedReader {
    public let reader: TagReader
    /// Told the run's time (ms since the agent started) before each poll cycle. The simulator plays its
    /// field's scenario with it; hardware drivers have none.
    public var runTime: ((Int64) -> Void)?
    /// An error the driver noticed after an exchange succeeded (the simulator could not write a tag's file).
    public var deferredError: (() -> String?)?

    public init(reader: TagReader, runTime: ((Int64) -> Void)? = nil, deferredError: (() -> String?)? = nil) {
        self.reader = reader
        self.runTime = runTime
        self.deferredError = deferredError
    }
}

/// A kind of reader: how to open one and how to list the devices there are. A new driver is one type
/// conforming to this and one entry in `ReaderDrivers.all`; `--reader`, `[[reader]] driver`, the
/// configuration check and `vlogger devices` all read the registry.
public protocol ReaderDriver: Sendable {
    /// The name in `--reader` and `[[reader]] driver`.
    var name: String { get }
    /// One line for help texts.
    var summary: String { get }
    var capabilities: DriverCapabilities { get }
    /// Opens the reader (`field` for a simulating driver, `device` for hardware) and switches its field on.
    func open(field: String?, device: String?) throws -> OpenedReader
    /// The devices this driver sees now (`field`: the simulator's folder).
    func devices(field: String?) throws -> [DeviceListing]
}

/// The registered drivers.
public enum ReaderDrivers {
    public static let all: [any ReaderDriver] = [SimulatorDriver(), PCSCDriver(), LibNFCDriver(), FEIGDriver()]

    public static func named(_ name: String) -> (any ReaderDriver)? { all.first { $0.name == name } }
}

/// A driver's name, as configuration and arguments give it: one of the registered drivers.
public struct ReaderKind: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard ReaderDrivers.named(rawValue) != nil else { return nil }
        self.rawValue = rawValue
    }
    private init(known: String) { rawValue = known }

    public static var allCases: [ReaderKind] { ReaderDrivers.all.map { ReaderKind(known: $0.name) } }
    public static let sim = ReaderKind(known: "sim")
    public static let pcsc = ReaderKind(known: "pcsc")
    public static let libnfc = ReaderKind(known: "libnfc")
    public static let feig = ReaderKind(known: "feig")

    public var driver: any ReaderDriver { ReaderDrivers.named(rawValue) ?? SimulatorDriver() }
    public var description: String { rawValue }
}

// MARK: The built-in drivers

/// The simulator: a folder of tag images (and its scenario) as the field.
public struct SimulatorDriver: ReaderDriver {
    public init() {}
    public var name: String { "sim" }
    public var summary: String {
        "simulated field: a folder of tag images (project JSON, Proxmark3 JSON, Flipper .nfc) and its scenario.json"
    }
    public var capabilities: DriverCapabilities { [.iso15693, .slotMarkers, .simulatedField] }

    /// The default simulated field: `$VLOGGER_FIELD`, else `Config/demo-field` under the current folder.
    public static func defaultFieldPath() -> String {
        if let env = ProcessInfo.processInfo.environment["VLOGGER_FIELD"], !env.isEmpty { return env }
        return "Config/demo-field"
    }

    public func open(field: String?, device: String?) throws -> OpenedReader {
        let path = field ?? Self.defaultFieldPath()
        let folder: FieldFolder
        do { folder = try FieldFolder(url: URL(fileURLWithPath: path)) } catch {
            throw ReaderError.device(
                "simulated field: \(error)"
                    + (field == nil ? " (run from the repository root, or pass --field DIR)" : ""))
        }
        let reader = SimulatorReader(field: folder.field, name: "simulator (\(path))")
        try reader.fieldOn()
        // The scenario plays only where the run's time is given (the polling agent), from its first cycle.
        var player: ScenarioPlayer?
        let runTime: (Int64) -> Void = { ms in
            if player == nil, let scenario = folder.scenario {
                player = ScenarioPlayer(scenario: scenario, field: folder.field)
            }
            player?.advance(toMs: ms)
        }
        return OpenedReader(reader: reader, runTime: runTime, deferredError: { folder.persistError.map { "\($0)" } })
    }

    public func devices(field: String?) throws -> [DeviceListing] {
        let path = field ?? Self.defaultFieldPath()
        guard let folder = try? FieldFolder(url: URL(fileURLWithPath: path)) else {
            return [DeviceListing(name: path, detail: "not a field folder")]
        }
        return [DeviceListing(name: path, detail: "\(folder.field.tags.count) simulated tag(s)  ISO 15693: yes")]
    }
}

/// PC/SC readers through pcscd: transparent exchange, or the storage-card commands (`storage:` prefix).
public struct PCSCDriver: ReaderDriver {
    public init() {}
    public var name: String { "pcsc" }
    public var summary: String {
        "PC/SC readers through pcscd (transparent exchange; 'storage:' before the device forces the storage-card commands)"
    }
    public var capabilities: DriverCapabilities { [.iso15693] }

    public func open(field: String?, device: String?) throws -> OpenedReader {
        var want = device
        var storage = false
        if let d = want, d.hasPrefix("storage:") {
            storage = true
            want = String(d.dropFirst("storage:".count))
            if want?.isEmpty == true { want = nil }
        }
        let reader = PCSCReader(reader: want)
        reader.forceStorageMode = storage
        do { try reader.fieldOn() } catch { throw ReaderError.device("PC/SC: \(error)") }
        return OpenedReader(reader: reader)
    }

    public func devices(field: String?) throws -> [DeviceListing] {
        let names = try PCSCReader.listReaders()
        if names.isEmpty { return [DeviceListing(name: "-", detail: "no PC/SC readers (pcscd lists none)")] }
        return names.enumerated().map { i, name in
            let r = PCSCReader(reader: name)
            defer { try? r.fieldOff() }
            let card = (try? r.cardPresent()) ?? false
            return DeviceListing(
                name: "\(i): \(name)",
                detail:
                    "\(card ? "card present (a tag in the field)" : "no card")  ISO 15693: through the transparent exchange, or storage-card commands"
            )
        }
    }
}

/// libnfc: devices are listed, but none can carry ISO 15693 (see LibNFC).
public struct LibNFCDriver: ReaderDriver {
    public init() {}
    public var name: String { "libnfc" }
    public var summary: String { "libnfc devices: listed only; libnfc cannot carry ISO 15693" }
    public var capabilities: DriverCapabilities { [] }

    public func open(field: String?, device: String?) throws -> OpenedReader {
        try LibNFC.openAsISO15693Reader(connstring: device)
    }

    public func devices(field: String?) throws -> [DeviceListing] {
        let found = try LibNFC.listDevices()
        if found.isEmpty { return [DeviceListing(name: "-", detail: "no devices found (libnfc \(LibNFC.version))")] }
        return found.map { DeviceListing(name: $0, detail: "ISO 15693: no (libnfc has no ISO 15693 modulation)") }
    }
}
