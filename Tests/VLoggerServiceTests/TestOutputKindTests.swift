import Foundation
import ISO15693
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
    /// Configured, checked, delivered: a configuration with two memory outputs is read (the kind reads its own
    /// section), the gateway makes them (`Gateway.outputs`, as `vlogger run` does), and the outbox pump, which each
    /// output's job runs, gives each every stored row of its tables in order, once, and moves its cursor to the last
    /// (the acknowledgement). A key of the kind that is not one is an error naming the kind's keys.
    @Test func aKindWrittenInATestReceivesRowsAndAcknowledgesThem() async throws {
        let name = "mem-\(UInt32.random(in: 0...UInt32.max))"
        let config = try AgentConfig.parse(
            """
            [gateway]
            id = "gw-memory"
            [[output.memory]]
            name = "\(name)"
            [[output.memory]]
            name = "\(name)-events"
            tables = ["events"]
            """, file: "memory.toml")
        let wrong = #expect(throws: ConfigError.self) {
            try AgentConfig.parse("[[output.memory]]\ncolour = 1\n", file: "t.toml")
        }
        #expect(
            wrong?.description == "t.toml:2: unknown key 'colour' in [output.memory[1]]; expected one of: name, tables")

        let store = try Store(path: scratchPath("memory.db"))
        defer { store.close() }
        let uid = try UID(parsing: "E008010000004212")
        var batch = Batch()
        batch.readings = (0..<120).map { i in
            Reading(
                time: 1_763_800_000_000 + Millis(i) * 1000, gateway: "gw-memory", reader: "r1", uid: uid,
                first: BlockNumber(0xF8), count: 1, data: [0, 0, 0, UInt8(i)], decoded: [("n", .integer(Int64(i)))])
        }
        batch.events = (0..<7).map { i in
            Event(
                time: 1_763_800_000_000 + Millis(i) * 1000, gateway: "gw-memory", reader: "r1", uid: uid,
                kind: .arrival, name: "arrival", severity: .info, detail: "arrival \(i)")
        }
        try store.write(batch)

        var logger = Logger(label: "vlogger.test")
        logger.logLevel = .error
        let outputs = try Gateway.outputs(config, store: store, logger: logger)
        #expect(outputs.map(\.consumer.name) == [name, "\(name)-events"])
        for o in outputs {
            let pump = OutboxPump(store: store, consumer: o.consumer)
            while try await pump.round().batches > 0 {}
        }
        for (output, tables) in [(name, [SyncTable.readings, .events]), ("\(name)-events", [.events])] {
            for table in tables {
                let committed = try store.outbox(table, after: 0, limit: 100_000).map(\.id)
                #expect(committed.count == (table == .readings ? 120 : 7))
                #expect(MemorySink.shared.ids(output, table) == committed, "\(output) \(table)")
                #expect(try store.outboxCursor(output, table) == committed.last, "\(output) \(table)")
            }
        }
        #expect(MemorySink.shared.ids("\(name)-events", .readings).isEmpty)
    }
}
