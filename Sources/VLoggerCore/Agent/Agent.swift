import Foundation
import VLoggerStore
import VLoggerModel
import Logging
import ISO15693
import Readers

/// Counts of a run, for the summary (and the metrics of a later issue).
public struct AgentCounters: Sendable {
    public var cycles = 0
    public var readings = 0
    public var arrivals = 0
    public var departures = 0
    public var violations = 0
    public var errors: [String: Int] = [:]
    public var exchanges = 0
    /// Air time of the most recent cycles (at most `window`), in carrier ticks: bounded, because the
    /// agent runs for months.
    public var cycleAirTime: [AirTime] = []
    /// The physical lower bound for the same work, per cycle (same window).
    public var cycleLowerBound: [AirTime] = []
    public static let window = 4096
    public init() {}
    public var errorTotal: Int { errors.values.reduce(0, +) }
}

/// What one cycle did.
public struct CycleReport: Sendable {
    public var tags: [UID] = []
    public var readings = 0
    /// The inventory failed for a reason on the reader's side (not an empty field).
    public var readerFailed = false
    public var airTime = AirTime.zero
    public var lowerBound = AirTime.zero
    public var exchanges = 0
    public init() {}
}

/// The polling agent of one reader: each cycle finds the tags in the field, reads each tag's plan in as few
/// exchanges as its chip allows, decodes, checks the rules, and hands readings and events to the batch writer.
/// This is the poll loop (cycles, back-off, reader up and down); its parts are the presence tracker (arrivals,
/// departures, Stay Quiet), the tag plan reader (plan, reads, decode), the rule evaluation (violations as
/// states), the buffered reads of a reader with a buffer of its own, and the queued writes (WriteQueue.swift).
public final class Agent {
    /// The configuration with this reader's own polling settings in force.
    public private(set) var config: AgentConfig
    /// The reader this agent polls: its id and location go into every row.
    public private(set) var readerConfig: ReaderConfig
    public var rules: RuleSet { evaluation.rules }
    public var register: AssetRegister? { evaluation.register }
    public let session: ReaderSession
    public let writer: StoreWriter
    public let clock: AgentClock
    /// The agent's logger, with `reader` in its metadata; events add `uid` and `rule`.
    public var logger: Logger {
        get { log.logger }
        set { log.logger = newValue }
    }
    public var counters: AgentCounters { log.counters }

    let log: AgentLog
    let presence: PresenceTracker
    let evaluation: RuleEvaluation
    let tags: TagPlanReader
    /// Passwords the agent gave on its own (read, privacy), refused or rejected.
    let passwords = PasswordMemory()
    /// Tags in NXP privacy mode the agent makes visible (`[security] privacy-tags`).
    lazy var privacy = PrivacyUnlocker(log: log, passwords: passwords)
    let buffered = BufferedPolling()
    var client: ISO15693Client { session.client }
    /// `config.inventoryReadRange`, worked out once per configuration (it walks the plans).
    private var inventoryReadRange: PlanRead?
    private var startMs: Millis = 0
    /// The queued writes this agent makes when their tag is in its field (nil: none).
    public var writeQueue: PendingWrites?
    /// Called after every cycle (metrics, watchdog).
    public var onCycle: ((CycleReport) -> Void)?
    /// Called with each reading and each event as the agent hands it to the store writer (`vlogger watch`).
    public var onReading: ((Reading) -> Void)?
    public var onEvent: ((Event) -> Void)? {
        get { log.onEvent }
        set { log.onEvent = newValue }
    }
    /// Called before every cycle: where a configuration reload is applied.
    public var betweenCycles: (() -> Void)?
    /// Called when the wait between two cycles is nudged (`StopSignal.nudge`): work that borrows the reader.
    public var duringWait: (() -> Void)?
    /// Whether the reader answered the last inventory (an empty field counts as answered).
    public private(set) var readerHealthy = true
    /// When the last cycle with a working reader ended.
    public private(set) var lastGoodPollMs: Millis?
    /// Consecutive cycles whose reader failed: the wait before the next doubles with each, up to `maxBackoffMs`.
    public var readerFailures: Int { readerBackoff.failures }
    public var maxBackoffMs: Millis = 30_000
    /// Whether the back-off's waits are spread (`Backoff`); a test sets false to see the ceilings themselves.
    public var backoffJitter = true
    private var readerBackoff = Backoff(baseMs: 1, capMs: 1)
    /// Tags in the field now (seen within the departure window).
    public var tagsInField: [UID] { presence.inField }
    /// Whether Stay Quiet holds on this reader (`PresenceTracker`).
    public var quietHolds: Bool { presence.quietHolds }
    /// What the buffer drains did so far.
    public var bufferTotals: BufferDrain.Report { buffered.totals }

