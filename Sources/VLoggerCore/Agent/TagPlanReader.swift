import Foundation
import ISO15693
import Readers
import Type5NDEF
import VLoggerModel

/// One reader's tag reading: each tag's plan (its reads, the blocks its fields and rules need, merged; worked out
/// once per UID), the reads in as few exchanges as the chip allows, the decoded fields, the NDEF message (its
/// decode kept while the bytes do not change), and the air time's lower bound for the same reads (`PollCost`).
final class TagPlanReader {
    private let session: ReaderSession
    private let log: AgentLog
    /// The rules: what they need read, and the originality verdicts for the tag rows.
    private let rules: RuleEvaluation
    var config: AgentConfig
    private var client: ISO15693Client { session.client }
    /// What each tag needs read, worked out once per UID (plan, rules and layout do not change in a run).
    private var work: [UID: TagWork] = [:]
    /// The NDEF problem each tag has now (not formatted, malformed), so it is reported once.
    private var ndefProblems: [UID: String] = [:]
    /// Each NDEF tag's last message bytes and the fields they decoded to.
    private var ndefDecoded: [UID: (bytes: [UInt8], decoded: [(name: String, value: FieldValue)])] = [:]

    struct TagWork {
        var plan: ReadPlan?
        var rules: [Rule]
        var ranges: [PlanRead]
        var lowerBound: AirTime
    }

    init(
        session: ReaderSession, config: AgentConfig, rules: RuleEvaluation, log: AgentLog, passwords: PasswordMemory
    ) {
        self.passwords = passwords
        self.session = session
        self.config = config
        self.rules = rules
        self.log = log
    }

    /// Plans and rules changed (a reload): every tag's work is worked out again.
    func replan(_ config: AgentConfig) {
        self.config = config
        work.removeAll()
    }

    /// When a tag in the field whose log was read to its end can next have a new record (its logging interval
    /// after the check): until then a cycle does not ask it again.
    private var sensorDue: [UID: Millis] = [:]

    /// The read passwords given, refused or rejected (shared with the agent's privacy unlocking).
    let passwords: PasswordMemory

    /// A tag left the field.
    func forget(_ uid: UID) {
        ndefDecoded[uid] = nil
        sensorDue[uid] = nil
        valuesDue[uid] = nil
        passwords.left(uid)
    }

    /// Whether the tag has reads (it is then kept quiet).
    func hasReads(_ uid: UID) -> Bool { work[uid]?.ranges.isEmpty == false }

    /// What reading one tag's plan gave.
    struct Outcome {
        /// The readings of the whole plan (none when a read failed after its attempts: a partial plan is not a
        /// reading).
        var readings: [Reading] = []
        /// The lower bound of the air time for the same reads.
        var bound = AirTime.zero
        /// Whether the tag answered at all.
        var answered = true
        /// What the reads showed, for the rules; nil when the plan did not complete.
        var facts: TagFacts?
        var memory: TagMemory?
        /// The rules that apply to the tag.
        var rules: [Rule] = []
    }

