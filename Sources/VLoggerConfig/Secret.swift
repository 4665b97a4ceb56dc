import Foundation
import VLoggerModel

/// A secret (a password) named by a configuration: the first line of a file (whitespace trimmed) or an environment
/// variable, never the configuration itself. Errors name the file or the variable and the setting, never the
/// secret. Used by every setting that takes a password (`[sync]`, `[[output.mqtt]]`).
public enum Secret {
    /// The secret of `file` or `env` (nil when neither is set: no password). `label` names the setting in errors
    /// ("sync", "output.mqtt mqtt-2").
    public static func read(file: String?, env: String?, label: String, environment: [String: String])
        throws(VLoggerError)
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

/// A file as it is now: its inode, size and modification time. A rotated secret file (replaced, or written in
/// place) has another stamp; comparing stamps costs a `stat`, not a read.
public struct FileStamp: Equatable, Sendable, CustomStringConvertible {
    public var inode: UInt64 = 0, size: Int64 = 0, seconds: Int = 0, nanoseconds: Int = 0

    /// The stamp of `path`; nil when there is no path or the file cannot be seen.
    public static func of(_ path: String?) -> FileStamp? {
        guard let path else { return nil }
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        #if canImport(Darwin)
            let m = st.st_mtimespec
        #else
            let m = st.st_mtim
        #endif
        return FileStamp(
            inode: UInt64(st.st_ino), size: Int64(st.st_size), seconds: Int(m.tv_sec), nanoseconds: Int(m.tv_nsec))
    }

    /// For an output's signature (a reload restarts an output whose secret file changed): no content.
    public var description: String { "\(inode):\(size):\(seconds).\(nanoseconds)" }
}

/// A secret read from a file again whenever the file changes (docs/integrating.md, "Rotating secrets"): a webhook
/// secret, an MQTT or sync password is rotated by writing the new one into its file, and the next message or
/// connection uses it, with no SIGHUP or restart. A file that cannot be read for a moment (replaced) keeps the last
/// secret that could; a secret from the environment never changes.
public final class RotatingSecret: @unchecked Sendable {
    let file: String?
    let env: String?
    let label: String
    let environment: [String: String]
    private let lock = NSLock()
    private var stamp: FileStamp?
    private var value: String?

    /// Reads the secret now: an unreadable or empty file is an error here (at start), not later.
    public init(file: String?, env: String?, label: String, environment: [String: String]) throws(VLoggerError) {
        self.file = file
        self.env = env
        self.label = label
        self.environment = environment
        stamp = FileStamp.of(file)
        value = try Secret.read(file: file, env: env, label: label, environment: environment)
    }

    /// The secret now (nil: none configured), read again when the file's stamp changed.
    public var current: String? {
        lock.lock()
        defer { lock.unlock() }
        guard let file else { return value }
        let now = FileStamp.of(file)
        if now != stamp, let now, let v = try? Secret.read(file: file, env: nil, label: label, environment: [:]) {
            stamp = now
            value = v
        }
        return value
    }
}
