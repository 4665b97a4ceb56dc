import Foundation

/// What a kind of reader can do, as the client, the agent, the configuration check and `vlogger devices` need
/// to know it. Everything above `Readers` asks these instead of naming a driver.
public struct DriverCapabilities: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// It carries ISO 15693 frames at all (libnfc does not).
    public static let iso15693 = DriverCapabilities(rawValue: 1 << 0)
    /// 16-slot inventories with EOF slot markers; without, the client walks the UID tree with one-slot rounds.
    public static let slotMarkers = DriverCapabilities(rawValue: 1 << 1)
    /// The reader resolves collisions itself and returns the UIDs (a long-range reader's own inventory).
    public static let readerSideInventory = DriverCapabilities(rawValue: 1 << 2)
    /// A folder of tag images stands for the field (`field`, not `device`; `max-response` models a reader).
    public static let simulatedField = DriverCapabilities(rawValue: 1 << 3)
    /// The reader keeps reading tags by itself into a buffer the host drains (`read-mode = "buffer"`).
    public static let bufferedRead = DriverCapabilities(rawValue: 1 << 4)
    /// It hears ST's double-rate answers (fast reads).
    public static let fastResponses = DriverCapabilities(rawValue: 1 << 5)
    /// Its tags live on the run's clock, not the wall's: a scaled clock may drive them (`run --clock-rate`).
    public static let drivenClock = DriverCapabilities(rawValue: 1 << 6)
    /// The host talks to the reader in a protocol of its own, whose frames `vlogger decode --protocol NAME`
    /// explains (`explainHostFrame`).
    public static let hostProtocol = DriverCapabilities(rawValue: 1 << 7)
}

/// One device a driver sees.
public struct DeviceListing: Sendable {
    public var name: String
    public var detail: String
    /// The device was asked and did not answer (a configured network reader that is off).
    public var unanswered: Bool
    public init(name: String, detail: String, unanswered: Bool = false) {
        self.name = name
        self.detail = detail
        self.unanswered = unanswered
    }
}

/// What a reader is opened with besides its field or device.
public struct DriverOptions: Sendable, Equatable {
    /// A simulated reader's receive limit in bytes (`max-response`): it models the reader it stands for.
    public var maxResponseBytes: Int?
    public init(maxResponseBytes: Int? = nil) { self.maxResponseBytes = maxResponseBytes }
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

/// One thing a driver needs on the host before its readers open (pcscd for PC/SC), as `vlogger doctor` shows it.
public struct DriverCheck: Sendable, Equatable {
    public var name: String
    public var passed: Bool
    public var detail: String
    /// What to do when it fails (empty when it passes).
    public var advice: String
    public init(name: String, passed: Bool, detail: String, advice: String = "") {
        self.name = name
        self.passed = passed
        self.detail = detail
        self.advice = advice
    }
}

/// A kind of reader. A driver is a target of its own (Sources/Drivers/…) with one type conforming to this; the
/// executable registers the drivers once at start (`ReaderDrivers.bootstrap`), the way swift-log chooses its
/// backend. `--reader`, `[[reader]] driver`, the configuration check, `doctor`, `devices`, `decode --protocol`
/// and `config sample` all read the registry; nothing above `Readers` names a driver.
public protocol ReaderDriver: Sendable {
    /// The name in `--reader` and `[[reader]] driver`.
    var name: String { get }
    /// One line for help texts.
    var summary: String { get }
    var capabilities: DriverCapabilities { get }
    /// Opens the reader (`field` for a simulating driver, `device` for hardware) and switches its field on.
    func open(field: String?, device: String?, options: DriverOptions) throws -> OpenedReader
    /// The devices this driver sees now (`field`: the simulator's folder). `configured`: the devices the
    /// configuration names for this driver, for drivers whose readers announce themselves nowhere (they are asked).
    func devices(field: String?, configured: [String]) throws -> [DeviceListing]
    /// What is wrong with a `[[reader]]`'s device for this driver (nil: nothing), checked when the configuration
    /// loads; the text follows "reader[N].device: ".
    func checkDevice(_ device: String?) -> String?
    /// What is wrong on this machine with a configured reader's field or device (a missing folder), for
    /// `vlogger config check`; nil: nothing found.
    func preflight(field: String?, device: String?) -> String?
    /// The host and port a device names, when it is a reader on the network (the service's network allowance).
    func remote(device: String) -> (host: String, port: Int)?
    /// What the driver needs on the host (a daemon), checked by `vlogger doctor` when a reader uses it.
    func hostChecks(environment: [String: String]) -> [DriverCheck]
    /// What to do when one of its readers cannot be opened.
    func openAdvice(device: String?) -> String
    /// The `[[reader]]` lines `vlogger config sample --driver NAME` prints (driver, field or device, with EDIT
    /// marks); nil for a driver that cannot poll tags.
    var sampleReader: String? { get }
    /// With `.hostProtocol`: the lines that explain one host frame (`reply`: from the reader).
    func explainHostFrame(_ bytes: [UInt8], reply: Bool) throws -> [String]
    /// How its `--device` and `[[reader]] device` are written, for help texts; nil for a driver that takes none.
    var deviceHelp: String? { get }
}

extension ReaderDriver {
    public func checkDevice(_ device: String?) -> String? { nil }
    public func preflight(field: String?, device: String?) -> String? { nil }
    public func remote(device: String) -> (host: String, port: Int)? { nil }
    public func hostChecks(environment: [String: String]) -> [DriverCheck] { [] }
    public func openAdvice(device: String?) -> String {
        "check the reader's device and driver in the configuration (`vlogger devices`)"
    }
    public var sampleReader: String? { nil }
    public var deviceHelp: String? { nil }
    public func explainHostFrame(_ bytes: [UInt8], reply: Bool) throws -> [String] {
        throw ReaderError.notSupported("the \(name) driver has no host protocol of its own")
    }
    /// Opens with no options.
    public func open(field: String?, device: String?) throws -> OpenedReader {
        try open(field: field, device: device, options: DriverOptions())
    }
}

/// The registered drivers. Empty until the program registers its own: the executable registers every driver it
/// links (the first is the default of a `[[reader]]` that names none), a test registers what it tests.
public enum ReaderDrivers {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var registered: [any ReaderDriver] = []

