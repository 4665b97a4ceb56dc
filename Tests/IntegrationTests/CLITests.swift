import Foundation
import Testing

/// End-to-end: the built `vlogger` binary on a copy of the demo field, one process per command.
@Suite(.serialized) struct CLITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func binary() throws -> URL {
        for dir in [".build/debug", ".build/x86_64-unknown-linux-gnu/debug", ".build/aarch64-unknown-linux-gnu/debug"] {
            let u = root.appendingPathComponent(dir).appendingPathComponent("vlogger")
            if FileManager.default.isExecutableFile(atPath: u.path) { return u }
        }
        throw CLIFailure("vlogger binary not built; run swift build first")
    }
    struct CLIFailure: Error, CustomStringConvertible { let description: String; init(_ d: String) { description = d } }

    /// A new scratch folder with copies of `files` from the repository folder `from` (Config by default).
    static func scratch(_ name: String, copying files: [String], from: String = "Config") throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = root.appendingPathComponent(from)
        for f in files {
            try FileManager.default.copyItem(at: source.appendingPathComponent(f), to: dir.appendingPathComponent(f))
        }
        return dir
    }

    /// The example configuration's text with one reader: the demo's second reader (the dock door) cut out,
    /// as deploy/install.sh does for a gateway.
    static func oneReaderConfig() throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent("Config/vlogger.toml"), encoding: .utf8)
        guard let a = text.range(of: "# --- second reader"), let b = text.range(of: "# --- end of second reader ---\n")
        else {
            throw CLIFailure("Config/vlogger.toml has no second-reader markers")
        }
        return String(text[..<a.lowerBound] + text[b.upperBound...])
    }

    /// Writes the one-reader configuration into `dir` as vlogger.toml.
    static func writeOneReaderConfig(_ dir: URL) throws {
        try oneReaderConfig().write(to: dir.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
    }

    /// A copy of the demo field.
    static func field() throws -> URL {
        try scratch(
            "cli",
            copying: try FileManager.default.contentsOfDirectory(
                atPath: root.appendingPathComponent("Config/demo-field").path),
            from: "Config/demo-field")
    }

    static func run(_ args: [String], environment extra: [String: String] = [:]) throws -> (
        code: Int32, out: String, err: String
    ) {
        let p = Process()
        p.executableURL = try binary()
        p.arguments = args
        if !extra.isEmpty {
            p.environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        }
        p.currentDirectoryURL = root
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    @Test func writeInOneProcessReadInTheNext() throws {
        let f = try Self.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let uid = "E008010000004212"
        let w = try Self.run([
            "write", "--field", f.path, "--uid", uid, "--block", "0xF9", "--data", "0102030405060708",
        ])
        #expect(w.code == 0, "\(w.err)")
        let r = try Self.run(["read", "--field", f.path, "--uid", uid, "--block", "249", "--json"])
        #expect(r.code == 0 && r.out.contains("\"data\" : \"0102030405060708\""), "\(r.out)\(r.err)")
        // The same through a Proxmark3 dump file and a Flipper file of the field.
        for tag in ["E007800000007777", "E004011000000A03"] {
            #expect(
                try Self.run(["write", "--field", f.path, "--uid", tag, "--block", "5", "--data", "CAFEBABE"]).code == 0
            )
            #expect(
                try Self.run(["read", "--field", f.path, "--uid", tag, "--block", "5"]).out.contains("CA FE BA BE"))
        }
        let text = try String(contentsOf: f.appendingPathComponent("slix-shelf-a3.nfc"), encoding: .utf8)
        #expect(text.contains("Password EAS: 00 00 00 00") && text.contains("CA FE BA BE"))
    }

    @Test func scanInfoTraceAndLock() throws {
        let f = try Self.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let scan = try Self.run(["scan", "--field", f.path])
        #expect(scan.code == 0 && scan.out.contains("8 tag(s)"))
        let info = try Self.run(["info", "--field", f.path, "--uid", "E0022C0000002121"])
        #expect(info.out.contains("2048 blocks × 4 bytes") && info.out.contains("Protocol Extension"))
        let trace = try Self.run(["read", "--field", f.path, "--uid", "E004010812345601", "--block", "0", "--trace"])
        #expect(trace.out.contains(">> 22 20 01 56 34 12 08 01 04 E0 00") && trace.out.contains("µs"))
        let refused = try Self.run(["lock", "--field", f.path, "--uid", "E004010812345601", "--block", "3"])
        #expect(refused.code != 0 && refused.err.contains("--yes"))
        let locked = try Self.run(["lock", "--field", f.path, "--uid", "E004010812345601", "--block", "3", "--yes"])
        #expect(locked.code == 0 && locked.out.contains("is locked"))
        let again = try Self.run([
            "write", "--field", f.path, "--uid", "E004010812345601", "--block", "3", "--data", "00000000",
        ])
        #expect(again.code != 0 && again.err.contains("0x12"))
    }

    @Test func decodeAndBadInput() throws {
        let ok = try Self.run(["decode", "26", "01", "00", "F6", "0A"])
        #expect(ok.code == 0 && ok.out.contains("Inventory, 1 slot(s)") && ok.out.contains("CRC ok"))
        let bad = try Self.run(["decode", "26 01 00 F6 0B"])
        #expect(bad.code != 0 && bad.err.contains("CRC mismatch"))
        // A FEIG host frame (FEIG's Initialize Buffer as an independent implementation sends it; Tests/FEIGTests).
        let feig = try Self.run(["decode", "--protocol", "feig", "02 00 07 FF 33 DD 56"])
        #expect(
            feig.code == 0 && feig.out.contains("FEIG advanced request, 7 bytes, COM-ADR 0xFF (any reader)")
                && feig.out.contains("Initialize Buffer [0x33]"), "\(feig.out)\(feig.err)")
        let feigBad = try Self.run(["decode", "--protocol", "feig", "02 00 07 FF 33 DD 57"])
        #expect(feigBad.code != 0 && feigBad.err.contains("CRC mismatch"), "\(feigBad.err)")
        let feigReply = try Self.run(["decode", "--protocol", "feig", "--reply", FEIGFrameHex.noTransponder])
        #expect(
            feigReply.code == 0 && feigReply.out.contains("status: 0x01 no transponder in the field"),
            "\(feigReply.out)\(feigReply.err)")
        let resp = try Self.run(["decode", "--response", "--command", "0x20", "--no-crc", "00 E1 40 40 01"])
        #expect(resp.code == 0 && resp.out.contains("E1 40 40 01"))
        // Stay Quiet (0x02) is never answered (ISO/IEC 15693-3 §10.3.3): an "answer" to it is refused, not "OK".
        let quiet = try Self.run(["decode", "--response", "--command", "0x02", "--no-crc", "00"])
        #expect(quiet.code != 0 && quiet.err.contains("a tag never answers Stay Quiet"), "\(quiet.out)\(quiet.err)")
        // An Inventory answer names the UID's IC manufacturer (ISO/IEC 7816-6 register), as scan does.
        let inv = try Self.run([
            "decode", "--response", "--command", "0x01", "--no-crc", "00 00 01 56 34 12 08 01 04 E0",
        ])
        #expect(
            inv.out.contains("UID E004010812345601, DSFID 0x00, manufacturer 0x04 NXP Semiconductors"), "\(inv.out)")
        #expect(try Self.run(["read", "--block", "0x1G"]).code != 0)
        #expect(try Self.run(["read", "--uid", "E1040108"]).code != 0)
        #expect(try Self.run(["scan", "--field", "/nonexistent"]).err.contains("does not exist"))
        let nfc = try Self.run(["scan", "--reader", "libnfc"])
        #expect(nfc.code != 0 && nfc.err.contains("ISO 15693"))
    }

    @Test func dumpAndRestore() throws {
        let f = try Self.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let out = f.appendingPathComponent("dump.out")
        // The RF430 (243 blocks of 8 bytes) in the vlogger and Flipper formats; Proxmark3's loader takes at most
        // 160 pages, so a Proxmark3 dump of it is refused and a SLIX2 (80 blocks) goes that way instead.
        for (format, uid, block, data) in [
            ("vlogger", "E007A20000001003", "9", "0000000000000000"),
            ("flipper", "E007A20000001003", "9", "0000000000000000"),
            ("proxmark3", "E004010812345601", "0x01", "00000000"),
        ] {
            let d = try Self.run(["dump", "--field", f.path, "--uid", uid, "--format", format, "-o", out.path])
            #expect(d.code == 0, "\(d.err)")
            #expect(
                try Self.run(["write", "--field", f.path, "--uid", uid, "--block", block, "--data", data]).code == 0)
            let r = try Self.run(["restore", "--field", f.path, "--uid", uid, out.path])
            #expect(r.code == 0 && r.out.contains("1 block(s) written"), "\(format): \(r.out)\(r.err)")
        }
        let refused = try Self.run([
            "dump", "--field", f.path, "--uid", "E007A20000001003", "--format", "proxmark3", "-o", out.path,
        ])
        #expect(refused.code != 0 && refused.err.contains("at most 160 pages and 2048 bytes"), "\(refused.err)")
    }

    /// Huge counts trapped with an arithmetic overflow (exit 132); they are usage errors now (exit 64), and
    /// a count the tag cannot serve is the client's typed error (exit 1). Never a signal.
    @Test func hugeCountsAreErrorsNotTraps() throws {
        let f = try Self.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let cases: [([String], Int32, String)] = [
            (
                [
                    "read", "--field", f.path, "--uid", "E008010000004212", "--block", "0xF8", "--count",
                    "9223372036854775807",
                ], 64, "--count must be 1…65536"
            ),
            (
                ["read", "--field", f.path, "--uid", "E008010000004212", "--block", "0xF8", "--count", "65536"], 1,
                "run past the end of the tag"
            ),
            (
                ["decode", "--response", "--command", "0x2C", "--count", "9223372036854775807", "00", "00"], 64,
                "--count must be 1…65536"
            ),
            (["decode", "--response", "--command", "0x3C", "--count=-1", "00", "00"], 64, "--count must be 1…65536"),
        ]
        for (args, code, needle) in cases {
            let r = try Self.run(args)
            #expect(r.code == code && r.err.contains(needle), "\(args): \(r.code) \(r.err)")
        }
    }

    /// `raw` locked blocks, the AFI and the DSFID for ever without asking; it exited 0 on the tag's error
    /// flag; `--flags ""` was taken. Lock codes from ISO/IEC 15693-3 (0x22, 0x28, 0x2A, 0x32) and the NXP
    /// custom commands (0xB9 Destroy) of docs/reference/iso15693.md.
    @Test func rawAsksBeforeIrreversibleCommandsAndFailsOnTheTagsErrorFlag() throws {
        let f = try Self.field()
        defer { try? FileManager.default.removeItem(at: f) }
        // SLIX2 E004010812345601, its UID least-significant byte first as on air.
        let uid = ["01", "56", "34", "12", "08", "01", "04", "E0"]
        for (frame, what) in [
            (["22", "22"] + uid + ["05"], "Lock Block"), (["22", "28"] + uid, "Lock AFI"),
            (["22", "2A"] + uid, "Lock DSFID"),
            (["22", "32"] + uid + ["05", "00"], "Extended Lock Block"), (["02", "B9", "04", "00"], "NXP Destroy"),
        ] {
            let r = try Self.run(["raw", "--field", f.path] + frame)
            #expect(
                r.code == 64 && r.err.contains("\(what), which cannot be undone; add --yes"),
                "\(frame): \(r.code) \(r.err)")
        }
        // Nothing was locked: the AFI lock still takes with --yes (and only then).
        let locked = try Self.run(["raw", "--field", f.path, "--yes", "--write", "22", "28"] + uid)
        #expect(locked.code == 0, "\(locked.err)")
        // Block 0x60 of an 80-block SLIX2: error flag with code 0x10 (block not available), exit 1.
        let missing = try Self.run(["raw", "--field", f.path, "22", "20"] + uid + ["60"])
        #expect(
            missing.code == 1 && missing.out.contains("error 0x10")
                && missing.err.contains("error flag, error code 0x10"), "\(missing)")
        let empty = try Self.run([
            "read", "--field", f.path, "--uid", "E004010812345601", "--block", "0", "--flags", "",
        ])
        #expect(empty.code == 64 && empty.err.contains("--flags: empty"), "\(empty.err)")
    }

    /// `export --output DIR` and `--output ""` left a `.partial` file behind.
    @Test func exportToAFolderOrNoNameIsAUsageErrorAndLeavesNothing() throws {
        let dir = try Self.scratch("export-out", copying: [])
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = dir.appendingPathComponent("e.db").path
        let field = try Self.field()
        defer { try? FileManager.default.removeItem(at: field) }
        let w = try Self.run([
            "write", "--field", field.path, "--uid", "E008010000004212", "--block", "0xF9", "--data",
            "0102030405060708", "--store", store,
        ])
        #expect(w.code == 0, "\(w.err)")
        for (output, needle) in [(dir.path, "is a folder"), (dir.path + "/", "is a folder"), ("", "--output: empty")] {
            let r = try Self.run(["export", "--store", store, "--since", "7d", "--table", "writes", "--output", output])
            #expect(r.code == 64 && r.err.contains(needle), "\(output): \(r.code) \(r.err)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".partial") }
        #expect(left.isEmpty, "\(left)")
    }

    /// An export from a store in a folder the user may not write ("attempt to write a readonly database":
    /// WAL mode wants its -shm file beside the store). Run as `nobody`, since root may write anywhere.
    @Test(.enabled(if: getuid() == 0, "needs root to make the folder and switch to nobody"))
    func exportFromAReadOnlyFolder() throws {
        let dir = try Self.scratch("ro", copying: [])
        defer { _ = chmod(dir.path, 0o755); try? FileManager.default.removeItem(at: dir) }
        let field = try Self.field()
        defer { try? FileManager.default.removeItem(at: field) }
        let store = dir.appendingPathComponent("ro.db").path
        let w = try Self.run([
            "write", "--field", field.path, "--uid", "E008010000004212", "--block", "0xF9", "--data",
            "0102030405060708", "--store", store,
        ])
        #expect(w.code == 0, "\(w.err)")
        #expect(chmod(dir.path, 0o555) == 0 && chmod(store, 0o444) == 0)
        let r = try ServiceTests.shell(
            #"runuser -u nobody -- "$1" export --store "$2" --since 7d --table writes"#,
            [try Self.binary().path, store])
        #expect(
            r.code == 0 && r.out.contains("E008010000004212,0xF9,\\x0102030405060708")
                && r.err.contains("read as the file is"), "\(r)")
        #expect(!FileManager.default.fileExists(atPath: store + "-shm"))
    }

    /// The file reproducers of the hostile-input pass, through the commands that read them: each exits 1
    /// with a sentence that names the file, none is killed by a signal (132/139 before).
    @Test func hostileFilesEndTheirCommandWithAClearError() throws {
        let dir = try Self.scratch("hostile", copying: ["rules.toml", "assets.csv"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let field = try Self.field()
        defer { try? FileManager.default.removeItem(at: field) }
        let flipper = dir.appendingPathComponent("huge.nfc")
        try
            "Filetype: Flipper NFC device\nVersion: 4\nDevice type: ISO15693-3\nUID: E0 04 01 08 12 34 56 01\nBlock Count: 4611686018427387904\nBlock Size: 04\nData Content: 00 00 00 00\n"
            .write(to: flipper, atomically: true, encoding: .utf8)
        let image = dir.appendingPathComponent("locks.json")
        try
            #"{"format": "vlogger-tag-image", "version": 1, "uid": "E004010812345601", "blockSize": 4, "blocks": ["00000000"], "lockedBlocks": ["0xFFFFFFFFFFFFFFFF"]}"#
            .write(to: image, atomically: true, encoding: .utf8)
        try #"{ "vlogger-scenario": 1, "steps": [{ "at": 1e300, "do": "leave", "uid": "E008010000004212" }] }"#
            .write(to: field.appendingPathComponent("scenario.json"), atomically: true, encoding: .utf8)
        let deep = dir.appendingPathComponent("deep.toml")
        try ("x = " + String(repeating: "[", count: 40_000) + String(repeating: "]", count: 40_000) + "\n").write(
            to: deep, atomically: true, encoding: .utf8)
        let register = dir.appendingPathComponent("assets.csv")
        try "uid,asset_id,asset_id\r\nE008010000004212,A,B\r\n".write(to: register, atomically: true, encoding: .utf8)
        var config = try Self.oneReaderConfig()
        config = config.replacingOccurrences(of: "field = \"demo-field\"", with: "field = \"\(field.path)\"")
        try config.write(to: dir.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            (
                ["restore", "--field", field.path, "--uid", "E004010812345601", flipper.path],
                "huge.nfc: 'Block Count' must be a decimal number of blocks, 1…65536"
            ),
            (
                ["restore", "--field", field.path, "--uid", "E004010812345601", image.path],
                "'lockedBlocks' entries must be block numbers"
            ),
            (["scan", "--field", field.path], "scenario.json"),
            (["config", "check", deep.path], "deep.toml:1: column"),
            (["config", "check", dir.appendingPathComponent("vlogger.toml").path], "column 'asset_id' appears twice"),
        ]
        for (args, needle) in cases {
            let r = try Self.run(args)
            #expect(r.code == 1 && r.err.contains(needle), "\(args.first ?? ""): \(r.code) \(r.err)")
        }
    }

    @Test func assetsImportListAndExport() throws {
        let dir = try Self.scratch("assets", copying: ["assets.csv"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = dir.appendingPathComponent("a.db").path, csv = dir.appendingPathComponent("assets.csv").path
        let imported = try Self.run(["assets", "import", "--store", store, csv])
        #expect(imported.code == 0 && imported.out.contains("5 assets; added 5, changed 0, 0 unchanged"), "\(imported)")
        let again = try Self.run(["assets", "import", "--store", store, csv])
        #expect(again.out.contains("added 0, changed 0, 5 unchanged"), "\(again.out)")
        let list = try Self.run(["assets", "list", "--store", store, "--location", "Dock door 3"])
        #expect(
            list.code == 0 && list.out.contains("E004010812345601  PAL-0001  Dock door 3  Pallet 1  locked_0x00=yes")
                && list.out.contains("3 asset(s) in Dock door 3"), "\(list.out)")
        let export = try Self.run(["export", "--store", store, "--since", "1h", "--table", "assets"])
        #expect(
            export.out.hasPrefix("uid,asset_id,name,location,extra,source,updated_at\r\n")
                && export.out.contains("E002260000C0FFEE,AS-00042,Press line 7 controller,\"Cold room, cage 12\","),
            "\(export.out)")
        // Errors name the file, the line and the column.
        let bad = dir.appendingPathComponent("bad.csv").path
        try "uid,asset_id,location\r\nE008010000004212,CAGE-12,B7\r\nE004010812345601,,Dock A\r\n".write(
            toFile: bad, atomically: true, encoding: .utf8)
        let r = try Self.run(["assets", "import", "--store", store, bad])
        #expect(r.code == 1 && r.err.contains("bad.csv:3: column asset_id: empty"), "\(r.err)")
        let noID = dir.appendingPathComponent("noid.csv").path
        try "uid,location\r\nE008010000004212,B7\r\n".write(toFile: noID, atomically: true, encoding: .utf8)
        #expect(
            try Self.run(["assets", "import", "--store", store, noID]).err.contains("noid.csv:1: no 'asset_id' column"))
    }
}

