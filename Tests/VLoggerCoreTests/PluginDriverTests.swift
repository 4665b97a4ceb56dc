import Foundation
import ISO15693
import Readers
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import VLoggerCore

/// A reader driver written here, outside every shipped module: one type and one registration (issue "Drivers as
/// plug-ins, services that own their parts, rule kinds as types", item 1). Its reader takes commands, not frames:
/// it answers `execute` from a tag's memory held in the test and finds its tag with a reader-side inventory, the
/// way a long-range reader does; a raw frame is refused. The configuration, the session and the polling agent use
/// it through the registry alone.
struct MemoryDriver: ReaderDriver {
    var name: String { "memory" }
    var summary: String { "a tag's memory held by the test, answered command by command" }
    var capabilities: DriverCapabilities { [.iso15693, .readerSideInventory] }

    func open(field: String?, device: String?, options: DriverOptions) throws -> OpenedReader {
        guard let device, device.hasPrefix("mem:") else { throw ReaderError.device("memory: no such device") }
        return OpenedReader(reader: MemoryReader())
    }
    func devices(field: String?, configured: [String]) throws -> [DeviceListing] {
        [DeviceListing(name: "mem:0", detail: "one tag")]
    }
    func checkDevice(_ device: String?) -> String? {
        device?.hasPrefix("mem:") == true ? nil : "a memory reader's device is mem:N"
    }
}

/// One NXP tag (UID E004015000000001), 256 blocks of 4 bytes; block 0xF8 holds 0x0866 little-endian.
final class MemoryReader: TagReader {
    let uid = try! UID(parsing: "E004015000000001")
    var blocks = [[UInt8]](repeating: [0, 0, 0, 0], count: 256)
    var name: String { "memory" }
    var limits: ReaderLimits { ReaderLimits() }
    var airTime: AirTime { .zero }
    var trace: ((TraceEvent) -> Void)?
    private(set) var commands: [String] = []

    init() { blocks[0xF8] = [0x66, 0x08, 0x00, 0x00] }

    func fieldOn() throws(ReaderError) {}
    func fieldOff() throws(ReaderError) {}
    func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        throw .notSupported("a memory reader takes commands, not frames")
    }
    func nextSlot() throws(ReaderError) -> [UInt8] { throw .notSupported("no slots") }
    var hasReaderInventory: Bool { true }
    func readerInventory(afi: UInt8?) throws(ReaderError) -> [InventoryEntry]? { [InventoryEntry(uid: uid, dsfid: 0)] }

    func execute(_ request: Request, blockSize: Int?) throws(CommandFailure) -> Response {
        commands.append(request.command.code.name)
        switch request.command {
        case .getSystemInformation:
            return Response(
                body: .systemInformation(SystemInformation(uid: uid, dsfid: 0, afi: 0, blockCount: 256, blockSize: 4)))
        case let .readSingleBlock(b):
            return Response(body: .blocks([BlockRead(number: b, data: blocks[b.int], security: nil)]))
        case let .readMultipleBlocks(first, n):
            return Response(
                body: .blocks(
                    (first.int..<(first.int + n)).map {
                        BlockRead(number: BlockNumber(UInt16($0)), data: blocks[$0], security: nil)
                    }))
        case .stayQuiet:
            throw .reader(.timeout)
        default:
            return Response(body: .error(.commandNotSupported))
        }
    }
}

@Suite(RegisteredDrivers(extra: [MemoryDriver()])) struct PluginDriverTests {
    static let config = """
        [gateway]
        id = "gw-plugin"
        [[reader]]
        id = "mem-1"
        driver = "memory"
        device = "mem:1"
        [[plan]]
        name = "temperature"
        match.manufacturer = "NXP"
          [[plan.read]]
          first = 0xF8
          [[plan.field]]
          name = "temperature"
          block = 0xF8
          type = "i16le"
          scale = 0.01
          unit = "°C"
        """

    @Test func aDriverRegisteredOutsideIsConfiguredOpenedAndPolled() throws {
        let config = try AgentConfig.parse(Self.config, file: "plugin.toml")
        #expect(config.readers.map(\.driver.rawValue) == ["memory"])
        // The driver checks its own device strings, at the line of the configuration that gives one.
        let bad = Self.config.replacingOccurrences(of: "mem:1", with: "/dev/ttyUSB0")
        #expect {
            _ = try AgentConfig.parse(bad, file: "plugin.toml")
        } throws: { "\($0)".contains("plugin.toml:6: reader[1].device: a memory reader's device is mem:N") }

        let session = try ReaderSession.open(config.readers[0])
        let reader = try #require(session.reader as? MemoryReader)
        let store = try Store(path: scratchPath("plugin.db"))
        try store.registerFields(config.fieldInfos)
        let agent = Agent(
            config: config, rules: RuleSet(), register: nil, session: session,
            writer: StoreWriter(store: store, batchSize: 50, flushIntervalMs: 2000),
            clock: SimulatedClock(start: 1_763_800_000_000))
        agent.run(cycles: 2, stop: StopSignal())
        agent.writer.commitNow()
        #expect(agent.counters.errorTotal == 0 && agent.counters.arrivals == 1)
        // 0x0866 = 2150, × 0.01 (the plan's scale) = 21.5 °C, once per cycle.
        let readings = try store.readings(uid: reader.uid)
        #expect(readings.count == 2 && readings.allSatisfy { $0.decoded == "{\"temperature\":21.5}" })
        // Every command reached the reader as a command: no frame was sent (transceive refuses them).
        #expect(reader.commands.contains("Get System Information") && reader.commands.contains("Read Single Block"))
    }
}
