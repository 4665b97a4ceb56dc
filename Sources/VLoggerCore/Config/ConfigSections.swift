import Foundation
import ISO15693
import VLoggerConfig
import VLoggerModel
import VLoggerStore

/// The configuration by concern: each section's keys, read and checked by its own function (every problem with its
/// line), and the checks across sections. `AgentConfig.parse` calls them in the order of the file's concerns.
extension AgentConfig {
    /// `[gateway]`: this gateway's id (in every row), its site, the time zone people see times in.
    static let gatewayKeys = ["id", "site", "time-zone"]

    static func readGateway(_ g: Section, _ r: ConfigReader, into c: inout AgentConfig) {
        if let id = g.string("id") {
            if !Self.isIdentifier(id) {
                r.issue(
                    g.node("id")?.line ?? g.line,
                    "gateway.id: '\(id.prefix(40))\(id.count > 40 ? "…" : "")' must be 1 to 64 letters, digits, '-', '_', '.' or ':' (it goes in every row and every export)"
                )
            } else {
                c.gatewayID = id
            }
        }
        c.site = g.string("site")
        if let site = c.site, let why = PlainText.problem(site) {
            r.issue(g.node("site")?.line ?? g.line, "gateway.site: \(why)")
        }
        if let zone = g.string("time-zone") {
            do { c.localTime = try LocalTime(identifier: zone) } catch {
                r.issue(g.node("time-zone")?.line ?? g.line, "gateway.time-zone: \(error)")
            }
        }
    }

    /// `[store]`: the store file, its batches (size or time, whichever first), the queue kept while it cannot
    /// commit, and how long rows are kept.
    static let storeKeys = ["path", "batch-size", "flush-interval", "queue-limit", "keep"]

    static func readStore(_ s: Section, _ r: ConfigReader, into c: inout AgentConfig) {
        if let p = s.string("path") {
            var isDir: ObjCBool = false
            let resolved = c.resolve(p)
            if p.isEmpty {
                r.issue(s.node("path")?.line ?? s.line, "store.path: empty; name the store file (e.g. vlogger.db)")
            } else if FileManager.default.fileExists(atPath: resolved, isDirectory: &isDir),
                isDir.boolValue
                    || (try? FileManager.default.attributesOfItem(atPath: resolved)[.type] as? FileAttributeType)
                        != .typeRegular
            {
                r.issue(
                    s.node("path")?.line ?? s.line,
                    "store.path: \(resolved) is \(isDir.boolValue ? "a folder" : "not a regular file"); name a store file"
                )
            } else {
                c.storePath = resolved
            }
        }
        c.batchSize = s.integer("batch-size", in: 1...1_000_000).map(Int.init) ?? c.batchSize
        c.flushIntervalMs = s.duration("flush-interval") ?? c.flushIntervalMs
        c.queueLimit = s.integer("queue-limit", in: 100...10_000_000).map(Int.init) ?? c.queueLimit
        if let keep = s.duration("keep") {
            if keep < 3_600_000 {
                r.issue(
                    s.node("keep")?.line ?? s.line,
                    "store.keep: '\(s.string("keep") ?? "")' is under an hour; keep at least \"1h\" (or leave it out to keep everything)"
                )
            } else {
                c.keepMs = keep
            }
        }
    }

    /// `[audit]`: rounds, their spacing, the window in which a tag seen elsewhere is at the wrong location, and the
    /// schedules the service runs by itself (`[[audit.schedule]]`).
    static let auditKeys = ["rounds", "spacing", "elsewhere-window", "schedule"]
    static let scheduleKeys = ["name", "cron", "shifts", "at", "during", "days", "time-zone", "location"]