/// A FEIG reply for the CLI test: [0xB0] with STATUS 0x01, built by the frame encoder (its CRC is checked against
/// real frames in Tests/FEIGTests).
enum FEIGFrameHex {
    static var noTransponder: String {
        let bytes: [UInt8] = [0x06, 0xFF, 0xB0, 0x01]
        var crc: UInt16 = 0xFFFF
        for b in bytes {
            crc ^= UInt16(b)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x8408 : crc >> 1 }
        }
        return (bytes + [UInt8(crc & 0xFF), UInt8(crc >> 8)]).map { String(format: "%02X", $0) }.joined(separator: " ")
    }
}

/// `vlogger config sample` prints a starter configuration that `config check` takes, for each driver.
@Suite struct ConfigSampleTests {
    @Test func eachDriversSampleChecks() throws {
        for driver in ["sim", "pcsc", "feig"] {
            // No demo field beside the file: the sample names a folder that exists (issue 47, item 10).
            let dir = try CLITests.scratch("sample-\(driver)", copying: [])
            defer { try? FileManager.default.removeItem(at: dir) }
            let sample = try CLITests.run(["config", "sample", "--driver", driver])
            #expect(sample.code == 0 && sample.out.contains("driver = \"\(driver)\""), "\(sample.out)\(sample.err)")
            let file = dir.appendingPathComponent("vlogger.toml").path
            try sample.out.write(toFile: file, atomically: true, encoding: .utf8)
            let check = try CLITests.run(["config", "check", file])
            #expect(check.code == 0, "\(driver): \(check.out)\(check.err)")
        }
    }
}

