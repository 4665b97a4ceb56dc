import Foundation

/// A secret (a password) named by a configuration: the first line of a file (whitespace trimmed) or an environment
/// variable, never the configuration itself. Errors name the file or the variable and the setting, never the
/// secret. Used by every setting that takes a password (`[sync]`, `[[output.mqtt]]`).
enum Secret {
    /// The secret of `file` or `env` (nil when neither is set: no password). `label` names the setting in errors
    /// ("sync", "output.mqtt mqtt-2").
    static func read(file: String?, env: String?, label: String, environment: [String: String]) throws(VLoggerError)
        -> String?
    {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw VLoggerError(
                    "\(label).password-file: cannot read \(file) (it must be readable by the service's user, mode 0600)"
                )
            }
            let line =
                String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { throw VLoggerError("\(label).password-file: \(file) is empty") }
            return trimmed
        }
        if let env {
            guard let v = environment[env], !v.isEmpty else {
                throw VLoggerError("\(label).password-env: the variable \(env) is not set")
            }
            return v
        }
        return nil
    }
}
