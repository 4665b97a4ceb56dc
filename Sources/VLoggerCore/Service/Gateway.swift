import Foundation

/// `vlogger run`'s command-line overrides of the configuration, applied the same way at start and at
/// every SIGHUP reload (so a reload does not silently drop --interval).
public struct RunOverrides: Sendable {
    public var reader: ReaderKind?
    public var field: String?
    public var intervalMs: Millis?
    public var store: String?
    /// "" turns the listener off.
    public var listen: String?

    public init(reader: ReaderKind? = nil, field: String? = nil, intervalMs: Millis? = nil, store: String? = nil, listen: String? = nil) {
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
                throw VLoggerError("--reader and --field apply to a configuration with one reader; \(c.file) has \(c.readers.count) ([[reader]] \(c.readers.map(\.id).joined(separator: ", ")))")
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
        let (rules, register) = try RuleSet.load(rulesFile: c.rulesFile, registerFile: c.registerFile)
        return (c, rules, register)
    }
}

extension Agent {
    /// SIGHUP: loads the configuration, rules and register again and swaps them in; a file with an error
    /// is logged and the running configuration stays. Call between cycles.
    public func reloadFromDisk(_ path: String, overrides: RunOverrides, metrics: ServiceMetrics?) {
        do {
            let (fresh, r, reg) = try overrides.load(path)
            writer.register(fields: fresh.fieldInfos)
            reload(config: fresh, rules: r, register: reg)
            metrics?.intervalMs = fresh.intervalMs
            metrics?.reloaded(ok: true)
            log(.notice, "SIGHUP: reloaded \(path): \(fresh.plans.count) plans, \(r.rules.count) rules\(reg.map { ", \($0.rows.count) register entries" } ?? "") (reader and store settings apply at the next start)")
        } catch {
            metrics?.reloaded(ok: false)
            log(.error, "SIGHUP: reload failed, the running configuration stays: \(error)")
        }
    }
}

/// What the HTTP listener serves: /healthz, /metrics and the status page. Read-only.
public enum ServiceRoutes {
    public static func handler(metrics: ServiceMetrics, config: AgentConfig) -> HTTPServer.Handler {
        let storePath = config.storePath, gateway = config.gatewayID, chart = config.chartField
        let unit = config.fieldInfos.first { $0.name == config.chartField }?.unit
        return { path in
            switch path {
            case "/healthz":
                let (ok, json) = metrics.health()
                return .text(json + "\n", status: ok ? 200 : 503, type: "application/json")
            case "/metrics":
                return .text(metrics.prometheusText(), type: "text/plain; version=0.0.4; charset=utf-8")
            case "/", "/index.html":
                return .text(StatusPage.render(metrics: metrics, storePath: storePath, gateway: gateway, chartField: chart, unit: unit),
                             type: "text/html; charset=utf-8")
            default:
                return .text("not found; try /, /healthz or /metrics\n", status: 404)
            }
        }
    }
}
