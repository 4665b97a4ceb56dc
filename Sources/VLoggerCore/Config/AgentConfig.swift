import Foundation
import VLoggerConfig
import VLoggerOutbox
import VLoggerModel
import VLoggerStore
import Readers
import ISO15693

/// Which tags a read plan or a rule applies to. Every part given must match; none given matches all.
public struct TagMatch: Equatable, Sendable {
    public var manufacturers: [ManufacturerCode] = []
    public var models: [ICModel] = []
    /// UID patterns: exact (`E008010000004212`) or prefix (`E00801*`).
    public var uids: [UIDPattern] = []

    public init(manufacturers: [ManufacturerCode] = [], models: [ICModel] = [], uids: [UIDPattern] = []) {
        self.manufacturers = manufacturers
        self.models = models
        self.uids = uids
    }

    public func matches(uid: UID, model: ICModel?) -> Bool {
        (manufacturers.isEmpty || manufacturers.contains(uid.manufacturer))
            && (models.isEmpty || model.map(models.contains) == true)
            && (uids.isEmpty || uids.contains { $0.matches(uid) })
    }

    public var isEmpty: Bool { manufacturers.isEmpty && models.isEmpty && uids.isEmpty }

    /// Whether this match can take an NXP ICODE chip that has Inventory Read (by manufacturer, model, and a
    /// UID pattern that can start with E004).
    var mayMatchICODEWithInventoryRead: Bool {
        (manufacturers.isEmpty || manufacturers.contains(.nxp))
            && (models.isEmpty || models.contains { $0.hasNXPInventoryRead })
            && (uids.isEmpty || uids.contains { $0.mayMatchManufacturer(.nxp) })
    }
}

/// An exact UID or a prefix of its printed form (`E004*`).
public struct UIDPattern: Equatable, Sendable, CustomStringConvertible {
    public let prefix: String
    public let isPrefix: Bool

    /// Whether a UID of this manufacturer (printed `E0` then its code) can match.
    func mayMatchManufacturer(_ m: ManufacturerCode) -> Bool {
        let head = "E0" + Hex.format([m.rawValue])
        return prefix.count >= head.count ? prefix.hasPrefix(head) : head.hasPrefix(prefix)
    }

    public init(parsing text: String) throws(ParseError) {
        let t = text.replacingOccurrences(of: " ", with: "").uppercased()
        if t.hasSuffix("*") {
            let p = String(t.dropLast())
            guard p.count <= 16, p.allSatisfy(\.isHexDigit) else {
                throw ParseError("'\(text)' is not a UID prefix; write hex digits then '*', e.g. E00401*")
            }
            prefix = p
            isPrefix = true
        } else {
            prefix = try UID(parsing: t).description
            isPrefix = false
        }
    }

    public func matches(_ uid: UID) -> Bool {
        isPrefix ? uid.description.hasPrefix(prefix) : uid.description == prefix
    }

    public var description: String { isPrefix ? prefix + "*" : prefix }
}

extension ICModel {
    /// Finds a model by its identifier (`mb89r118`), full name (`Fujitsu MB89R118`) or part number (`MB89R118`).
    public static func lookup(_ text: String) -> ICModel? {
        let t = text.lowercased().trimmingCharacters(in: .whitespaces)
        return allCases.first { $0.rawValue.lowercased() == t || $0.name.lowercased() == t }
            ?? allCases.first { $0.name.lowercased().split(separator: " ").dropFirst().joined(separator: " ") == t }
            ?? allCases.first { $0.name.lowercased().split(separator: " ").last.map(String.init) == t }
    }
}

/// Consecutive blocks a plan reads.
public struct PlanRead: Equatable, Sendable {
    public var first: BlockNumber
    public var count: Int
    /// Read with the Option flag, so each block comes with its lock status.
    public var security: Bool

    public init(first: BlockNumber, count: Int = 1, security: Bool = false) {
        self.first = first
        self.count = count
        self.security = security
    }
}

