import Foundation
import ISO15693
import Readers
import TestDrivers
import VLoggerModel
import VLoggerStore

@testable import TagSimulator
@testable import VLoggerCore
import DriverSim

/// What the password and privacy tests share: an agent polling a simulated field with a simulated clock, its store,
/// its queued writes and every exchange as the trace prints it; and a secrets file made private as vlogger wants it.
struct SecurityRig {
    let agent: Agent
    let store: Store
    let field: SimulatedField
    let trace: () -> [String]

    /// `config`: the configuration's text (its file in `dir`); `writes`: queued in the store before the agent takes
    /// them up (nil: the agent has no write queue).
    init(config text: String, dir: URL, field: SimulatedField, store name: String, writes: [QueuedWrite]? = nil)
        throws
    {
        let config = try AgentConfig.parse(text, file: dir.appendingPathComponent("test.toml").path)
        store = try Store(path: dir.appendingPathComponent(name).path)
        agent = Agent(
            config: config, rules: RuleSet(), register: nil,
            session: ReaderSession(reader: SimulatorReader.switchedOn(field)),
            writer: StoreWriter(store: store, batchSize: 50, flushIntervalMs: 2000),
            clock: SimulatedClock(start: 1_763_800_000_000))
        if let writes {
            for w in writes { _ = try store.enqueue(w) }
            let pending = PendingWrites()
            try pending.refresh(from: store)
            agent.writeQueue = pending
        }
        var lines: [String] = []
        let formatter = TraceFormatter { lines.append($0) }
        agent.session.reader.trace = { formatter.handle($0) }
        self.field = field
        trace = { lines }
    }

    /// Writes a secrets file with mode 0600 and returns its path.
    @discardableResult
    static func secrets(_ text: String, at path: String) throws -> String {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }
}
