import Foundation
import Logging
import TestDrivers
import Testing
import VLoggerConfig
import VLoggerCore
import VLoggerModel
import VLoggerOutbox
import VLoggerService
import VLoggerStore

/// An output kind written here, in a test target: `[[output.memory]]` keeps the rows it is given in memory. It is
/// the proof of issue 48, item 1: a new kind of output is its own code plus one registration line (the
/// `.drivers(outputs:)` trait below; the executable's is one line in Sources/LinkedOutputs), and the gateway reads
/// its section, checks its keys, makes its consumer, delivers rows to it and moves its cursor when it acknowledges.
struct MemoryOutputKind: OutputKind {
    var section: OutputSection { .list("memory") }
    var keys: [String] { ["name", "tables"] }
    var summary: String { "memory: rows kept in the test's memory" }
    var sample: String { "[[output.memory]]\n" }

    func read(_ section: Section, index: Int, _ reader: ConfigReader, _ context: OutputReadContext)
        -> (any OutputSettings)?
    {
        var s = MemorySettings(name: index == 0 ? "memory" : "memory-\(index + 1)")
        if let n = section.string("name") { s.name = n }
        if let t = section.strings("tables") {
            let tables = t.compactMap(SyncTable.init(rawValue:))
            guard tables.count == t.count else {
                reader.issue(section.node("tables")?.line ?? section.line, "output.memory.tables: unknown table")
                return nil
            }
            s.tables = tables
        }
        return s
    }
}

struct MemorySettings: OutputSettings {
    var name: String
    var tables: [SyncTable] = [.readings, .events]

    func makeOutput(_ context: OutputContext) throws -> Output {
        Output(consumer: MemoryOutput(name: name, tables: tables), intervalMs: 100, wakesOnCommit: true)
    }
}

/// What every memory output was given, by output name (the test reads it after the run).
final class MemorySink: @unchecked Sendable {
    static let shared = MemorySink()
    private let lock = NSLock()
    private var rows: [String: [SyncTable: [Int64]]] = [:]
    func add(_ name: String, _ table: SyncTable, _ ids: [Int64]) {
        lock.withLock { rows[name, default: [:]][table, default: []] += ids }
    }
    func ids(_ name: String, _ table: SyncTable) -> [Int64] { lock.withLock { rows[name]?[table] ?? [] } }
}

struct MemoryOutput: OutboxConsumer {
    let name: String
    var title: String { "Memory (a test's output kind)" }
    let tables: [SyncTable]
    var batchSize: Int { 50 }
    var tablesIndependent: Bool { true }

    struct Session: OutboxSession {
        let name: String
        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            MemorySink.shared.add(name, table, rows.map(\.id))
            return rows.count
        }
    }

    func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
        try await body(Session(name: name))
    }

    func describe(_ error: any Error) -> OutboxFailure { OutboxFailure(kind: "other", message: "\(error)") }
}

@Suite(.drivers(outputs: [MemoryOutputKind()])) struct TestOutputKindTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Configured, checked, run: a demo field polled for 6 cycles with two memory outputs; each was given every
    /// row of its tables that the store committed, in order, once, and its cursor stands on the last (the
    /// acknowledgement moved it). A key of the kind that is not one is an error naming the kind's keys.
    @Test func aKindWrittenInATestReceivesRowsAndAcknowledgesThem() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-memory-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(
            at: Self.root.appendingPathComponent("Config/demo-field"), to: dir.appendingPathComponent("field"))
        let name = "mem-\(UInt32.random(in: 0...UInt32.max))"
        let config = dir.appendingPathComponent("vlogger.toml").path
        try """
        [gateway]
        id = "gw-memory"
        [[reader]]
        id = "r1"
        driver = "sim"
        field = "field"
        [store]
        path = "vlogger.db"
        flush-interval = "100ms"
        [[plan]]
        name = "first block"
        [[plan.read]]
        first = 0
        count = 1
        [[output.memory]]
        name = "\(name)"
        [[output.memory]]
        name = "\(name)-events"
        tables = ["events"]
        """.write(toFile: config, atomically: true, encoding: .utf8)

        let wrong = #expect(throws: ConfigError.self) {
            try AgentConfig.parse("[[output.memory]]\ncolour = 1\n", file: "t.toml")
        }
        #expect(
            wrong?.description == "t.toml:2: unknown key 'colour' in [output.memory[1]]; expected one of: name, tables")

        var options = GatewayOptions(configPath: config)
        options.cycles = 6
        options.fastClock = true
        var logger = Logger(label: "vlogger.test")
        logger.logLevel = .error
        let gateway = try Gateway(options: options, logger: logger)
        #expect(gateway.outputs.map(\.consumer.name) == [name, "\(name)-events"])
        _ = try await gateway.run()

        let store = try Store(path: dir.appendingPathComponent("vlogger.db").path)
        for (output, tables) in [(name, [SyncTable.readings, .events]), ("\(name)-events", [.events])] {
            for table in tables {
                let committed = try store.outbox(table, after: 0, limit: 100_000).map(\.id)
                #expect(!committed.isEmpty, "\(table): the demo run committed no rows")
                #expect(MemorySink.shared.ids(output, table) == committed, "\(output) \(table)")
                #expect(try store.outboxCursor(output, table) == committed.last, "\(output) \(table)")
            }
        }
        #expect(MemorySink.shared.ids("\(name)-events", .readings).isEmpty)
    }
}
