import Foundation
import ISO15693
import Readers
import VLoggerStore
import VLoggerModel

/// How an audit runs: several inventory rounds, so that a tag missed once is not reported missing.
public struct AuditSettings: Sendable, Equatable {
    public var rounds = 3
    public var spacingMs: Millis = 1000
    /// A registered asset not seen here, but seen by another location's reader within this long before the
    /// audit, is at the wrong location rather than missing.
    public var elsewhereWindowMs: Millis = 600_000
    /// When the service runs audits by itself.
    public var schedules: [AuditSchedule] = []
    public init() {}
}

/// `[[audit.schedule]]`: when the service audits a location (or every location with a reader).
public struct AuditSchedule: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    /// The schedule fires at the earliest of these (a `cron`, or the boundaries of `shifts`).
    public var fires: [CronSchedule]
    /// When not empty, only firings inside one of these windows count (`during`).
    public var during: [ShiftWindow]
    public var location: String?
    /// How the configuration said it, for the log.
    public var summary: String

    public init(name: String, cron: CronSchedule, during: [ShiftWindow] = [], location: String? = nil) {
        self.init(
            name: name, fires: [cron], during: during, location: location,
            summary: cron.description
                + (during.isEmpty ? "" : " during " + during.map(\.description).joined(separator: ", ")))
    }

    public init(
        name: String, fires: [CronSchedule], during: [ShiftWindow] = [], location: String? = nil, summary: String
    ) {
        self.name = name
        self.fires = fires
        self.during = during
        self.location = location
        self.summary = summary
    }

    /// Shift changes: fires at the start, the end or both of each shift window.
    public static func shifts(
        name: String, _ windows: [ShiftWindow], atStart: Bool, atEnd: Bool, location: String? = nil
    ) -> AuditSchedule {
        let at = atStart && atEnd ? "start and end" : atStart ? "start" : "end"
        return AuditSchedule(
            name: name, fires: windows.flatMap { $0.boundaries(start: atStart, end: atEnd) }, location: location,
            summary: "at the \(at) of shifts " + windows.map(\.description).joined(separator: ", ")
                + " (\(windows.first?.timeZone.identifier ?? "UTC"))")
    }

    public var description: String { summary }

    /// The trigger stored with its audits.
    public var trigger: String { "schedule:\(name)" }

    /// The first time after `date` this schedule fires (inside its windows when it has them), or nil if none
    /// within the cron schedules' horizon (8 years of calendar time, however often the cron fires).
    public func next(after date: Date) -> Date? {
        var best: Date?
        let zonesMatch = during.allSatisfy { w in fires.allSatisfy { $0.timeZone == w.timeZone } }
        for cron in fires {
            let local: ((Int, Int) -> Bool)? =
                during.isEmpty || !zonesMatch
                ? nil : { wd, minute in during.contains { $0.contains(weekday: wd, minute: minute) } }
            let accept: ((Date) -> Bool)? =
                during.isEmpty
                ? nil
                : { t in
                    if let best, t >= best { return true }  // no better firing: stop here
                    return during.contains { $0.contains(t) }
                }
            guard let n = cron.next(after: date, localFilter: local, accept: accept) else { continue }
            if best.map({ n < $0 }) ?? true { best = n }
        }
        return best
    }

    /// Why this schedule never fires, or nil when it does (within the horizon after `date`).
    public func neverFires(after date: Date) -> String? {
        guard next(after: date) == nil else { return nil }
        if !during.isEmpty && fires.contains(where: { $0.next(after: date) != nil }) {
            return
                "its times (\(fires.map(\.text).joined(separator: ", "))) never fall inside its during windows (\(during.map(\.description).joined(separator: ", ")) on days \(during.first.map { $0.days.sorted().map(String.init).joined(separator: ",") } ?? ""))"
        }
        return
            "\(fires.map(\.text).joined(separator: ", ")) names no date that exists within 8 years (e.g. 30 February)"
    }

    /// `next(after:)` in the store's milliseconds since 1970.
    public func next(afterMs ms: Millis) -> Millis? {
        next(after: Date(timeIntervalSince1970: Double(ms) / 1000)).map {
            Millis(($0.timeIntervalSince1970 * 1000).rounded())
        }
    }

    /// Whether a run was missed: the last fire time before `now` is after the last run (a schedule never run
    /// has missed nothing). One catch-up however many slots went by.
    public func missed(lastRun: Millis?, now: Millis) -> Bool {
        guard let lastRun, let next = next(afterMs: lastRun) else { return false }
        return next <= now
    }
}