/// On a gateway the tag commands use the configured reader: with `VLOGGER_CONFIG` (or /etc/vlogger/vlogger.toml)
/// naming a configuration of one reader, `info` needs no `--reader`/`--field`; `--reader-id` picks one of several and
/// an unknown id is an error naming the configured ones.
@Suite struct ConfiguredReaderTests {
    @Test func tagCommandsUseTheConfiguredReader() throws {
        let dir = try CLITests.scratch("configured-reader", copying: [])
        defer { try? FileManager.default.removeItem(at: dir) }
        let field = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Fixtures/originality-field").path
        let config = dir.appendingPathComponent("vlogger.toml").path
        try """
        [gateway]
        id = "gw-test"
        [[reader]]
        id = "bench-1"
        driver = "sim"
        field = "\(field)"
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let env = ["VLOGGER_CONFIG": config]
        let info = try CLITests.run(["info", "--uid", "E00401082AD28E83"], environment: env)
        #expect(info.code == 0 && info.out.contains("NXP ICODE SLIX2"), "\(info.out)\(info.err)")
        let picked = try CLITests.run(["scan", "--reader-id", "bench-1"], environment: env)
        #expect(picked.code == 0 && picked.out.contains("E00401082AD28E83"), "\(picked.out)\(picked.err)")
        let unknown = try CLITests.run(["scan", "--reader-id", "dock-9"], environment: env)
        #expect(unknown.code != 0 && unknown.err.contains("no such reader (bench-1)"), "\(unknown.err)")
        // --field still overrides the configuration.
        let demo = CLITests.root.appendingPathComponent("Config/demo-field").path
        let over = try CLITests.run(["scan", "--field", demo], environment: env)
        #expect(over.code == 0 && over.out.contains("E008010000004212"), "\(over.out)\(over.err)")
    }
}

/// `config check`'s messages and `config sample`'s text, held byte for byte against the outputs of commit 2950216
/// (Fixtures/config-golden/README.md): issue 48 split the configuration by concern and moved each output's
/// settings into its own target; an operator's scripts and habits must not notice.
@Suite struct ConfigGoldenTests {
    static let folder = "Tests/IntegrationTests/Fixtures/config-golden"

    /// The command's exit code and output; the repository's path (the sim sample names its demo field) is
    /// `<repository>`, so the same text holds on every machine.
    static func transcript(_ args: [String]) throws -> String {
        let r = try CLITests.run(args)
        return "exit \(r.code)\n--- stdout\n\(r.out)--- stderr\n\(r.err)"
            .replacingOccurrences(of: CLITests.root.path, with: "<repository>")
    }

    static func expected(_ name: String) throws -> String {
        try String(
            contentsOf: CLITests.root.appendingPathComponent("\(folder)/\(name).expected"), encoding: .utf8)
    }

    @Test func configCheckSaysWhatItSaidBefore() throws {
        let files = try FileManager.default.contentsOfDirectory(
            atPath: CLITests.root.appendingPathComponent(Self.folder).path
        ).filter { $0.hasSuffix(".toml") }.sorted()
        #expect(files.count >= 11)
        for f in files {
            let name = String(f.dropLast(5))
            let got = try Self.transcript(["config", "check", "\(Self.folder)/\(f)"])
            #expect(got == (try Self.expected(name)), "\(f):\n\(got)")
        }
    }

    @Test func configSampleIsTheSameText() throws {
        for driver in ["sim", "pcsc", "feig"] {
            let got = try Self.transcript(["config", "sample", "--driver", driver])
            #expect(got == (try Self.expected("sample-\(driver)")), "\(driver):\n\(got)")
        }
    }
}

/// `config sample --output KIND` adds each registered output kind's commented section (its kind writes it), and the
/// result still checks; a kind that is not one is refused with the kinds there are.
@Suite struct ConfigSampleOutputTests {
    @Test func eachOutputKindsSampleChecks() throws {
        let dir = try CLITests.scratch("sample-outputs", copying: [])
        defer { try? FileManager.default.removeItem(at: dir) }
        let sample = try CLITests.run([
            "config", "sample", "--driver", "sim", "--output", "sync", "--output", "mqtt", "--output", "webhook",
        ])
        #expect(sample.code == 0, "\(sample.err)")
        for heading in ["[sync]", "[[output.mqtt]]", "[[output.webhook]]"] {
            #expect(sample.out.contains("\n\(heading)"), "\(heading)\n\(sample.out)")
        }
        let file = dir.appendingPathComponent("vlogger.toml").path
        try sample.out.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try CLITests.run(["config", "check", file]).code == 0)
        let network = try CLITests.run(["config", "network", "--config", file])
        for remote in ["db.example.com", "broker.example.com", "hooks.example.com"] {
            #expect(network.out.contains(remote) || network.err.contains(remote), "\(remote): \(network)")
        }
        let wrong = try CLITests.run(["config", "sample", "--output", "mqt"])
        #expect(wrong.code != 0 && wrong.err.contains("--output mqt: not an output kind (did you mean 'mqtt'?)"))
    }
}
