import Foundation
import ISO15693
import TestDrivers
import Testing
import VLoggerStore
import VLoggerModel
@testable import VLoggerCore
@testable import VLoggerCLI
import VLoggerConfig

/// Outside input that was accepted silently or read wrongly before (issue "Nothing lost, nobody in").
@Suite(.drivers) struct ScheduleHardeningTests {
    func date(_ iso: String) -> Date { ISO8601DateFormatter().date(from: iso) ?? Date.distantPast }
    func iso(_ d: Date?) -> String { d.map { ISO8601DateFormatter().string(from: $0) } ?? "nil" }
    let base = """
        [[reader]]
        id = "dock-3"
        field = "f"
        location = "Dock door 3"

        [[audit.schedule]]

        """

    func configError(_ table: String) -> String? {
        do {
            _ = try AgentConfig.parse(base + table, file: "t.toml")
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// crontab(5) fields are unsigned decimal numbers; `+5` is no minute. A shift window is HH:MM.
    @Test func signedNumbersAreNotCronOrClockNumbers() {
        for bad in ["+5 * * * *", "* +2 * * *", "0 0 +1 * *", "0-+5 * * * *", "*/+5 * * * *", " 0x1 * * * *"] {
            #expect(throws: CronSchedule.Invalid.self, "\(bad)") { try CronSchedule(bad) }
        }
        #expect(throws: ShiftWindow.Invalid.self) { try ShiftWindow("+6:00-14:00") }
        #expect(throws: ShiftWindow.Invalid.self) { try ShiftWindow("06:00-+9:00") }
    }

    /// IANA tz database (etcetera file): "Etc/GMT+5" is five hours *behind* UTC, the sign reversed from ISO 8601.
    /// Foundation takes "GMT+5" as UTC+5; such names are refused with the IANA spelling.
    @Test func offsetNamesAreRefusedWithTheIANASpelling() throws {
        var caught: CronSchedule.Invalid?
        do { _ = try CronSchedule("0 2 * * *", timeZone: "GMT+5") } catch { caught = error }
        #expect(caught?.description.contains("Etc/GMT-5") == true, "\(String(describing: caught))")
        #expect(throws: CronSchedule.Invalid.self) { try CronSchedule("0 2 * * *", timeZone: "UTC-03:00") }
        // Etc/GMT-5 is UTC+5: 02:00 there is 21:00 UTC the day before.
        let c = try CronSchedule("0 2 * * *", timeZone: "Etc/GMT-5")
        #expect(iso(c.next(after: date("2026-11-23T12:00:00Z"))) == "2026-11-23T21:00:00Z")
    }

    @Test func aScheduleThatNeverFiresIsAConfigurationError() {
        // 30 February does not exist (Gregorian calendar).
        let feb = configError("name = \"x\"\ncron = \"0 0 30 2 *\"")
        #expect(
            feb?.contains("never fires") == true && feb?.contains("30 February") == true, "\(String(describing: feb))")
        // Every minute of Mondays, kept inside a window on Sundays: never.
        let disjoint = configError("name = \"x\"\ncron = \"* * * * 1\"\nduring = [\"06:00-07:00\"]\ndays = \"0\"")
        #expect(disjoint?.contains("never fall inside its during windows") == true, "\(String(describing: disjoint))")
        #expect(configError("name = \"\"\ncron = \"0 2 * * *\"")?.contains("empty") == true)
        let twice =
            (try? AgentConfig.parse(
                base + "name = \"n\"\ncron = \"0 2 * * *\"\n[[audit.schedule]]\nname = \"n\"\ncron = \"0 3 * * *\"",
                file: "t.toml")) == nil
        #expect(twice)
    }

    /// The search is bounded by calendar time, not by a count of firings: a schedule whose only firings inside
    /// its window are years apart is still found (29 February 2028 is a Tuesday; 29 February 2032 a Sunday).
    @Test func rareFiringsInsideWindowsAreFound() throws {
        let leap = AuditSchedule(
            name: "leap", cron: try CronSchedule("* * 29 2 *"), during: [try ShiftWindow("06:00-06:02", days: "2")])
        #expect(iso(leap.next(after: date("2026-11-25T00:00:00Z"))) == "2028-02-29T06:00:00Z")
        // After its last minute there, the next Tuesday 29 February is in 2056: past the 8-year horizon.
        #expect(leap.next(after: date("2028-02-29T06:01:00Z")) == nil)
        let sunday = AuditSchedule(
            name: "s", cron: try CronSchedule("0 6 29 2 *"), during: [try ShiftWindow("06:00-07:00", days: "0")])
        #expect(iso(sunday.next(after: date("2026-11-25T00:00:00Z"))) == "2032-02-29T06:00:00Z")
    }

    /// Europe/Berlin skips 02:00–03:00 on 2026-03-29 (01:00 UTC): 02:30 runs at the jump, 03:00 CEST, which is
    /// inside a 03:00–04:00 window though its nominal time is not.
    @Test func aTimeInTheSpringGapIsJudgedAtTheTimeItRuns() throws {
        let s = AuditSchedule(
            name: "gap", cron: try CronSchedule("30 2 * * *", timeZone: "Europe/Berlin"),
            during: [try ShiftWindow("03:00-04:00", timeZone: "Europe/Berlin")])
        #expect(iso(s.next(after: date("2026-03-28T12:00:00Z"))) == "2026-03-29T01:00:00Z")
    }

    /// Durations are decimal: Swift's Double reads "0x10" as 16 and "1e14" as 10^14.
    @Test func durationsAreDecimalNumbers() throws {
        for bad in ["0x10d", "1e14ms", "infs", "nanm", "+5s", "1..5s", ".s", "5 s s"] {
            #expect(throws: DurationText.Invalid.self, "\(bad)") { try DurationText.parse(bad) }
        }
        #expect(try DurationText.parse("1.5s") == 1500)
        #expect(try DurationText.parse("7d") == 604_800_000)
        #expect(throws: WriteRequest.Invalid.self) { try WriteRequest.expiry("0s", now: 0) }
        #expect(throws: WriteRequest.Invalid.self) { try WriteRequest.expiry("367d", now: 0) }
        #expect(try WriteRequest.expiry("12h", now: 1000) == 1000 + 43_200_000)
    }
}

/// RFC 8259: the JSON grammar (§2–§7); §4: "The names within an object SHOULD be unique", and implementations
/// differ on duplicates, so a request that writes a tag refuses them.
@Suite(.drivers) struct StrictJSONTests {
    func parse(_ s: String) throws(StrictJSON.Invalid) -> StrictJSON { try StrictJSON.parse(Array(s.utf8)) }