    /// Reads one tag's plan: all of it, or (after the retries) none of it and an error event. With `presence` (a
    /// quiet tag's reads are its presence check) a tag that never answers is not an error: it is not seen this
    /// cycle. `prefetched`: blocks that came with the tag's Inventory Read answer; a range without lock status that
    /// they cover is taken from them instead of being read (its air time is then not in the bound either). The tag
    /// row (when it answers) goes to the store writer here; the readings are the caller's to store.
    func read(_ uid: UID, now: Millis, presence: Bool, prefetched: [BlockRead]? = nil) -> Outcome {
        let memory: TagMemory
        do { memory = try client.memory(of: uid) } catch {
            log.error(uid: uid, kind: "system-information", error)
            return Outcome()
        }
        var answered = false
        func seenNow() {
            guard !answered else { return }
            answered = true
            log.writer.add(
                TagRecord(
                    uid: uid, seen: now, manufacturer: uid.manufacturer.description, model: memory.model?.name,
                    blockCount: memory.blockCount, blockSize: memory.blockSize, memorySource: memory.source.rawValue,
                    reader: log.readerConfig.id, location: log.readerConfig.location,
                    originality: rules.verdict(uid)?.description))
        }
        if !presence { seenNow() }
        let w = work[uid] ?? plan(uid, memory)
        work[uid] = w
        var (plan, bound) = (w.plan, w.lowerBound)
        func cached(_ range: PlanRead) -> [BlockRead]? {
            guard !range.security, let got = prefetched, memory.blockSize == 4 else { return nil }
            let blocks = got.filter {
                range.first.int <= $0.number.int && $0.number.int < range.first.int + range.count
            }
            return blocks.count == range.count ? blocks : nil
        }
        var facts = TagFacts(uid: uid, model: memory.model, blockSize: memory.blockSize)
        var readings: [Reading] = []
        // The read password is given at most once per call on an NXP chip (it opens every read-protected page until
        // power-off), once per range on an ST25DV.
        var unlockTried = false
        for range in w.ranges {
            // An ST25DV has one RF session at a time: each range may need its own area's password.
            if uid.manufacturer == .stMicroelectronics { unlockTried = false }
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
                            time: now, gateway: config.gatewayID, reader: log.readerConfig.id,
                            location: log.readerConfig.location, uid: uid, first: range.first, count: range.count,
                            data: data, security: security, decoded: decoded))
                    break
                } catch {
                    if !unlockTried, Self.mayBeGuarded(uid, error) {
                        // A page or an area a password guards?
                        unlockTried = true
                        seenNow()
                        switch unlockForRead(uid, range) {
                        case .retry: continue
                        case .stop: return Outcome(bound: bound, answered: answered, rules: w.rules)
                        case .notProtected: break
                        }
                    }
                    attempt += 1
                    if attempt < config.readAttempts, error.isTransient { continue }
                    // A quiet tag that never answered has left (or lost power and returned to Ready): not seen.
                    if !answered, case .reader(.timeout, _) = error {
                        return Outcome(bound: bound, answered: false, rules: w.rules)
                    }
                    seenNow()
                    // Nothing of this tag's cycle is stored: a partial plan is not a reading.
                    log.error(
                        uid: uid, kind: "read", error,
                        detail:
                            "blocks \(range.first)+\(range.count) after \(attempt) attempt\(attempt == 1 ? "" : "s"); no reading stored for this cycle"
                    )
                    return Outcome(bound: bound, answered: answered, rules: w.rules)
                }
            }
        }
        if plan?.ndef == true {
            switch readNDEF(uid, memory: memory, now: now, facts: &facts) {
            case let .reading(r):
                // One reading per tag and cycle: the NDEF fields go with the plan's own reading of block 0 when it
                // holds the whole message (they are decoded from those blocks), else into a reading of their own.
                if let i = readings.firstIndex(where: { $0.first.int == 0 && $0.data.count >= r.data.count }) {
                    readings[i].decoded += r.decoded.filter { f in !readings[i].decoded.contains { $0.name == f.name } }
                } else {
                    readings.append(r)
                }
            case .noNDEF: break
            case .failed: return Outcome(bound: bound, answered: answered, rules: w.rules)
            }
        }
        seenNow()
        if let plan, plan.sensorLog, now >= sensorDue[uid] ?? now, let kind = SensorKinds.kind(for: uid),
            kind.readsLog
        {
            // The tag's own log, from where the store's copy of its session ends: each piece committed with the
            // session's progress, so a tag that leaves mid-read is read on from there next time.
            let collector = SensorLogCollector(store: log.writer.store, writer: log.writer, gateway: config.gatewayID)
            do {
                let o = try collector.collect(
                    client, uid, kind: kind, reader: log.readerConfig.id, location: log.readerConfig.location,
                    now: { now }, maxPieces: plan.sensorLogPieces, rules: w.rules, register: rules.register,
                    onEvent: { [log] e in
                        if e.kind == .violation { log.counters.violations += 1 }
                        log.announce(e)
                    })
                sensorDue[uid] = o.complete ? o.intervalSeconds.map { now + Millis($0) * 1000 } : nil
            } catch {
                log.event(
                    .error, uid: uid, name: "sensor-log", severity: .warning,
                    detail: "\(kind.id) log: \(error); the records stored so far stay, the next visit reads on")
            }
        }
        if let plan, let every = plan.sensorValuesEveryMs, now >= valuesDue[uid] ?? now,
            let kind = SensorKinds.kind(for: uid)
        {
            valuesDue[uid] = now + every
            if let r = sensorValues(uid, kind: kind, now: now) {
                readings.append(r)
                for v in r.decoded { facts.fields[v.name] = v.value }
            }
        }
        return Outcome(readings: readings, bound: bound, answered: true, facts: facts, memory: memory, rules: w.rules)
    }

    /// When each tag's sensor values are next due (`sensor-values`).
    private var valuesDue: [UID: Millis] = [:]

    /// A sensor kind's values now (a measurement, its battery) as a reading of no blocks; nil when the kind's
    /// measurement would write to the tag (reported once) or the tag did not answer (an event).
    private func sensorValues(_ uid: UID, kind: any SensorKind, now: Millis) -> Reading? {
        guard kind.measuresWithoutWriting else {
            if valuesRefused.insert(uid).inserted {
                log.event(
                    .error, uid: uid, name: "sensor-values", severity: .warning,
                    detail:
                        "\(kind.name): a measurement writes to the tag (its sample configuration); a poll does not, so sensor-values is not taken (vlogger sensor info --measure does)"
                )
            }
            return nil
        }
        let clock = log.clock
        do {
            let info = try kind.info(client, uid, measure: true) { d in
                let ms = Millis(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
                clock.sleep(untilMs: clock.now() + ms, stop: StopSignal())
            }
            guard !info.current.isEmpty else { return nil }
            return Reading(
                time: now, gateway: config.gatewayID, reader: log.readerConfig.id, location: log.readerConfig.location,
                uid: uid, first: 0, count: 0, data: [],
                decoded: info.current.map { (name: $0.name, value: FieldValue.number($0.value)) })
        } catch {
            log.event(
                .error, uid: uid, name: "sensor-values", severity: .warning,
                detail: "\(kind.id) values: \(error); taken again at the next due visit")
            return nil
        }
    }

    /// Tags whose kind cannot be measured by a poll (reported once).
    private var valuesRefused = Set<UID>()

    /// Whether a failed read may be a page or area that a password guards: an error answer from an NXP chip; from
    /// an ST chip an error answer (0x15 "read-protected") or fewer blocks than asked (an ST25DV's Read Multiple
    /// stops at the first read-protected block).
    static func mayBeGuarded(_ uid: UID, _ error: ClientError) -> Bool {
        switch (uid.manufacturer, error) {
        case (.nxp, .tag), (.stMicroelectronics, .tag), (.stMicroelectronics, .invalid),
            (.stMicroelectronics, .malformed):
            return true
        default: return false
        }
    }

    enum ReadUnlock {
        /// The read password was accepted: read again.
        case retry
        /// The blocks need a password that cannot be given (none configured, or one rejected): reported (once a
        /// visit), and nothing of the cycle is stored.
        case stop
        /// The blocks are not protected by a password: the read failed for another reason.
        case notProtected
    }

    /// A read of NXP blocks got an error answer (of ST25DV blocks: "read-protected"): when the page or area is
    /// read-protected, the secrets file's password for it (docs/reference/tag-passwords.md) is given once, in this
    /// RF session, and the read is tried again. A rejected
    /// password resets the field and is not given again until the secrets file changes or the agent restarts.
    private func unlockForRead(_ uid: UID, _ range: PlanRead) -> ReadUnlock {
        let file = config.secretsFile
        let blocks = "blocks \(range.first)+\(range.count)"
        if passwords.isRejected(uid, .read, secretsFile: file) {
            if passwords.firstReport(uid) {
                log.event(
                    .error, uid: uid, name: "password-rejected", severity: .critical,
                    detail:
                        "\(blocks): the tag rejected its read password earlier; not given again until the secrets file changes or the service restarts; no reading stored"
                )
            }
            return .stop
        }
        let outcome: PasswordUnlock.Outcome
        do {
            outcome = try PasswordUnlock.open(
                client, uid, first: range.first, count: range.count, for: .read, secretsFile: file,
                asset: rules.register?.rows[uid.description]?["asset_id"])
        } catch { return .notProtected }
        switch outcome {
        case .open: return .notProtected
        case .unlocked: return .retry
        case .refused(let why), .forbidden(let why):
            if passwords.firstReport(uid) {
                log.event(
                    .error, uid: uid, name: "read-password", severity: .warning,
                    detail: "\(why); no reading stored while the tag is in the field (reported once a visit)")
            }
            return .stop
        case .rejected(let why), .givenRejected(let why):
            // The chip is mute until its power is reset.
            session.resetField()
            passwords.reject(uid, .read, secretsFile: file)
            _ = passwords.firstReport(uid)
            log.event(
                .error, uid: uid, name: "password-rejected", severity: .critical,
                detail:
                    "\(blocks): \(why); the field was reset; not given again until the secrets file changes or the service restarts"
            )
            return .stop
        }
    }

    enum NDEFOutcome {
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
                        time: now, gateway: config.gatewayID, reader: log.readerConfig.id,
                        location: log.readerConfig.location,
                        uid: uid, first: 0, count: state.memoryRead.count / bs,
                        data: state.memoryRead, decoded: decoded))
            } catch {
                switch error {
                case let .client(e):
                    attempt += 1
                    if attempt < config.readAttempts, e.isTransient { continue }
                    log.error(
                        uid: uid, kind: "ndef", e,
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

    /// Writes an NDEF problem event when it starts (or changes), not every cycle. A tag that is not NDEF-formatted
    /// is a fact about the tag (an NDEF plan that matches more tags than hold NDEF), not a failure: said at info
    /// severity and not counted as an error; a malformed message is a warning and an error.
    private func ndefProblem(_ uid: UID, _ name: String, _ detail: String) {
        guard ndefProblems[uid] != name else { return }
        ndefProblems[uid] = name
        let fact = name == "ndef-not-formatted"
        if !fact { log.counters.errors[name, default: 0] += 1 }
        log.event(.error, uid: uid, name: name, severity: fact ? .info : .warning, detail: detail)
    }

    /// The tag's plan, the rules that apply to it, and the block ranges they need (plan reads, the
    /// blocks its fields cover, the blocks its rules check), merged; reads past the end are dropped
    /// with one warning event.
    func plan(_ uid: UID, _ memory: TagMemory) -> TagWork {
        let plan = config.plan(for: uid, model: memory.model)
        let applicable = rules.applicable(uid: uid, model: memory.model)
        var wanted = plan?.reads ?? []
        for f in plan?.fields ?? [] {
            let r = f.blocks(blockSize: memory.blockSize)
            wanted.append(PlanRead(first: BlockNumber(exactly: r.lowerBound) ?? 0, count: r.count))
        }
        for rule in applicable { wanted += rule.neededReads }
        let ranges = PollCost.merge(wanted)
        let fits = ranges.filter { $0.first.int + $0.count <= memory.blockCount }
        if fits.count != ranges.count {
            log.event(
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
}