/// One reader taking part in an audit.
public struct AuditReader {
    public let config: ReaderConfig
    public let session: ReaderSession
    public init(config: ReaderConfig, session: ReaderSession) {
        self.config = config
        self.session = session
    }
}

/// One reader taking part in an audit, as the orchestration (`Auditor.run`) uses it: an inventory round in which
/// every tag answers (what was found, and when), and the register's checks of assets it saw. Each runs where the
/// reader may be used: a command owns its readers and uses them at once; the service borrows a polling job's
/// reader between two of its cycles.
public struct AuditParticipant {
    public let id: String
    public let inventory: () async -> (found: [UID], at: Millis)
    public let check: ([AssetRow]) async -> [(UID, [String])]

    public init(
        id: String, inventory: @escaping () async -> (found: [UID], at: Millis),
        check: @escaping ([AssetRow]) async -> [(UID, [String])]
    ) {
        self.id = id
        self.inventory = inventory
        self.check = check
    }

    /// A reader the caller owns (a command): used at once, on the calling thread. `store`: where sensor logs are
    /// collected (the `sensor_log` check).
    public init(_ reader: AuditReader, now: @escaping () -> Millis, store: Store? = nil) {
        let session = reader.session
        self.init(
            id: reader.config.id,
            inventory: { ((try? session.client.inventory())?.map(\.uid) ?? [], now()) },
            check: { assets in assets.map { ($0.uid, Auditor.checks($0, session, store: store)) } })
    }
}

/// Compares what a location's readers see with the asset register for that location. Every asset
/// registered there gets one result: present, missing, or wrong location (seen by another location's
/// reader); every tag seen here that is registered elsewhere is wrong-location too, and every unregistered
/// tag seen is unexpected. Present assets are checked against the register's expected columns:
/// `model`, `manufacturer`, `block_0xNN` (the block starts with these hex bytes), `locked_0xNN` (yes: the
/// block must be locked), `originality` (genuine: the originality signature must verify) and `sensor_log`
/// (complete: the store holds every record of the tag's current logging session).
public enum Auditor {
    /// The location a reader stands for in audits: its `location`, else its id.
    public static func location(of r: ReaderConfig) -> String { r.location ?? r.id }

    /// Where and how often each tag answered during an audit's rounds.
    public struct Sighting: Sendable {
        public var rounds = 0
        public var first: Millis
        public var last: Millis
        public var reader: String
    }

    /// Adds one reader's answers of one round to `seen`.
    public static func merge(
        _ found: [UID], at t: Millis, by reader: String, round: inout Set<UID>, into seen: inout [UID: Sighting]
    ) {
        for uid in found where round.insert(uid).inserted {
            if var s = seen[uid] {
                s.rounds += 1
                s.last = t
                s.reader = reader
                seen[uid] = s
            } else {
                seen[uid] = Sighting(rounds: 1, first: t, last: t, reader: reader)
            }
        }
    }

