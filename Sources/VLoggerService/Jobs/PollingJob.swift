import Dispatch
import Foundation
import ISO15693
import ServiceLifecycle
import VLoggerCore
import VLoggerModel

/// One reader's polling job: the agent's loop on a thread of its own; graceful shutdown (or
/// cancellation) stops it after the current cycle.
public final class PollingJob: Service, @unchecked Sendable {
    public let agent: Agent
    let cycles: Int?
    let durationMs: Millis?
    private let stop = StopSignal()
    private let lock = NSLock()
    private var pending: (AgentConfig, RuleSet, AssetRegister?)?
    private var progressMs = PollingJob.monotonicMs()
    /// Work that needs this reader (an audit's round), run on the polling thread between two cycles.
    private var work: [() -> Void] = []
    /// When this reader last saw each tag, in the run's time (for audits: not yet in the store, perhaps).
    private var sightings: [UID: Millis] = [:]
    private var prunedMs: Millis = 0
    private var polling = true
    /// Where work that needs the reader runs once polling has ended (a server's client calling after `--cycles`).
    private let afterPolling = DispatchQueue(label: "vlogger.poll.after")
    let finished = AsyncStream<Void>.makeStream()

    static func monotonicMs() -> Millis { Millis(DispatchTime.now().uptimeNanoseconds / 1_000_000) }

    init(agent: Agent, cycles: Int?, durationMs: Millis?, metrics: ServiceMetrics) {
        self.agent = agent
        self.cycles = cycles
        self.durationMs = durationMs
        let window = agent.config.audit.elsewhereWindowMs
        agent.onCycle = { [unowned self] report in
            metrics.cycleDone(self.agent, report)
            let now = self.agent.clock.now()
            lock.withLock {
                progressMs = PollingJob.monotonicMs()
                for uid in report.tags { sightings[uid] = now }
                // Only what an audit can still use (the elsewhere window): the map stays small over months.
                if now - prunedMs > 60_000 {
                    sightings = sightings.filter { now - $0.value <= window }
                    prunedMs = now
                }
            }
        }
        // The fields' live state (the pages, the API, /metrics' plant values and alarms: docs/operating.md).
        let field = metrics.field
        agent.onReading = { [unowned self] r in
            field.readingTaken(r, asset: self.agent.register?.rows[r.uid.description]?["asset_id"])
        }
        agent.onEvent = { [unowned self] e in
            metrics.eventRecorded(e, asset: e.uid.flatMap { self.agent.register?.rows[$0.description]?["asset_id"] })
        }
        agent.duringWait = { [unowned self] in runQueuedWork() }
        agent.betweenCycles = { [unowned self] in
            runQueuedWork()
            guard
                let (c, r, reg) = lock.withLock({ () -> (AgentConfig, RuleSet, AssetRegister?)? in
                    defer { pending = nil }
                    return pending
                })
            else { return }
            self.agent.reload(config: c, rules: r, register: reg)
        }
    }

    var lastProgressMs: Millis { lock.withLock { progressMs } }

    /// When this reader last saw each tag within the elsewhere window.
    var recentSightings: [UID: Millis] { lock.withLock { sightings } }

    private func runQueuedWork() {
        let items = lock.withLock { () -> [() -> Void] in
            defer { work = [] }
            return work
        }
        for item in items { item() }
    }

    /// Runs `body` with this reader's session between two of its cycles, at once when the job is waiting for
    /// its next cycle (the wait is nudged; regular polling waits only that long), or right away once polling
    /// has ended.
    func exclusive<T: Sendable>(_ body: @escaping @Sendable (ReaderSession) -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
            let session = UncheckedBox(agent.session)
            let queued = lock.withLock { () -> Bool in
                guard polling else { return false }
                work.append { c.resume(returning: body(session.value)) }
                return true
            }
            if queued {
                stop.nudge()
            } else {
                // One at a time, as between cycles: the reader and its agent are not used by two threads at once.
                afterPolling.async { c.resume(returning: body(session.value)) }
            }
        }
    }

    /// Hands a reloaded configuration to the job; it is applied before the next cycle.
    func reload(_ c: AgentConfig, _ r: RuleSet, _ reg: AssetRegister?) { lock.withLock { pending = (c, r, reg) } }

    public func run() async {
        await withTaskCancellationOrGracefulShutdownHandler {
            await Blocking.thread("vlogger-poll-\(agent.readerConfig.id)") { [self] in
                agent.run(cycles: cycles, durationMs: durationMs, stop: stop)
                // Work queued after the last cycle runs here, on the same thread; later work runs at once.
                lock.withLock { polling = false }
                runQueuedWork()
            }
        } onCancelOrGracefulShutdown: { [stop] in
            stop.request()
        }
        // Done by itself (--cycles, --duration) or told to stop. The job returns only when the group shuts
        // it down, in its turn: a service that returns during another's shutdown is an error to the group.
        finished.continuation.yield()
        finished.continuation.finish()
        try? await gracefulShutdown()
    }
}