    @Test func typesAreKeptApart() throws {
        let v = try parse(
            #"{"a": false, "b": 249, "c": 2.49e2, "d": "0xF9", "e": null, "f": [1, -0, 9223372036854775807], "g": "\u00e9\ud83d\ude00"}"#
        )
        #expect(
            v["a"] == .bool(false) && v["b"] == .integer(249) && v["c"] == .number("2.49e2")
                && v["d"] == .string("0xF9") && v["e"] == .null)
        #expect(v["f"] == .array([.integer(1), .integer(0), .integer(Int64.max)]))
        #expect(v["g"] == .string("é😀"))
    }

    @Test func malformedTextIsRefused() {
        let bad = [
            #"{"lock": false, "lock": true}"#, "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "tru",
            "\"a\u{01}\"", #""\x41""#,
            #""\ud800""#, #""\udc00x""#, "{} {}", "9223372036854775808", "{'a':1}",
            "[" + String(repeating: "[", count: 40) + String(repeating: "]", count: 41),
            "\"\u{FF}\"", "",
        ]
        for b in bad {
            let bytes: [UInt8] = b == "\"\u{FF}\"" ? [0x22, 0xFF, 0x22] : Array(b.utf8)
            #expect(throws: StrictJSON.Invalid.self, "\(b)") { try StrictJSON.parse(bytes) }
        }
    }
}

@Suite(.drivers) struct WriteRequestTests {
    func parse(_ s: String, readers: Set<String>? = ["dock-3"]) -> Result<QueuedWrite, WriteRequest.Invalid> {
        do throws(WriteRequest.Invalid) {
            return .success(try WriteRequest.parse(Data(s.utf8), now: 0, readers: readers))
        } catch { return .failure(error) }
    }