    static func readAudit(_ s: Section, _ r: ConfigReader, into c: inout AgentConfig) {
        c.audit.rounds = s.integer("rounds", in: 1...100).map(Int.init) ?? c.audit.rounds
        c.audit.spacingMs = s.duration("spacing") ?? c.audit.spacingMs
        c.audit.elsewhereWindowMs = s.duration("elsewhere-window") ?? c.audit.elsewhereWindowMs
        for t in s.tables("schedule", keys: scheduleKeys) {
            guard let schedule = readSchedule(t, r) else { continue }
            let name = schedule.name
            if c.audit.schedules.contains(where: { $0.name == name }) {
                r.issue(t.line, "\(t.name): schedule '\(name)' is defined twice")
            }
            if let why = schedule.neverFires(after: Date()) {
                r.issue(
                    t.node("cron")?.line ?? t.node("shifts")?.line ?? t.line,
                    "\(t.name): schedule '\(name)' never fires: \(why)")
                continue
            }
            c.audit.schedules.append(schedule)
        }
    }

    /// One `[[audit.schedule]]`: a name and either cron (with `during` windows) or shifts (with `at`).
    static func readSchedule(_ t: Section, _ r: ConfigReader) -> AuditSchedule? {
        guard let name = t.require("name", t.string) else { return nil }
        if name.trimmingCharacters(in: .whitespaces).isEmpty {
            r.issue(
                t.node("name")?.line ?? t.line,
                "\(t.name).name: empty; name the schedule (its audits are stored as schedule:NAME)")
            return nil
        }
        let zone = t.string("time-zone") ?? "UTC", days = t.string("days") ?? "*"
        let cron = t.string("cron"), shifts = t.strings("shifts")
        guard (cron == nil) != (shifts == nil) else {
            r.issue(
                t.line,
                "\(t.name): give either cron (\"0 2 * * *\") or shifts ([\"06:00-14:00\", \"14:00-22:00\"]), not \(cron == nil ? "neither" : "both")"
            )
            return nil
        }
        let windows = { (key: String, texts: [String]) -> [ShiftWindow]? in
            shiftWindows(t, r, key: key, texts, days: days, zone: zone)
        }
        if let cron {
            if t.node("at") != nil {
                r.issue(
                    t.node("at")?.line ?? t.line,
                    "\(t.name).at: only with shifts (a cron schedule fires at its own times)")
            }
            if t.node("days") != nil && t.node("during") == nil {
                r.issue(
                    t.node("days")?.line ?? t.line,
                    "\(t.name).days: with cron, give the days in the cron expression's fifth field (days is for shifts and during)"
                )
            }
            var during: [ShiftWindow] = []
            if let texts = t.strings("during") {
                guard let w = windows("during", texts) else { return nil }
                during = w
            }
            do {
                return AuditSchedule(
                    name: name, cron: try CronSchedule(cron, timeZone: zone), during: during,
                    location: t.string("location"))
            } catch {
                r.issue(t.node("cron")?.line ?? t.line, "\(t.name): \(error)")
                return nil
            }
        }
        if t.node("during") != nil {
            r.issue(
                t.node("during")?.line ?? t.line,
                "\(t.name).during: only with cron (shifts fire at their own boundaries)")
        }
        guard let w = windows("shifts", shifts ?? []) else { return nil }
        let at = t.string("at") ?? "end"
        guard ["start", "end", "both"].contains(at) else {
            r.issue(t.node("at")?.line ?? t.line, "\(t.name).at: '\(at)': expected start, end or both")
            return nil
        }
        return .shifts(name: name, w, atStart: at != "end", atEnd: at != "start", location: t.string("location"))
    }

    /// A schedule's shift windows (`shifts` or `during`): each checked, the list not empty.
    static func shiftWindows(
        _ t: Section, _ r: ConfigReader, key: String, _ texts: [String], days: String, zone: String
    ) -> [ShiftWindow]? {
        var out: [ShiftWindow] = []
        for w in texts {
            do { out.append(try ShiftWindow(w, days: days, timeZone: zone)) } catch {
                r.issue(t.node(key)?.line ?? t.line, "\(t.name).\(key): \(error)")
                return nil
            }
        }
        if out.isEmpty {
            r.issue(t.node(key)?.line ?? t.line, "\(t.name).\(key): the list is empty")
            return nil
        }
        return out
    }

