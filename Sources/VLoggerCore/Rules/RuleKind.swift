import Foundation
import ISO15693
import Synchronization
import VLoggerConfig

/// One kind of rule (`kind = "…"` in a rules file), the way a subcommand owns its options: its name, the keys it
/// takes, how it parses them (problems with their line), what it needs from the tag, and how it judges the tag.
/// The built-in kinds are seven small types (`UIDRule`, `ManufacturerRule`, `ModelRule`, `LockRule`, `RangeRule`,
/// `EqualsRule`); a new kind is one more type and one `RuleKinds.register` (docs/design.md, "Rule kinds").
public protocol RuleKind: Sendable, Equatable {
    /// The `kind` value that selects it.
    static var kind: String { get }
    /// The keys a rule of this kind takes, besides name, kind, severity and match.
    static var keys: [String] { get }
    /// Reads the rule's own keys; every problem goes to `section.issue` with its line; nil when the rule cannot
    /// be made (the problems say why).
    static func parse(_ section: RuleSection) -> Self?
    /// What it needs from the tag in a cycle: blocks (with their lock status or not), or a command's answer.
    var needs: [RuleNeed] { get }
    /// The asset register column it compares with, if any (the register keeps only such columns).
    var registerColumn: String? { get }
    /// The decoded field it judges, if any, and the limits it holds that field to (the pages draw them on the
    /// field's chart and show the field's latest value beside an active violation).
    var watchedField: (name: String, min: Double?, max: Double?)? { get }
    func evaluate(_ tag: TagFacts, register: AssetRegister?) -> RuleOutcome
}

extension RuleKind {
    public var needs: [RuleNeed] { [] }
    public var registerColumn: String? { nil }
    public var watchedField: (name: String, min: Double?, max: Double?)? { nil }

    func isEqual(to other: any RuleKind) -> Bool {
        guard let o = other as? Self else { return false }
        return self == o
    }
}

/// What a rule needs from a tag in a cycle.
public enum RuleNeed: Equatable, Sendable {
    /// Blocks read (with the Option flag when their lock status is wanted).
    case blocks(PlanRead)
    /// A custom command's answer (its bytes after the flags), kept in `TagFacts.answers[name]`.
    case command(TagCommand)
    /// The verdict on the tag's originality signature (`OriginalityCheck`), kept in `TagFacts.originality`: read
    /// once per UID, the way its chip keeps it.
    case originality
}

/// A custom command a rule needs answered (ISO/IEC 15693-3 custom commands: a code of 0xA0–0xDF and the IC
/// manufacturer's code), sent to tags of that manufacturer only.
public struct TagCommand: Equatable, Sendable, Hashable {
    /// The key of its answer in `TagFacts.answers` ("read-signature").
    public var name: String
    public var code: UInt8
    public var manufacturer: ManufacturerCode
    public var parameters: [UInt8]

    public init(name: String, code: UInt8, manufacturer: ManufacturerCode, parameters: [UInt8] = []) {
        self.name = name
        self.code = code
        self.manufacturer = manufacturer
        self.parameters = parameters
    }
}

/// A `[[rule]]` table as a rule kind reads it: typed values of its keys, problems with their line.
public struct RuleSection {
    let section: Section
    /// The rules file (relative `…-file` paths are beside it).
    let file: String

    /// The rule's name, for messages.
    public var name: String { section.name }
    /// The line of the `[[rule]]` table.
    public var line: Int { section.line }

    /// Records a problem at `key`'s line (or the table's).
    public func issue(_ key: String?, _ message: String) {
        section.reader.issue(key.flatMap { section.node($0)?.line } ?? section.line, message)
    }
    public func has(_ key: String) -> Bool { section.node(key) != nil }
    public func string(_ key: String) -> String? { section.string(key) }
    public func strings(_ key: String) -> [String]? { section.strings(key) }
    public func number(_ key: String) -> Double? { section.number(key) }
    public func bool(_ key: String) -> Bool? { section.bool(key) }
    public func block(_ key: String) -> BlockNumber? { section.block(key) }
    public func integer(_ key: String, in range: ClosedRange<Int64>? = nil) -> Int64? {
        section.integer(key, in: range)
    }
    /// The value of a required key (its absence is a problem).
    public func require<T>(_ key: String, _ get: (String) -> T?) -> T? { section.require(key, get) }

    /// A list given inline (`key = [...]`) and/or in a file (`key-file = "…"`, one entry per line, `#` comments),
    /// both when both are there.
    public func list(_ key: String) -> [String] {
        var out = section.strings(key) ?? []
        if section.table[key + "-file"] != nil, let path = section.string(key + "-file") {
            let full =
                path.hasPrefix("/")
                ? path : ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(path)
            if let text = try? ConfigReader.load(full) {
                out += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            } else {
                issue(key + "-file", "\(key)-file: cannot read \(full)")
            }
        }
        return out
    }
}

/// The rule kinds a rules file may name: the built-in six, and any registered at start (as swift-log chooses
/// its backend once with `LoggingSystem.bootstrap`).
public enum RuleKinds {
    public static let builtIn: [any RuleKind.Type] = [
        UIDRule.self, ManufacturerRule.self, ModelRule.self, LockRule.self, RangeRule.self, EqualsRule.self,
        OriginalityRule.self,
    ]
    private static let extra = Mutex<[any RuleKind.Type]>([])

    /// Adds a kind (a kind of the same name replaces the earlier one).
    public static func register(_ kind: any RuleKind.Type) {
        extra.withLock { list in
            list.removeAll { $0.kind == kind.kind }
            list.append(kind)
        }
    }

    /// The built-in kinds and the registered ones, a registered kind of a built-in's name in its place.
    public static var all: [any RuleKind.Type] {
        let added = extra.withLock { $0 }
        return builtIn.filter { b in !added.contains { $0.kind == b.kind } } + added
    }

    /// Every key any kind takes (a key of another kind is named as such in an error).
    static func keys(_ kinds: [any RuleKind.Type]) -> [String] {
        var seen = Set<String>()
        var out: [String] = []
        for kind in kinds {
            for key in kind.keys where seen.insert(key).inserted { out.append(key) }
        }
        return out
    }
}
