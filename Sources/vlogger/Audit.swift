import ArgumentParser
import Foundation
import ISO15693
import VLoggerCore
import VLoggerStore
import VLoggerModel
import VLoggerService

struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Asset audits: what a location's readers see against the register.",
        subcommands: [AuditRun.self, AuditList.self, AuditShow.self, AuditDiff.self, AuditReportCommand.self])
}

struct AuditRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run an audit now, of one location or of every location with a reader.",
        discussion: """
            Each audit runs [audit] rounds inventory rounds, [audit] spacing apart, with the location's readers (a \
            reader's location is its `location`, else its id), and stores one result per registered asset (present, \
            missing, wrong-location) and per unregistered tag seen (unexpected), with how many rounds saw it. The \
            register is the store's (vlogger assets import), refreshed from [rules] register first. The readers \
            must be free: stop the service first when it polls the same hardware.
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: "The location to audit (default: every location with a reader).")
    var location: String?

    @Option(help: "Inventory rounds, overriding [audit] rounds.")
    var rounds: Int?

    @Option(help: "Time between rounds, overriding [audit] spacing (e.g. 500ms).")
    var spacing: String?

    @Flag(help: "Simulated time: waiting between rounds moves a virtual clock (simulator demos).")
    var fastClock = false

    @Flag(help: "Machine-readable JSON output.")
    var json = false

    func validate() throws {
        if let rounds, !(1...100).contains(rounds) { throw ValidationError("--rounds must be 1…100") }
        if let spacing {
            do { _ = try DurationText.parse(spacing) } catch { throw ValidationError("--spacing: \(error)") }
        }
    }

    func run() async throws {
        let config = try options.load()
        var settings = config.audit
        if let rounds { settings.rounds = rounds }
        if let spacing { settings.spacingMs = try DurationText.parse(spacing) }
        let store = try options.openStore()
        defer { store.close() }
        do { _ = try AssetRegister.importConfigured(config, into: store) } catch { throw VLoggerError("\(error)") }
        let locations = location.map { [$0] } ?? Array(Set(config.readers.map(Auditor.location))).sorted()
        let register: [AssetRow]
        do { register = try store.assets() } catch { throw VLoggerError("\(error)") }
        var lastSeen: [UID: (time: Millis, reader: String?, location: String?)]
        do { lastSeen = try store.lastSeen(register.map(\.uid)) } catch { throw VLoggerError("\(error)") }
        var out: [[UInt8]] = []
        for loc in locations {
            let configs = config.readers.filter { Auditor.location(of: $0) == loc }
            guard !configs.isEmpty else {
                throw VLoggerError(
                    "no reader at location '\(loc)'; readers: \(config.readers.map { "\($0.id) (\(Auditor.location(of: $0)))" }.joined(separator: ", "))"
                )
            }
            let clock: AgentClock = fastClock ? SimulatedClock() : SystemClock()
            let readers = try configs.map {
                AuditParticipant(
                    AuditReader(config: $0, session: try ReaderSession.open($0)), now: clock.now, store: store)
            }
            // The command owns its readers and waits on its own clock; nothing stops it but the process's end.
            guard
                var record = await Auditor.run(
                    location: loc, readers: readers, register: register, lastSeen: lastSeen,
                    gateway: config.gatewayID, settings: settings, now: clock.now,
                    wait: { ms in
                        clock.sleep(untilMs: ms, stop: StopSignal())
                        return true
                    })
            else { throw VLoggerError("the audit of \(loc) was stopped before its last round; nothing stored") }
            do { record.id = try store.saveAudit(record) } catch { throw VLoggerError("\(error)") }
            // What this location's readers saw informs the next location's audit (an asset seen here is not
            // missing there, but at the wrong location).
            for r in record.results where r.seenRounds > 0 {
                if let t = r.lastSeen { lastSeen[r.uid] = (t, r.seenBy, r.seenLocation) }
            }
            if json {
                do { out.append(try store.auditJSON(record.id, gateway: config.gatewayID) ?? []) } catch {
                    throw VLoggerError("\(error)")
                }
            } else {
                say(AuditPrint.summary(record, config.localTime))
            }
        }
        // As GET /api/v1/audits/{id} answers, one per location.
        if json { printLine(Array("{\"items\":[".utf8) + Array(out.joined(separator: [0x2C])) + Array("]}".utf8)) }
    }
}

struct AuditList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The audits stored, newest first.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "Only the audits of this location.")
    var location: String?

    @Flag(help: "JSON (as GET /api/v1/audits answers): {\"items\":[…]}, the newest 100.")
    var json = false

    func run() throws {
        let store = try options.openStore(readOnly: true)
        defer { store.close() }
        if json {
            do {
                return printLine(
                    try store.auditsJSON(location: location, limit: 100, gateway: options.gatewayID))
            } catch { throw VLoggerError("\(error)") }
        }
        let audits: [AuditRecord]
        do { audits = try store.audits(location: location) } catch { throw VLoggerError("\(error)") }
        let time = options.localTime
        for a in audits { say(AuditPrint.summary(a, time)) }
        if audits.isEmpty { print("no audits\(location.map { " of \($0)" } ?? "")") }
    }
}

struct AuditShow: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "One audit with every result.")

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The audit's id (vlogger audit list).")
    var id: Int64

    @Flag(help: "Machine-readable JSON output.")
    var json = false

    func run() throws {
        let store = try options.openStore(readOnly: true)
        defer { store.close() }
        let a = try store.auditOrFail(id)
        if json {
            // As GET /api/v1/audits/{id} answers.
            do { return printLine(try store.auditJSON(id, gateway: options.gatewayID) ?? []) } catch {
                throw VLoggerError("\(error)")
            }
        }
        let time = options.localTime
        let assets = Dictionary(((try? store.assets()) ?? []).map { ($0.uid, $0) }, uniquingKeysWith: { a, _ in a })
        say(AuditPrint.summary(a, time))
        for r in a.results {
            var line =
                "  \(r.status.rawValue.padding(toLength: 14, withPad: " ", startingAt: 0)) \(r.uid)  \(AuditPrint.asset(r, assets))"
            switch r.status {
            case .present, .unexpected: line += "  seen in \(r.seenRounds)/\(a.rounds) rounds by \(r.seenBy ?? "-")"
            case .wrongLocation:
                line +=
                    "  registered at \(r.registeredLocation ?? "-"), seen at \(r.seenLocation ?? "-")\(r.seenBy.map { " by \($0)" } ?? "")"
            case .missing: line += r.lastSeen.map { "  last seen \(time.dateTime($0))" } ?? "  never seen"
            }
            say(line)
            for c in r.failedChecks { say("      check failed: \(c)") }
        }
    }
}

struct AuditDiff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "What changed between two audits, tag by tag (status and failed checks).")

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The earlier audit's id.")
    var first: Int64

    @Argument(help: "The later audit's id.")
    var second: Int64

    func run() throws {
        let store = try options.openStore(readOnly: true)
        defer { store.close() }
        let audits = [try store.auditOrFail(first), try store.auditOrFail(second)]
        if audits[0].location != audits[1].location {
            FileHandle.standardError.write(
                Data(
                    "note: audit \(first) is of \(audits[0].location), audit \(second) of \(audits[1].location)\n".utf8)
            )
        }
        let time = options.localTime
        print(AuditPrint.summary(audits[0], time))
        print(AuditPrint.summary(audits[1], time))
        let changes = AuditChange.between(audits[0], audits[1])
        for c in changes {
            say(
                "  \(c.uid)  \(c.assetID ?? "-")  \(c.before?.rawValue ?? "(not in \(first))") -> \(c.after?.rawValue ?? "(not in \(second))")"
                    + (c.checksBefore == c.checksAfter
                        ? ""
                        : "  checks: \(c.checksBefore.isEmpty ? "none" : c.checksBefore.joined(separator: "; ")) -> \(c.checksAfter.isEmpty ? "none" : c.checksAfter.joined(separator: "; "))")
            )
        }
        print("\(changes.count) change\(changes.count == 1 ? "" : "s")")
    }
}

struct AuditReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Write one audit as a self-contained HTML page to read and print.")

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The audit's id (vlogger audit list).")
    var id: Int64

    @Option(help: "The HTML file to write.")
    var html: String

    func run() throws {
        let store = try options.openStore(readOnly: true)
        defer { store.close() }
        let a = try store.auditOrFail(id)
        let history: [AuditRecord]
        let assets: [AssetRow]
        do {
            history = try store.audits(location: a.location, limit: 30)
            assets = try store.assets()
        } catch { throw VLoggerError("\(error)") }
        // The names, the time zone and the schedules of the configuration; its templates when it names a folder.
        let config = try options.load()
        let rules: RuleSet
        do { rules = try RuleSet.load(rulesFile: config.rulesFile, registerFile: config.registerFile).0 } catch {
            throw VLoggerError("\(error)")
        }
        let page = Pages.auditReport(
            a, history: history, assets: assets, context: PageContext(config: config, rules: rules), links: false,
            templates: try PageTemplates(folder: config.templatesFolder))
        do {
            try Data(page.utf8).write(to: URL(fileURLWithPath: html), options: .atomic)
        } catch {
            throw VLoggerError("cannot write \(html): \(error.localizedDescription)")
        }
        print("audit \(id) of \(a.location) written to \(html)")
    }
}

extension Store {
    /// An audit by id, or the command's error.
    func auditOrFail(_ id: Int64) throws -> AuditRecord {
        let found: AuditRecord?
        do { found = try audit(id) } catch { throw VLoggerError("\(error)") }
        guard let a = found else { throw VLoggerError("no audit \(id) in the store (vlogger audit list)") }
        return a
    }
}

enum AuditPrint {
    /// One line per audit, its start in local time with the offset.
    static func summary(_ a: AuditRecord, _ time: LocalTime) -> String {
        "audit \(a.id)  \(time.dateTime(a.started))  \(a.location)  \(a.summary)"
    }

    /// The register's name of an asset (`PAL-0099 Pallet 99`), else its id as stored with the result.
    static func asset(_ r: AuditResult, _ assets: [UID: AssetRow]) -> String {
        assets[r.uid]?.label(separator: " ") ?? r.assetID ?? "-"
    }
}