    /// `[service]`: the HTTP listener and what it serves (the pages' chart field and templates, the write and read
    /// API's tokens, the Host allow-list, the live stream's limits).
    static let serviceKeys = [
        "listen", "chart-field", "api-token-file", "read-token-file", "allowed-hosts", "templates", "stream-clients",
        "stream-write-timeout",
    ]

    static func readService(_ s: Section, _ r: ConfigReader, into c: inout AgentConfig) {
        if let n = s.integer("stream-clients", in: 1...100_000) { c.streamClients = Int(n) }
        if let t = s.duration("stream-write-timeout", in: 100...600_000, "expected 100ms…10m") {
            c.streamWriteTimeoutMs = t
        }
        c.apiTokenFile = s.string("api-token-file").map(c.resolve)
        c.readTokenFile = s.string("read-token-file").map(c.resolve)
        if let hosts = s.strings("allowed-hosts") {
            for h in hosts where h.isEmpty || h.contains(where: { $0 == "/" || $0 == " " || $0 == "@" }) {
                r.issue(
                    s.node("allowed-hosts")?.line ?? s.line,
                    "service.allowed-hosts: '\(h)' is not a host name (e.g. gateway-12.plant.example, or \"*\" for any)"
                )
            }
            c.allowedHosts = hosts.map { $0.lowercased() }
        }
        if let l = s.string("listen") {
            if l.isEmpty {
                c.listen = nil
            } else {
                do { c.listen = try ListenAddress(parsing: l).description } catch {
                    r.issue(s.node("listen")?.line ?? s.line, "service.listen: \(error) (\"\" for none)")
                }
            }
        }
        c.chartField = s.string("chart-field")
        c.templatesFolder = s.string("templates").map(c.resolve)
    }

    /// `[security]`: the tags' secrets file, and the NXP tags in privacy mode the gateway unlocks.
    static let securityKeys = ["secrets-file", "privacy-tags", "privacy-unlock", "privacy-interval"]

    static func readSecurity(_ s: Section, _ r: ConfigReader, into c: inout AgentConfig) {
        c.secretsFile = s.string("secrets-file").map(c.resolve)
        for text in s.strings("privacy-tags") ?? [] {
            do {
                let uid = try UID(parsing: text)
                if uid.manufacturer != .nxp {
                    r.issue(
                        s.node("privacy-tags")?.line ?? s.line,
                        "security.privacy-tags: \(uid) is not an NXP tag (privacy mode is NXP's: SLIX-L, SLIX2)")
                }
                c.privacyTags.append(uid)
            } catch {
                r.issue(s.node("privacy-tags")?.line ?? s.line, "security.privacy-tags: '\(text)': \(error)")
            }
        }
        c.privacyUnlock = s.choice("privacy-unlock", PrivacyUnlock.self) ?? c.privacyUnlock
        if let ms = s.duration("privacy-interval") {
            if ms < 1000 {
                r.issue(
                    s.node("privacy-interval")?.line ?? s.line,
                    "security.privacy-interval: at least 1s (each try costs air time)")
            } else {
                c.privacyIntervalMs = ms
            }
        }
        if !c.privacyTags.isEmpty, c.secretsFile == nil {
            r.issue(
                s.node("privacy-tags")?.line ?? s.line,
                "security.privacy-tags: the privacy passwords come from the secrets file; set security.secrets-file"
            )
        }
    }

    /// Every `[[plan]]`, each name once.
    static let planKeys = [
        "name", "match", "read", "field", "ndef", "sensor-log", "sensor-log-pieces", "sensor-values",
    ]

