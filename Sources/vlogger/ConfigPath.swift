import ArgumentParser
import Foundation
import VLoggerCore
import VLoggerConfig
import VLoggerModel

/// Where a command finds its configuration when `--config` is not given: `VLOGGER_CONFIG`, else the installed
/// gateway's `/etc/vlogger/vlogger.toml` when it exists, else `Config/vlogger.toml` (a checkout).
enum ConfigPath {
    static let installed = "/etc/vlogger/vlogger.toml"
    static let checkout = "Config/vlogger.toml"

    static var found: String {
        if let v = ProcessInfo.processInfo.environment["VLOGGER_CONFIG"], !v.isEmpty { return v }
        if FileManager.default.fileExists(atPath: installed) { return installed }
        return checkout
    }

    /// How `path` was chosen, for an error that cannot read it.
    static func origin(_ path: String) -> String {
        if let v = ProcessInfo.processInfo.environment["VLOGGER_CONFIG"], !v.isEmpty, v == path {
            return "from VLOGGER_CONFIG"
        }
        if path == installed { return "the installed gateway's configuration" }
        if path == checkout {
            return
                "the default when neither --config, VLOGGER_CONFIG nor \(installed) is there; run from the repository, or give --config"
        }
        return "from --config"
    }

    /// Loads the configuration at `path`; a missing file is named with how it was chosen.
    static func load(_ path: String) throws -> AgentConfig {
        guard FileManager.default.fileExists(atPath: path) else {
            throw VLoggerError("\(path): no such configuration file (\(origin(path)))")
        }
        do { return try AgentConfig.load(path) } catch { throw VLoggerError("\(error)") }
    }

    static let help = ArgumentHelp(
        "Configuration file (TOML).",
        discussion:
            "Default: $VLOGGER_CONFIG, else \(installed) when it exists, else \(checkout).")
}
