import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import VLoggerCore
import VLoggerModel
import VLoggerStore

/// Runs the configured audit schedules: at start, once for a schedule that missed its time while the service
/// was down (not once per missed slot); then at each fire time. Each round borrows the location's readers
/// from their polling jobs between two cycles, so regular polling pauses only for the audit's own rounds.
struct AuditJob: Service {
    let store: Store
    /// The run's time (the wall clock, or `--clock-rate`'s scaled one).
    let clock: any AgentClock & Sendable
    /// Every reader's polling job: the audited location's readers are borrowed from theirs, and what every job saw
    /// lately and the store has not committed yet counts for where an asset was last seen.
    let jobs: [PollingJob]
    let gatewayID: String
    /// The audit settings and schedules in force, and how often a reload replaced them.
    let audits: NIOLockedValueBox<(settings: AuditSettings, version: Int)>
    let logger: Logger

    /// The next fire time of each schedule after `ms`, worked out on a blocking thread (a schedule with
    /// windows may look through years of calendar days): never on the cooperative pool.
    static func plan(_ schedules: [AuditSchedule], afterMs ms: Millis) async -> [(AuditSchedule, Millis)] {
        await Blocking.run { schedules.compactMap { s in s.next(afterMs: ms).map { (s, $0) } } }
    }

    func run() async {
        var (settings, version) = audits.withLockedValue { $0 }
        for s in settings.schedules {
            let last = await Blocking.run { try? store.lastAuditStart(trigger: s.trigger) }
            let missed = await Blocking.run { s.missed(lastRun: last, now: clock.now()) }
            if missed {
                logger.notice(
                    "audit schedule '\(s.name)' (\(s)) missed its time while the service was down: running it once now")
                await runAudit(s, settings)
            }
        }
        var announce = true
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let due = await Self.plan(settings.schedules, afterMs: clock.now())
            if announce {
                for s in settings.schedules {
                    let next = due.first { $0.0.name == s.name }.map { TimeSpec.format($0.1) } ?? "never"
                    logger.info("audit schedule '\(s.name)' (\(s)): next \(next)")
                }
                announce = false
            }
            // Nothing to schedule (none configured, or none that fires): wait for a reload or the shutdown. A
            // service that returns would end the whole group.
            let soonest = due.map(\.1).min()
            switch await wait(untilMs: soonest, version: version) {
            case .shutdown:
                return
            case .reloaded:
                (settings, version) = audits.withLockedValue { $0 }
                announce = true
            case .reached:
                let t = clock.now()
                for (s, at) in due where at <= t { await runAudit(s, settings) }
            }
        }
    }

    enum Wake { case reached, reloaded, shutdown }

    /// Waits until the run's clock reaches `ms` (for ever when nil), the schedules are reloaded, or the
    /// shutdown begins. A reload is noticed within a second.
    func wait(untilMs ms: Millis?, version: Int) async -> Wake {
        while ms.map({ clock.now() < $0 }) ?? true {
            if audits.withLockedValue({ $0.version }) != version { return .reloaded }
            let real = ms.map { min(1000, clock.realMs(until: $0)) } ?? 1000
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(max(1, real))) } } catch
            { return .shutdown }
            if Task.isShuttingDownGracefully || Task.isCancelled { return .shutdown }
        }
        return .reached
    }

    /// Waits until the run's clock reaches `ms`; false when the shutdown began first.
    func wait(untilMs ms: Millis) async -> Bool {
        while clock.now() < ms {
            let real = clock.realMs(until: ms)
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(max(1, real))) } } catch
            { return false }
        }
        return true
    }

    func runAudit(_ schedule: AuditSchedule, _ settings: AuditSettings) async {
        let locations =
            schedule.location.map { [$0] }
            ?? Array(Set(jobs.map { Auditor.location(of: $0.agent.readerConfig) })).sorted()
        // Each location has its own readers: their audits run side by side, at the schedule's time.
        await withTaskGroup(of: Void.self) { group in
            for location in locations { group.addTask { await audit(location, for: schedule, settings) } }
        }
    }

    /// One location's audit through the one orchestration (`Auditor.run`), its readers borrowed from their polling
    /// jobs between two cycles.
    func audit(_ location: String, for schedule: AuditSchedule, _ settings: AuditSettings) async {
        let (store, clock) = (self.store, self.clock)
        let here = jobs.filter { Auditor.location(of: $0.agent.readerConfig) == location }
        guard !here.isEmpty else { return }
        guard let register = await Blocking.run({ try? store.assets() }) else {
            logger.error("audit '\(schedule.name)' of \(location): the register cannot be read")
            return
        }
        var lastSeen = await Blocking.run { (try? store.lastSeen(register.map(\.uid))) ?? [:] }
        // What the polling jobs saw and the store writer has not committed yet counts too.
        for other in jobs {
            let rc = other.agent.readerConfig
            for (uid, t) in other.recentSightings where t > (lastSeen[uid]?.time ?? Millis.min) {
                lastSeen[uid] = (t, rc.id, Auditor.location(of: rc))
            }
        }
        let readers = here.map { job in
            // Every tag answers the round's inventory: the polling job's quiet tags are woken first.
            let agent = UncheckedBox(job.agent)
            return AuditParticipant(
                id: job.agent.readerConfig.id,
                inventory: {
                    await job.exclusive { _ in ((try? agent.value.inventoryEveryTag())?.map(\.uid) ?? [], clock.now()) }
                },
                check: { assets in
                    await job.exclusive { session in
                        assets.map { ($0.uid, Auditor.checks($0, session, store: store)) }
                    }
                })
        }
        guard
            let record = await Auditor.run(
                location: location, readers: readers, register: register, lastSeen: lastSeen, gateway: gatewayID,
                settings: settings, trigger: schedule.trigger, now: clock.now, wait: { await wait(untilMs: $0) })
        else {
            logger.warning(
                "audit '\(schedule.name)' of \(location) stopped by the shutdown before its last round; nothing stored")
            return
        }
        let id = await Blocking.run { try? store.saveAudit(record) }
        logger.notice(
            "audit \(id.map(String.init) ?? "(not stored)") '\(schedule.name)' of \(location): \(record.count(.present)) present, \(record.count(.missing)) missing, \(record.count(.wrongLocation)) wrong location, \(record.count(.unexpected)) unexpected, \(record.failedChecks) failed checks"
        )
    }
}