    static func readPlans(_ top: Section, _ r: ConfigReader) -> [ReadPlan] {
        var plans: [ReadPlan] = []
        var names = Set<String>()
        for p in top.tables("plan", keys: planKeys) {
            guard let plan = readPlan(p, r) else { continue }
            if !names.insert(plan.name).inserted { r.issue(p.line, "plan '\(plan.name)' is defined twice") }
            plans.append(plan)
        }
        return plans
    }

    /// What no section can check alone: a field's unit the same in every plan, a schedule's location one with a
    /// reader, Inventory Read's needs, the chart's field decoded by a plan (and chosen when not given).
    static func checkAcross(_ c: inout AgentConfig, _ r: ConfigReader) {
        // One name, one meaning: a field name used by two plans must decode the same way.
        var byName: [String: FieldDecoder] = [:]
        for p in c.plans {
            for f in p.fields {
                if let other = byName[f.name], other.unit != f.unit {
                    r.issue(
                        p.line,
                        "field '\(f.name)' has unit \(f.unit ?? "none") here and \(other.unit ?? "none") in another plan; use one unit or another name"
                    )
                }
                byName[f.name] = f
            }
        }
        let locations = Set(c.readers.map(Auditor.location))
        for schedule in c.audit.schedules {
            if let l = schedule.location, !locations.contains(l) {
                r.issue(
                    0,
                    "audit schedule '\(schedule.name)': no reader at location '\(l)' (\(locations.sorted().joined(separator: ", ")))"
                )
            }
        }
        // Inventory Read, wherever it is asked for ([polling] or a reader's table): it needs Stay Quiet and blocks to bring.
        for reader in c.readers {
            let rc = c.specialized(for: reader)
            guard rc.inventoryRead else { continue }
            if !rc.stayQuiet {
                r.issue(
                    0,
                    "reader '\(reader.id)': inventory-read = true needs stay-quiet = true (the ICODE tags it finds are kept quiet while an Inventory looks for the others)"
                )
            } else if rc.inventoryReadRange == nil {
                r.issue(
                    0,
                    "reader '\(reader.id)': inventory-read = true, but no plan that can match an ICODE chip (SLI, SLIX, SLIX2, DNA) reads blocks without lock status within 0x00…0xFF, at most 32 of them; nothing would come with the inventory"
                )
            }
        }
        if let f = c.chartField, !c.plans.contains(where: { $0.fields.contains { $0.name == f } }) {
            r.issue(0, "service.chart-field: no plan decodes a field named '\(f)'")
        }
        if c.chartField == nil {
            c.chartField = c.plans.lazy.flatMap(\.fields).first { $0.type.isNumeric }?.name
        }
    }

    /// Settings that work but are probably not meant, each a line for `config check`, `doctor` and the log.
    static func warnings(_ c: AgentConfig) -> [String] {
        var out: [String] = []
        let file = c.file
        for reader in c.readers where c.specialized(for: reader).intervalMs == 0 {
            out.append(
                "\(file): reader '\(reader.id)': interval 0: polls back to back, taking all of the reader's air time and a core; give an interval (e.g. 500ms) unless that is meant"
            )
        }
        // A field named like a fixed column of readings (asset_id, since readings carry the register's) is
        // exported as field_<name>; said, so that a configuration from before goes on loading.
        let fixed = Set(TableDescription.readings.names)
        for name in Set(c.plans.flatMap { $0.fields.map(\.name) }).sorted() where fixed.contains(name) {
            out.append(
                "\(file): field '\(name)' has the name of a fixed column of readings, so exports call it field_\(name)\(name == "asset_id" ? " (readings carry the register's asset id as asset_id)" : ""); rename it (e.g. tag_\(name)) to keep the two apart"
            )
        }
        if c.flushIntervalMs == 0 {
            out.append(
                "\(file): store.flush-interval 0: every record is committed on its own (a disk sync each); a flush interval of 1s–5s keeps batches"
            )
        }
        out += c.outputs.flatMap { $0.warnings(file: file) }
        return out
    }
}
