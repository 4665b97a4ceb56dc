import Foundation
import Logging
import ServiceLifecycle
import VLoggerModel
import VLoggerStore
import VLoggerOutbox

/// Runs every output's job (`OutputJob`), each in a task of its own, and applies the outputs of a reloaded
/// configuration: an output whose settings changed is stopped (its connection closed) and started again from
/// its cursor, a new one starts, a removed one stops; nothing is lost, since every cursor is in the store and
/// moved only over acknowledged rows. At shutdown each job runs its last round after the store writer's last
/// commit (this service stops after the writer).
final class OutputsJob: Service, @unchecked Sendable {
    private let lock = NSLock()
    private var running: [String: (output: Output, task: Task<Void, Never>?)] = [:]
    private var order: [String] = []
    private let changes: AsyncStream<[Output]>
    private let changesIn: AsyncStream<[Output]>.Continuation
    let store: Store
    let metrics: ServiceMetrics
    let logger: Logger
    let wakeup: Wakeup

    init(outputs: [Output], store: Store, metrics: ServiceMetrics, logger: Logger, wakeup: Wakeup) {
        (changes, changesIn) = AsyncStream.makeStream(of: [Output].self)
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.wakeup = wakeup
        for o in outputs {
            running[o.consumer.name] = (o, nil)
            order.append(o.consumer.name)
        }
    }

    /// The names of the outputs running now (retention keeps rows for them).
    var names: [String] { lock.withLock { order } }

    /// The safety windows of the outputs running now that have one (retention keeps their delivered rows that long).
    var safetyWindows: [String: Millis] {
        lock.withLock {
            var out: [String: Millis] = [:]
            for (name, r) in running { if let w = r.output.consumer.safetyWindowMs { out[name] = w } }
            return out
        }
    }

    private func start(_ o: Output) -> Task<Void, Never> {
        let job = OutputJob(
            pump: OutboxPump(store: store, consumer: o.consumer), metrics: metrics, logger: logger,
            intervalMs: o.intervalMs, wakeup: o.wakesOnCommit ? wakeup : nil)
        // An unstructured task inherits the service group's task-locals: the job sees the graceful shutdown.
        return Task { await job.run() }
    }

    /// Takes a reloaded configuration's outputs; returns what will change, for the reload's log line.
    func apply(_ fresh: [Output]) -> String {
        let (now, added, changed, removed): ([String], [String], [String], [String]) = lock.withLock {
            let freshNames = fresh.map(\.consumer.name)
            let added = freshNames.filter { running[$0] == nil }
            let changed = fresh.filter { o in
                running[o.consumer.name].map { $0.output.signature != o.signature } ?? false
            }
            .map(\.consumer.name)
            let removed = order.filter { !freshNames.contains($0) }
            return (order, added, changed, removed)
        }
        guard !added.isEmpty || !changed.isEmpty || !removed.isEmpty else {
            return "outputs unchanged (\(now.isEmpty ? "none" : now.joined(separator: ", ")))"
        }
        changesIn.yield(fresh)
        var parts: [String] = []
        if !changed.isEmpty { parts.append("\(changed.joined(separator: ", ")) restarted with new settings") }
        if !added.isEmpty { parts.append("\(added.joined(separator: ", ")) added") }
        if !removed.isEmpty { parts.append("\(removed.joined(separator: ", ")) removed") }
        return "outputs: " + parts.joined(separator: "; ")
    }

    func run() async {
        lock.withLock {
            for name in order {
                guard let r = running[name], r.task == nil else { continue }
                running[name] = (r.output, start(r.output))
            }
        }
        await cancelWhenGracefulShutdown {
            for await fresh in self.changes {
                await self.swap(to: fresh)
            }
        }
        // The group is shutting down: each job sees it, runs its last round and closes its connection.
        let tasks = lock.withLock { running.values.compactMap(\.task) }
        for t in tasks { await t.value }
        changesIn.finish()
    }

    private func swap(to fresh: [Output]) async {
        let freshByName = Dictionary(fresh.map { ($0.consumer.name, $0) }, uniquingKeysWith: { a, _ in a })
        // Stop what changed or went; wait until each has closed its connection.
        let stopping: [Task<Void, Never>] = lock.withLock {
            var out: [Task<Void, Never>] = []
            for (name, r) in running where freshByName[name].map({ $0.signature != r.output.signature }) ?? true {
                if let t = r.task { out.append(t) }
                running[name] = nil
            }
            return out
        }
        for t in stopping { t.cancel() }
        for t in stopping { await t.value }
        // A removed output's series leave /metrics and /healthz (a changed one keeps its name and its series).
        for name in Set(order).subtracting(freshByName.keys) { metrics.disableOutput(name: name) }
        lock.withLock {
            for o in fresh where running[o.consumer.name] == nil {
                running[o.consumer.name] = (o, start(o))
            }
            order = fresh.map(\.consumer.name)
        }
    }
}
