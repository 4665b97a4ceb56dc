import Foundation
import VLoggerStore
import VLoggerModel
import Logging
import ISO15693
import Readers
import TagSecurity
import Type5NDEF

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
}

/// The polling agent: each cycle finds the tags in the field, reads each tag's plan in as few exchanges
/// as its chip allows, decodes, checks the rules, and hands readings and events to the batch writer.
public final class Agent {
    /// The configuration with this reader's own polling settings in force.
    public private(set) var config: AgentConfig
    /// The reader this agent polls: its id and location go into every row.
    public private(set) var readerConfig: ReaderConfig
    public private(set) var rules: RuleSet
    public private(set) var register: AssetRegister?
    public let session: ReaderSession
    public let writer: StoreWriter
    public let clock: AgentClock
    /// The agent's logger, with `reader` in its metadata; events add `uid` and `rule`.
    public var logger: Logger
    public private(set) var counters = AgentCounters()

    private var client: ISO15693Client { session.client }
    /// Tags present, with the number of cycles since each was last seen.
    private var present: [UID: Int] = [:]
    private var lastCount = 0
    /// Tags this agent sent Stay Quiet: read by address each cycle (the read is the presence check), not
    /// found again by the inventory.
    private var quieted = Set<UID>()
    /// Whether Stay Quiet holds on this reader: off after cycles in which quieted tags answered the inventory
    /// again (a reader that switches its field off between commands resets every tag to Ready).
    public private(set) var quietHolds = true
    private var quietLostCycles = 0
    /// Rules each tag is violating now (a violation is recorded when it starts, not every cycle).
    private var violating: [UID: Set<String>] = [:]
    /// Originality verdicts by UID (`originality(_:_:)`).
    private var originalityVerdicts: [UID: Originality.Verdict] = [:]
    /// What each tag needs read, worked out once per UID (plan, rules and layout do not change in a run).
    private var work: [UID: TagWork] = [:]
    /// The NDEF problem each tag has now (not formatted, malformed), so it is reported once.
    private var ndefProblems: [UID: String] = [:]
    /// Each NDEF tag's last message bytes and the fields they decoded to.
    private var ndefDecoded: [UID: (bytes: [UInt8], decoded: [(name: String, value: FieldValue)])] = [:]

    /// `config.inventoryReadRange`, worked out once per configuration (it walks the plans).
    private var inventoryReadRange: PlanRead?

    private struct TagWork {
        var plan: ReadPlan?
        var rules: [Rule]
        var ranges: [PlanRead]
        var lowerBound: AirTime
    }
    private var startMs: Millis = 0
    /// The queued writes this agent makes when their tag is in its field (nil: none).
    public var writeQueue: PendingWrites?
    /// Called after every cycle (metrics, watchdog).
    public var onCycle: ((CycleReport) -> Void)?
    /// Called with each reading and each event as the agent hands it to the store writer (`vlogger watch`).
    public var onReading: ((Reading) -> Void)?
    public var onEvent: ((Event) -> Void)?
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
    public var tagsInField: [UID] { present.keys.sorted { $0.value < $1.value } }

