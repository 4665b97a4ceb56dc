import Foundation
import VLoggerModel
import ISO15693

/// One problem in a configuration or rules file: the file, the line, and what was expected there.
public struct ConfigIssue: Error, Equatable, Sendable, CustomStringConvertible {
    public let file: String
    public let line: Int
    public let message: String
    public var description: String { "\(file):\(line): \(message)" }
    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }
}

/// Every problem found in a file (reading goes on after the first, so one `config check` lists them all).
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public let issues: [ConfigIssue]
    public init(issues: [ConfigIssue]) { self.issues = issues }
    public var description: String { issues.map(\.description).joined(separator: "\n") }
}

/// Reads typed settings out of a TOML table, recording a `ConfigIssue` for each wrong type, bad value
/// or unknown key, with its line.
public final class ConfigReader {
    public let file: String
    public private(set) var issues: [ConfigIssue] = []

    public init(file: String) { self.file = file }

    public func issue(_ line: Int, _ message: String) {
        issues.append(ConfigIssue(file: file, line: line, message: message))
    }

    public static func parse(text: String, file: String) throws(ConfigError) -> TOMLTable {
        do { return try TOML.parse(text) } catch {
            throw ConfigError(issues: [
                ConfigIssue(file: file, line: error.line, message: "column \(error.column): \(error.message)")
            ])
        }
    }

    /// A configuration-kind file's text (UTF-8), or an error naming the file.
    public static func loadText(_ path: String) throws(ConfigError) -> String { try load(path) }

    public static func load(_ path: String) throws(ConfigError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError(issues: [
                ConfigIssue(file: path, line: 0, message: "cannot read the file (missing or not readable)")
            ])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(issues: [ConfigIssue(file: path, line: 0, message: "the file is not UTF-8 text")])
        }
        return text
    }

    public func finish() throws(ConfigError) {
        if !issues.isEmpty { throw ConfigError(issues: issues.sorted { $0.line < $1.line }) }
    }
}

/// A view of one table that remembers which keys were read, so the rest can be reported as unknown.
public struct Section {
    public let reader: ConfigReader
    public let table: TOMLTable
    public let name: String
    private let known: Set<String>

    public init(_ reader: ConfigReader, _ table: TOMLTable, name: String, keys: [String]) {
        self.reader = reader
        self.table = table
        self.name = name
        known = Set(keys)
        for (k, node) in table.entries where !known.contains(k) {
            let where_ = name.isEmpty ? "at the top level" : "in [\(name)]"
            reader.issue(node.line, "unknown key '\(k)' \(where_); expected one of: \(keys.joined(separator: ", "))")
        }
    }

    public var line: Int { table.line }

    public func node(_ key: String) -> TOMLNode? {
        precondition(known.contains(key), "key \(key) read but not declared for [\(name)]")
        return table[key]
    }

    private func label(_ key: String) -> String { name.isEmpty ? key : "\(name).\(key)" }

    public func string(_ key: String) -> String? {
        guard let n = node(key) else { return nil }
        guard case let .string(s) = n.value else {
            reader.issue(n.line, "\(label(key)): expected a string, found \(n.value.typeName)")
            return nil
        }
        return s
    }

    public func require<T>(_ key: String, _ get: (String) -> T?) -> T? {
        if node(key) == nil { reader.issue(table.line, "[\(name)] needs '\(key)'") }
        return get(key)
    }

    public func integer(_ key: String, in range: ClosedRange<Int64>? = nil) -> Int64? {
        guard let n = node(key) else { return nil }
        guard case let .integer(v) = n.value else {
            reader.issue(n.line, "\(label(key)): expected an integer, found \(n.value.typeName)")
            return nil
        }
        if let range, !range.contains(v) {
            reader.issue(
                n.line, "\(label(key)): \(v) is out of range; expected \(range.lowerBound)…\(range.upperBound)")
            return nil
        }
        return v
    }