/// What to read from one kind of tag, and how to decode it.
public struct ReadPlan: Equatable, Sendable {
    public var name: String
    public var match: TagMatch
    public var reads: [PlanRead]
    public var fields: [FieldDecoder]
    /// Read the NDEF message too (CC, then the NDEF TLV) and store its records with the readings.
    public var ndef: Bool = false
    /// Collect the tag's own log (a sensor kind's, `SensorKinds`): each record a reading at its time on the tag,
    /// read from where the store's copy of the session ends, `sensorLogPieces` pieces per visit at most.
    public var sensorLog: Bool = false
    public var sensorLogPieces: Int = 16
    /// Take the sensor kind's current values (a measurement now, its battery) at most this often per tag, each
    /// time a reading; nil: not. Kinds whose measurement writes to the tag (the RF430's sample configuration) are
    /// not measured by a poll.
    public var sensorValuesEveryMs: Millis?
    public var line: Int

    /// The fields whose block lies in `first ..< first + count`, decoded from `memory` (the bytes of those blocks);
    /// a field whose bytes are not all there is left out.
    public func decodedFields(memory: [UInt8], first: BlockNumber, count: Int, blockSize: Int) -> [(
        name: String, value: FieldValue
    )] {
        var out: [(name: String, value: FieldValue)] = []
        for f in fields where first.int <= f.block.int && f.block.int < first.int + count {
            if let v = f.decode(memory: memory, first: first, blockSize: blockSize) { out.append((f.name, v)) }
        }
        return out
    }
}

public enum SlotMode: String, Sendable, CaseIterable {
    /// 16-slot inventory with anti-collision.
    case sixteen = "16"
    /// One-slot inventory: fastest for a single tag; a collision falls back to 16 slots.
    case one = "1"
    /// One slot while the field held at most one tag last cycle, else 16.
    case adaptive
}

public enum DataRate: String, Sendable, CaseIterable { case high, low }

/// Polling settings a reader may set for itself (`[[reader]]` keys of the same names as `[polling]`'s);
/// nil keeps the gateway's.
public struct PollingOverrides: Equatable, Sendable {
    public var intervalMs: Millis?
    public var slots: SlotMode?
    public var afi: UInt8?
    public var dataRate: DataRate?
    public var departureCycles: Int?
    public var retries: Int?
    public var readAttempts: Int?
    public var stayQuiet: Bool?
    public var inventoryRead: Bool?
    public init() {}

    static let keys = [
        "interval", "slots", "afi", "data-rate", "departure-cycles", "retries", "read-attempts", "stay-quiet",
        "inventory-read",
    ]

    func apply(to c: inout AgentConfig) {
        if let intervalMs { c.intervalMs = intervalMs }
        if let slots { c.slots = slots }
        if let afi { c.afi = afi }
        if let dataRate { c.dataRate = dataRate }
        if let departureCycles { c.departureCycles = departureCycles }
        if let retries { c.retries = retries }
        if let readAttempts { c.readAttempts = readAttempts }
        if let stayQuiet { c.stayQuiet = stayQuiet }
        if let inventoryRead { c.inventoryRead = inventoryRead }
    }

    static func read(_ s: Section, _ r: ConfigReader) -> PollingOverrides {
        var o = PollingOverrides()
        o.intervalMs = s.duration("interval")
        if let n = s.node("slots") {
            switch n.value {
            case let .integer(v) where v == 1 || v == 16: o.slots = v == 1 ? .one : .sixteen
            case let .string(v) where SlotMode(rawValue: v) != nil: o.slots = SlotMode(rawValue: v)
            default: r.issue(n.line, "\(s.name).slots: expected 1, 16 or \"adaptive\"")
            }
        }
        o.afi = s.integer("afi", in: 0...255).map { UInt8($0) }
        o.dataRate = s.choice("data-rate", DataRate.self)
        o.departureCycles = s.integer("departure-cycles", in: 1...1000).map(Int.init)
        o.retries = s.integer("retries", in: 0...10).map(Int.init)
        o.readAttempts = s.integer("read-attempts", in: 1...10).map(Int.init)
        o.stayQuiet = s.bool("stay-quiet")
        o.inventoryRead = s.bool("inventory-read")
        return o
    }
}

