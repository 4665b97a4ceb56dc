import Foundation
import VLoggerStore
import VLoggerModel
import ISO15693

/// What a rule checks.
public enum RuleCheck: Equatable, Sendable {
    /// UID allow list (a tag must match one) and deny list (a tag must match none).
    case uid(allow: [UIDPattern], deny: [UIDPattern])
    case manufacturer(allow: [ManufacturerCode], deny: [ManufacturerCode])
    case model(allow: [ICModel], deny: [ICModel])
    /// Block lock status, from a read with the Option flag.
    case lock(block: BlockNumber, locked: Bool)
    /// A decoded numeric field within [min, max].
    case range(field: String, min: Double?, max: Double?)
    /// A block's bytes, or a decoded field, must equal a value or the tag's entry in the asset register.
    case equals(target: EqualsTarget, expected: Expected)

    public enum EqualsTarget: Equatable, Sendable {
        case block(BlockNumber)
        case field(String)
    }

    public enum Expected: Equatable, Sendable {
        case value(String)
        case register(column: String)
    }
}

public struct Rule: Equatable, Sendable {
    public var name: String
    public var severity: Event.Severity
    public var match: TagMatch
    public var check: RuleCheck
    public var line: Int
}

/// An asset register: one row per tag, keyed by UID (CSV with a header row; a `uid` column is required).
/// The rules keep only the columns they compare with (`register-column`), so a register of a million assets
/// costs the service what those columns need, not the whole file.
public struct AssetRegister: Sendable {
    public var file: String
    public var columns: [String]
    /// By UID: the kept columns of each row (every column, or only those the rules read).
    public var rows: [String: [String: String]]
    /// How many assets the file lists.
    public var count: Int

    public init(file: String, columns: [String], rows: [String: [String: String]], count: Int? = nil) {
        self.file = file
        self.columns = columns
        self.rows = rows
        self.count = count ?? rows.count
    }

    /// The register at `path`, every column.
    public static func load(_ path: String) throws(ConfigError) -> AssetRegister {
        try load(path, keeping: nil)
    }

    /// The register at `path`, read record by record; `keeping`: the columns kept in `rows` (nil: all; empty:
    /// none, every row still checked). Each row's UID is checked, and a UID listed twice is an error.
    public static func load(_ path: String, keeping: Set<String>?) throws(ConfigError) -> AssetRegister {
        let records: CSVRecords
        do { records = try CSVRecords.file(path) } catch {
            throw ConfigError(issues: [ConfigIssue(file: path, line: 0, message: "cannot read the file")])
        }
        return try read(records, file: path, keeping: keeping)
    }

    /// The register in `text` (the content of `path`, named in every issue).
    public static func parse(_ text: String, file path: String) throws(ConfigError) -> AssetRegister {
        try read(CSVRecords(text: text), file: path, keeping: nil)
    }

    /// The header's column names, checked: lower case, unique, with a uid column.
    static func header(_ records: inout CSVRecords, file path: String) throws(ConfigError) -> [String] {
        let first: (line: Int, cells: [String])?
        do { first = try records.next() } catch {
            throw ConfigError(issues: [ConfigIssue(file: path, line: error.line, message: error.message)])
        }
        guard let header = first else {
            throw ConfigError(issues: [
                ConfigIssue(file: path, line: 1, message: "empty register; expected a header row with a uid column")
            ])
        }
        let cols = header.cells.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        var seen = Set<String>()
        if let twice = cols.first(where: { !seen.insert($0).inserted }) {
            throw ConfigError(issues: [
                ConfigIssue(
                    file: path, line: 1,
                    message: "column '\(twice)' appears twice in the header; each column needs its own name")
            ])
        }
        guard cols.contains("uid") else {
            throw ConfigError(issues: [
                ConfigIssue(
                    file: path, line: 1, message: "no 'uid' column in the header (\(cols.joined(separator: ", ")))")
            ])
        }
        return cols
    }