    /// `reader`: which of the configuration's readers this agent polls (default: the first).
    public init(
        config: AgentConfig, reader: ReaderConfig? = nil, rules: RuleSet, register: AssetRegister?,
        session: ReaderSession, writer: StoreWriter,
        clock: AgentClock, logger: Logger = Logger(label: "vlogger.agent", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        let r = reader ?? config.readers[0]
        readerConfig = r
        self.config = config.specialized(for: r)
        self.session = session
        self.writer = writer
        self.clock = clock
        var l = logger
        l[metadataKey: "reader"] = "\(r.id)"
        log = AgentLog(gatewayID: config.gatewayID, readerConfig: r, writer: writer, clock: clock, logger: l)
        presence = PresenceTracker(client: session.client, log: log)
        evaluation = RuleEvaluation(rules: rules, register: register, client: session.client, log: log)
        tags = TagPlanReader(
            session: session, config: self.config, rules: evaluation, log: log, passwords: passwords)
        session.client.retries = self.config.retries
        session.client.baseFlags = self.config.dataRate == .high ? [.highDataRate] : []
        inventoryReadRange = self.config.inventoryReadRange
    }

    // MARK: Running

    /// Polls until `stop`, `cycles` or `durationMs`, whichever comes first. Everything it records goes to
    /// the store writer, which commits on its own; the owner of the writer commits the rest at the end.
    public func run(cycles: Int? = nil, durationMs: Millis? = nil, stop: StopSignal) {
        startMs = clock.now()
        let firstCycle = counters.cycles
        log.event(
            .start, uid: nil, name: "", severity: .info,
            detail:
                "gateway \(config.gatewayID), reader \(readerConfig.id) (\(session.reader.name)\(readerConfig.location.map { ", " + $0 } ?? "")), \(config.plans.count) plans, \(rules.rules.count) rules"
        )
        logger.notice(
            "polling with \(session.reader.name) every \(DurationText.format(config.intervalMs)); store \(writer.store.path)"
        )
        var next = startMs
        while !stop.isRequested {
            if let cycles, counters.cycles - firstCycle >= cycles { break }
            if let durationMs, clock.now() - startMs >= durationMs { break }
            betweenCycles?()
            let r = cycle()
            logger.debug(
                "cycle \(counters.cycles): \(r.tags.count) tags, \(r.readings) readings, \(r.exchanges) exchanges, air \(r.airTime)"
            )
            // A failing reader: back off (the first wait twice the interval, then doubling up to maxBackoffMs,
            // spread by jitter), retry by itself.
            var wait = config.intervalMs
            if r.readerFailed {
                if readerBackoff.failures == 0 {
                    readerBackoff = Backoff(
                        baseMs: 2 * max(config.intervalMs, 250), capMs: maxBackoffMs, jitter: backoffJitter)
                }
                wait = readerBackoff.failed()
                if readerHealthy {
                    log.event(
                        .readerDown, uid: nil, name: "", severity: .critical,
                        detail:
                            "reader \(readerConfig.id) (\(session.reader.name)) is failing; retrying with back-off (next in \(DurationText.format(wait)))"
                    )
                }
                readerHealthy = false
            } else {
                if !readerHealthy {
                    log.event(
                        .readerUp, uid: nil, name: "", severity: .info,
                        detail:
                            "reader \(readerConfig.id) (\(session.reader.name)) works again after \(readerFailures) failed cycle\(readerFailures == 1 ? "" : "s")"
                    )
                }
                readerHealthy = true
                readerBackoff.succeeded()
                lastGoodPollMs = clock.now()
            }
            // After the reader's state is known, so that /healthz and the metrics never lag a cycle behind it.
            onCycle?(r)
            next += wait
            let now = clock.now()
            if next < now { next = now }  // a cycle longer than the interval: start the next at once
            if let durationMs { next = min(next, startMs + durationMs) }
            if let cycles, counters.cycles - firstCycle >= cycles { break }
            while !stop.isRequested {
                clock.sleep(untilMs: next, stop: stop)
                if stop.takeNudge() { duringWait?() }
                if clock.now() >= next { break }
            }
        }
        // Tags left quiet would be invisible to the next inventory of another program (or of this one after
        // a restart) until they leave the field.
        wakeQuietTags()
        log.event(
            .stop, uid: nil, name: "", severity: .info,
            detail:
                "\(counters.cycles) cycles, \(counters.readings) readings, \(counters.violations) violations, \(counters.errorTotal) errors"
        )
    }

    /// Swaps in a reloaded configuration, rules and register (between cycles). Plans and rules are worked
    /// out again per tag; the reader's location and polling settings are taken from its table in the new
    /// file (by id); its driver and device, and the store, take effect at the next start.
    public func reload(config new: AgentConfig, rules newRules: RuleSet, register newRegister: AssetRegister?) {
        // Plans may change which tags have reads (and are kept quiet): every tag answers the inventory again.
        wakeQuietTags()
        if let fresh = new.readers.first(where: { $0.id == readerConfig.id }) {
            readerConfig.location = fresh.location
            readerConfig.polling = fresh.polling
        }
        var c = new.specialized(for: readerConfig)
        c.readers = config.readers
        c.storePath = config.storePath
        config = c
        log.readerConfig = readerConfig
        inventoryReadRange = c.inventoryReadRange
        evaluation.rules = newRules
        evaluation.register = newRegister
        tags.replan(c)
        session.client.retries = c.retries
        session.client.baseFlags = c.dataRate == .high ? [.highDataRate] : []
    }

    // MARK: One cycle

    @discardableResult
    public func cycle() -> CycleReport {
        var report = CycleReport()
        let airBefore = session.reader.airTime
        let exchangesBefore = client.exchanges
        // Cycles driven without run() (`vlogger watch`, tests) count their run time from the first one.
        if startMs == 0 { startMs = clock.now() }
        session.runTime(clock.now() - startMs)
        log.counters.cycles += 1
        let now = clock.now()
        if readerConfig.readMode == .buffer {
            buffered.cycle(&report, now: now, agent: self)
            finish(&report, airBefore, exchangesBefore)
            return report
        }

        // Listed tags in privacy mode answer the inventory only after their privacy password.
        privacy.run(
            session, config: config, inField: Set(presence.inField),
            asset: { [register] in register?.rows[$0.description]?["asset_id"] }, now: now)
        let quiet = config.stayQuiet && quietHolds
        var seen = Set<UID>()
        var lowerBound = AirTime.zero
        // Known tags kept quiet: their addressed reads are their presence check (no answer at all: not seen).
        if quiet {
            for uid in presence.quieted.sorted(by: { $0.value < $1.value }) {
                let (n, bound, answered) = readTag(uid, now: now, presence: true)
                lowerBound = lowerBound + bound
                guard answered else { continue }
                seen.insert(uid)
                report.tags.append(uid)
                report.readings += n
                presence.seen(uid, foundByInventory: false)
            }
        }
        let oneSlot: Bool
        switch config.slots {
        case .one: oneSlot = true
        case .sixteen: oneSlot = false
        // With the known tags quiet, only newcomers and the tags that are not kept quiet (no reads) answer.
        case .adaptive: oneSlot = quiet ? presence.answering <= 1 : presence.lastCount <= 1
        }
        var found: [InventoryEntry]
        // Blocks that came with an Inventory Read answer, by tag.
        var prefetched: [UID: [BlockRead]] = [:]
        var inventoryReadBound = AirTime.zero
        do {
            if quiet, config.inventoryRead, !session.reader.hasReaderInventory, let range = inventoryReadRange {
                // The one-slot probe first: in the steady cycle it is silent and costs nothing more.
                let probe: ISO15693Client.Probe = oneSlot ? try client.probe(afi: config.afi) : .several
                switch probe {
                case .silent: found = []
                case let .lone(entry): found = [entry]
                case .several:
                    // ICODE newcomers with their blocks, then (kept quiet meanwhile) everything else.
                    let fast = session.reader.receivesFastResponses
                    let icode = try client.inventoryRead(
                        first: range.first, count: range.count, fast: fast, afi: config.afi, oneSlotFirst: false)
                    for t in icode {
                        try client.stayQuiet(t.uid)
                        prefetched[t.uid] = t.blocks
                    }
                    inventoryReadBound = PollCost.inventoryRead(
                        tags: icode.count, blocks: range.count, flags: client.baseFlags, fast: fast,
                        slotMarkers: session.reader.supportsSlotMarkers)
                    found =
                        icode.map { InventoryEntry(uid: $0.uid, dsfid: 0) }
                        + (try client.inventory(afi: config.afi, oneSlotFirst: true))
                }
            } else {
                found = try client.inventory(afi: config.afi, oneSlotFirst: oneSlot)
            }
        } catch {
            log.error(uid: nil, kind: "inventory", error)
            if case .reader(let e, _) = error {
                switch e {
                case .device, .notSupported, .fieldOff: report.readerFailed = true
                default: break
                }
            }
            report.lowerBound = lowerBound
            finish(&report, airBefore, exchangesBefore)
            return report
        }
        presence.lastCount = found.count
        lowerBound =
            lowerBound + inventoryReadBound
            + PollCost.inventory(
                tags: found.filter { !seen.contains($0.uid) && prefetched[$0.uid] == nil }.count,
                flags: client.baseFlags,
                slotMarkers: session.reader.supportsSlotMarkers)
        var answeredTwice = 0
        for entry in found {
            let uid = entry.uid
            if seen.contains(uid) {
                // Read by address and found by the inventory too: its Quiet state did not hold.
                answeredTwice += 1
                try? client.stayQuiet(uid)
                continue
            }
            seen.insert(uid)
            report.tags.append(uid)
            presence.seen(uid, foundByInventory: true)
            let (n, bound, _) = readTag(uid, now: now, presence: false, prefetched: prefetched[uid])
            report.readings += n
            lowerBound = lowerBound + bound
            // A tag with reads is kept quiet from now on; one without keeps answering the inventory.
            if quiet, tags.hasReads(uid) {
                if prefetched[uid] != nil { presence.keptQuiet(uid) } else { presence.quiet(uid) }
            } else if prefetched[uid] != nil {
                // Quieted for the Inventory after the Inventory Read, but it has no reads: Ready again.
                try? client.resetToReady(uid)
            }
        }
        presence.noteQuietState(answeredTwice: answeredTwice, quiet: quiet, reader: readerConfig.id)
        // Departures: present tags not seen for `departureCycles` cycles.
        presence.departures(seen: seen, departureCycles: config.departureCycles) { uid in
            evaluation.left(uid)
            tags.forget(uid)
            // Its visit ended: optional commands it did not answer are asked again on its next one.
            client.forgetOptional(uid)
        }
        report.lowerBound = lowerBound
        finish(&report, airBefore, exchangesBefore)
        return report
    }

    /// Sends every quieted tag Reset to Ready (addressed: a quiet tag ignores anything else), so that an
    /// inventory finds every tag in the field: before an audit's round, at a reload and at the end of a run.
    public func wakeQuietTags() { presence.wakeQuietTags() }

    /// An inventory that finds every tag in the field, the quiet ones too (an audit's round).
    /// A simulated field is brought to the clock's present first (its scenario plays on run time): an audit
    /// that starts between two cycles sees the field as it is at the audit's time, not at the last cycle's.
    public func inventoryEveryTag() throws(ClientError) -> [InventoryEntry] {
        if startMs != 0 { session.runTime(clock.now() - startMs) }
        wakeQuietTags()
        return try client.inventory(afi: config.afi)
    }

    private func finish(_ report: inout CycleReport, _ airBefore: AirTime, _ exchangesBefore: Int) {
        report.airTime = session.reader.airTime - airBefore
        report.exchanges = client.exchanges - exchangesBefore
        log.counters.exchanges += report.exchanges
        log.counters.cycleAirTime.append(report.airTime)
        log.counters.cycleLowerBound.append(report.lowerBound)
        if log.counters.cycleAirTime.count > AgentCounters.window * 2 {
            log.counters.cycleAirTime.removeFirst(log.counters.cycleAirTime.count - AgentCounters.window)
            log.counters.cycleLowerBound.removeFirst(log.counters.cycleLowerBound.count - AgentCounters.window)
        }
    }

    /// Reads one tag's plan (`TagPlanReader`); a complete plan's readings go to the store writer, then the rules
    /// and the tag's queued writes. Returns the readings stored, the air time's lower bound for the same reads, and
    /// whether the tag answered.
    private func readTag(_ uid: UID, now: Millis, presence: Bool, prefetched: [BlockRead]? = nil) -> (
        Int, AirTime, Bool
    ) {
        let o = tags.read(uid, now: now, presence: presence, prefetched: prefetched)
        guard let facts = o.facts, let memory = o.memory else { return (0, o.bound, o.answered) }
        for r in o.readings {
            writer.add(r)
            onReading?(r)
        }
        log.counters.readings += o.readings.count
        evaluation.check(o.rules, facts, memory: memory)
        performQueuedWrites(uid, memory: memory)
        return (o.readings.count, o.bound, true)
    }
}