/// One reader of the gateway: a `[[reader]]` table (or the single `[reader]` table of older configurations).
/// Each is polled by its own job; its id and location go into every reading, event and tag row it makes.
public struct ReaderConfig: Equatable, Sendable {
    /// Names the reader in the store, the logs and the metrics: letters, digits, '-', '_', '.'.
    public var id: String
    public var driver: ReaderKind
    /// The simulated field folder (a driver with `.simulatedField`).
    public var field: String?
    /// The hardware reader, as its driver names devices.
    public var device: String?
    /// Where the reader is (a dock door, a line station); audits are per location.
    public var location: String?
    /// A simulated reader's largest response frame (bytes, without CRC): the reader it stands for. Hardware
    /// drivers have their own (PC/SC pseudo-APDUs: 236).
    public var maxResponseBytes: Int?
    public var polling = PollingOverrides()
    /// How the tags' data reach the gateway: `poll` (the agent's inventory and reads) or `buffer` (a reader with
    /// `.bufferedRead`, such as FEIG's buffered read mode, reads by itself; the gateway drains its buffer).
    public var readMode: ReadMode = .poll
    /// With `read-mode = "buffer"`: the block the buffered records' data start at (the reader's configuration
    /// chooses which blocks it reads).
    public var bufferBlock: BlockNumber = 0
    public var line = 0

    public enum ReadMode: String, Sendable, CaseIterable { case poll, buffer }

    /// What the driver opens the reader with besides its field or device.
    public var options: DriverOptions { DriverOptions(maxResponseBytes: maxResponseBytes) }

    /// The id of the reader of a configuration with a single `[reader]` table.
    public static let defaultID = "reader"

    public init(
        id: String = ReaderConfig.defaultID, driver: ReaderKind? = nil, field: String? = nil, device: String? = nil,
        location: String? = nil
    ) {
        self.id = id
        self.driver = driver ?? .default
        self.field = field
        self.device = device
        self.location = location
    }
}

/// The agent's configuration (`Config/vlogger.toml` documents every key).
public struct AgentConfig: Sendable {
    public var file: String
    /// Settings that work but are probably not meant (said by `config check` and logged by `run`).
    public var warnings: [String] = []
    public var gatewayID = "gateway"
    public var site: String?
    /// `[gateway] time-zone`: how pages, reports and the commands' human output show times (JSON and exports stay
    /// UTC). The system's zone when not given.
    public var localTime = LocalTime(zone: TimeZone.current)
    /// The readers, each polled by its own job (at least one).
    public var readers = [ReaderConfig()]
    public var intervalMs: Millis = 1000
    public var slots = SlotMode.adaptive
    public var afi: UInt8?
    public var dataRate = DataRate.high
    public var departureCycles = 3
    public var retries = 2
    public var readAttempts = 2
    /// Known tags with reads are sent Stay Quiet: their addressed reads are their presence check and the
    /// inventory looks only for newcomers (one slot first).
    public var stayQuiet = true
    /// When several newcomers answer the one-slot probe, NXP ICODE tags are found with NXP's (Fast)
    /// Inventory Read, which brings the first ICODE plan's blocks with each answer (no separate read), and
    /// the other tags with an Inventory after that. Needs `stayQuiet`.
    public var inventoryRead = false
    public var plans: [ReadPlan] = []
    public var rulesFile: String?
    public var registerFile: String?
    public var storePath = "vlogger.db"
    public var batchSize = 500
    public var flushIntervalMs: Millis = 2000
    /// Readings (and, separately, events) kept in memory while the store cannot commit; past it the oldest are dropped and counted.
    public var queueLimit = 100_000
    /// `[store] keep`: rows older than this are deleted by the service (hourly), except rows fleet sync has not
    /// had acknowledged; nil: kept for ever.
    public var keepMs: Millis?
    /// HTTP listener for /healthz, /metrics and the status page (nil: none).
    public var listen: String?
    /// The decoded field the status page charts.
    public var chartField: String?
    /// `[service] templates`: a folder whose `.mustache` files replace the pages' shipped templates of the same name.
    public var templatesFolder: String?
    /// A file holding the bearer token of the HTTP write API (`[service] api-token-file`); nil: no API.
    public var apiTokenFile: String?
    /// A file holding the bearer token of the read API (`[service] read-token-file`): required on a listener that
    /// is not a loopback address; nil: the read API on loopback only.
    public var readTokenFile: String?
    /// Host names the listener answers besides IP literals, localhost and this machine's name (`Host` header;
    /// DNS rebinding). `*` answers any.
    public var allowedHosts: [String] = []
    /// `[service] stream-clients`: live stream (`/api/v1/stream`) clients served at once; more are answered 503.
    public var streamClients = 500
    /// `[service] stream-write-timeout`: a stream client that has not taken what was sent within this long is
    /// dropped (it reads too slowly, or not at all); it may reconnect with its Last-Event-ID and miss nothing.
    public var streamWriteTimeoutMs: Millis = 30_000
    /// The outputs (`[sync]`, `[[output.mqtt]]`, `[[output.webhook]]`, … each kind's section as its target reads
    /// it: `OutputKinds`), in the order of the file.
    public var outputs: [any OutputSettings] = []
    /// How audits run (`[audit]`).
    public var audit = AuditSettings()
    /// `[security] secrets-file`: the tags' passwords (`TagSecrets`), read when a write needs one; nil: none.
    public var secretsFile: String?
    /// `[security] privacy-tags`: NXP tags in privacy mode the agent makes visible with their privacy password
    /// (`nxp-privacy` in the secrets file) while they are not in the field (docs/reference/tag-passwords.md).
    public var privacyTags: [UID] = []
    /// `[security] privacy-unlock`: how the privacy password is given.
    public var privacyUnlock = PrivacyUnlock.nonAddressed
    /// `[security] privacy-interval`: how often the agent tries (each try costs a GET RANDOM NUMBER that times out
    /// when no privacy tag is in the field).
    public var privacyIntervalMs: Millis = 10_000

