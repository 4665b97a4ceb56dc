import Foundation
import ISO15693
import VLoggerModel
import TagSecurity
import VLoggerConfig

/// One rule of a rules file: its name, severity, which tags it applies to, and its check (a value of one of the
/// registered `RuleKind`s).
public struct Rule: Equatable, Sendable {
    public var name: String
    public var severity: Event.Severity
    public var match: TagMatch
    public var check: any RuleKind
    public var line: Int

    public init(name: String, severity: Event.Severity, match: TagMatch, check: any RuleKind, line: Int) {
        self.name = name
        self.severity = severity
        self.match = match
        self.check = check
        self.line = line
    }

    public static func == (a: Rule, b: Rule) -> Bool {
        a.name == b.name && a.severity == b.severity && a.match == b.match && a.line == b.line
            && a.check.isEqual(to: b.check)
    }

    /// Blocks the rule needs read (with the Option flag for lock status).
    public var neededReads: [PlanRead] {
        check.needs.compactMap { if case let .blocks(r) = $0 { return r } else { return nil } }
    }

    /// Custom commands whose answers the rule needs.
    public var neededCommands: [TagCommand] {
        check.needs.compactMap { if case let .command(c) = $0 { return c } else { return nil } }
    }

    /// Whether the rule needs the tag's originality verdict.
    public var needsOriginality: Bool { check.needs.contains(.originality) }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        check.evaluate(t, register: register)
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

    /// The names of the kinds a rules file may use (built-in and registered).
    public static var kinds: [String] { RuleKinds.all.map { $0.kind } }

    public static func parse(_ text: String, file: String) throws(ConfigError) -> RuleSet {
        try parse(text, file: file, kinds: RuleKinds.all)
    }

    /// Parses with the given kinds (each `[[rule]]`'s `kind` picks one; its keys are that kind's).
    public static func parse(_ text: String, file: String, kinds: [any RuleKind.Type]) throws(ConfigError) -> RuleSet {
        let table = try ConfigReader.parse(text: text, file: file)
        let r = ConfigReader(file: file)
        let top = Section(r, table, name: "", keys: ["rule"])
        var rules: [Rule] = []
        var names = Set<String>()
        let common = ["name", "kind", "severity", "match"]
        let kindKeys = RuleKinds.keys(kinds)
        for s in top.tables("rule", keys: common + kindKeys) {
            guard let name = s.require("name", s.string), let kind = s.require("kind", s.string) else { continue }
            if !names.insert(name).inserted { r.issue(s.line, "rule '\(name)' is defined twice") }
            let severity = s.choice("severity", Event.Severity.self) ?? .warning
            let match = AgentConfig.readMatch(s.subsection("match", keys: ["manufacturer", "model", "uid"]), r)
            guard let type = kinds.first(where: { $0.kind == kind }) else {
                r.issue(
                    s.node("kind")?.line ?? s.line,
                    "\(s.name).kind: '\(kind)' is not one of: \(kinds.map { $0.kind }.joined(separator: ", "))")
                continue
            }
            let used = Set(type.keys)
            for k in Set(kindKeys).subtracting(used).sorted() where s.table[k] != nil {
                r.issue(
                    s.table[k]?.line ?? s.line,
                    "\(s.name): '\(k)' does not apply to a \(kind) rule (it takes: \(used.sorted().joined(separator: ", ")))"
                )
            }
            if let check = type.parse(RuleSection(section: s, file: file)) {
                // Rules only read: a kind that asks for a custom command that is not a known read (a password,
                // a lock, privacy, destroy …) is refused; such commands are sent only by an operator (`raw --yes`).
                for need in check.needs {
                    guard case let .command(c) = need,
                        let why = CommandCode.confirmationNeeded(for: [0x22, c.code, c.manufacturer.rawValue])
                    else { continue }
                    r.issue(s.line, "\(s.name): a \(kind) rule would send \(why); rules only read")
                }
                rules.append(Rule(name: name, severity: severity, match: match, check: check, line: s.line))
            }
        }
        try r.finish()
        return RuleSet(file: file, rules: rules)
    }

    /// Loads a rules file and an asset register (either may be absent) and checks the rules' register
    /// columns against the register. Every problem of both files is reported at once.
    ///
    /// With `plans` (and the configuration file they come from), a rule that would never be judged is an error
    /// too (`check(plans:configFile:)`): its field decoded by no plan, or only by plans for other tags.
    public static func load(
        rulesFile: String?, registerFile: String?, plans: [ReadPlan]? = nil, configFile: String = "the configuration"
    ) throws(ConfigError) -> (
        rules: RuleSet, register: AssetRegister?
    ) {
        var issues: [ConfigIssue] = []
        var rules = RuleSet()
        var register: AssetRegister?
        if let f = rulesFile { do { rules = try RuleSet.load(f) } catch { issues += error.issues } }
        // Only the columns the rules compare with are kept in memory.
        // And the asset id: the secrets file may name a tag by its asset.
        let used = Set(rules.rules.compactMap(\.check.registerColumn)).union(["asset_id"])
        if let f = registerFile {
            do { register = try AssetRegister.load(f, keeping: used) } catch { issues += error.issues }
        }
        if issues.isEmpty { issues = rules.check(register: register) }
        if let plans { issues += rules.check(plans: plans, configFile: configFile) }
        if !issues.isEmpty { throw ConfigError(issues: issues) }
        return (rules, register)
    }

    /// Rules that read register columns, and the register's columns: names a missing column.
    public func check(register: AssetRegister?) -> [ConfigIssue] {
        var out: [ConfigIssue] = []
        for rule in rules {
            guard let column = rule.check.registerColumn else { continue }
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
    /// Answers to the custom commands rules need this cycle, by `TagCommand.name` (the bytes after the flags).
    public var answers: [String: [UInt8]] = [:]
    /// The verdict on its originality signature, when a rule needs it and it was read.
    public var originality: Originality.Verdict?

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