    @Test func jsonTypesAreExact() {
        let good = parse(#"{"uid": "E008010000004212", "block": 249, "data": "A1A2A3A4"}"#)
        #expect((try? good.get())?.first.int == 249)
        // JSON false and true are not blocks 0 and 1; 2.49e2 and -1e-400 are not integers.
        for bad in [
            #""block": false"#, #""block": true"#, #""block": 2.49e2"#, #""block": -1e-400"#, #""block": [249]"#,
        ] {
            let r = parse(#"{"uid": "E008010000004212", "data": "A1A2A3A4", "# + bad + "}")
            guard case let .failure(e) = r else { Issue.record("accepted \(bad)"); continue }
            #expect(!e.impossible && e.description.hasPrefix("block"), "\(bad): \(e)")
        }
        // The second "lock" does not win: the body is refused.
        if case let .failure(e) = parse(
            #"{"uid": "E008010000004212", "block": 249, "lock": false, "lock": true, "yes": true}"#)
        {
            #expect(e.description.contains("appears twice"), "\(e)")
        } else {
            Issue.record("duplicate keys accepted")
        }
    }

    @Test func wellFormedButImpossibleWritesAre422() {
        let cases = [
            (#""flags": "0x04""#, "does not honour"), (#""expires": "0s""#, "already over"),
            (#""reader": "dock-9""#, "no reader 'dock-9'"),
            (#""block": 70000"#, "outside"),
        ]
        for (extra, says) in cases {
            let body =
                extra.hasPrefix(#""block""#)
                ? #"{"uid": "E008010000004212", "data": "A1A2A3A4", "# + extra + "}"
                : #"{"uid": "E008010000004212", "block": 249, "data": "A1A2A3A4", "# + extra + "}"
            guard case let .failure(e) = parse(body) else { Issue.record("accepted \(extra)"); continue }
            #expect(e.impossible && e.description.contains(says), "\(extra): \(e)")
        }
        #expect(
            (try? parse(
                #"{"uid": "E008010000004212", "block": 249, "data": "A1A2A3A4", "flags": "option", "reader": "dock-3", "expires": "7d"}"#
            ).get())?.flags == .option)
    }
}

@Suite(.drivers) struct OutsideTextTests {
    /// ECMA-48: ESC (0x1B) starts control sequences, 0x9B is the 8-bit CSI; Unicode UAX #9: U+202E RIGHT-TO-LEFT
    /// OVERRIDE reorders what follows (CVE-2021-42574).
    @Test func controlsNeverReachATerminal() {
        #expect(SafeText.terminal("T\u{1B}]0;owned\u{07}\u{1B}[31mred") == "T\\x1B]0;owned\\x07\\x1B[31mred")
        #expect(SafeText.terminal("dock\r\n2026-01-01 forged") == "dock\\x0D\\x0A2026-01-01 forged")
        #expect(SafeText.terminal("a\u{9B}31mb\u{202E}cba") == "a\\x9B31mb\\u{202E}cba")
        #expect(SafeText.terminal("Kühlraum 3\t°C") == "Kühlraum 3\t°C")
        // An ASCII field decoded from a tag's block: C1 and bidi controls become dots too.
        let f = FieldDecoder(name: "label", block: 0, type: .ascii, length: 4)
        if case let .text(t)? = f.decode(memory: [0x41, 0xC2, 0x9B, 0x42], first: 0, blockSize: 4) {
            #expect(t == "A.B")
        } else {
            Issue.record("not decoded")
        }
    }

    /// A file saved on Windows ends its lines in CR LF; Swift's "\r\n" is one Character, so splitting on "\n" kept
    /// the whole file as one line.
    @Test func blockFilesWithCRLFAndLoneCR() throws {
        let runs = try BlockFile.parse("# label\r\n0x10 41532D30\r\n0x11 30303432\r0x12 00000000\r\n")
        #expect(runs.count == 1 && runs[0].first.int == 0x10 && runs[0].data.count == 12)
        #expect(throws: BlockFile.Invalid.self) { try BlockFile.parse("0x10 41532D30\u{2028}0x11 30303432") }
    }

    /// Custom command codes: ISO/IEC 15693-3 reserves 0xA0–0xDF for custom and 0xE0–0xFF for proprietary
    /// commands. Which ones only read: NXP ICODE SLIX2 datasheet (0xAB GET NXP SYSTEM INFO, 0xBD READ SIGNATURE,
    /// 0xB2 GET RANDOM NUMBER), ST25DV datasheet (0xA0 Read Configuration, 0xAC Read Message).
    @Test func customCommandsNeedYesUnlessKnownReads() {
        let uid: [UInt8] = [0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0]
        for frame in [
            [0x02, 0xA6, 0x04], [0x22, 0xBB, 0x04] + uid, [0x02, 0xA3, 0x07, 0x00], [0x02, 0xA1, 0x02, 0x00, 0x00],
            [0x02, 0xE0, 0x00],
            [0x02, 0xAB],
        ] as [[UInt8]] {
            #expect(CommandCode.confirmationNeeded(for: frame) != nil, "\(Hex.format(frame))")
        }
        for frame in [
            [0x02, 0xAB, 0x04], [0x22, 0xBD, 0x04] + uid, [0x02, 0xB2, 0x04], [0x02, 0xA0, 0x02, 0x00],
            [0x02, 0xAC, 0x02, 0x00, 0x00],
            [0x02, 0x20, 0x05], [0x26, 0x01, 0x00],
        ] as [[UInt8]] {
            #expect(CommandCode.confirmationNeeded(for: frame) == nil, "\(Hex.format(frame))")
        }
    }
}

/// Loopback: 127.0.0.0/8 (RFC 1122 §3.2.1.3), ::1 and the IPv4-mapped ::ffff:127.0.0.1 (RFC 4291 §2.5.3,
/// §2.5.5.2), the name localhost (RFC 6761 §6.3). A name that merely starts with "127." is not an address.
@Suite(.drivers) struct LoopbackTests {
    @Test func loopbackIsDecidedOnTheParsedAddress() throws {
        for yes in [
            "127.0.0.1:9715", "127.1.2.3:1", "[::1]:9715", "[::ffff:127.0.0.1]:9715", "localhost:9715", "LOCALHOST:1",
        ] {
            #expect(try ListenAddress(parsing: yes).isLoopback, "\(yes)")
        }
        for no in [
            "127.evil.example:9715", "0.0.0.0:9715", "[::]:9715", "10.0.0.5:9715", "[::ffff:10.0.0.1]:1",
            "127.0.0.1.nip.io:1", "gateway:1",
        ] {
            #expect(try !ListenAddress(parsing: no).isLoopback, "\(no)")
        }
    }
}

@Suite(.drivers) struct SecretFileTests {
    func config(_ service: String, _ sync: String = "") throws -> AgentConfig {
        try AgentConfig.parse("[[reader]]\nid = \"r\"\nfield = \"f\"\n[service]\n\(service)\n\(sync)", file: "t.toml")
    }

    /// What `run` and `sync` would refuse is said by `config check` already; a secret other users can read
    /// (mode 0644, the umask's default) is a warning.
    @Test func missingShortAndOpenSecretFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let token = dir.appendingPathComponent("token").path, short = dir.appendingPathComponent("short").path
        try "a-token-of-24-characters\n".write(toFile: token, atomically: true, encoding: .utf8)
        try "short\n".write(toFile: short, atomically: true, encoding: .utf8)
        chmod(token, 0o644)
        let open = try config("api-token-file = \"\(token)\"").secretFileProblems()
        #expect(
            open.errors.isEmpty && open.warnings.count == 1 && open.warnings[0].contains("mode 644")
                && open.warnings[0].contains("chmod 600"), "\(open)")
        let doctorOpen = Doctor(configPath: "t.toml").secrets(try config("api-token-file = \"\(token)\""))
        #expect(doctorOpen.status == .fail && doctorOpen.advice.contains("chmod 600"), "\(doctorOpen)")
        chmod(token, 0o600)
        let closed = try config("api-token-file = \"\(token)\"").secretFileProblems()
        #expect(closed.errors.isEmpty && closed.warnings.isEmpty, "\(closed)")
        #expect(Doctor(configPath: "t.toml").secrets(try config("api-token-file = \"\(token)\"")).status == .pass)
        #expect(
            try config("api-token-file = \"\(short)\"").secretFileProblems().errors.first?.contains(
                "at least 16 characters") == true)
        let missing = try config(
            "",
            "[sync]\nurl = \"postgresql://gw@db.example/fleet\"\npassword-file = \"\(dir.path)/none\"\nca-file = \"\(dir.path)/ca.pem\""
        ).secretFileProblems()
        #expect(missing.errors.count == 2 && missing.errors.allSatisfy { $0.contains("cannot read it") }, "\(missing)")
    }

    @Test func settingsThatWorkButAreProbablyNotMeant() throws {
        let c = try AgentConfig.parse(
            "[polling]\ninterval = \"0ms\"\n[[reader]]\nid = \"r\"\nfield = \"f\"\n[store]\nflush-interval = \"0ms\"\n[sync]\nurl = \"postgresql://gw@db.example/fleet?sslmode=disable\"\n",
            file: "t.toml")
        #expect(c.warnings.count == 3, "\(c.warnings)")
        #expect(
            c.warnings.contains { $0.contains("interval 0") } && c.warnings.contains { $0.contains("flush-interval 0") }
                && c.warnings.contains { $0.contains("in clear") })
        let local = try AgentConfig.parse(
            "[[reader]]\nid = \"r\"\nfield = \"f\"\n[sync]\nurl = \"postgresql://gw@127.0.0.1/fleet?sslmode=disable\"\n",
            file: "t.toml")
        #expect(local.warnings.isEmpty, "\(local.warnings)")
    }

    /// A configuration from before readings carried the register's asset id, with a field named asset_id, still
    /// loads; the warning says what exports call the field and how to keep the two apart.
    @Test func aFieldNamedLikeAFixedColumnLoadsWithAWarning() throws {
        let c = try AgentConfig.parse(
            """
            [[reader]]
            id = "r"
            field = "f"
            [[plan]]
            name = "asset"
            match.model = "ST25DV64K"
              [[plan.field]]
              name = "asset_id"
              block = 0x100
              type = "ascii"
              length = 8
            """, file: "old.toml")
        #expect(c.warnings.count == 1, "\(c.warnings)")
        #expect(
            c.warnings.first?.contains("old.toml: field 'asset_id'") == true
                && c.warnings.first?.contains("field_asset_id") == true
                && c.warnings.first?.contains("tag_asset_id") == true, "\(c.warnings)")
        // The demo configuration names the tag's own asset id tag_asset_id: no warning.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let demo = try AgentConfig.load(root.appendingPathComponent("Config/vlogger.toml").path)
        #expect(!demo.warnings.contains { $0.contains("fixed column") }, "\(demo.warnings)")
    }
}

/// The register's cells that audits read are checked when it is imported, with the line; an asset id names one
/// tag; a NUL byte is no text.
@Suite(.drivers) struct RegisterImportTests {
    func importing(_ csv: String) throws -> String? {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-reg-\(UUID().uuidString).db")
            .path
        let store = try Store(path: path)
        defer { store.close() }
        do {
            _ = try AssetRegister.importText(csv, file: "assets.csv", into: store)
            return nil
        } catch {
            #expect(try store.assets().isEmpty, "a failed import wrote rows")
            return "\(error)"
        }
    }