    public func number(_ key: String) -> Double? {
        guard let n = node(key) else { return nil }
        switch n.value {
        case let .integer(v): return Double(v)
        case let .float(d) where d.isFinite: return d
        default:
            reader.issue(n.line, "\(label(key)): expected a finite number, found \(n.value.typeName)")
            return nil
        }
    }

    public func bool(_ key: String) -> Bool? {
        guard let n = node(key) else { return nil }
        guard case let .bool(b) = n.value else {
            reader.issue(n.line, "\(label(key)): expected true or false, found \(n.value.typeName)")
            return nil
        }
        return b
    }

    /// A block number: an integer (0xF8 or 248) or a string ("0xF8").
    public func block(_ key: String) -> BlockNumber? {
        guard let n = node(key) else { return nil }
        switch n.value {
        case let .integer(v):
            if let b = BlockNumber(exactly: Int(v)) { return b }
            reader.issue(n.line, "\(label(key)): block \(v) is out of range; expected 0…65535")
        case let .string(s):
            do { return try BlockNumber(parsing: s) } catch { reader.issue(n.line, "\(label(key)): \(error)") }
        default:
            reader.issue(n.line, "\(label(key)): expected a block number (0xF8 or 248), found \(n.value.typeName)")
        }
        return nil
    }

    /// A duration written as a string with a unit ("500ms", "2s", "5m", "1h", "7d").
    public func duration(_ key: String) -> Millis? {
        guard let s = string(key), let n = node(key) else { return nil }
        do { return try DurationText.parse(s) } catch {
            reader.issue(n.line, "\(label(key)): \(error)")
            return nil
        }
    }

    /// A duration within `range` (milliseconds); outside it is an issue naming the range, and nil.
    public func duration(_ key: String, in range: ClosedRange<Millis>, _ text: String) -> Millis? {
        guard let v = duration(key) else { return nil }
        guard range.contains(v) else {
            reader.issue(node(key)?.line ?? 0, "\(label(key)): \(text)")
            return nil
        }
        return v
    }

    public func choice<T: RawRepresentable>(_ key: String, _ type: T.Type) -> T?
    where T.RawValue == String, T: CaseIterable {
        guard let s = string(key), let n = node(key) else { return nil }
        if let v = T(rawValue: s) { return v }
        reader.issue(
            n.line, "\(label(key)): '\(s)' is not one of: \(T.allCases.map(\.rawValue).joined(separator: ", "))")
        return nil
    }

    public func subsection(_ key: String, keys: [String]) -> Section? {
        guard let n = node(key) else { return nil }
        guard case let .table(t) = n.value else {
            reader.issue(n.line, "\(label(key)): expected a table, found \(n.value.typeName)")
            return nil
        }
        return Section(reader, t, name: label(key), keys: keys)
    }

    /// An array of tables (`[[name]]` sections or an inline array of inline tables).
    public func tables(_ key: String, keys: [String]) -> [Section] {
        guard let n = node(key) else { return [] }
        guard case let .array(items) = n.value else {
            reader.issue(n.line, "\(label(key)): expected [[\(label(key))]] sections, found \(n.value.typeName)")
            return []
        }
        var out: [Section] = []
        for (i, item) in items.enumerated() {
            guard case let .table(t) = item.value else {
                reader.issue(item.line, "\(label(key))[\(i)]: expected a table, found \(item.value.typeName)")
                continue
            }
            out.append(Section(reader, t, name: "\(label(key))[\(i + 1)]", keys: keys))
        }
        return out
    }

    public func strings(_ key: String) -> [String]? {
        guard let n = node(key) else { return nil }
        if case let .string(s) = n.value { return [s] }
        guard case let .array(items) = n.value else {
            reader.issue(n.line, "\(label(key)): expected a string or an array of strings, found \(n.value.typeName)")
            return nil
        }
        var out: [String] = []
        for item in items {
            guard case let .string(s) = item.value else {
                reader.issue(item.line, "\(label(key)): expected strings in the array, found \(item.value.typeName)")
                return nil
            }
            out.append(s)
        }
        return out
    }
}
