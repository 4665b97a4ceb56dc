import Foundation
import ISO15693
import VLoggerModel

/// `kind = "uid"`: an allow list (a tag must match one pattern) and a deny list (it must match none).
public struct UIDRule: RuleKind {
    public static let kind = "uid"
    public static let keys = ["allow", "deny", "allow-file", "deny-file"]
    public var allow: [UIDPattern]
    public var deny: [UIDPattern]

    public init(allow: [UIDPattern] = [], deny: [UIDPattern] = []) {
        self.allow = allow
        self.deny = deny
    }

    public static func parse(_ s: RuleSection) -> UIDRule? {
        func patterns(_ key: String) -> [UIDPattern] {
            s.list(key).compactMap { t in
                do { return try UIDPattern(parsing: t) } catch {
                    s.issue(s.has(key) ? key : key + "-file", "\(key): \(error)")
                    return nil
                }
            }
        }
        return UIDRule(allow: patterns("allow"), deny: patterns("deny"))
    }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        if let d = deny.first(where: { $0.matches(t.uid) }) {
            return .violation("UID \(t.uid) is on the deny list (\(d))")
        }
        if !allow.isEmpty && !allow.contains(where: { $0.matches(t.uid) }) {
            return .violation("UID \(t.uid) is not on the allow list")
        }
        return .pass
    }
}

/// `kind = "manufacturer"`: the IC manufacturer code of the UID (ISO/IEC 7816-6) allowed or denied.
public struct ManufacturerRule: RuleKind {
    public static let kind = "manufacturer"
    public static let keys = ["allow", "deny"]
    public var allow: [ManufacturerCode]
    public var deny: [ManufacturerCode]

    public init(allow: [ManufacturerCode] = [], deny: [ManufacturerCode] = []) {
        self.allow = allow
        self.deny = deny
    }

    public static func parse(_ s: RuleSection) -> ManufacturerRule? {
        func codes(_ key: String) -> [ManufacturerCode] {
            s.list(key).compactMap { t in
                if let c = ManufacturerCode.lookup(t) { return c }
                s.issue(key, "\(key): '\(t)' is neither a code (0x04) nor a name in the ISO/IEC 7816-6 register")
                return nil
            }
        }
        return ManufacturerRule(allow: codes("allow"), deny: codes("deny"))
    }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        let m = t.uid.manufacturer
        if deny.contains(m) || (!allow.isEmpty && !allow.contains(m)) {
            return .violation("manufacturer \(m) is not allowed")
        }
        return .pass
    }
}

/// `kind = "model"`: the IC model (from the UID and the system information) allowed or denied.
public struct ModelRule: RuleKind {
    public static let kind = "model"
    public static let keys = ["allow", "deny"]
    public var allow: [ICModel]
    public var deny: [ICModel]

    public init(allow: [ICModel] = [], deny: [ICModel] = []) {
        self.allow = allow
        self.deny = deny
    }

    public static func parse(_ s: RuleSection) -> ModelRule? {
        func models(_ key: String) -> [ICModel] {
            s.list(key).compactMap { t in
                if let m = ICModel.lookup(t) { return m }
                s.issue(key, "\(key): '\(t)' is not a known IC model")
                return nil
            }
        }
        return ModelRule(allow: models("allow"), deny: models("deny"))
    }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        let name = t.model?.name ?? "unknown IC"
        if let m = t.model, deny.contains(m) { return .violation("IC \(name) is denied") }
        if !allow.isEmpty && !(t.model.map(allow.contains) ?? false) {
            return .violation("IC \(name) is not allowed")
        }
        return .pass
    }
}

/// `kind = "lock"`: a block locked or not, from its block security status (a read with the Option flag).
public struct LockRule: RuleKind {
    public static let kind = "lock"
    public static let keys = ["block", "locked"]
    public var block: BlockNumber
    public var locked: Bool

    public init(block: BlockNumber, locked: Bool) {
        self.block = block
        self.locked = locked
    }