    @Test func badCellsAreErrorsWithTheirLine() throws {
        let head = "uid,asset_id,location"
        let cases: [(String, String)] = [
            ("uid,asset_id,block_0x1FFFF\nE008010000004212,A1,01", "assets.csv:1: column block_0x1ffff"),
            ("uid,asset_id,locked_0xZZ\nE008010000004212,A1,yes", "assets.csv:1: column locked_0xzz"),
            (
                "uid,asset_id,locked_0x00\nE008010000004212,A1,yes\nE008010000004213,A2,maybe",
                "assets.csv:3: column locked_0x00: 'maybe' is not yes or no"
            ),
            (
                "uid,asset_id,block_0x00\nE008010000004212,A1,XYZ",
                "assets.csv:2: column block_0x00: 'XYZ' is not hex bytes"
            ),
            ("uid,asset_id,manufacturer\nE008010000004212,A1,Acme Tags", "assets.csv:2: column manufacturer"),
            (
                "\(head)\nE008010000004212,A1,dock\nE008010000004213,A1,dock",
                "assets.csv:3: asset id A1 is already on line 2 for E008010000004212"
            ),
            (
                "\(head)\nE008010000004212,A1,dock\nE008010000004212,A2,dock",
                "assets.csv:3: UID E008010000004212 is listed twice (first on line 2)"
            ),
            ("\(head)\nE008010000004212,A\u{0}1,dock", "assets.csv:2: a NUL byte in a cell"),
        ]
        for (csv, says) in cases {
            let got = try importing(csv)
            #expect(got?.contains(says) == true, "\(csv): \(String(describing: got))")
        }
        #expect(
            try importing(
                "uid,asset_id,locked_0x00,block_0xF8,manufacturer\nE008010000004212,A1,no,6608C2,NXP\nE008010000004213,A2,,,0x04"
            ) == nil)
        // An asset id the store already gives another tag, which the file does not list.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-reg-\(UUID().uuidString).db")
            .path
        let store = try Store(path: path)
        defer { store.close() }
        _ = try AssetRegister.importText("uid,asset_id\nE008010000004212,A-1\n", file: "first.csv", into: store)
        var clash = ""
        do {
            _ = try AssetRegister.importText("uid,asset_id\nE008010000004213,A-1\n", file: "second.csv", into: store)
        } catch { clash = "\(error)" }
        #expect(clash.contains("second.csv:2: asset id A-1 is the store's asset id of E008010000004212"), "\(clash)")
    }