    /// The one audit orchestration, for the command and the service's scheduler: `settings.rounds` inventory rounds
    /// with every reader, `spacingMs` apart on the run's time (`wait` returns false when the audit must stop: it is
    /// then abandoned and nil returned, nothing half-done is stored), then the register's checks of each present
    /// asset by the reader that saw it last, then the record.
    public static func run(
        location: String, readers: [AuditParticipant], register: [AssetRow],
        lastSeen: [UID: (time: Millis, reader: String?, location: String?)], gateway: String,
        settings: AuditSettings, trigger: String = "manual", now: () -> Millis,
        wait: (_ untilMs: Millis) async -> Bool
    ) async -> AuditRecord? {
        let started = now()
        var seen: [UID: Sighting] = [:]
        for round in 0..<max(1, settings.rounds) {
            if round > 0, await !wait(started + Millis(round) * settings.spacingMs) { return nil }
            var counted = Set<UID>()
            for r in readers {
                let (found, t) = await r.inventory()
                merge(found, at: t, by: r.id, round: &counted, into: &seen)
            }
        }
        var checks: [UID: [String]] = [:]
        for r in readers {
            let mine = register.filter { $0.location == location && seen[$0.uid]?.reader == r.id }
            guard !mine.isEmpty else { continue }
            for (uid, c) in await r.check(mine) { checks[uid] = c }
        }
        return result(
            location: location, readers: readers.map(\.id), register: register, seen: seen, checks: checks,
            lastSeen: lastSeen, started: started, finished: now(), gateway: gateway, settings: settings,
            trigger: trigger)
    }

    /// The audit from what the rounds saw and the checks made on the present assets.
    public static func result(
        location: String, readers: [String], register: [AssetRow], seen: [UID: Sighting], checks: [UID: [String]],
        lastSeen: [UID: (time: Millis, reader: String?, location: String?)], started: Millis, finished: Millis,
        gateway: String, settings: AuditSettings, trigger: String
    ) -> AuditRecord {
        let here = register.filter { $0.location == location }
        let byUID = Dictionary(register.map { ($0.uid, $0) }, uniquingKeysWith: { a, _ in a })
        var results: [AuditResult] = []
        for asset in here {
            if let s = seen[asset.uid] {
                results.append(
                    AuditResult(
                        uid: asset.uid, assetID: asset.assetID, status: .present, registeredLocation: location,
                        seenLocation: location, seenBy: s.reader, seenRounds: s.rounds, firstSeen: s.first,
                        lastSeen: s.last, failedChecks: checks[asset.uid] ?? []))
            } else if let l = lastSeen[asset.uid], let elsewhere = l.location, elsewhere != location,
                started - l.time <= settings.elsewhereWindowMs
            {
                results.append(
                    AuditResult(
                        uid: asset.uid, assetID: asset.assetID, status: .wrongLocation, registeredLocation: location,
                        seenLocation: elsewhere, seenBy: l.reader, seenRounds: 0, firstSeen: nil, lastSeen: l.time))
            } else {
                results.append(
                    AuditResult(
                        uid: asset.uid, assetID: asset.assetID, status: .missing, registeredLocation: location,
                        seenLocation: nil, seenBy: nil, seenRounds: 0, firstSeen: nil,
                        lastSeen: lastSeen[asset.uid]?.time))
            }
        }
        for (uid, s) in seen.sorted(by: { $0.key.description < $1.key.description })
        where byUID[uid]?.location != location {
            let registered = byUID[uid]
            results.append(
                AuditResult(
                    uid: uid, assetID: registered?.assetID, status: registered == nil ? .unexpected : .wrongLocation,
                    registeredLocation: registered?.location, seenLocation: location, seenBy: s.reader,
                    seenRounds: s.rounds, firstSeen: s.first, lastSeen: s.last))
        }
        return AuditRecord(
            started: started, finished: finished, gateway: gateway, location: location, readers: readers,
            rounds: max(1, settings.rounds), trigger: trigger, results: results)
    }