    public enum PrivacyUnlock: String, CaseIterable, Sendable {
        /// GET RANDOM NUMBER and SET PASSWORD without a UID, as Proxmark3, Flipper and the PN5180 library send them:
        /// the form known to work on real chips; one privacy tag in the field at a time, one password for all.
        case nonAddressed = "non-addressed"
        /// Both addressed to each listed UID: several privacy tags and passwords at once; whether a real chip in
        /// privacy mode answers an addressed request is not settled by any source read (Flipper's emulators do).
        case addressed
    }

    public init(file: String) { self.file = file }

    /// A path from the file, relative to the file's folder.
    public func resolve(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        let dir = (file as NSString).deletingLastPathComponent
        return dir.isEmpty ? path : (dir as NSString).appendingPathComponent(path)
    }

    /// Every decoded field the plans define (for the store's export columns), first definition first.
    public var fieldInfos: [FieldInfo] {
        var seen = Set<String>()
        var out: [FieldInfo] = []
        for p in plans {
            for f in p.fields where seen.insert(f.name).inserted {
                out.append(FieldInfo(name: f.name, unit: f.unit, kind: f.type.kind))
            }
        }
        if plans.contains(where: \.ndef) {
            for name in NDEFFields.all where seen.insert(name).inserted {
                out.append(FieldInfo(name: name, unit: nil, kind: name == NDEFFields.records ? .json : .text))
            }
        }
        if plans.contains(where: { $0.sensorValuesEveryMs != nil }) {
            for kind in SensorKinds.builtIn {
                for f in kind.valueFields where seen.insert(f.name).inserted {
                    out.append(FieldInfo(name: f.name, unit: f.unit.isEmpty ? nil : f.unit))
                }
            }
        }
        if plans.contains(where: \.sensorLog) {
            // A log record's values (each sensor kind's), its number in the log and when the gateway read it.
            for kind in SensorKinds.builtIn {
                for f in kind.fields where seen.insert(f.name).inserted {
                    out.append(FieldInfo(name: f.name, unit: f.unit))
                }
            }
            for name in SensorLogCollector.fields where seen.insert(name).inserted {
                out.append(FieldInfo(name: name, unit: nil, kind: name == "read_at" ? .text : .number))
            }
        }
        return out
    }

    /// Each decoded field's unit ("" for none), first definition first: the unit label of /metrics' series.
    public var fieldUnits: [String: String] { FieldInfo.units(fieldInfos) }

    public static func load(_ path: String) throws(ConfigError) -> AgentConfig {
        try parse(ConfigReader.load(path), file: path)
    }

