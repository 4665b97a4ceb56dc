import Foundation
import Testing

/// Issue 53: Flipper SLIX files kept whole (docs/reference/flipper-slix.md). Fixtures/flipper-slix2-field holds two
/// Flipper SLIX2 files with real chips' UIDs and NXP signatures (Proxmark3's tools/recover_pk.py; the folder's
/// README), laid out as Flipper's own unit-test file.
@Suite(.serialized) struct FlipperSLIXTests {
    typealias CLI = CLITests
    static let field = CLI.root.appendingPathComponent("Tests/IntegrationTests/Fixtures/flipper-slix2-field")
    static let genuine = ["E00401082AD28E83": "slix2-2ad28e83.nfc", "E00401086FC2621F": "slix2-6fc2621f.nfc"]

    /// A scratch copy of the field with `edit` applied to one file's text.
    static func copy(_ name: String, _ edit: (String) -> String) throws -> URL {
        let dir = try CLI.scratch(
            "flipper-slix", copying: [name], from: "Tests/IntegrationTests/Fixtures/flipper-slix2-field")
        let file = dir.appendingPathComponent(name)
        try edit(try String(contentsOf: file, encoding: .utf8)).write(to: file, atomically: true, encoding: .utf8)
        return dir
    }

    @Test func infoVerifiesTheSignatureAndAFlippedByteIsNotGenuine() throws {
        for (uid, _) in Self.genuine {
            let info = try CLI.run(["info", "--field", Self.field.path, "--uid", uid])
            #expect(
                info.code == 0 && info.out.contains("Originality    verified (NXP key for ICODE SLIX2/DNA/3)"),
                "\(uid): \(info.out)\(info.err)")
            print("info on the genuine Flipper file of \(uid):\n\(info.out)")
        }
        // The signature's last byte 79 → 78.
        let dir = try Self.copy("slix2-2ad28e83.nfc") { $0.replacingOccurrences(of: "6E AD 79\n", with: "6E AD 78\n") }
        defer { try? FileManager.default.removeItem(at: dir) }
        let flipped = try CLI.run(["info", "--field", dir.path, "--uid", "E00401082AD28E83"])
        #expect(
            flipped.code == 0
                && flipped.out.contains("Originality    signature does not verify (a clone, or an unknown key)"),
            "\(flipped.out)\(flipped.err)")
        print("info with one signature byte flipped:\n\(flipped.out)")
        // Without a Signature key, the simulated SLIX2 answers 32 zero bytes: told apart from a bad signature.
        let none = try Self.copy("slix2-6fc2621f.nfc") {
            $0.components(separatedBy: "\n").filter { !$0.hasPrefix("Signature:") }.joined(separator: "\n")
        }
        defer { try? FileManager.default.removeItem(at: none) }
        let unsigned = try CLI.run(["info", "--field", none.path, "--uid", "E00401086FC2621F"])
        #expect(
            unsigned.out.contains("Originality    the chip answered no signature (32 zero bytes"),
            "\(unsigned.out)\(unsigned.err)")
    }

    /// The gateway's originality rule on the files: the genuine ones pass (no violation), the flipped one is one.
    @Test func theOriginalityRulePassesGenuineFilesAndFlagsAFlippedOne() throws {
        let work = try CLI.scratch("flipper-rule", copying: ["assets.csv"])
        defer { try? FileManager.default.removeItem(at: work) }
        try CLI.writeOneReaderConfig(work)
        try """
        [[rule]]
        name = "genuine slix2"
        kind = "originality"
        expect = "genuine"
        severity = "critical"
        match.model = "SLIX2"
        """.write(to: work.appendingPathComponent("rules.toml"), atomically: true, encoding: .utf8)
        let config = work.appendingPathComponent("vlogger.toml").path
        let field = try CLI.scratch(
            "flipper-rule-field", copying: Array(Self.genuine.values),
            from: "Tests/IntegrationTests/Fixtures/flipper-slix2-field")
        defer { try? FileManager.default.removeItem(at: field) }
        let ok = try CLI.run(["run", "--config", config, "--field", field.path, "--once", "--print", "jsonl"])
        #expect(ok.code == 0, "\(ok.err)")
        #expect(ok.out.contains("E00401082AD28E83") && ok.out.contains("E00401086FC2621F"), "\(ok.out)")
        #expect(!ok.out.contains("\"violation\""), "\(ok.out)")
        // One byte of the second file's signature flipped: a critical violation naming it.
        let file = field.appendingPathComponent("slix2-6fc2621f.nfc")
        let text = try String(contentsOf: file, encoding: .utf8)
        try text.replacingOccurrences(of: "Signature: 9F 47", with: "Signature: 9F 46").write(
            to: file, atomically: true, encoding: .utf8)
        let bad = try CLI.run(["run", "--config", config, "--field", field.path, "--once", "--print", "jsonl"])
        let violations = bad.out.split(separator: "\n").filter { $0.contains("\"violation\"") }
        #expect(
            violations.count == 1 && violations[0].contains("E00401086FC2621F")
                && violations[0].contains("signature does not verify"), "\(bad.out)\(bad.err)")
    }

    /// Import and export: each file comes back byte for byte from Flipper's format, through the project's JSON too; a
    /// Proxmark3 "15693 v4" dump keeps the privacy password (its only key for them), in the on-air order Proxmark3's
    /// emulator keeps (5B 6E FD 7F for Flipper's 7F FD 6E 5B), and has no key for the signature.
    @Test func aRoundTripIsByteIdenticalAndProxmark3KeepsWhatItHasKeysFor() throws {
        let scratch = try CLI.scratch("flipper-roundtrip", copying: [])
        defer { try? FileManager.default.removeItem(at: scratch) }
        for (uid, name) in Self.genuine {
            let path = Self.field.appendingPathComponent(name).path
            let original = try String(contentsOfFile: path, encoding: .utf8)
            let back = try CLI.run(["dump", "--from", path, "--format", "flipper"])
            #expect(back.code == 0 && back.out == original, "\(name): \(back.err)\n\(back.out)")
            let json = scratch.appendingPathComponent("\(uid).json").path
            #expect(try CLI.run(["dump", "--from", path, "--format", "vlogger", "--output", json]).code == 0)
            #expect(try CLI.run(["dump", "--from", json, "--format", "flipper"]).out == original, "\(name) via JSON")
        }
        let tonie = Self.field.appendingPathComponent("slix2-2ad28e83.nfc").path
        let pm3 = scratch.appendingPathComponent("hf-15-E00401082AD28E83-dump.json").path
        let written = try CLI.run(["dump", "--from", tonie, "--format", "proxmark3", "--output", pm3])
        #expect(written.code == 0, "\(written.err)")
        let pm3Text = try String(contentsOfFile: pm3, encoding: .utf8)
        #expect(
            pm3Text.contains("\"privacypasswd\" : \"5B6EFD7F\"") && pm3Text.contains("\"uid\" : \"838ED22A080104E0\""),
            "\(pm3Text)")
        let again = try CLI.run(["dump", "--from", pm3, "--format", "flipper"])
        #expect(
            again.out.contains("Password Privacy: 7F FD 6E 5B") && !again.out.contains("Signature:"), "\(again.out)")
        // Read over the (simulated) air, a dump has the signature (READ SIGNATURE) and the lock bits (GET NXP SYSTEM
        // INFO), and no password: none can be read.
        let air = try CLI.run(["dump", "--field", Self.field.path, "--uid", "E00401082AD28E83", "--format", "flipper"])
        #expect(
            air.out.contains("Signature: CA E8 18 3C") && air.out.contains("Lock EAS: false")
                && !air.out.contains("Password Privacy:"), "\(air.out)\(air.err)")
        #expect(air.err.contains("originality: verified (NXP key for ICODE SLIX2/DNA/3)"), "\(air.err)")
    }

    /// A file in privacy mode: the simulated tag answers nothing but the privacy password's two commands until it is
    /// given (SL2S2602 §9.5.3.9); vlogger sends it in on-air order, 5B 6E FD 7F for Flipper's 7F FD 6E 5B.
    @Test func privacyModeHoldsUntilThePrivacyPassword() throws {
        let dir = try Self.copy("slix2-2ad28e83.nfc") {
            $0.replacingOccurrences(of: "Privacy Mode: false", with: "Privacy Mode: true")
        }
        defer { try? FileManager.default.removeItem(at: dir) }
        let scan = try CLI.run(["scan", "--field", dir.path])
        #expect(!scan.out.contains("E00401082AD28E83"), "\(scan.out)\(scan.err)")
        let secret = dir.appendingPathComponent("privacy.txt").path
        try "5B6EFD7F\n".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        let read = try CLI.run([
            "read", "--field", dir.path, "--uid", "E00401082AD28E83", "--block", "0", "--privacy-password-file", secret,
        ])
        #expect(read.code == 0 && read.out.contains("E1 40 28 01"), "\(read.out)\(read.err)")
        // Flipper's order given instead: the wrong password, rejected once.
        try "7FFD6E5B\n".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        let wrong = try CLI.run([
            "read", "--field", dir.path, "--uid", "E00401082AD28E83", "--block", "0", "--privacy-password-file", secret,
        ])
        #expect(wrong.code != 0 && wrong.err.contains("privacy password was rejected"), "\(wrong.out)\(wrong.err)")
    }
}
