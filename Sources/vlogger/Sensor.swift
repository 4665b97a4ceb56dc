import ArgumentParser
import Foundation
import ISO15693
import VLoggerCore
import VLoggerModel

struct SensorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sensor",
        abstract: "A sensor or logger tag's state, its own log, and the start and stop of its logging.",
        discussion: """
            The tag's kind is recognised by its UID (docs/reference/sensor-tags.md). info and log only read. start \
            and stop change the tag (start ends its current log) and are sent only with --yes; a poll never starts, \
            stops or configures logging.
            """,
        subcommands: [SensorInfoCommand.self, SensorLogCommand.self, SensorStartCommand.self, SensorStopCommand.self])
}

/// The frame form of an ams SL13A, which no public source settles (docs/reference/sensor-tags.md).
struct SL13AOptions: ParsableArguments {
    enum Order: String, ExpressibleByArgument, CaseIterable { case msb, lsb }
    @Option(
        name: .customLong("sl13a-byte-order"),
        help: "An SL13A's multi-byte fields on air: msb (most significant byte first, the default) or lsb.")
    var byteOrder: Order = .msb
    @Option(
        name: .customLong("sl13a-manufacturer-byte"),
        help: "Whether an SL13A's commands carry the manufacturer byte 0x36 after the code (default true).")
    var manufacturerByte = true

    var kind: SL13AKind { SL13AKind(lsb: byteOrder == .lsb, manufacturerByte: manufacturerByte) }
}

/// The tag and its sensor kind (an SL13A with the frame form given).
func sensorTarget(_ options: ReaderOptions, sl13a: SL13AOptions? = nil) throws -> (ReaderSession, UID, any SensorKind) {
    let session = try options.open()
    let uid = try options.target(session)
    if let sl13a, SL13AKind().recognises(uid) { return (session, uid, sl13a.kind) }
    guard let kind = SensorKinds.kind(for: uid) else {
        throw ValidationError(
            "\(uid) is not a sensor tag vlogger knows (kinds: \(SensorKinds.builtIn.map { "\($0.id) (\($0.name))" }.joined(separator: ", ")))"
        )
    }
    return (session, uid, kind)
}

struct SensorInfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show a sensor tag's kind, logging state, interval, record count and battery.")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions
    @OptionGroup(title: "ams SL13A") var sl13a: SL13AOptions

    @Flag(help: "Also take a measurement now (the chip's measurement time: 400 ms on an FM13).")
    var measure = false

    func run() throws {
        let (session, uid, kind) = try sensorTarget(options, sl13a: sl13a)
        let info = try kind.info(session.client, uid, measure: measure) { d in Thread.sleep(forTimeInterval: seconds(d))
        }
        if options.json {
            printJSON(SensorInfoJSON(uid: uid.description, info))
            return
        }
        say("UID            \(uid)")
        say("Kind           \(info.kind) (\(info.name))")
        // Only what the kind has: a line of "unknown" says nothing (an RF430 has no logging state at all).
        if let l = info.logging { print("Logging        \(l ? "running" : "stopped")") }
        if let i = info.intervalSeconds { print("Interval       \(i) s") }
        if let n = info.recordCount { print("Records        \(n)") }
        if let t = info.start { print("Session start  \(TimeSpec.format(t))") }
        if let b = info.batteryOK { print("Battery        \(b ? "ok" : "low")") }
        for v in info.current {
            let value =
                v.value.rounded() == v.value && abs(v.value) < 1e15
                ? String(Int(v.value)) : String(format: "%.2f", v.value)
            print("Now            \(v.name) \(value)\(v.unit.isEmpty ? "" : " " + v.unit)")
        }
        for (name, bytes) in info.raw.sorted(by: { $0.key < $1.key }) {
            print("Raw            \(name) \(Hex.format(bytes))")
        }
        for n in info.notes { print("Note           \(n)") }
        print(airLine(session))
    }
}