    static func read(_ input: CSVRecords, file path: String, keeping: Set<String>?) throws(ConfigError) -> AssetRegister
    {
        var records = input
        let cols = try header(&records, file: path)
        let u = cols.firstIndex(of: "uid") ?? 0
        let kept = cols.enumerated().filter { keeping?.contains($0.element) ?? true }
        var rows: [String: [String: String]] = [:]
        var seen = Set<UID>()
        var issues: [ConfigIssue] = []
        while true {
            let rec: (line: Int, cells: [String])?
            do { rec = try records.next() } catch {
                issues.append(ConfigIssue(file: path, line: error.line, message: error.message)); break
            }
            guard let rec else { break }
            if rec.cells.count == 1 && rec.cells[0].isEmpty { continue }
            guard rec.cells.count == cols.count else {
                issues.append(
                    ConfigIssue(
                        file: path, line: rec.line, message: "\(rec.cells.count) cells; the header has \(cols.count)"))
                if issues.count >= 50 { break }
                continue
            }
            do {
                let uid = try UID(parsing: rec.cells[u])
                if !seen.insert(uid).inserted {
                    issues.append(ConfigIssue(file: path, line: rec.line, message: "UID \(uid) is listed twice"))
                }
                if !kept.isEmpty {
                    rows[uid.description] = Dictionary(
                        uniqueKeysWithValues: kept.map { ($0.element, rec.cells[$0.offset]) })
                }
            } catch {
                issues.append(ConfigIssue(file: path, line: rec.line, message: "uid: \(error)"))
            }
            if issues.count >= 50 { break }
        }
        if !issues.isEmpty { throw ConfigError(issues: issues) }
        return AssetRegister(file: path, columns: cols, rows: rows, count: seen.count)
    }
}

extension AssetRegister {
    /// `[rules] register` into the store's asset register, when it has an `asset_id` column (a register kept
    /// only for the rules is left to them: nil). At start, on SIGHUP and before an audit. Read record by record
    /// and written in one transaction: memory does not grow with the file.
    public static func importConfigured(_ config: AgentConfig, into store: Store) throws -> AssetImportReport? {
        guard let file = config.registerFile else { return nil }
        var records: CSVRecords
        do { records = try CSVRecords.file(file) } catch {
            throw ConfigError(issues: [ConfigIssue(file: file, line: 0, message: "cannot read the file")])
        }
        guard try header(&records, file: file).contains("asset_id") else { return nil }
        return try importFile(file, into: store)
    }

    /// Imports the register file into the store: `uid` and `asset_id` are required (an asset id on one tag
    /// only); `name` (or `description`) and `location` are taken when present; every other column is kept as an
    /// expected value for audits, and the columns audits read are checked here (`block_0xNN` a block number and
    /// hex bytes, `locked_0xNN` yes or no, `manufacturer` a known manufacturer), so that a typo is an error with
    /// its line, not a failed check at the next audit. All or nothing; errors name the file, the line and the
    /// column.
    public static func importFile(_ path: String, into store: Store, dryRun: Bool = false) throws -> AssetImportReport {
        let records: CSVRecords
        do { records = try CSVRecords.file(path) } catch {
            throw ConfigError(issues: [ConfigIssue(file: path, line: 0, message: "cannot read the file")])
        }
        return try importRecords(records, file: path, into: store, dryRun: dryRun)
    }

    /// `importFile` for a register in memory.
    public static func importText(_ text: String, file path: String, into store: Store, dryRun: Bool = false) throws
        -> AssetImportReport
    {
        try importRecords(CSVRecords(text: text), file: path, into: store, dryRun: dryRun)
    }

