import Foundation
import Testing

/// `vlogger sensor` on a simulated Fudan FM13HT160-T5T (Tests/IntegrationTests/Fixtures/fm13-field): the log the
/// command prints is the log the simulator holds, cell by cell, with each record's time on the tag worked out as
/// Fudan's SDK does (start + index × interval, docs/reference/sensor-tags.md) and its raw bytes in the chip's
/// normal-mode layout (10-bit quarter degrees in bits 9–0, the record number in bits 30–16, little-endian).
@Suite struct SensorCLITests {
    static let field = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Fixtures/fm13-field")

    /// The fixture's log: start, interval and temperatures, read from the image itself.
    func fixture() throws -> (start: Int, interval: Int, celsius: [Double]) {
        let data = try Data(contentsOf: Self.field.appendingPathComponent("fm13-pallet-07.json"))
        let o = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let log = try #require(o["sensorLog"] as? [String: Any])
        return (
            try #require(log["start"] as? Int), try #require(log["interval"] as? Int),
            try #require(log["celsius"] as? [Double])
        )
    }

    @Test func theLogIsTheSimulatorsRecordForRecord() throws {
        let (start, interval, celsius) = try fixture()
        let r = try CLITests.run(["sensor", "log", "--field", Self.field.path, "--format", "csv"])
        #expect(r.code == 0, "\(r.err)")
        let lines = r.out.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first == "index,time,temperature [°C],raw")
        let rows = lines.dropFirst().map { $0.components(separatedBy: ",") }
        #expect(rows.count == celsius.count)
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for (i, row) in rows.enumerated() {
            guard row.count == 4 else {
                Issue.record("row \(i): \(row)")
                continue
            }
            #expect(row[0] == String(i))
            let t = try #require(iso.date(from: row[1]))
            #expect(Int(t.timeIntervalSince1970) == start + i * interval, "row \(i): \(row[1])")
            #expect(Double(row[2]) == celsius[i], "row \(i)")
            let q = Int((celsius[i] * 4).rounded())
            let word = UInt32(i) << 16 | UInt32((q < 0 ? q + 0x400 : q) & 0x3FF)
            let raw = (0..<4).map { String(format: "%02X", (word >> (8 * UInt32($0))) & 0xFF) }.joined()
            #expect(row[3] == "\\x" + raw, "row \(i)")
        }
        // Resumed from record 290: the last ten.
        let tail = try CLITests.run(["sensor", "log", "--field", Self.field.path, "--from", "290", "--format", "jsonl"])
        let objects = tail.out.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(objects.count == 10 && objects.first?["index"] as? Int == 290)
        #expect(objects.last?["temperature"] as? Double == celsius[299])
        #expect((objects.first?["units"] as? [String: String])?["temperature"] == "°C")
    }

    /// Issue 47, item 10: `sensor log --json` printed CSV (the shared --json was not read); on the demo's RF430,
    /// `sensor info` printed "unknown" five times and `sensor log` "0 records of 0" with exit 0. Now --json is JSON
    /// lines (and --json with --format csv an error), an RF430's info says what it has and reads block 0 (a tag not
    /// there is an error), and its log, which vlogger does not read, is an error naming --measure.
    @Test func jsonLogsAndAKindWithoutALog() throws {
        let json = try CLITests.run(["sensor", "log", "--field", Self.field.path, "--json"])
        #expect(json.code == 0, "\(json.err)")
        let first = json.out.split(separator: "\n").first.flatMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(first?["index"] as? Int == 0 && first?["kind"] as? String == "fm13", "\(json.out.prefix(300))")
        let both = try CLITests.run(["sensor", "log", "--field", Self.field.path, "--json", "--format", "csv"])
        #expect(both.code != 0 && both.err.contains("--json and --format csv"), "\(both.err)")
        let demo = CLITests.root.appendingPathComponent("Config/demo-field").path
        let info = try CLITests.run(["sensor", "info", "--field", demo, "--uid", "E007A20000001003"])
        #expect(info.code == 0 && !info.out.contains("unknown"), "\(info.out)")
        #expect(info.out.contains("Raw            block0") && info.out.contains("--measure"), "\(info.out)")
        let gone = try CLITests.run(["sensor", "info", "--field", demo, "--uid", "E007A20000009999"])
        #expect(gone.code != 0, "\(gone.out)")
        let log = try CLITests.run(["sensor", "log", "--field", demo, "--uid", "E007A20000001003"])
        #expect(log.code != 0 && log.err.contains("does not read its log") && log.out.isEmpty, "\(log.out)\(log.err)")
    }

    @Test func infoSaysKindStateIntervalAndCount() throws {
        let r = try CLITests.run(["sensor", "info", "--field", Self.field.path, "--json"])
        #expect(r.code == 0, "\(r.err)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        #expect(o["kind"] as? String == "fm13" && o["logging"] as? Bool == true && o["batteryOK"] as? Bool == true)
        #expect(o["intervalSeconds"] as? Int == 300 && o["recordCount"] as? Int == 300)
        #expect(o["sessionStart"] as? String == "2025-11-24T16:00:00.000Z")
    }

    /// A simulated ST SmarTag (Fixtures/smartag-field): `sensor log` is the image's samples cell by cell — the time
    /// start + i × interval, the temperature, the raw timestamp and value cells packed as ST's app unpacks them
    /// (`GregorianCalendarExt.kt`, `SensorDataSampleValue.kt`), computed here independently of the decoder.
    @Test func theSmarTagLogIsTheSimulatorsSampleForSample() throws {
        let field = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Fixtures/smartag-field")
        let data = try Data(contentsOf: field.appendingPathComponent("smartag-truck-04.json"))
        let o = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let log = try #require(o["sensorLog"] as? [String: Any])
        let start = try #require(log["start"] as? Int), interval = try #require(log["interval"] as? Int)
        let celsius = try #require(log["celsius"] as? [Int])
        let r = try CLITests.run(["sensor", "log", "--field", field.path, "--format", "csv"])
        #expect(r.code == 0, "\(r.err)")
        let lines = r.out.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first == "index,time,temperature [°C],raw", "\(lines.first ?? "-")")
        let rows = lines.dropFirst().map { $0.components(separatedBy: ",") }
        #expect(rows.count == celsius.count)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for (i, row) in rows.enumerated() where row.count == 4 {
            let t = Date(timeIntervalSince1970: TimeInterval(start + i * interval))
            #expect(row[0] == String(i) && row[1] == iso.string(from: t), "row \(i): \(row)")
            #expect(Int(row[2]) == celsius[i], "row \(i)")
            let c = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: t)
            let stamp =
                UInt32(c.year! - 2018) << 26 | UInt32(c.day!) << 21 | UInt32(c.month!) << 17 | UInt32(c.hour!) << 12
                | UInt32(c.minute!) << 6 | UInt32(c.second!)
            let value: UInt32 = 0xFFF << 20 | UInt32(celsius[i] + 40) << 13 | 0x7F << 6 | 0x3F
            let raw = [stamp, value].flatMap { w in
                (0..<4).map { String(format: "%02X", (w >> (8 * UInt32($0))) & 0xFF) }
            }
            #expect(row[3] == "\\x" + raw.joined(), "row \(i)")
        }
        #expect(rows.filter { $0.count != 4 }.isEmpty)
    }

    /// A simulated ams SL13A (Fixtures/sl13a-field): `sensor info --measure` prints what it read and every answer
    /// raw; the other frame form gets a clear error and a non-zero exit.
    @Test func sl13aInfoWithItsRawAnswers() throws {
        let field = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Fixtures/sl13a-field").path
        let r = try CLITests.run(["sensor", "info", "--field", field, "--measure"])
        #expect(r.code == 0, "\(r.err)")
        #expect(r.out.contains("Kind           sl13a") && r.out.contains("Records        120"), "\(r.out)")
        #expect(r.out.contains("Raw            log_state 40 1E 00 01 00 00 00 00"), "\(r.out)")
        #expect(r.out.contains("Now            temperature_code 533"))
        let wrong = try CLITests.run(["sensor", "info", "--field", field, "--sl13a-manufacturer-byte", "false"])
        #expect(wrong.code != 0 && wrong.err.contains("try the other frame form"), "\(wrong.err)")
    }

    /// Starting and stopping a log change the tag: without --yes each is refused before the reader is opened
    /// (`--trace` shows nothing on the air), exit code 64; with --yes an FM13 gets Fudan's sequence, START last.
    @Test func startAndStopOnlyWithYes() throws {
        for args in [
            ["sensor", "start", "--interval", "5m"], ["sensor", "stop"],
            ["sensor", "start", "--interval", "5m", "--delay", "3"],
        ] {
            let r = try CLITests.run(args + ["--field", Self.field.path, "--trace"])
            #expect(r.code == 64 && r.err.contains("nothing was sent") && r.err.contains("--yes"), "\(args): \(r.err)")
            #expect(r.out.isEmpty, "\(args) sent: \(r.out)")
        }
        // Bad settings are refused before the air too, --yes or not.
        let bad = try CLITests.run(
            ["sensor", "start", "--interval", "1500ms", "--yes", "--field", Self.field.path, "--trace"])
        #expect(bad.code == 64 && bad.err.contains("whole seconds") && bad.out.isEmpty, "\(bad.err)")
        let start = try CLITests.run(
            [
                "sensor", "start", "--interval", "10m", "--records", "100", "--yes", "--field", Self.field.path,
                "--trace",
            ])
        #expect(start.code == 0, "\(start.err)")
        let sent = start.out.split(separator: "\n").filter { $0.hasPrefix(">>") && $0.contains("Fudan") }
        #expect(sent.count == 7 && sent.last?.contains("Fudan Start/Stop Log") == true, "\(sent)")
        #expect(start.out.contains("logging started"))
        let stop = try CLITests.run(["sensor", "stop", "--yes", "--field", Self.field.path])
        #expect(stop.code == 0 && stop.out.contains("logging stopped"), "\(stop.err)")
    }

    /// A tag that is no sensor vlogger knows: a clear error naming the kinds, exit code 64 (usage), no trap.
    @Test func aTagOfNoKnownKindIsRefused() throws {
        let f = try CLITests.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let r = try CLITests.run(["sensor", "info", "--field", f.path, "--uid", "E004010812345601"])
        #expect(r.code == 64 && r.err.contains("not a sensor tag vlogger knows") && r.err.contains("fm13"), "\(r.err)")
    }
}