    /// The rules keep only the register columns they compare with.
    @Test func theRulesKeepOnlyTheColumnsTheyRead() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-reg-\(UUID().uuidString).csv")
            .path
        try "uid,asset_id,cage,note\nE008010000004212,A1,B7,x\nE008010000004213,A2,B8,y\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let none = try AssetRegister.load(path, keeping: [])
        #expect(none.count == 2 && none.rows.isEmpty && none.columns == ["uid", "asset_id", "cage", "note"])
        let cage = try AssetRegister.load(path, keeping: ["cage"])
        #expect(cage.rows["E008010000004212"] == ["cage": "B7"])
    }
}

/// systemd.resource-control(5): IPAddressAllow=/IPAddressDeny= apply to every socket of the unit, outgoing ones
/// too, and take addresses (with an optional prefix length), not names.
@Suite(.drivers) struct NetworkAllowanceTests {
    let text = """
        [[reader]]
        id = "dock-1"
        driver = "feig"
        device = "tcp://10.0.0.21:10001,timeout=500"
        [[reader]]
        id = "cage"
        field = "f"
        [sync]
        url = "postgresql://gw@db.plant.example:5433/fleet"
        [[output.mqtt]]
        url = "mqtts://10.0.0.30"
        [[output.webhook]]
        url = "https://[2001:db8::40]/hooks?token=x"
        """