    static func importRecords(_ given: CSVRecords, file path: String, into store: Store, dryRun: Bool) throws
        -> AssetImportReport
    {
        var input = given
        let cols = try header(&input, file: path)
        guard cols.contains("asset_id") else {
            throw ConfigError(issues: [
                ConfigIssue(
                    file: path, line: 1,
                    message:
                        "no 'asset_id' column in the header (\(cols.joined(separator: ", "))); an asset register needs uid and asset_id"
                )
            ])
        }
        for c in cols where c.hasPrefix("block_") || c.hasPrefix("locked_") {
            let number = c.hasPrefix("block_") ? String(c.dropFirst(6)) : String(c.dropFirst(7))
            if (try? BlockNumber(parsing: number)) == nil {
                throw ConfigError(issues: [
                    ConfigIssue(
                        file: path, line: 1,
                        message:
                            "column \(c): '\(number)' is not a block number (0x00…0xFFFF), e.g. \(c.hasPrefix("block_") ? "block_0xF8" : "locked_0x00")"
                    )
                ])
            }
        }
        let nameColumn = cols.contains("name") ? "name" : (cols.contains("description") ? "description" : nil)
        let fixed = Set(["uid", "asset_id", "location", nameColumn].compactMap { $0 })
        do throws(StoreError) {
            return try store.importAssets(source: path, dryRun: dryRun) { add throws(StoreError) in
                while true {
                    let rec: (line: Int, cells: [String])?
                    do throws(CSVRecords.Failure) { rec = try input.next() } catch {
                        throw StoreError("\(path):\(error.line): \(error.message)")
                    }
                    guard let rec else { return }
                    if rec.cells.count == 1 && rec.cells[0].isEmpty { continue }
                    func fail(_ m: String) -> StoreError { StoreError("\(path):\(rec.line): \(m)") }
                    guard rec.cells.count == cols.count else {
                        throw fail("\(rec.cells.count) cells; the header has \(cols.count)")
                    }
                    var cells: [String: String] = [:]
                    for (c, v) in zip(cols, rec.cells) {
                        let t = v.trimmingCharacters(in: .whitespaces)
                        if t.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" }) {
                            throw fail("column \(c): a control character in the cell")
                        }
                        cells[c] = t
                    }
                    guard let uid = try? UID(parsing: cells["uid"] ?? "") else {
                        throw fail("uid: '\(cells["uid"] ?? "")' is not a UID, E0 first (E008010000004212)")
                    }
                    guard let asset = cells["asset_id"], !asset.isEmpty else {
                        throw fail("column asset_id: empty; every asset needs its id")
                    }
                    var extra: [String: String] = [:]
                    for (c, v) in cells where !fixed.contains(c) && !v.isEmpty {
                        if c.hasPrefix("block_"), (try? Hex.parse(v)).map({ $0.isEmpty || $0.count > 256 }) ?? true {
                            throw fail("column \(c): '\(v)' is not hex bytes (1 to 256, e.g. 6608C2)")
                        }
                        if c.hasPrefix("locked_"),
                            !["yes", "no", "true", "false", "locked", "unlocked", "1", "0"].contains(v.lowercased())
                        {
                            throw fail("column \(c): '\(v)' is not yes or no")
                        }
                        if c == "manufacturer", ManufacturerCode.lookup(v) == nil {
                            throw fail(
                                "column manufacturer: '\(v)' is neither a code (0x04) nor a name in the ISO/IEC 7816-6 register"
                            )
                        }
                        extra[c] = v
                    }
                    func value(_ c: String?) -> String? { c.flatMap { cells[$0] }.flatMap { $0.isEmpty ? nil : $0 } }
                    try add(
                        AssetRow(
                            uid: uid, assetID: asset, name: value(nameColumn), location: value("location"), extra: extra
                        ), rec.line)
                }
            }
        } catch {
            // "path:line: message" from a row; any other store error as it is.
            if error.message.hasPrefix(path + ":") {
                let rest = error.message.dropFirst(path.count + 1)
                if let colon = rest.firstIndex(of: ":"), let line = Int(rest[..<colon]) {
                    throw ConfigError(issues: [
                        ConfigIssue(
                            file: path, line: line,
                            message: rest[rest.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                    ])
                }
            }
            throw ConfigError(issues: [ConfigIssue(file: path, line: 0, message: error.message)])
        }
    }

    /// The register as rows for the store (checked as `importFile` checks them).
    public static func assetRows(_ text: String, file path: String) throws(ConfigError) -> [AssetRow] {
        let register = try parse(text, file: path)
        guard register.columns.contains("asset_id") else {
            throw ConfigError(issues: [
                ConfigIssue(
                    file: path, line: 1,
                    message:
                        "no 'asset_id' column in the header (\(register.columns.joined(separator: ", "))); an asset register needs uid and asset_id"
                )
            ])
        }
        let records: [[String]]
        do { records = try CSVRecords.parse(text) } catch {
            throw ConfigError(issues: [ConfigIssue(file: path, line: error.line, message: error.message)])
        }
        let cols = register.columns
        let nameColumn = cols.contains("name") ? "name" : (cols.contains("description") ? "description" : nil)
        var out: [AssetRow] = [], issues: [ConfigIssue] = []
        for (i, rec) in records.dropFirst().enumerated() where !(rec.count == 1 && rec[0].isEmpty) {
            var cells: [String: String] = [:]
            for (c, v) in zip(cols, rec) { cells[c] = v.trimmingCharacters(in: .whitespaces) }
            guard let uid = try? UID(parsing: cells["uid"] ?? "") else { continue }  // parse() has checked every uid
            guard let asset = cells["asset_id"], !asset.isEmpty else {
                issues.append(
                    ConfigIssue(file: path, line: i + 2, message: "column asset_id: empty; every asset needs its id"))
                continue
            }
            func value(_ c: String?) -> String? { c.flatMap { cells[$0] }.flatMap { $0.isEmpty ? nil : $0 } }
            var extra = cells
            for c in ["uid", "asset_id", "location", nameColumn].compactMap({ $0 }) { extra[c] = nil }
            out.append(
                AssetRow(
                    uid: uid, assetID: asset, name: value(nameColumn), location: value("location"),
                    extra: extra.filter { !$0.value.isEmpty }))
        }
        if !issues.isEmpty { throw ConfigError(issues: issues) }
        return out
    }
}

/// The rules of a rules file.
public struct RuleSet: Sendable {
    public var file: String?
    public var rules: [Rule]