/// The gateway collects a logger's log unattended (`vlogger run`, a plan with `sensor-log = true`): every record of
/// the simulated FM13 becomes one reading at its time on the tag, and a second run stores nothing twice.
@Suite struct SensorRunTests {
    @Test func runCollectsTheLogOnceAcrossRuns() throws {
        let s = try AgentCLITests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try FileManager.default.copyItem(
            at: SensorCLITests.field.appendingPathComponent("fm13-pallet-07.json"),
            to: s.dir.appendingPathComponent("field/fm13-pallet-07.json"))
        var text = try String(contentsOfFile: s.config, encoding: .utf8)
        let first = try #require(text.range(of: "[[plan]]"))
        text.insert(
            contentsOf:
                "[[plan]]\nname = \"cold-chain logger\"\nmatch.uid = \"E01D70*\"\nsensor-log = true\nsensor-log-pieces = 2\n\n",
            at: first.lowerBound)
        try text.write(toFile: s.config, atomically: true, encoding: .utf8)
        // 300 records in pieces of 63, two pieces a visit: three cycles at least.
        let run = try CLITests.run(["run", "--config", s.config, "--cycles", "4"])
        #expect(run.code == 0, "\(run.err)")
        func logReadings() throws -> [[String: Any]] {
            let e = try CLITests.run([
                "export", "--config", s.config, "--since", "2000-01-01", "--uid", "E01D7000AABBCC01", "--format",
                "jsonl",
            ])
            #expect(e.code == 0, "\(e.err)")
            return e.out.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        var rows = try logReadings()
        #expect(rows.count == 300, "\(rows.count) readings")
        let indices = rows.compactMap { $0["log_record"] as? Int }
        #expect(indices == Array(0..<300))
        #expect(rows.first?["time"] as? String == "2025-11-24T16:00:00.000Z")
        #expect(rows.last?["time"] as? String == "2025-11-25T16:55:00.000Z")
        #expect(rows.first?["temperature"] as? Double == 4.0 && rows.first?["read_at"] != nil)
        let again = try CLITests.run(["run", "--config", s.config, "--cycles", "2"])
        #expect(again.code == 0, "\(again.err)")
        rows = try logReadings()
        #expect(rows.count == 300)
    }
}

/// `vlogger sensor info --measure` on the demo field's RF430FRL152H: the configuration written in TI's order (blocks
/// 1–7, block 0 last: SLOA233 `nfc_app.c:397-422`), block 0 polled, block 9 read, and the temperature by TI's
/// formula (`NFC_calculateTemperature`, lines 456-465) from block 9's ADC values (reference 0x1234, thermistor 0x0678
/// in the image).
@Suite struct RF430SensorCLITests {
    @Test func measureWritesInTIsOrderAndConvertsAsTIDoes() throws {
        let f = try CLITests.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let r = try CLITests.run([
            "sensor", "info", "--field", f.path, "--uid", "E007A20000001003", "--measure", "--json", "--trace",
        ])
        #expect(r.code == 0, "\(r.err)")
        let writes = (r.out + r.err).components(separatedBy: "\n").filter { $0.contains("Write Single Block") }
            .compactMap { line -> String? in
                line.range(of: #"Write Single Block 0x[0-9A-F]+"#, options: .regularExpression).map {
                    String(line[$0].suffix(4))
                }
            }
        #expect(writes == ["0x01", "0x02", "0x03", "0x04", "0x05", "0x06", "0x07", "0x00"], "\(writes)")
        let jsonText = r.out.components(separatedBy: "\n").drop { !$0.hasPrefix("{") }.joined(separator: "\n")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(jsonText.utf8)) as? [String: Any])
        let current = try #require(o["current"] as? [String: Double])
        let (ref, therm) = (Double(0x1234), Double(0x0678))
        let ohms = ((therm * 0.9 / 16384) / 2 / 0.0000024) * 8738.13 / ref
        let celsius = 4330 / log(ohms / 0.049293) - 273.15
        #expect(abs((current["temperature"] ?? 0) - celsius) < 0.001 && current["adc_reference"] == ref)
        #expect(o["kind"] as? String == "rf430")
    }
}