struct SensorLogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Print a sensor tag's whole log: one row per record, its time on the tag, values and raw bytes.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case csv, jsonl }

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Option(help: "csv (RFC 4180, a header row) or jsonl (one JSON object per record); --json is --format jsonl.")
    var format: Format?

    @Option(help: "The first record to read (0: the oldest).")
    var from: Int = 0

    func validate() throws {
        guard from >= 0 && from < 1_000_000 else { throw ValidationError("--from: a record number, 0 or more") }
        if options.json && format == .csv { throw ValidationError("--json and --format csv: give one") }
    }

    /// The format asked for: --format, else JSON lines with --json, else CSV.
    var chosen: Format { format ?? (options.json ? .jsonl : .csv) }

    func run() throws {
        let (session, uid, kind) = try sensorTarget(options)
        guard kind.readsLog else {
            throw VLoggerError(
                "\(uid) is a \(kind.name): vlogger does not read its log (no public source gives its layout); `vlogger sensor info --measure` takes a value now"
            )
        }
        let format = chosen
        let (info, records) = try kind.log(session.client, uid, from: from) { read, total in
            FileHandle.standardError.write(Data("\rread \(read) of \(total) records".utf8))
        }
        FileHandle.standardError.write(Data("\n".utf8))
        // Through the export's row writer: the same CSV (RFC 4180, CRLF) and JSON lines, times and numbers.
        let values = records.first?.values ?? []
        let rowsFormat: RowWriter.Format = format == .csv ? .csv : .jsonl
        var rows =
            format == .csv
            ? RowWriter(
                format: .csv, names: ["index", "time"] + values.map(\.name) + ["raw"],
                header: ["index", "time"]
                    + (values.isEmpty ? ["temperature [°C]"] : values.map { "\($0.name) [\($0.unit)]" }) + ["raw"])
            : RowWriter(
                format: .jsonl, names: ["uid", "kind", "index", "time"] + values.map(\.name) + ["units", "raw"])
        var out: [UInt8] = []
        rows.header(to: &out)
        for r in records {
            rows.beginRow(&out)
            if rowsFormat == .jsonl {
                rows.text(uid.description.utf8, &out)
                rows.text(info.kind.utf8, &out)
            }
            rows.integer(Int64(r.index), &out)
            if let t = r.time { rows.time(t, &out) } else { rows.null(&out) }
            for v in r.values { rows.number(JSONText.number(v.value).utf8, &out) }
            if rowsFormat == .jsonl {
                var units: [UInt8] = [0x7B]
                for (i, v) in r.values.enumerated() {
                    if i > 0 { units.append(0x2C) }
                    JSONText.appendQuoted(v.name, to: &units)
                    units.append(0x3A)
                    JSONText.appendQuoted(v.unit, to: &units)
                }
                units.append(0x7D)
                rows.json(units, &out)
            }
            rows.hex(r.raw, &out)
            rows.endRow(&out)
        }
        FileHandle.standardOutput.write(Data(out))
        FileHandle.standardError.write(
            Data(
                "\(records.count) records\(info.recordCount.map { " of \($0)" } ?? ""); \(airLine(session))\n".utf8))
    }
}

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

struct SensorInfoJSON: Encodable {
    let uid: String
    let kind: String
    let name: String
    let logging: Bool?
    let intervalSeconds: Int?
    let recordCount: Int?
    let sessionStart: String?
    let batteryOK: Bool?
    let current: [String: Double]
    let raw: [String: String]?
    let notes: [String]?
    init(uid: String, _ i: SensorInfo) {
        self.uid = uid
        kind = i.kind
        name = i.name
        logging = i.logging
        intervalSeconds = i.intervalSeconds
        recordCount = i.recordCount
        sessionStart = i.start.map(TimeSpec.format)
        batteryOK = i.batteryOK
        current = Dictionary(i.current.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        raw = i.raw.isEmpty ? nil : i.raw.mapValues { Hex.format($0, separator: "") }
        notes = i.notes.isEmpty ? nil : i.notes
    }
}

struct SensorStartCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract: "Start a new logging session on a sensor tag (its current log ends). Needs --yes.",
        discussion: """
            An FM13 gets Fudan's sequence: the delay and interval registers, the planned record count and the \
            start time (now) in user memory, then START. Without --yes nothing is sent, the reader is not opened.
            """)

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Option(help: "Time between two records: 30s, 5m, 1h (whole seconds, at most 65535 s).")
    var interval: String

    @Option(help: "Minutes before the first record (0…255).")
    var delay = 0

    @Option(help: "Records to take (default and most: the log's capacity; an FM13: 4864).")
    var records: Int?

    @Flag(help: "Send it: starting a log ends the tag's current one.")
    var yes = false

    func validate() throws {
        let ms: Millis
        do { ms = try DurationText.parse(interval) } catch { throw ValidationError("--interval: \(error)") }
        guard ms % 1000 == 0, (1...65535).contains(ms / 1000) else {
            throw ValidationError("--interval: whole seconds, 1 s to 65535 s (\(interval))")
        }
        guard (0...255).contains(delay) else { throw ValidationError("--delay: 0 to 255 minutes, not \(delay)") }
        if let records, records < 1 { throw ValidationError("--records: at least 1, not \(records)") }
        guard yes else {
            throw ValidationError(
                "starting a log ends the tag's current one; nothing was sent: run again with --yes to start it")
        }
    }

    func run() throws {
        let (session, uid, kind) = try sensorTarget(options)
        guard kind.controls.contains(.start) else {
            throw ValidationError("\(kind.name): vlogger cannot start its logging")
        }
        let seconds = Int((try? DurationText.parse(interval)) ?? 0) / 1000
        let settings = LogSettings(
            intervalSeconds: seconds, delayMinutes: delay, records: records ?? kind.logCapacity ?? 1,
            start: Millis(Date().timeIntervalSince1970 * 1000))
        let steps = try kind.startLog(session.client, uid, settings)
        for s in steps { say("\(uid): \(s)") }
        print(airLine(session))
    }
}

struct SensorStopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop",
        abstract: "Stop a sensor tag's logging (its log is kept). Needs --yes.")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Flag(help: "Send it: the tag stops recording.")
    var yes = false

    func validate() throws {
        guard yes else {
            throw ValidationError("stopping a log ends the tag's recording; nothing was sent: run again with --yes")
        }
    }

    func run() throws {
        let (session, uid, kind) = try sensorTarget(options)
        guard kind.controls.contains(.stop) else {
            throw ValidationError("\(kind.name): vlogger cannot stop its logging")
        }
        try kind.stopLog(session.client, uid)
        say("\(uid): logging stopped; the log is kept")
        print(airLine(session))
    }
}