    @Test func theDropInAllowsEveryRemoteTheConfigurationNames() throws {
        let c = try AgentConfig.parse(text, file: "t.toml")
        #expect(
            c.remotes == [
                Remote(what: "reader dock-1 (feig)", host: "10.0.0.21", port: 10001),
                Remote(what: "fleet sync", host: "db.plant.example", port: 5433),
                Remote(what: "output mqtt (MQTT broker)", host: "10.0.0.30", port: 8883),
                Remote(what: "output webhook (webhook)", host: "2001:db8::40", port: 443),
            ])
        let (dropIn, unresolved) = NetworkAllowance.dropIn(c.remotes, source: "t.toml") {
            $0 == "db.plant.example" ? ["192.0.2.7", "2001:db8::7"] : NetworkAllowance.addresses($0)
        }
        #expect(unresolved.isEmpty)
        #expect(
            NetworkAllowance.allowed(inDropIn: dropIn) == [
                "10.0.0.21", "192.0.2.7", "2001:db8::7", "10.0.0.30", "2001:db8::40",
            ])
        #expect(dropIn.contains("[Service]\n# reader dock-1 (feig): 10.0.0.21:10001\nIPAddressAllow=10.0.0.21\n"))
        let none = NetworkAllowance.dropIn(c.remotes, source: "t.toml") { _ in [] }
        #expect(
            none.unresolved == ["10.0.0.21", "db.plant.example", "10.0.0.30", "2001:db8::40"]
                && NetworkAllowance.allowed(inDropIn: none.text).isEmpty)
    }

    @Test func doctorTriesEachRemote() throws {
        // A port that listens and one that does not, on loopback.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
        }
        _ = listen(fd, 4)
        _ = withUnsafeMutablePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        let open = Int(UInt16(bigEndian: a.sin_port))
        #expect(Doctor.tcpProblem("127.0.0.1", open, timeoutMs: 2000) == nil)
        let closed = Doctor.tcpProblem("127.0.0.1", 1, timeoutMs: 2000)
        #expect(closed?.lowercased().contains("refused") == true, "\(String(describing: closed))")
    }
}
