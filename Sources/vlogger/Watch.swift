import ArgumentParser
import FieldState
import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import ISO15693
import Readers
import VLoggerCLI
import VLoggerCore
import VLoggerStore
import VLoggerModel
import VLoggerConfig

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "A live view for commissioning a reader: tags in the field, read rate, last values, errors, air time.",
        discussion: """
            Polls one configured reader with the configuration's plans and rules, as the service would, and redraws \
            the terminal in place after each cycle: each tag in the field with how many of the last --window cycles \
            saw it, its model and its last decoded values; the errors and rule violations as they happen; the air time \
            of the cycle. Works over SSH (plain ANSI escapes, no mouse). Press q (or Ctrl-C) to quit. Nothing is \
            stored: the readings go to a scratch store that is removed at the end. Stop the service first if it \
            holds the same reader.
            """)

    @Option(help: "Configuration file (TOML): plans, rules and readers.")
    var config = ConfigPath.found

    @Option(
        name: .customLong("reader-id"), help: "Which configured reader to watch (its [[reader]] id; default the first)."
    )
    var readerID: String?

    @Option(
        name: [.customLong("driver"), .customLong("reader")],
        help: "Reader driver, overriding the watched reader's (--reader: its older name).")
    var reader: ReaderKind?

    @Option(help: "Simulated field folder, overriding the watched reader's.")
    var field: String?

    @Option(help: "Hardware reader, overriding the watched reader's device.")
    var device: String?

    @Option(
        help: "Time from the start of one cycle to the start of the next (e.g. 500ms); default the configuration's.")
    var interval: String?

    @Option(help: "Cycles the read rate is counted over.")
    var window = 20

    @Option(help: "Stop after this many cycles (default: until q).")
    var cycles: Int?

    func validate() throws {
        guard (1...10_000).contains(window) else { throw ValidationError("--window: 1 to 10000 cycles") }
        if let cycles, cycles < 1 { throw ValidationError("--cycles: at least 1") }
        if let interval {
            do { _ = try DurationText.parse(interval) } catch { throw ValidationError("--interval: \(error)") }
        }
    }

    func run() throws {
        var c: AgentConfig
        c = try ConfigPath.load(config)
        let (rules, register): (RuleSet, AssetRegister?)
        do { (rules, register) = try RuleSet.load(rulesFile: c.rulesFile, registerFile: c.registerFile) } catch {
            throw VLoggerError("\(error)")
        }
        guard var rc = readerID.map({ id in c.readers.first { $0.id == id } }) ?? c.readers.first else {
            throw VLoggerError(
                "--reader-id \(readerID ?? ""): no such reader in \(config) (\(c.readers.map(\.id).joined(separator: ", ")))"
            )
        }
        if let reader { rc.driver = reader }
        if let field { rc.field = field }
        if let device { rc.device = device }
        if let interval { c.intervalMs = try DurationText.parse(interval) }
        let session = try ReaderSession.open(rc)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-watch-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let store: Store
        do { store = try Store(path: scratch.appendingPathComponent("watch.db").path) } catch {
            throw VLoggerError("\(error)")
        }
        defer { store.close() }
        try? store.registerFields(c.fieldInfos)
        let writer = StoreWriter(store: store, batchSize: 100_000, flushIntervalMs: 3_600_000)
        let agent = Agent(
            config: c, reader: rc, rules: rules, register: register, session: session, writer: writer,
            clock: SystemClock())
        var readings: [Reading] = [], events: [Event] = []
        // The field's live state, fed as the service's polling jobs feed theirs: the values and alarms shown.
        let fieldState = FieldState(
            readers: [FieldState.Reader(id: rc.id, location: rc.location, intervalMs: c.intervalMs)],
            units: Dictionary(
                c.fieldInfos.compactMap { f in f.unit.map { (f.name, $0) } }, uniquingKeysWith: { a, _ in a }))
        func asset(_ uid: UID?) -> String? { uid.flatMap { register?.rows[$0.description]?["asset_id"] } }
        agent.onReading = {
            readings.append($0)
            fieldState.readingTaken($0, asset: asset($0.uid))
        }
        agent.onEvent = {
            events.append($0)
            fieldState.eventRecorded($0, asset: asset($0.uid))
        }

        let terminal = Terminal()
        terminal.enter()
        defer {
            agent.wakeQuietTags()
            terminal.leave()
        }
        var view = WatchView(
            window: window, field: fieldState, assets: WatchView.assetNames(registerFile: c.registerFile),
            time: c.localTime)
        let title =
            "vlogger watch — reader \(rc.id): \(session.reader.name)\(rc.location.map { ", " + $0 } ?? "")"
            + " · every \(DurationText.format(c.intervalMs))"
        var n = 0
        while true {
            let start = Millis.now()
            readings.removeAll()
            events.removeAll()
            let report = agent.cycle()
            _ = writer.commitNow()
            fieldState.cycleDone(
                reader: rc.id, tags: report.tags, up: agent.readerHealthy, lastGoodPollMs: agent.lastGoodPollMs,
                name: session.reader.name, intervalMs: c.intervalMs, location: rc.location)
            var models: [UID: String] = [:]
            for uid in report.tags {
                if let m = try? session.client.memory(of: uid) {
                    models[uid] = m.model?.name ?? uid.manufacturer.description
                }
            }
            view.record(report, readings: readings, events: events, models: models)
            let (w, h) = terminal.size()
            terminal.draw(
                view.render(
                    title: title + " · " + c.localTime.dateTime(start) + " (\(c.localTime.name))", width: w, height: h,
                    now: start))
            n += 1
            if let cycles, n >= cycles { return }
            let wait = max(0, c.intervalMs - (Millis.now() - start))
            if terminal.waitForQuit(ms: Int(min(wait, 60_000))) { return }
        }
    }
}

