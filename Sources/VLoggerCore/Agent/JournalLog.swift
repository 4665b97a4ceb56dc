import Foundation
import Logging

/// A swift-log handler for journald: one line per message on stderr, prefixed with its sd-daemon(3)
/// priority (`<3>` error … `<7>` debug), so `journalctl -p warning -u vlogger` filters by level when stderr
/// goes to the journal; metadata follows as key=value.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let write: @Sendable (String) -> Void

    public init(
        level: Logger.Level,
        write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) {
        logLevel = level
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static func prefix(_ level: Logger.Level) -> String {
        switch level {
        case .critical: return "<2>critical"
        case .error: return "<3>error"
        case .warning: return "<4>warning"
        case .notice: return "<5>notice"
        case .info: return "<6>info"
        case .debug, .trace: return "<7>debug"
        }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { $1 } }
        if let error = event.error { all["error"] = "\(error)" }
        let tail =
            all.isEmpty
            ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // One line per message: embedded newlines would split it into several journal entries.
        let text = "\(event.message)".replacingOccurrences(of: "\n", with: " ⏎ ")
        write("\(Self.prefix(event.level)): \(text)\(tail)\n")
    }
}