    public init(file: String? = nil, rules: [Rule] = []) {
        self.file = file
        self.rules = rules
    }

    public static func load(_ path: String) throws(ConfigError) -> RuleSet {
        try parse(ConfigReader.load(path), file: path)
    }

    public static let kinds = ["uid", "manufacturer", "model", "lock", "range", "equals"]

    public static func parse(_ text: String, file: String) throws(ConfigError) -> RuleSet {
        let table = try ConfigReader.parse(text: text, file: file)
        let r = ConfigReader(file: file)
        let top = Section(r, table, name: "", keys: ["rule"])
        var rules: [Rule] = []
        var names = Set<String>()
        let keys = [
            "name", "kind", "severity", "match", "allow", "deny", "allow-file", "deny-file", "block", "locked",
            "field", "min", "max", "value", "register-column",
        ]
        for s in top.tables("rule", keys: keys) {
            guard let name = s.require("name", s.string), let kind = s.require("kind", s.string) else { continue }
            if !names.insert(name).inserted { r.issue(s.line, "rule '\(name)' is defined twice") }
            let severity = s.choice("severity", Event.Severity.self) ?? .warning
            let match = AgentConfig.readMatch(s.subsection("match", keys: ["manufacturer", "model", "uid"]), r)
            let used: Set<String>
            var check: RuleCheck?
            func list(_ key: String) -> [String] {
                var out = s.strings(key) ?? []
                if let path = s.string(key + "-file") {
                    let full =
                        path.hasPrefix("/")
                        ? path : ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(path)
                    if let text = try? ConfigReader.load(full) {
                        out += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
                    } else {
                        r.issue(s.node(key + "-file")?.line ?? s.line, "\(key)-file: cannot read \(full)")
                    }
                }
                return out
            }
            switch kind {
            case "uid":
                used = ["allow", "deny", "allow-file", "deny-file"]
                func patterns(_ key: String) -> [UIDPattern] {
                    list(key).compactMap { t in
                        do { return try UIDPattern(parsing: t) } catch {
                            r.issue(s.node(key)?.line ?? s.node(key + "-file")?.line ?? s.line, "\(key): \(error)");
                            return nil
                        }
                    }
                }
                check = .uid(allow: patterns("allow"), deny: patterns("deny"))
            case "manufacturer":
                used = ["allow", "deny"]
                func codes(_ key: String) -> [ManufacturerCode] {
                    list(key).compactMap { t in
                        if let c = ManufacturerCode.lookup(t) { return c }
                        r.issue(
                            s.node(key)?.line ?? s.line,
                            "\(key): '\(t)' is neither a code (0x04) nor a name in the ISO/IEC 7816-6 register")
                        return nil
                    }
                }
                check = .manufacturer(allow: codes("allow"), deny: codes("deny"))
            case "model":
                used = ["allow", "deny"]
                func models(_ key: String) -> [ICModel] {
                    list(key).compactMap { t in
                        if let m = ICModel.lookup(t) { return m }
                        r.issue(s.node(key)?.line ?? s.line, "\(key): '\(t)' is not a known IC model")
                        return nil
                    }
                }
                check = .model(allow: models("allow"), deny: models("deny"))
            case "lock":
                used = ["block", "locked"]
                if let b = s.require("block", s.block), let l = s.require("locked", s.bool) {
                    check = .lock(block: b, locked: l)
                }
            case "range":
                used = ["field", "min", "max"]
                let lo = s.number("min"), hi = s.number("max")
                if lo == nil && hi == nil { r.issue(s.line, "\(s.name): a range rule needs min, max or both") }
                if let lo, let hi, lo > hi {
                    r.issue(s.node("max")?.line ?? s.line, "\(s.name): max \(hi) is below min \(lo)")
                }
                if let f = s.require("field", s.string) { check = .range(field: f, min: lo, max: hi) }
            case "equals":
                used = ["block", "field", "value", "register-column"]
                let target: RuleCheck.EqualsTarget?
                switch (s.block("block"), s.string("field")) {
                case let (b?, nil): target = .block(b)
                case let (nil, f?): target = .field(f)
                default: r.issue(s.line, "\(s.name): an equals rule needs exactly one of block or field"); target = nil
                }
                let expected: RuleCheck.Expected?
                switch (s.string("value"), s.string("register-column")) {
                case let (v?, nil):
                    if case .block = target, (try? Hex.parse(v)) == nil {
                        r.issue(
                            s.node("value")?.line ?? s.line,
                            "\(s.name).value: '\(v)' is not hex bytes (compared with a block)")
                    }
                    expected = .value(v)
                case let (nil, c?): expected = .register(column: c.lowercased())
                default:
                    r.issue(s.line, "\(s.name): an equals rule needs exactly one of value or register-column");
                    expected = nil
                }
                if let target, let expected { check = .equals(target: target, expected: expected) }
            default:
                used = []
                r.issue(
                    s.node("kind")?.line ?? s.line,
                    "\(s.name).kind: '\(kind)' is not one of: \(kinds.joined(separator: ", "))")
            }
            let ruleSpecific = Set(keys).subtracting(["name", "kind", "severity", "match"])
            for k in ruleSpecific.subtracting(used).sorted() where s.table[k] != nil {
                r.issue(
                    s.table[k]?.line ?? s.line,
                    "\(s.name): '\(k)' does not apply to a \(kind) rule (it takes: \(used.sorted().joined(separator: ", ")))"
                )
            }
            if let check {
                rules.append(Rule(name: name, severity: severity, match: match, check: check, line: s.line))
            }
        }
        try r.finish()
        return RuleSet(file: file, rules: rules)
    }