    /// The secret files the configuration names (api-token-file, sync password-file and ca-file): what `run` or
    /// `sync` would refuse (errors), and files other users can read (warnings; `chmod 600`). Asked by `config
    /// check`, `doctor` and `run`, not by every command that loads the configuration (an export needs none).
    public func secretFileProblems() -> (errors: [String], warnings: [String]) {
        var errors: [String] = [], warnings: [String] = []
        func check(_ what: String, _ path: String?, minLength: Int = 1, secret: Bool = true) {
            guard let path else { return }
            guard let data = FileManager.default.contents(atPath: path) else {
                errors.append(
                    "\(file): \(what) \(path): cannot read it (it must exist and be readable by the service's user)")
                return
            }
            let first =
                String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map {
                    $0.trimmingCharacters(in: .whitespaces)
                } ?? ""
            if secret && first.count < minLength {
                errors.append(
                    "\(file): \(what) \(path): \(first.isEmpty ? "empty" : "the first line must be at least \(minLength) characters")"
                )
            }
            var st = stat()
            if secret, stat(path, &st) == 0, st.st_mode & 0o077 != 0 {
                warnings.append(
                    "\(file): \(what) \(path) can be read by other users (mode \(String(st.st_mode & 0o777, radix: 8))): chmod 600 \(path)"
                )
            }
        }
        check("service.api-token-file", apiTokenFile, minLength: 16)
        check("service.read-token-file", readTokenFile, minLength: 16)
        for f in outputs.flatMap(\.files) { check(f.what, f.path, minLength: f.minLength, secret: f.secret) }
        // The tags' secrets: its mode and owner, and its content (errors name lines, never values).
        if let secretsFile {
            do { _ = try TagSecrets.load(secretsFile) } catch {
                errors.append("\(file): security.secrets-file \(secretsFile): \(error)")
            }
        }
        return (errors, warnings)
    }

    public static func parse(_ text: String, file: String) throws(ConfigError) -> AgentConfig {
        let table = try ConfigReader.parse(text: text, file: file)
        let r = ConfigReader(file: file)
        var c = AgentConfig(file: file)
        let top = Section(
            r, table, name: "",
            keys: ["gateway", "reader", "polling", "plan", "rules", "store", "service", "audit"]
                + OutputKinds.all.compactMap { if case let .table(k) = $0.section { k } else { nil } }
                + ["output", "security"])
        if table.entries.isEmpty {
            r.issue(1, "the file has no settings; start from Config/vlogger.toml, which documents every key")
        }
        if let g = top.subsection("gateway", keys: gatewayKeys) { readGateway(g, r, into: &c) }
        if let s = top.subsection("polling", keys: PollingOverrides.keys) {
            PollingOverrides.read(s, r).apply(to: &c)
        }
        c.readers = readReaders(top, r, c)
        if let s = top.subsection("rules", keys: ["file", "register"]) {
            c.rulesFile = s.string("file").map(c.resolve)
            c.registerFile = s.string("register").map(c.resolve)
        }
        if let s = top.subsection("store", keys: storeKeys) { readStore(s, r, into: &c) }
        if let s = top.subsection("audit", keys: auditKeys) { readAudit(s, r, into: &c) }
        if let s = top.subsection("service", keys: serviceKeys) { readService(s, r, into: &c) }
        if let s = top.subsection("security", keys: securityKeys) { readSecurity(s, r, into: &c) }
        c.outputs = readOutputs(top, r, OutputReadContext(readerIDs: c.readers.map(\.id), resolve: c.resolve))
        c.plans = readPlans(top, r)
        checkAcross(&c, r)
        c.warnings += warnings(c)
        try r.finish()
        return c
    }