/// The terminal of `vlogger watch`: the alternate screen, no echo, keys one by one (q and Ctrl-C quit), redraws
/// in place. Without a terminal on stdin/stdout it prints each screen after the last, separated by a blank line.
final class Terminal {
    private var saved = termios()
    private var raw = false
    let interactive = isatty(0) == 1 && isatty(1) == 1

    func enter() {
        guard interactive else { return }
        if tcgetattr(0, &saved) == 0 {
            var t = saved
            t.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
            t.c_cc.6 = 0  // VMIN: reads return at once
            t.c_cc.5 = 0  // VTIME
            raw = tcsetattr(0, TCSANOW, &t) == 0
        }
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J")  // alternate screen, hide the cursor, clear
    }

    func leave() {
        guard interactive else { return }
        write("\u{1B}[?25h\u{1B}[?1049l")
        if raw { tcsetattr(0, TCSANOW, &saved) }
    }

    func size() -> (Int, Int) {
        var ws = winsize()
        if interactive, ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 {
            return (Int(ws.ws_col), Int(ws.ws_row))
        }
        return (120, 40)
    }

    func draw(_ lines: [String]) {
        if interactive {
            // Home, each line cleared to its end, then everything below cleared: no flicker.
            write("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J")
        } else {
            write(lines.joined(separator: "\n") + "\n\n")
        }
    }

    /// Waits up to `ms` for a key; true when it is q, Q or Ctrl-C (or stdin closed on a terminal).
    func waitForQuit(ms: Int) -> Bool {
        guard interactive else {
            usleep(useconds_t(max(0, ms)) * 1000)
            return false
        }
        var deadline = ms
        while deadline >= 0 {
            var p = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            let t0 = Millis.now()
            let r = poll(&p, 1, Int32(deadline))
            if r > 0 {
                var b: UInt8 = 0
                let n = read(0, &b, 1)
                if n == 0 { return true }
                if n == 1, b == UInt8(ascii: "q") || b == UInt8(ascii: "Q") || b == 3 { return true }
            } else if r == 0 {
                return false
            }
            deadline -= Int(Millis.now() - t0)
            if deadline <= 0 { return false }
        }
        return false
    }

    private func write(_ s: String) {
        let bytes = Array(s.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            off += n
        }
    }
}