    /// Loads a rules file and an asset register (either may be absent) and checks the rules' register
    /// columns against the register. Every problem of both files is reported at once.
    public static func load(rulesFile: String?, registerFile: String?) throws(ConfigError) -> (
        rules: RuleSet, register: AssetRegister?
    ) {
        var issues: [ConfigIssue] = []
        var rules = RuleSet()
        var register: AssetRegister?
        if let f = rulesFile { do { rules = try RuleSet.load(f) } catch { issues += error.issues } }
        // Only the columns the rules compare with are kept in memory (none when no rule reads the register).
        let used = Set(
            rules.rules.compactMap { r -> String? in
                if case let .equals(_, .register(column)) = r.check { return column }; return nil
            })
        if let f = registerFile {
            do { register = try AssetRegister.load(f, keeping: used) } catch { issues += error.issues }
        }
        if issues.isEmpty { issues = rules.check(register: register) }
        if !issues.isEmpty { throw ConfigError(issues: issues) }
        return (rules, register)
    }

    /// Rules that read register columns, and the register's columns: names a missing column.
    public func check(register: AssetRegister?) -> [ConfigIssue] {
        var out: [ConfigIssue] = []
        for rule in rules {
            guard case let .equals(_, .register(column)) = rule.check else { continue }
            guard let register else {
                out.append(
                    ConfigIssue(
                        file: file ?? "rules", line: rule.line,
                        message:
                            "rule '\(rule.name)' compares with the asset register, but no register is configured ([rules] register = \"assets.csv\")"
                    ))
                continue
            }
            if !register.columns.contains(column) {
                out.append(
                    ConfigIssue(
                        file: file ?? "rules", line: rule.line,
                        message:
                            "rule '\(rule.name)': the register \(register.file) has no column '\(column)' (it has \(register.columns.joined(separator: ", ")))"
                    ))
            }
        }
        return out
    }
}

/// What the agent knows about a tag when rules are evaluated.
public struct TagFacts: Sendable {
    public var uid: UID
    public var model: ICModel?
    public var blockSize: Int
    /// Block data read this cycle, by block number.
    public var blocks: [Int: [UInt8]] = [:]
    /// Block security status read this cycle, by block number.
    public var security: [Int: UInt8] = [:]
    public var fields: [String: FieldValue] = [:]