    /// Every registered output kind's sections: `[sync]` at the top level, `[[output.KIND]]` under `[output]`, in
    /// the order of the file. One name per output (a name taken is an error at its section); the fleet sync's is
    /// "postgres".
    static func readOutputs(_ top: Section, _ r: ConfigReader, _ context: OutputReadContext) -> [any OutputSettings] {
        let kinds = OutputKinds.all
        let listed = kinds.filter { if case .list = $0.section { true } else { false } }.map(\.section.key).sorted()
        let output = top.subsection("output", keys: listed)
        var out: [(line: Int, settings: any OutputSettings)] = []
        var taken: Set<String> = ["postgres"]
        for kind in kinds {
            let sections: [Section]
            switch kind.section {
            case let .table(key): sections = top.subsection(key, keys: kind.keys).map { [$0] } ?? []
            case let .list(key): sections = output?.tables(key, keys: kind.keys) ?? []
            }
            for (i, s) in sections.enumerated() {
                guard let settings = kind.read(s, index: i, r, context) else { continue }
                if case let .list(key) = kind.section, !taken.insert(settings.name).inserted {
                    r.issue(
                        s.line, "output.\(key): the name '\(settings.name)' is taken; give each output its own name")
                    continue
                }
                out.append((s.line, settings))
            }
        }
        return out.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }.map(
            \.element.settings)
    }

    static let readerKeys =
        ["id", "driver", "field", "device", "location", "max-response", "read-mode", "buffer-block"]
        + PollingOverrides.keys

    /// `[reader]` (one reader, id "reader") or `[[reader]]` tables (each with its own id).
    static func readReaders(_ top: Section, _ r: ConfigReader, _ c: AgentConfig) -> [ReaderConfig] {
        let sections: [Section]
        var single = false
        switch top.node("reader")?.value {
        case nil: return [ReaderConfig()]
        case .table?:
            sections = top.subsection("reader", keys: readerKeys).map { [$0] } ?? []
            single = true
        default:
            sections = top.tables("reader", keys: readerKeys)
        }
        var out: [ReaderConfig] = []
        for s in sections {
            let rc = readReader(s, single: single, r, c)
            let simulates = rc.driver.driver.capabilities.contains(.simulatedField)
            if let other = out.first(where: { $0.id == rc.id }) {
                r.issue(s.line, "\(s.name): reader id '\(rc.id)' is used twice (first at line \(other.line))")
            }
            if simulates, let other = out.first(where: { $0.driver == rc.driver && $0.field == rc.field }) {
                r.issue(
                    s.line,
                    "\(s.name): readers '\(other.id)' and '\(rc.id)' simulate the same field folder; give each its own")
            }
            if !simulates, let other = out.first(where: { $0.driver == rc.driver && $0.device == rc.device }) {
                r.issue(
                    s.line,
                    "\(s.name): readers '\(other.id)' and '\(rc.id)' name the same \(rc.driver) device; a reader can be polled by one job only"
                )
            }
            out.append(rc)
        }
        if out.isEmpty && !single {
            r.issue(
                top.node("reader")?.line ?? 0, "reader: an empty list of readers; write one [[reader]] table per reader"
            )
        }
        return out.isEmpty ? [ReaderConfig()] : out
    }

    /// One reader's table: its id, driver and field or device (checked by the driver), location, read mode, frame
    /// limit and polling overrides.
    static func readReader(_ s: Section, single: Bool, _ r: ConfigReader, _ c: AgentConfig) -> ReaderConfig {
        var rc = ReaderConfig()
        rc.line = s.line
        if let id = single ? s.string("id") : s.require("id", s.string) {
            if !Self.isIdentifier(id) {
                r.issue(
                    s.node("id")?.line ?? s.line,
                    "\(s.name).id: '\(id.prefix(40))' must be 1 to 64 letters, digits, '-', '_', '.' or ':' (it names the reader in every row and metric)"
                )
            } else {
                rc.id = id
            }
        }
        rc.driver = s.choice("driver", ReaderKind.self) ?? rc.driver
        rc.field = s.string("field").map(c.resolve)
        rc.device = s.string("device")
        rc.location = s.string("location")
        if let l = rc.location, let why = PlainText.problem(l) {
            r.issue(s.node("location")?.line ?? s.line, "\(s.name).location: \(why)")
        }
        let caps = rc.driver.driver.capabilities
        let simulates = caps.contains(.simulatedField)
        if !simulates, let n = s.node("field") {
            r.issue(
                n.line,
                "\(s.name).field is for a simulated reader (\(ReaderDrivers.names(with: .simulatedField))) only")
        }
        if simulates, let n = s.node("device") {
            r.issue(n.line, "\(s.name).device is for hardware readers; a simulated reader takes 'field'")
        }
        if !simulates, let problem = rc.driver.driver.checkDevice(rc.device) {
            if rc.device == nil {
                r.issue(s.line, "\(s.name): \(problem)")
            } else {
                r.issue(s.node("device")?.line ?? s.line, "\(s.name).device: \(problem)")
            }
        }
        rc.readMode = s.choice("read-mode", ReaderConfig.ReadMode.self) ?? .poll
        rc.bufferBlock = s.block("buffer-block") ?? 0
        if rc.readMode == .buffer, !caps.contains(.bufferedRead) {
            r.issue(
                s.node("read-mode")?.line ?? s.line,
                "\(s.name).read-mode = \"buffer\" needs a reader with a buffer of its own (\(ReaderDrivers.names(with: .bufferedRead)))"
            )
        }
        if rc.readMode != .buffer, let n = s.node("buffer-block") {
            r.issue(n.line, "\(s.name).buffer-block goes with read-mode = \"buffer\"")
        }
        rc.maxResponseBytes = s.integer("max-response", in: 16...8192).map(Int.init)
        if !simulates, let n = s.node("max-response") {
            r.issue(
                n.line,
                "\(s.name).max-response is for a simulated reader (it models the reader it stands for); a hardware driver knows its own frame limit"
            )
        }
        rc.polling = PollingOverrides.read(s, r)
        return rc
    }

    /// The readings export's fixed columns, which no decoded field may be named after.
    static let exportColumns: Set<String> = [
        "time", "gateway", "reader", "location", "uid", "block", "count", "data", "security",
    ]

    /// A gateway or reader id: 1 to 64 of letters, digits, '-', '_', '.', ':' (it goes into every row).
    static func isIdentifier(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 64
            && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:".contains($0)) }
    }

    /// This configuration as one reader's polling job sees it: the reader's own polling settings in force.
    public func specialized(for reader: ReaderConfig) -> AgentConfig {
        var c = self
        reader.polling.apply(to: &c)
        return c
    }

    static func readMatch(_ s: Section?, _ r: ConfigReader) -> TagMatch {
        guard let s else { return TagMatch() }
        var m = TagMatch()
        for text in s.strings("manufacturer") ?? [] {
            if let code = ManufacturerCode.lookup(text) {
                m.manufacturers.append(code)
            } else {
                r.issue(
                    s.node("manufacturer")?.line ?? s.line,
                    "match.manufacturer: '\(text)' is neither a code (0x04) nor a name in the ISO/IEC 7816-6 register (NXP, STMicroelectronics, Texas Instruments, …)"
                )
            }
        }
        for text in s.strings("model") ?? [] {
            if let model = ICModel.lookup(text) {
                m.models.append(model)
            } else {
                r.issue(
                    s.node("model")?.line ?? s.line,
                    "match.model: '\(text)' is not a known IC model; known: \(ICModel.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
        }
        for text in s.strings("uid") ?? [] {
            do { m.uids.append(try UIDPattern(parsing: text)) } catch {
                r.issue(s.node("uid")?.line ?? s.line, "match.uid: \(error)")
            }
        }
        return m
    }

    static func readPlan(_ p: Section, _ r: ConfigReader) -> ReadPlan? {
        guard let name = p.require("name", p.string) else { return nil }
        let match = readMatch(p.subsection("match", keys: ["manufacturer", "model", "uid"]), r)
        var reads: [PlanRead] = []
        for s in p.tables("read", keys: ["first", "count", "security"]) {
            guard let first = s.require("first", s.block) else { continue }
            let count = s.integer("count", in: 1...65536).map(Int.init) ?? 1
            if first.int + count > 65536 {
                r.issue(s.line, "\(s.name): blocks \(first)+\(count) run past block 0xFFFF")
            }
            reads.append(PlanRead(first: first, count: count, security: s.bool("security") ?? false))
        }
        var fields: [FieldDecoder] = []
        for s in p.tables("field", keys: ["name", "block", "byte", "type", "length", "scale", "offset", "unit"]) {
            let fname = s.require("name", s.string), block = s.require("block", s.block)
            let type = s.require("type", { s.choice($0, FieldType.self) })
            guard let fname, let block, let type else { continue }
            let length = s.integer("length", in: 1...4096).map(Int.init)
            if type.width != nil, let n = s.node("length") {
                r.issue(
                    n.line,
                    "\(s.name).length: \(type.rawValue) is \(type.width ?? 0) bytes; length is for hex and ascii")
            }
            if type.width == nil, length == nil {
                r.issue(s.line, "\(s.name): type \(type.rawValue) needs 'length' (bytes)")
            }
            let scale = s.number("scale"), offset = s.number("offset")
            if !type.isNumeric, let n = s.node("scale") ?? s.node("offset") {
                r.issue(n.line, "\(s.name): scale and offset are for numeric types, not \(type.rawValue)")
            }
            if fname.isEmpty || fname.count > 64
                || fname.contains(where: { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
            {
                r.issue(
                    s.node("name")?.line ?? s.line,
                    "\(s.name).name: '\(fname.prefix(40))' must be 1 to 64 letters, digits, '_' or '-' (it becomes a CSV column)"
                )
            } else if Self.exportColumns.contains(fname.lowercased()) {
                r.issue(
                    s.node("name")?.line ?? s.line,
                    "\(s.name).name: '\(fname)' is one of the export's own columns (\(Self.exportColumns.sorted().joined(separator: ", "))); choose another name"
                )
            }
            if fields.contains(where: { $0.name == fname }) {
                r.issue(s.line, "\(s.name): field '\(fname)' is defined twice in plan '\(name)'")
            }
            fields.append(
                FieldDecoder(
                    name: fname, block: block, byte: s.integer("byte", in: 0...4095).map(Int.init) ?? 0,
                    type: type, length: length, scale: scale, offset: offset, unit: s.string("unit")))
        }
        let ndef = p.bool("ndef") ?? false
        let sensorLog = p.bool("sensor-log") ?? false
        let sensorValues = p.duration("sensor-values")
        if let ms = sensorValues, ms < 1000 {
            r.issue(
                p.node("sensor-values")?.line ?? p.line,
                "\(p.name).sensor-values: at least 1s (a measurement takes the chip's time: 400 ms on an FM13)")
        }
        if reads.isEmpty && fields.isEmpty && !ndef && !sensorLog && sensorValues == nil {
            r.issue(
                p.line,
                "\(p.name) ('\(name)'): a plan needs [[plan.read]] or [[plan.field]] entries, ndef = true, sensor-log = true or sensor-values"
            )
        }
        for f in fields where ndef && NDEFFields.all.contains(f.name) {
            r.issue(p.line, "\(p.name) ('\(name)'): field name '\(f.name)' is taken by the NDEF fields of ndef = true")
        }
        var plan = ReadPlan(name: name, match: match, reads: reads, fields: fields, ndef: ndef, line: p.line)
        plan.sensorLog = sensorLog
        plan.sensorValuesEveryMs = sensorValues.flatMap { $0 >= 1000 ? $0 : nil }
        plan.sensorLogPieces = p.integer("sensor-log-pieces", in: 1...1000).map(Int.init) ?? plan.sensorLogPieces
        return plan
    }

    /// The first plan that matches a tag (plans are tried in file order).
    public func plan(for uid: UID, model: ICModel?) -> ReadPlan? {
        plans.first { $0.match.matches(uid: uid, model: model) }
    }

    /// The blocks an Inventory Read asks every ICODE newcomer for: the reads without lock status of the
    /// first plan that can apply to an ICODE chip with Inventory Read (as one range from its first to its
    /// last block, at most 32 blocks, within blocks 0x00…0xFF). nil when there is none. A tag whose own plan
    /// needs more is read for the rest as usual.
    public var inventoryReadRange: PlanRead? {
        for p in plans where p.match.mayMatchICODEWithInventoryRead {
            var wanted = p.reads.filter { !$0.security }
            for f in p.fields {
                let r = f.blocks(blockSize: 4)  // every ICODE chip has 4-byte blocks
                wanted.append(PlanRead(first: BlockNumber(exactly: r.lowerBound) ?? 0, count: r.count))
            }
            guard let lo = wanted.map(\.first.int).min(), let hi = wanted.map({ $0.first.int + $0.count }).max(),
                hi > lo, hi - lo <= 32, hi <= 0x100, let first = BlockNumber(exactly: lo)
            else { return nil }
            return PlanRead(first: first, count: hi - lo)
        }
        return nil
    }
}