    /// The register's expected values that a present asset does not meet.
    public static func checks(_ asset: AssetRow, _ session: ReaderSession, store: Store? = nil) -> [String] {
        var failed: [String] = []
        let client = session.client
        for (key, expected) in asset.extra.sorted(by: { $0.key < $1.key }) {
            switch key {
            case "model":
                let model = (try? client.memory(of: asset.uid))?.model
                if model.map({
                    $0.name.lowercased().contains(expected.lowercased())
                        || $0.rawValue.lowercased() == expected.lowercased()
                }) != true {
                    failed.append("model: \(model?.name ?? "unknown"), registered \(expected)")
                }
            case "originality":
                // "genuine": the originality signature must verify (docs/reference/originality-signatures.md).
                let model = (try? client.memory(of: asset.uid))?.model
                do {
                    let verdict = try OriginalityCheck.check(client, asset.uid, model: model)
                    if !verdict.isGenuine { failed.append("originality: \(verdict), registered \(expected)") }
                } catch {
                    failed.append("originality: not read (\(error))")
                }
            case "sensor_log":
                // "complete": every record of the tag's logging session is in the store (collected by a plan with
                // sensor-log = true); the tag's own count is asked over the air, no password, nothing written.
                if let why = sensorLogProblem(asset.uid, client, store: store) {
                    failed.append("sensor_log: \(why), registered \(expected)")
                }
            case "manufacturer":
                if ManufacturerCode.lookup(expected) != asset.uid.manufacturer {
                    failed.append("manufacturer: \(asset.uid.manufacturer), registered \(expected)")
                }
            case _ where key.hasPrefix("block_"):
                guard let block = try? BlockNumber(parsing: String(key.dropFirst(6))),
                    let want = try? Hex.parse(expected)
                else {
                    failed.append("\(key): not a block and hex bytes (e.g. block_0xF8 = 6608C2)")
                    continue
                }
                do {
                    let size = try client.memory(of: asset.uid).blockSize
                    let got = Array(
                        try client.readBlocks(asset.uid, first: block, count: max(1, (want.count + size - 1) / size))
                            .map(\.data).joined())
                    if Array(got.prefix(want.count)) != want {
                        failed.append("block \(block): \(Hex.format(got)), registered \(Hex.format(want))")
                    }
                } catch {
                    failed.append("block \(block): not read (\(error))")
                }
            case _ where key.hasPrefix("locked_"):
                guard let block = try? BlockNumber(parsing: String(key.dropFirst(7))) else {
                    failed.append("\(key): not a block (e.g. locked_0x00 = yes)")
                    continue
                }
                let must = ["yes", "true", "locked", "1"].contains(expected.lowercased())
                do {
                    let locked =
                        try client.readBlocks(asset.uid, first: block, count: 1, security: true).first?.security?
                        .isLocked ?? false
                    if locked != must {
                        failed.append(
                            "block \(block) \(locked ? "locked" : "not locked"), registered \(must ? "locked" : "unlocked")"
                        )
                    }
                } catch {
                    failed.append("block \(block): lock status not read (\(error))")
                }
            default:
                continue  // other columns are for people (and for the equals rule)
            }
        }
        return failed
    }

    /// Why a sensor tag's log is not read completely into `store`, or nil when it is.
    static func sensorLogProblem(_ uid: UID, _ client: ISO15693Client, store: Store?) -> String? {
        guard let kind = SensorKinds.kind(for: uid) else { return "not a sensor tag vlogger knows" }
        guard kind.readsLog else { return "vlogger does not read the log of the \(kind.name)" }
        guard let store else { return "no store to compare with" }
        let info: SensorInfo
        do { info = try kind.info(client, uid, measure: false, wait: { _ in }) } catch {
            return "the tag's state not read (\(error))"
        }
        guard let session = info.session, let total = info.recordCount else {
            return "the tag does not say its logging session"
        }
        let have: Int
        do { have = try store.sensorRecords(uid: uid, session: session) } catch { return "the store: \(error)" }
        return have >= total ? nil : "\(have) of \(total) records of session \(session) in the store"
    }
}
