import Foundation
import Logging

/// A swift-log handler: one line per message on stderr. When stderr is the journal (systemd sets
/// `JOURNAL_STREAM` to its device and inode), each line starts with its sd-daemon(3) priority (`<3>` error …
/// `<7>` debug), so `journalctl -p warning -u vlogger` filters by level and the journal adds the time; on a
/// terminal or in a file, with the local time instead (`2026-11-26 08:30:12.345 notice: …`). Metadata follows
/// as key=value.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let write: @Sendable (String) -> Void
    private let journal: Bool
    private let now: @Sendable () -> Date

    public init(
        level: Logger.Level, journal: Bool = JournalLogHandler.stderrIsTheJournal,
        now: @escaping @Sendable () -> Date = { Date() },
        write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) {
        logLevel = level
        self.journal = journal
        self.now = now
        self.write = write
    }

    /// Whether stderr is the stream `JOURNAL_STREAM` names (systemd.exec(5): "device and inode numbers … separated
    /// by a colon"), so a program started from a unit but writing elsewhere is not taken for the journal.
    public static var stderrIsTheJournal: Bool {
        guard let v = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        let parts = v.split(separator: ":")
        var st = stat()
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]), fstat(2, &st) == 0 else {
            return false
        }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    /// Local time with milliseconds, as a person reads a log line.
    static func stamp(_ d: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
        return f.string(from: d)
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
        if journal {
            write("\(Self.prefix(event.level)): \(text)\(tail)\n")
        } else {
            let name = Self.prefix(event.level).drop { $0 != ">" }.dropFirst()
            write("\(Self.stamp(now())) \(name): \(text)\(tail)\n")
        }
    }
}