    /// `reader`: which of the configuration's readers this agent polls (default: the first).
    public init(
        config: AgentConfig, reader: ReaderConfig? = nil, rules: RuleSet, register: AssetRegister?,
        session: ReaderSession, writer: StoreWriter,
        clock: AgentClock, logger: Logger = Logger(label: "vlogger.agent", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        let r = reader ?? config.readers[0]
        readerConfig = r
        self.config = config.specialized(for: r)
        self.rules = rules
        self.register = register
        self.session = session
        self.writer = writer
        self.clock = clock
        var l = logger
        l[metadataKey: "reader"] = "\(r.id)"
        self.logger = l
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
        event(
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
                    event(
                        .readerDown, uid: nil, name: "", severity: .critical,
                        detail:
                            "reader \(readerConfig.id) (\(session.reader.name)) is failing; retrying with back-off (next in \(DurationText.format(wait)))"
                    )
                }
                readerHealthy = false
            } else {
                if !readerHealthy {
                    event(
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
        event(
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
        inventoryReadRange = c.inventoryReadRange
        rules = newRules
        register = newRegister
        work.removeAll()
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
        counters.cycles += 1
        let now = clock.now()
        if readerConfig.readMode == .buffer {
            drainBuffer(&report, now: now)
            finish(&report, airBefore, exchangesBefore)
            return report
        }

        let quiet = config.stayQuiet && quietHolds
        var seen = Set<UID>()
        var lowerBound = AirTime.zero
        // Known tags kept quiet: their addressed reads are their presence check (no answer at all: not seen).
        if quiet {
            for uid in quieted.sorted(by: { $0.value < $1.value }) {
                let (n, bound, answered) = readTag(uid, now: now, presence: true)
                lowerBound = lowerBound + bound
                guard answered else { continue }
                seen.insert(uid)
                report.tags.append(uid)
                report.readings += n
                present[uid] = 0
            }
        }
        let oneSlot: Bool
        switch config.slots {
        case .one: oneSlot = true
        case .sixteen: oneSlot = false
        // With the known tags quiet, only newcomers and the tags that are not kept quiet (no reads) answer.
        case .adaptive: oneSlot = quiet ? present.keys.filter { !quieted.contains($0) }.count <= 1 : lastCount <= 1
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
            recordError(uid: nil, kind: "inventory", error, now: now)
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
        lastCount = found.count
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
            if present[uid] == nil {
                counters.arrivals += 1
                event(
                    .arrival, uid: uid, name: "", severity: .info,
                    detail: "\(uid) entered the field (\(uid.manufacturer))")
            }
            present[uid] = 0
            let (n, bound, _) = readTag(uid, now: now, presence: false, prefetched: prefetched[uid])
            report.readings += n
            lowerBound = lowerBound + bound
            // A tag with reads is kept quiet from now on; one without keeps answering the inventory.
            if quiet, work[uid]?.ranges.isEmpty == false {
                if prefetched[uid] != nil {
                    quieted.insert(uid)
                } else {
                    do { try client.stayQuiet(uid); quieted.insert(uid) } catch {}
                }
            } else if prefetched[uid] != nil {
                // Quieted for the Inventory after the Inventory Read, but it has no reads: Ready again.
                try? client.resetToReady(uid)
            }
        }
        noteQuietState(answeredTwice: answeredTwice, quiet: quiet)
        // Departures: present tags not seen for `departureCycles` cycles.
        for (uid, missed) in present where !seen.contains(uid) {
            if missed + 1 >= config.departureCycles {
                present[uid] = nil
                for rule in (violating.removeValue(forKey: uid) ?? []).sorted() {
                    event(
                        .violationEnded, uid: uid, name: rule, severity: .info,
                        detail: "\(uid) left the field while violating '\(rule)'")
                }
                // A quiet tag that is still powered but was not heard (at the edge of the field) would stay
                // quiet, and so invisible to the inventory, until it loses power: tell it to be Ready.
                if quieted.remove(uid) != nil { try? client.resetToReady(uid) }
                ndefDecoded[uid] = nil
                counters.departures += 1
                event(
                    .departure, uid: uid, name: "", severity: .info,
                    detail:
                        "\(uid) not seen for \(config.departureCycles) cycle\(config.departureCycles == 1 ? "" : "s")")
            } else {
                present[uid] = missed + 1
            }
        }
        report.lowerBound = lowerBound
        finish(&report, airBefore, exchangesBefore)
        return report
    }

    /// Three cycles in a row in which quieted tags answered the inventory again: the reader does not keep tags
    /// powered between commands, so Stay Quiet is left off. (Whoever wakes them on purpose, an audit's round,
    /// also takes them out of `quieted`, so that is not counted.)
    private func noteQuietState(answeredTwice: Int, quiet: Bool) {
        guard quiet else { quietLostCycles = 0; return }
        quietLostCycles = answeredTwice > 0 ? quietLostCycles + 1 : 0
        if quietLostCycles >= 3 {
            quietHolds = false
            // The tags for which Quiet did hold would otherwise stay quiet, unread and never found again.
            wakeQuietTags()
            logger.notice(
                "reader \(readerConfig.id) (\(session.reader.name)): tags sent Stay Quiet answer the inventory again in 3 cycles in a row (the reader resets them between commands); every cycle now inventories every tag"
            )
        }
    }

    /// The reader's own buffer drained into the store (read-mode = "buffer"): see `BufferDrain`.
    private var drain: BufferDrain?
    /// What the buffer drains did so far.
    public private(set) var bufferTotals = BufferDrain.Report()

    private func drainBuffer(_ report: inout CycleReport, now: Millis) {
        /// The reader's own buffer (nil while a reader that is opened again at each command is closed).
        func bufferedReader() -> (any BufferedReader)? { session.reader.buffer }
        if bufferedReader() == nil {
            // A reader not open yet (ReopeningReader): any command opens it.
            do { try session.reader.fieldOn() } catch {
                recordError(uid: nil, kind: "buffer", ClientError.reader(error, command: "open"), now: now)
                report.readerFailed = true
                return
            }
        }
        guard let buffered = bufferedReader() else {
            recordError(
                uid: nil, kind: "buffer",
                ClientError.invalid(
                    "reader \(readerConfig.id) (\(session.reader.name)) has no buffer of its own; read-mode = \"buffer\" needs \(ReaderDrivers.names(with: .bufferedRead))"
                ), now: now)
            report.readerFailed = true
            return
        }
        if drain == nil || drain?.reader !== buffered {
            drain = BufferDrain(
                reader: buffered, store: writer.store, gateway: config.gatewayID, readerID: readerConfig.id,
                location: readerConfig.location, firstBlock: readerConfig.bufferBlock)
        }
        // The plan's fields that lie in the records' blocks are decoded as in polling (the plan as configured now).
        let plans = config
        let first = readerConfig.bufferBlock
        drain?.decode = { uid, data, blockSize in
            plans.plan(for: uid, model: ICModel.identify(uid: uid))?
                .decodedFields(memory: data, first: first, count: data.count / max(1, blockSize), blockSize: blockSize)
                ?? []
        }
        do {
            let r = try drain!.drain(now: now)
            bufferTotals.records += r.records
            bufferTotals.readings += r.readings
            bufferTotals.alreadyStored += r.alreadyStored
            if r.staleMark { bufferTotals.staleMark = true }
            report.tags = r.uids
            report.readings = r.readings
            counters.readings += r.readings
            // The rules, on what the records hold: UID, manufacturer and model rules, block values and decoded
            // fields of the blocks the reader was set to read. Lock rules are not evaluated (a buffered record has
            // no lock status), nor are rules on blocks outside the records.
            for uid in r.uids {
                // A record without blocks still gives the UID.
                let latest = r.latest[uid] ?? BufferDrain.Latest(blocks: [], decoded: [:])
                let model = ICModel.identify(uid: uid)
                var facts = TagFacts(uid: uid, model: model, blockSize: latest.blocks.first?.count ?? 0)
                for (i, b) in latest.blocks.enumerated() { facts.blocks[readerConfig.bufferBlock.int + i] = b }
                facts.fields = latest.decoded
                evaluate(rules.rules.filter { $0.match.matches(uid: uid, model: model) }, facts, now: now)
            }
            if r.alreadyStored > 0 {
                logger.notice(
                    "reader \(readerConfig.id): \(r.alreadyStored) record(s) at the head of the reader's buffer were stored before the gateway stopped; cleared, not stored again"
                )
            }
        } catch {
            switch error {
            case .reader(let e):
                recordError(uid: nil, kind: "buffer", ClientError.reader(e, command: "Read Buffer"), now: now)
                switch e {
                case .device, .notSupported, .fieldOff, .readerStatus: report.readerFailed = true
                default: break
                }
            case .store(let e):
                logger.error("reader \(readerConfig.id): buffer drain: \(e); the records stay in the reader's buffer")
                report.readerFailed = true
            }
        }
    }

    /// Sends every quieted tag Reset to Ready (addressed: a quiet tag ignores anything else), so that an
    /// inventory finds every tag in the field: before an audit's round, at a reload and at the end of a run.
    public func wakeQuietTags() {
        for uid in quieted.sorted(by: { $0.value < $1.value }) { try? client.resetToReady(uid) }
        quieted.removeAll()
    }

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
        counters.exchanges += report.exchanges
        counters.cycleAirTime.append(report.airTime)
        counters.cycleLowerBound.append(report.lowerBound)
        if counters.cycleAirTime.count > AgentCounters.window * 2 {
            counters.cycleAirTime.removeFirst(counters.cycleAirTime.count - AgentCounters.window)
            counters.cycleLowerBound.removeFirst(counters.cycleLowerBound.count - AgentCounters.window)
        }
    }

    /// Reads one tag's plan; all of it is stored, or (after the retries) none of it and an error event.
    /// Returns the readings stored, the lower bound of the air time for the same reads, and whether the tag
    /// answered. With `presence` (a quiet tag's reads are its presence check) a tag that never answers is not
    /// an error: it is not seen this cycle.
    /// `prefetched`: blocks that came with the tag's Inventory Read answer; a range without lock status that
    /// they cover is taken from them instead of being read (its air time is then not in the bound either).
    private func readTag(_ uid: UID, now: Millis, presence: Bool, prefetched: [BlockRead]? = nil) -> (
        Int, AirTime, Bool
    ) {
        let memory: TagMemory
        do { memory = try client.memory(of: uid) } catch {
            recordError(uid: uid, kind: "system-information", error, now: now)
            return (0, .zero, true)
        }
        var answered = false
        func seenNow() {
            guard !answered else { return }
            answered = true
            writer.add(
                TagRecord(
                    uid: uid, seen: now, manufacturer: uid.manufacturer.description, model: memory.model?.name,
                    blockCount: memory.blockCount, blockSize: memory.blockSize, memorySource: memory.source.rawValue,
                    reader: readerConfig.id, location: readerConfig.location,
                    originality: originalityVerdicts[uid]?.description))
        }
        if !presence { seenNow() }
        let w = work[uid] ?? plan(uid, memory)
        work[uid] = w
        var (plan, applicable, bound) = (w.plan, w.rules, w.lowerBound)
        func cached(_ range: PlanRead) -> [BlockRead]? {
            guard !range.security, let got = prefetched, memory.blockSize == 4 else { return nil }
            let blocks = got.filter {
                range.first.int <= $0.number.int && $0.number.int < range.first.int + range.count
            }
            return blocks.count == range.count ? blocks : nil
        }
        var facts = TagFacts(uid: uid, model: memory.model, blockSize: memory.blockSize)
        var readings: [Reading] = []
        for range in w.ranges {
            var attempt = 0
            while true {
                do {
                    let blocks: [BlockRead]
                    if let got = cached(range) {
                        blocks = got
                        bound =
                            bound
                            - PollCost.read(
                                range, memory: memory, limits: session.reader.limits, flags: client.baseFlags,
                                fast: client.fastReads(uid, memory))
                    } else {
                        blocks = try client.readBlocks(
                            uid, first: range.first, count: range.count, security: range.security)
                    }
                    seenNow()
                    let data = Array(blocks.map(\.data).joined())
                    let security = range.security ? blocks.map { $0.security?.rawValue ?? 0 } : nil
                    for b in blocks {
                        facts.blocks[b.number.int] = b.data
                        if let s = b.security { facts.security[b.number.int] = s.rawValue }
                    }
                    let decoded =
                        plan?.decodedFields(
                            memory: data, first: range.first, count: range.count, blockSize: memory.blockSize) ?? []
                    for (name, v) in decoded { facts.fields[name] = v }
                    readings.append(
                        Reading(
                            time: now, gateway: config.gatewayID, reader: readerConfig.id,
                            location: readerConfig.location, uid: uid, first: range.first, count: range.count,
                            data: data, security: security, decoded: decoded))
                    break
                } catch {
                    attempt += 1
                    if attempt < config.readAttempts, error.isTransient { continue }
                    // A quiet tag that never answered has left (or lost power and returned to Ready): not seen.
                    if !answered, case .reader(.timeout, _) = error { return (0, bound, false) }
                    seenNow()
                    // Nothing of this tag's cycle is stored: a partial plan is not a reading.
                    recordError(
                        uid: uid, kind: "read", error, now: now,
                        detail:
                            "blocks \(range.first)+\(range.count) after \(attempt) attempt\(attempt == 1 ? "" : "s"); no reading stored for this cycle"
                    )
                    return (0, bound, answered)
                }
            }
        }
        if plan?.ndef == true {
            switch readNDEF(uid, memory: memory, now: now, facts: &facts) {
            case let .reading(r): readings.append(r)
            case .noNDEF: break
            case .failed: return (0, bound, answered)
            }
        }
        for r in readings {
            writer.add(r)
            onReading?(r)
        }
        counters.readings += readings.count
        answerCommands(uid, applicable, &facts)
        if applicable.contains(where: \.needsOriginality) { facts.originality = originality(uid, memory) }
        evaluate(applicable, facts, now: now)
        performQueuedWrites(uid, memory: memory)
        seenNow()
        return (readings.count, bound, true)
    }

    private enum NDEFOutcome {
        /// The bytes read from block 0, with the records as fields.
        case reading(Reading)
        /// The tag has no readable NDEF (an event when that starts, then quiet).
        case noNDEF
        /// The read failed after its attempts: an error event is written, nothing of the cycle is stored.
        case failed
    }

    /// Reads the tag's NDEF message for a plan with `ndef = true`.
    private func readNDEF(_ uid: UID, memory: TagMemory, now: Millis, facts: inout TagFacts) -> NDEFOutcome {
        var attempt = 0
        while true {
            do throws(NDEFTagError) {
                // Blocks from 0 that the plan's reads brought this cycle are not read again.
                var known: [UInt8] = []
                while let b = facts.blocks[known.count / memory.blockSize] { known += b }
                let state = try client.readNDEF(uid, known: known)
                if state.status == .notSupported {
                    ndefProblem(uid, "ndef-not-formatted", state.reason ?? "no capability container")
                    return .noNDEF
                }
                // The message rarely changes: the same bytes as last cycle decode to the same fields (the JSON
                // of the records was most of a cycle's CPU).
                let decoded: [(name: String, value: FieldValue)]
                if let cached = ndefDecoded[uid], cached.bytes == state.memoryRead {
                    decoded = cached.decoded
                } else {
                    let records: [NDEFRecord]
                    do { records = try state.records() } catch {
                        ndefDecoded[uid] = nil
                        ndefProblem(uid, "ndef-malformed", "\(error)")
                        return .noNDEF
                    }
                    decoded = NDEFFields.decode(records)
                    ndefDecoded[uid] = (state.memoryRead, decoded)
                }
                ndefProblems[uid] = nil
                for d in decoded { facts.fields[d.name] = d.value }
                let bs = memory.blockSize
                return .reading(
                    Reading(
                        time: now, gateway: config.gatewayID, reader: readerConfig.id, location: readerConfig.location,
                        uid: uid, first: 0, count: state.memoryRead.count / bs,
                        data: state.memoryRead, decoded: decoded))
            } catch {
                switch error {
                case let .client(e):
                    attempt += 1
                    if attempt < config.readAttempts, e.isTransient { continue }
                    recordError(
                        uid: uid, kind: "ndef", e, now: now,
                        detail:
                            "NDEF read after \(attempt) attempt\(attempt == 1 ? "" : "s"); no reading stored for this cycle"
                    )
                    return .failed
                default:
                    ndefProblem(uid, "ndef-malformed", "\(error)")
                    return .noNDEF
                }
            }
        }
    }

    /// Writes an NDEF problem event when it starts (or changes), not every cycle.
    private func ndefProblem(_ uid: UID, _ name: String, _ detail: String) {
        guard ndefProblems[uid] != name else { return }
        ndefProblems[uid] = name
        counters.errors[name, default: 0] += 1
        event(.error, uid: uid, name: name, severity: .warning, detail: detail)
    }

    /// The tag's plan, the rules that apply to it, and the block ranges they need (plan reads, the
    /// blocks its fields cover, the blocks its rules check), merged; reads past the end are dropped
    /// with one warning event.
    private func plan(_ uid: UID, _ memory: TagMemory) -> TagWork {
        let plan = config.plan(for: uid, model: memory.model)
        let applicable = rules.rules.filter { $0.match.matches(uid: uid, model: memory.model) }
        var wanted = plan?.reads ?? []
        for f in plan?.fields ?? [] {
            let r = f.blocks(blockSize: memory.blockSize)
            wanted.append(PlanRead(first: BlockNumber(exactly: r.lowerBound) ?? 0, count: r.count))
        }
        for rule in applicable { wanted += rule.neededReads }
        let ranges = PollCost.merge(wanted)
        let fits = ranges.filter { $0.first.int + $0.count <= memory.blockCount }
        if fits.count != ranges.count {
            event(
                .error, uid: uid, name: "plan-out-of-range", severity: .warning,
                detail:
                    "plan '\(plan?.name ?? "-")' reads past the end of \(uid) (\(memory.blockCount) blocks of \(memory.blockSize) bytes); those reads are skipped"
            )
        }
        var bound = fits.reduce(AirTime.zero) {
            $0
                + PollCost.read(
                    $1, memory: memory, limits: session.reader.limits, flags: client.baseFlags,
                    fast: client.fastReads(uid, memory))
        }
        let ndefFirst = PlanRead(
            first: 0, count: min(memory.blockCount, (32 + memory.blockSize - 1) / memory.blockSize))
        if plan?.ndef == true, !fits.contains(where: { $0.first.int == 0 && $0.count >= ndefFirst.count }) {
            // At least the NDEF read's first exchange (the CC and the start of the TLVs, 32 bytes), unless
            // the plan's own reads bring those blocks already.
            let first = ndefFirst
            bound =
                bound
                + PollCost.read(
                    first, memory: memory, limits: session.reader.limits, flags: client.baseFlags,
                    fast: client.fastReads(uid, memory))
        }
        return TagWork(plan: plan, rules: applicable, ranges: fits, lowerBound: bound)
    }

    /// Sends the custom commands the tag's rules need (each once per cycle, only to tags of its manufacturer) and
    /// keeps their answers for the rules; a command that fails leaves its rules not evaluated this cycle.
    private func answerCommands(_ uid: UID, _ applicable: [Rule], _ facts: inout TagFacts) {
        var sent = Set<String>()
        for command in applicable.flatMap(\.neededCommands)
        where command.manufacturer == uid.manufacturer && sent.insert(command.name).inserted {
            if let answer = try? client.custom(
                uid, code: command.code, manufacturer: command.manufacturer, parameters: command.parameters)
            {
                facts.answers[command.name] = answer
            }
        }
    }

    /// The verdict on a tag's originality signature: checked once per UID while the agent runs (a signature does not
    /// change), again next cycle when the tag did not answer cleanly.
    private func originality(_ uid: UID, _ memory: TagMemory) -> Originality.Verdict? {
        if let known = originalityVerdicts[uid] { return known }
        guard let verdict = try? OriginalityCheck.check(client, uid, model: memory.model) else { return nil }
        if originalityVerdicts.count >= 100_000 { originalityVerdicts.removeAll() }  // bounded over months
        originalityVerdicts[uid] = verdict
        return verdict
    }

    private func evaluate(_ applicable: [Rule], _ facts: TagFacts, now: Millis) {
        var current = violating[facts.uid] ?? []
        for rule in applicable {
            switch rule.evaluate(facts, register: register) {
            case .pass:
                if current.remove(rule.name) != nil {
                    event(
                        .violationEnded, uid: facts.uid, name: rule.name, severity: .info,
                        detail: "\(facts.uid) passes '\(rule.name)' again")
                }
            case let .violation(why):
                if current.insert(rule.name).inserted {
                    counters.violations += 1
                    event(.violation, uid: facts.uid, name: rule.name, severity: rule.severity, detail: why)
                }
            case .notEvaluated:
                break
            }
        }
        violating[facts.uid] = current
    }

    private func recordError(uid: UID?, kind: String, _ error: ClientError, now: Millis, detail: String? = nil) {
        let name: String
        switch error {
        case .reader(.timeout, _): name = "\(kind)-timeout"
        case .reader(.crcError, _): name = "\(kind)-crc"
        case .reader(.collision, _): name = "\(kind)-collision"
        case .reader: name = "\(kind)-reader"
        case .tag: name = "\(kind)-tag-error"
        case .malformed: name = "\(kind)-malformed"
        case .invalid, .verifyFailed: name = "\(kind)-failed"
        }
        counters.errors[name, default: 0] += 1
        event(.error, uid: uid, name: name, severity: .warning, detail: "\(error)" + (detail.map { "; \($0)" } ?? ""))
    }

    private func event(_ kind: Event.Kind, uid: UID?, name: String, severity: Event.Severity, detail: String) {
        let now = clock.now()
        let e = Event(
            time: now, gateway: config.gatewayID, reader: readerConfig.id, location: readerConfig.location, uid: uid,
            kind: kind, name: name, severity: severity, detail: detail)
        writer.add(e)
        onEvent?(e)
        switch kind {
        case .violation:
            logger.log(
                level: severity == .critical ? .error : .warning,
                "rule '\(name)' violated by \(uid?.description ?? "-"): \(detail)",
                metadata: ["uid": "\(uid?.description ?? "-")", "rule": "\(name)"])
        case .error:
            logger.warning("\(uid?.description ?? "reader"): \(detail)", metadata: uid.map { ["uid": "\($0)"] })
        case .readerDown: logger.error("\(detail)")
        case .readerUp: logger.notice("\(detail)")
        case .arrival, .departure, .violationEnded:
            logger.info("\(detail)", metadata: uid.map { ["uid": "\($0)"] })
        case .start, .stop, .writeDone, .writeFailed, .writeExpired, .auditFinished:
            logger.info("\(kind.rawValue): \(detail)")
        }
    }
}

/// The physical lower bound of a cycle's air time: the same reads with no retries, no collisions and no
/// slack, each range in as few Read Multiple Blocks as the chip and the reader frame allow, plus one
/// inventory round in which each tag answers in a slot of its own.
public enum PollCost {
    /// Merges wanted reads into contiguous ranges (with security if any part needs it).
    public static func merge(_ reads: [PlanRead]) -> [PlanRead] {
        var out: [PlanRead] = []
        for r in reads.sorted(by: { $0.first < $1.first }) {
            if var last = out.last, r.first.int <= last.first.int + last.count {
                last.count = max(last.count, r.first.int + r.count - last.first.int)
                last.security = last.security || r.security
                out[out.count - 1] = last
            } else {
                out.append(r)
            }
        }
        return out
    }

    static func exchange(
        request: Int, response: Int, flags: RequestFlags, coding: ReaderCoding = .oneOfFour, fast: Bool = false
    ) -> AirTime {
        AirTiming.readerFrame(bytes: request, coding: coding) + AirTiming.t1
            + (fast
                ? AirTiming.fastTagFrame(bytes: response, flags: flags)
                : AirTiming.tagFrame(bytes: response, flags: flags)) + AirTiming.t2
    }

    /// The least air time in which an inventory can find `tags` tags: the lesser of one one-slot inventory per
    /// tag and ⌈tags/16⌉ 16-slot rounds with every tag alone in its slot (no anti-collision algorithm does
    /// better on this timing); for none, a one-slot request and its empty slot.
    public static func inventory(tags: Int, flags: RequestFlags, slotMarkers: Bool = true) -> AirTime {
        // Inventory request: flags, command, mask length, CRC = 5 bytes; answer: flags, DSFID, UID, CRC = 12.
        let request = AirTiming.readerFrame(bytes: 5, coding: .oneOfFour)
        if tags <= 0 { return request + AirTiming.emptySlot(flags) }
        let oneSlotEach = exchange(request: 5, response: 12, flags: flags) * tags
        // One-slot requests only (PC/SC): at best one answered request per tag.
        guard slotMarkers, tags > 1 else { return oneSlotEach }
        let answered = exchange(request: 5, response: 12, flags: flags) - request
        let empty = AirTiming.emptySlot(flags)
        func round(_ k: Int) -> AirTime { request + AirTiming.readerEOF * 15 + answered * k + empty * (16 - k) }
        let rounds = round(16) * (tags / 16) + (tags % 16 == 0 ? .zero : round(tags % 16))
        return min(oneSlotEach, rounds)
    }

    /// The least air time in which NXP's (Fast) Inventory Read can find `tags` ICODE tags with `blocks` 4-byte
    /// blocks each: as `inventory`, with the request's 8 bytes (flags, code, 0x04, mask length, first block,
    /// count, CRC) and each answer's 1 + 8 UID + 4·blocks + 2 CRC bytes, at twice the rate when `fast`.
    public static func inventoryRead(tags: Int, blocks: Int, flags: RequestFlags, fast: Bool, slotMarkers: Bool = true)
        -> AirTime
    {
        let request = AirTiming.readerFrame(bytes: 8, coding: .oneOfFour)
        if tags <= 0 { return .zero }
        let answer = 1 + 8 + 4 * blocks + 2
        let oneSlotEach = exchange(request: 8, response: answer, flags: flags, fast: fast) * tags
        guard slotMarkers, tags > 1 else { return oneSlotEach }
        let answered = exchange(request: 8, response: answer, flags: flags, fast: fast) - request
        let empty = AirTiming.emptySlot(flags)
        func round(_ k: Int) -> AirTime { request + AirTiming.readerEOF * 15 + answered * k + empty * (16 - k) }
        let rounds = round(16) * (tags / 16) + (tags % 16 == 0 ? .zero : round(tags % 16))
        return min(oneSlotEach, rounds)
    }

    /// Addressed reads of a range as the client makes them (the client's own planner: chunks, 1- or 2-byte
    /// block numbers, the extended commands), each frame sized by encoding it.
    public static func read(
        _ r: PlanRead, memory: TagMemory, limits: ReaderLimits, flags: RequestFlags, fast: Bool = false
    ) -> AirTime {
        let perBlock = memory.blockSize + (r.security ? 1 : 0)
        var total = AirTime.zero
        let someUID = UID(manufacturer: ManufacturerCode(0), serial: 0)  // every UID is 8 bytes on air
        for step in ISO15693Client.readSteps(
            memory, first: r.first, count: r.count, security: r.security, limits: limits, fast: fast)
        {
            var f = flags.union(.address)
            if r.security { f.insert(.option) }
            if step.protocolExtension { f.insert(.protocolExtension) }
            let request =
                ((try? Request(step.command, flags: f, addressing: .addressed(someUID)).encode().count) ?? 12) + 2
            total =
                total
                + exchange(request: request, response: 1 + step.count * perBlock + 2, flags: flags, fast: step.fast)
        }
        return total
    }
}