    /// Registers `drivers`, in the order help texts list them, replacing any earlier list. Called once at the
    /// start of the program, before a configuration is read or a reader opened.
    public static func bootstrap(_ drivers: [any ReaderDriver]) {
        lock.lock()
        defer { lock.unlock() }
        var seen = Set<String>()
        registered = drivers.filter { seen.insert($0.name).inserted }
    }

    public static var all: [any ReaderDriver] {
        lock.lock()
        defer { lock.unlock() }
        return registered
    }

    public static func named(_ name: String) -> (any ReaderDriver)? { all.first { $0.name == name } }

    /// The names of the drivers with `capability`, for messages ("driver = \"sim\"").
    public static func names(with capability: DriverCapabilities) -> String {
        let names = all.filter { $0.capabilities.contains(capability) }.map { "driver = \"\($0.name)\"" }
        return names.isEmpty ? "no registered driver" : names.joined(separator: " or ")
    }
}

/// A driver as configuration and arguments name it: one of the registered drivers.
public struct ReaderKind: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    public let driver: any ReaderDriver
    public var rawValue: String { driver.name }
    public init?(rawValue: String) {
        guard let d = ReaderDrivers.named(rawValue) else { return nil }
        driver = d
    }
    public init(_ driver: any ReaderDriver) { self.driver = driver }

    public static var allCases: [ReaderKind] { ReaderDrivers.all.map(ReaderKind.init) }
    /// The first registered driver: a `[[reader]]` that names none, and the tag commands without a configured
    /// reader, use it (the executable registers the simulator first).
    public static var `default`: ReaderKind { ReaderDrivers.all.first.map(ReaderKind.init) ?? ReaderKind(NoDriver()) }
    public var description: String { rawValue }

    public static func == (a: ReaderKind, b: ReaderKind) -> Bool { a.rawValue == b.rawValue }
    public func hash(into h: inout Hasher) { h.combine(rawValue) }
}

/// What `ReaderKind.default` is when no driver was registered: every use says so.
struct NoDriver: ReaderDriver {
    var name: String { "none" }
    var summary: String { "no reader driver is registered" }
    var capabilities: DriverCapabilities { [] }
    func open(field: String?, device: String?, options: DriverOptions) throws -> OpenedReader {
        throw ReaderError.device("no reader driver is registered in this program (ReaderDrivers.bootstrap)")
    }
    func devices(field: String?, configured: [String]) throws -> [DeviceListing] { [] }
}