    public init(uid: UID, model: ICModel?, blockSize: Int) {
        self.uid = uid
        self.model = model
        self.blockSize = blockSize
    }
}

/// The outcome of one rule for one tag.
public enum RuleOutcome: Equatable, Sendable {
    case pass
    case violation(String)
    /// What the rule needs was not read (the tag answered too little); not counted either way.
    case notEvaluated(String)
}

extension Rule {
    /// Blocks the rule needs read (with the Option flag for lock rules).
    public var neededReads: [PlanRead] {
        switch check {
        case let .lock(b, _): return [PlanRead(first: b, count: 1, security: true)]
        case let .equals(.block(b), _): return [PlanRead(first: b, count: 1)]
        default: return []
        }
    }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        switch check {
        case let .uid(allow, deny):
            if let d = deny.first(where: { $0.matches(t.uid) }) {
                return .violation("UID \(t.uid) is on the deny list (\(d))")
            }
            if !allow.isEmpty && !allow.contains(where: { $0.matches(t.uid) }) {
                return .violation("UID \(t.uid) is not on the allow list")
            }
            return .pass
        case let .manufacturer(allow, deny):
            let m = t.uid.manufacturer
            if deny.contains(m) || (!allow.isEmpty && !allow.contains(m)) {
                return .violation("manufacturer \(m) is not allowed")
            }
            return .pass
        case let .model(allow, deny):
            let name = t.model?.name ?? "unknown IC"
            if let m = t.model, deny.contains(m) { return .violation("IC \(name) is denied") }
            if !allow.isEmpty && !(t.model.map(allow.contains) ?? false) {
                return .violation("IC \(name) is not allowed")
            }
            return .pass
        case let .lock(b, locked):
            guard let s = t.security[b.int] else { return .notEvaluated("lock status of block \(b) was not read") }
            let isLocked = s & 0x01 != 0
            if isLocked == locked { return .pass }
            return .violation(
                "block \(b) is \(isLocked ? "locked" : "unlocked"); the rule wants it \(locked ? "locked" : "unlocked")"
            )
        case let .range(field, lo, hi):
            guard let v = t.fields[field] else { return .notEvaluated("field \(field) was not decoded") }
            let x: Double
            switch v {
            case let .integer(n): x = Double(n)
            case let .number(d): x = d
            case .text, .json: return .notEvaluated("field \(field) is text, not a number")
            }
            if let lo, x < lo { return .violation("\(field) = \(JSONText.number(x)) is below \(JSONText.number(lo))") }
            if let hi, x > hi { return .violation("\(field) = \(JSONText.number(x)) is above \(JSONText.number(hi))") }
            return .pass
        case let .equals(target, expected):
            let want: String
            switch expected {
            case let .value(v): want = v
            case let .register(column):
                guard let row = register?.rows[t.uid.description] else {
                    return .violation("UID \(t.uid) is not in the asset register")
                }
                want = row[column] ?? ""
            }
            switch target {
            case let .block(b):
                guard let data = t.blocks[b.int] else { return .notEvaluated("block \(b) was not read") }
                guard let w = try? Hex.parse(want) else { return .violation("expected value '\(want)' is not hex") }
                return data == w ? .pass : .violation("block \(b) is \(Hex.format(data)); expected \(Hex.format(w))")
            case let .field(f):
                guard let v = t.fields[f] else { return .notEvaluated("field \(f) was not decoded") }
                let have: String
                switch v {
                case let .text(s), let .json(s): have = s
                case let .integer(n): have = String(n)
                case let .number(d): have = JSONText.number(d)
                }
                return have == want ? .pass : .violation("\(f) is '\(have)'; expected '\(want)'")
            }
        }
    }
}
