import ISO15693
import Readers
import VLoggerModel
import VLoggerStore

/// Collects sensor tags' own logs into the store, incrementally: each record becomes a reading whose time is the
/// record's time on the tag (the gateway's read time kept beside it as `read_at`), whose block is the record's place
/// in the chip's memory and whose data are the record's bytes as the tag stores them. The store remembers per tag
/// and logging session how many records it holds (`sensor_sessions`, committed with the readings), so a tag seen
/// at ten docks is read from where the last one stopped, every record is stored once, and a tag whose logging
/// restarted begins a new session at its first record.
public struct SensorLogCollector {
    public let store: Store
    public let writer: StoreWriter
    public let gateway: String

    /// The fields a log record's reading carries beside its values: its number in the log, and when the gateway
    /// read it (ISO 8601 UTC).
    public static let fields = ["log_record", "read_at"]

    public init(store: Store, writer: StoreWriter, gateway: String) {
        self.store = store
        self.writer = writer
        self.gateway = gateway
    }

    /// What one visit collected.
    public struct Outcome: Equatable, Sendable {
        public var kind: String
        public var session: String?
        /// Records stored in this visit.
        public var stored = 0
        /// Records of the session stored in all, after this visit, and in the tag's log.
        public var have = 0
        public var total = 0
        /// The tag's logging interval (nil: it does not say): no new record comes sooner.
        public var intervalSeconds: Int?
        public var complete: Bool { have >= total }
    }

    /// Reads up to `maxPieces` pieces of the tag's log after what the store has of its session and commits each
    /// piece with the session's progress (a tag that leaves mid-read loses nothing already committed). `rules`: the
    /// rules that apply to the tag; those that watch a field judge every record (`LogJudge`), their events
    /// committed with the records; `onEvent` sees them after the commit.
    public func collect(
        _ client: ISO15693Client, _ uid: UID, kind: any SensorKind, reader: String?, location: String?,
        now: () -> Millis, maxPieces: Int = .max, rules: [Rule] = [], register: AssetRegister? = nil,
        onEvent: (Event) -> Void = { _ in }
    ) throws -> Outcome {
        let info = try kind.info(client, uid, measure: false, wait: { _ in })
        var outcome = Outcome(kind: kind.id, session: info.session, total: info.recordCount ?? 0)
        outcome.intervalSeconds = info.intervalSeconds
        guard let session = info.session else { return outcome }
        var have = try store.sensorRecords(uid: uid, session: session)
        outcome.have = have
        guard have < outcome.total else { return outcome }
        var judge = LogJudge(
            uid: uid, rules: rules, register: register,
            base: Event(
                time: 0, gateway: gateway, reader: reader, location: location, uid: uid, kind: .violation, name: "",
                severity: .info, detail: ""),
            state: judgeState(rules, uid: uid, session: session))
        var pieces = 0
        var failure: (any Error)?
        var commitFailed = false
        do {
            try kind.log(client, uid, info: info, from: have) { records in
                guard !records.isEmpty else { return false }
                let t = now()
                var batch = Batch()
                for r in records {
                    var decoded = r.values.map { (name: $0.name, value: FieldValue.number($0.value)) }
                    decoded.append((name: "log_record", value: .integer(Int64(r.index))))
                    decoded.append((name: "read_at", value: .text(TimeSpec.format(t))))
                    batch.readings.append(
                        Reading(
                            time: r.time ?? t, gateway: gateway, reader: reader, location: location, uid: uid,
                            first: BlockNumber(exactly: r.block) ?? 0, count: 1, data: r.raw, decoded: decoded))
                }
                // The progress and the open excursions move only with a commit that took them: a piece whose commit
                // fails is read again, judged again.
                var next = judge
                if next.isActive { batch.events = next.judge(records, readAt: t) }
                let nextHave = max(have, (records.last?.index ?? have) + 1)
                batch.sensorProgress = [
                    SensorProgress(
                        uid: uid, session: session, kind: kind.id, records: nextHave, time: t,
                        excursions: next.isActive ? next.state : nil)
                ]
                do { try writer.commit(batch) } catch {
                    commitFailed = true
                    throw error
                }
                judge = next
                have = nextHave
                batch.events.forEach(onEvent)
                outcome.stored += records.count
                outcome.have = have
                pieces += 1
                return pieces < maxPieces
            }
        } catch { failure = error }
        // The visit ends (read to the end, its pieces spent, or the tag gone): excursions still open are reported.
        // (Not after a failed commit: the store is not taking rows now; the next visit reports.)
        let open = judge.isActive && !commitFailed ? judge.endOfVisit() : []
        if !open.isEmpty {
            var batch = Batch()
            batch.events = open
            batch.sensorProgress = [
                SensorProgress(
                    uid: uid, session: session, kind: kind.id, records: have, time: now(), excursions: judge.state)
            ]
            try writer.commit(batch)
            open.forEach(onEvent)
        }
        if let failure { throw failure }
        return outcome
    }

    /// The session's open excursions as committed ("{}" without rules: nothing is read).
    private func judgeState(_ rules: [Rule], uid: UID, session: String) -> String {
        guard rules.contains(where: { $0.check.watchedField != nil }) else { return "{}" }
        return (try? store.sensorExcursions(uid: uid, session: session)) ?? "{}"
    }
}