    public static func parse(_ s: RuleSection) -> LockRule? {
        guard let b = s.require("block", s.block), let l = s.require("locked", s.bool) else { return nil }
        return LockRule(block: b, locked: l)
    }

    public var needs: [RuleNeed] { [.blocks(PlanRead(first: block, count: 1, security: true))] }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        guard let s = t.security[block.int] else { return .notEvaluated("lock status of block \(block) was not read") }
        let isLocked = s & 0x01 != 0
        if isLocked == locked { return .pass }
        return .violation(
            "block \(block) is \(isLocked ? "locked" : "unlocked"); the rule wants it \(locked ? "locked" : "unlocked")"
        )
    }
}

/// `kind = "range"`: a decoded numeric field within [min, max].
public struct RangeRule: RuleKind {
    public static let kind = "range"
    public static let keys = ["field", "min", "max"]
    public var field: String
    public var min: Double?
    public var max: Double?

    public var watchedField: (name: String, min: Double?, max: Double?)? { (field, min, max) }

    public init(field: String, min: Double?, max: Double?) {
        self.field = field
        self.min = min
        self.max = max
    }

    public static func parse(_ s: RuleSection) -> RangeRule? {
        let lo = s.number("min"), hi = s.number("max")
        if lo == nil && hi == nil { s.issue(nil, "\(s.name): a range rule needs min, max or both") }
        if let lo, let hi, lo > hi { s.issue("max", "\(s.name): max \(hi) is below min \(lo)") }
        guard let f = s.require("field", s.string) else { return nil }
        return RangeRule(field: f, min: lo, max: hi)
    }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        guard let v = t.fields[field] else { return .notEvaluated("field \(field) was not decoded") }
        let x: Double
        switch v {
        case let .integer(n): x = Double(n)
        case let .number(d): x = d
        case .text, .json: return .notEvaluated("field \(field) is text, not a number")
        }
        if let min, x < min { return .violation("\(field) = \(JSONText.number(x)) is below \(JSONText.number(min))") }
        if let max, x > max { return .violation("\(field) = \(JSONText.number(x)) is above \(JSONText.number(max))") }
        return .pass
    }
}

/// `kind = "equals"`: a block's bytes, or a decoded field, equal to a value or to the tag's entry in a column of
/// the asset register.
public struct EqualsRule: RuleKind {
    public static let kind = "equals"
    public static let keys = ["block", "field", "value", "register-column"]

    public enum Target: Equatable, Sendable {
        case block(BlockNumber)
        case field(String)
    }
    public enum Expected: Equatable, Sendable {
        case value(String)
        case register(column: String)
    }
    public var target: Target
    public var expected: Expected

    public var watchedField: (name: String, min: Double?, max: Double?)? {
        if case let .field(f) = target { return (f, nil, nil) }
        return nil
    }

    public init(target: Target, expected: Expected) {
        self.target = target
        self.expected = expected
    }

    public static func parse(_ s: RuleSection) -> EqualsRule? {
        let target: Target?
        switch (s.block("block"), s.string("field")) {
        case let (b?, nil): target = .block(b)
        case let (nil, f?): target = .field(f)
        default:
            s.issue(nil, "\(s.name): an equals rule needs exactly one of block or field")
            target = nil
        }
        let expected: Expected?
        switch (s.string("value"), s.string("register-column")) {
        case let (v?, nil):
            if case .block = target, (try? Hex.parse(v)) == nil {
                s.issue("value", "\(s.name).value: '\(v)' is not hex bytes (compared with a block)")
            }
            expected = .value(v)
        case let (nil, c?): expected = .register(column: c.lowercased())
        default:
            s.issue(nil, "\(s.name): an equals rule needs exactly one of value or register-column")
            expected = nil
        }
        guard let target, let expected else { return nil }
        return EqualsRule(target: target, expected: expected)
    }

    public var needs: [RuleNeed] {
        if case let .block(b) = target { return [.blocks(PlanRead(first: b, count: 1))] }
        return []
    }

    public var registerColumn: String? {
        if case let .register(column) = expected { return column }
        return nil
    }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
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
