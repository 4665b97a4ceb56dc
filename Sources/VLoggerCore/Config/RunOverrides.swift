import Foundation
import VLoggerModel
import Readers

/// `vlogger run`'s command-line overrides of the configuration, applied the same way at start and at
/// every SIGHUP reload (so a reload does not silently drop --interval).
public struct RunOverrides: Sendable {
    public var reader: ReaderKind?
    public var field: String?
    public var intervalMs: Millis?
    public var store: String?
    /// "" turns the listener off.
    public var listen: String?

    public init(
        reader: ReaderKind? = nil, field: String? = nil, intervalMs: Millis? = nil, store: String? = nil,
        listen: String? = nil
    ) {
        self.reader = reader
        self.field = field
        self.intervalMs = intervalMs
        self.store = store
        self.listen = listen
    }

    /// Applies the overrides; --reader and --field only to a configuration with one reader.
    public func apply(to c: inout AgentConfig) throws(VLoggerError) {
        if reader != nil || field != nil {
            guard c.readers.count == 1 else {
                throw VLoggerError(
                    "--reader and --field apply to a configuration with one reader; \(c.file) has \(c.readers.count) ([[reader]] \(c.readers.map(\.id).joined(separator: ", ")))"
                )
            }
            if let reader { c.readers[0].driver = reader }
            if let field { c.readers[0].field = field }
        }
        if let intervalMs { c.intervalMs = intervalMs }
        if let store { c.storePath = store }
        if let listen { c.listen = listen.isEmpty ? nil : listen }
    }

    /// The configuration file with these overrides, and the rules and register it names.
    public func load(_ path: String) throws -> (AgentConfig, RuleSet, AssetRegister?) {
        var c = try AgentConfig.load(path)
        try apply(to: &c)
        let (rules, register) = try RuleSet.load(
            rulesFile: c.rulesFile, registerFile: c.registerFile, plans: c.plans, configFile: path)
        return (c, rules, register)
    }
}
