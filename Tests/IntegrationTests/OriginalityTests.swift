import Foundation
import ISO15693
import Testing

@testable import TagSecurity

/// Whether python-ecdsa is here (always in CI, where VLOGGER_REQUIRE_ECDSA=1 makes a missing one a failure).
func ecdsaAvailable() -> Bool {
    if ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_ECDSA"] == "1" { return true }
    return (try? SyncFaultTests.shell("python3 -c 'import ecdsa'", []).code) == 0
}

/// vlogger's secp128r1 ECDSA verification (written here) against python-ecdsa, an implementation nobody here
/// wrote (Support/originality_check.py): the same curve constants, the same verdict on the real NXP and ST
/// signatures, and every signature python-ecdsa makes with a fresh random key verifies here — and fails with one
/// bit flipped.
@Suite(.enabled(if: ecdsaAvailable(), "no python-ecdsa here"))
struct OriginalityTests {
    @Test func pythonEcdsaAgrees() throws {
        let script = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Support/originality_check.py").path
        let r = try SyncFaultTests.shell(#"python3 "$1" 40"#, [script])
        #expect(r.code == 0, "\(r.out)\(r.err)")
        let lines = r.out.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let curve = try #require(lines.first { $0.first == "curve" })
        let ours = [Secp128r1.p, Secp128r1.a, Secp128r1.b, Secp128r1.g.x, Secp128r1.g.y, Secp128r1.n]
        #expect(curve.dropFirst().map { UInt128($0, radix: 16) } == ours, "\(curve)")
        #expect(lines.filter { $0.first == "sample" && $0.last == "ok" }.count == 6, "\(r.out)")
        let signed = lines.filter { $0.first == "signed" && $0.count == 4 }
        #expect(signed.count == 40)
        var verified = 0
        for line in signed {
            let key = try Hex.parse(line[1]), digest = try Hex.parse(line[2]), signature = try Hex.parse(line[3])
            #expect(Secp128r1.verify(digest: digest, signature: signature, publicKey: key), "\(line)")
            var flipped = signature
            flipped[signature.count - 1] ^= 0x80
            #expect(!Secp128r1.verify(digest: digest, signature: flipped, publicKey: key), "\(line)")
            verified += 1
        }
        print(
            "python-ecdsa: curve constants equal; 6 real signatures verify in both; \(verified) random signatures (half unhashed, half SHA-256) verify here, and fail with a bit flipped"
        )
    }
}

/// `vlogger info` says whether a tag's originality signature verifies (Fixtures/originality-field: a genuine
/// SLIX2 with a real chip's UID and signature, and a clone with another chip's signature copied onto its UID).
@Suite struct OriginalityInfoTests {
    @Test func infoOnAGenuineAndAClonedSLIX2() throws {
        let field = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Fixtures/originality-field").path
        let genuine = try CLITests.run(["info", "--field", field, "--uid", "E00401082AD28E83"])
        #expect(
            genuine.code == 0 && genuine.out.contains("Originality    verified (NXP key for ICODE SLIX2/DNA/3)"),
            "\(genuine.out)\(genuine.err)")
        let clone = try CLITests.run(["info", "--field", field, "--uid", "E00401086FC2621F", "--json"])
        let object = try #require(MQTTTests.object(clone.out), "\(clone.out)")
        #expect(object["originality"] as? String == "signature does not verify (a clone, or an unknown key)")
        // The demo field's SLIX2 image has no signature: the simulated chip answers 32 zero bytes (as Flipper's
        // emulation does). An ICODE SLIX has no signature at all: nothing is asked.
        let demo = try CLITests.run(["info", "--uid", "E004010812345601"])
        #expect(
            demo.out.contains("Originality    the chip answered no signature (32 zero bytes: no signature programmed)"),
            "\(demo.out)\(demo.err)")
        let slix = try CLITests.run(["info", "--uid", "E004011000000A03"])
        #expect(
            slix.out.contains("Originality    no signature on this chip type (NXP ICODE SLIX has no originality"),
            "\(slix.out)\(slix.err)")
        // ST TruST25 (Fixtures/trust25-field: a real ST25TV02KC's UID and signature laid out as Proxmark3's
        // StCheckSig reads them): read from blocks 0x3F–0x4F and verified with ST's key 04.
        let st = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Fixtures/trust25-field").path
        let trust25 = try CLITests.run(["info", "--field", st, "--uid", "E00208000A227AAA"])
        #expect(
            trust25.out.contains("Originality    verified (ST TruST25 key 04 for ST25TV02KC/512C)"),
            "\(trust25.out)\(trust25.err)")
        print("info, genuine:\n\(genuine.out)info --json, clone: \(object["originality"] ?? "-")")
    }
}

/// The security commands that change a tag — passwords, page protection, privacy, destroy, the 64-bit password mode,
/// ST's password and area security registers — are sent only by an operator with `vlogger raw … --yes`: without
/// it each is refused before the reader is opened (`--trace` shows nothing on air) with a non-zero exit.
@Suite struct SecurityCommandTests {
    @Test func irreversibleSecurityCommandsNeedYes() throws {
        let nxp = "01 56 34 12 08 01 04 E0"  // the demo SLIX2, E004010812345601, on-air order
        let st = "02 01 00 00 00 26 02 E0"
        let frames: [(String, String)] = [
            ("22 B4 04 \(nxp) 02 00 00 00 00", "NXP Write Password"),
            ("22 B5 04 \(nxp) 02", "NXP Lock Password"),
            ("22 B6 04 \(nxp) 10 22", "NXP Protect Page"),
            ("22 B7 04 \(nxp) 10", "NXP Lock Page Protection Condition"),
            ("22 BA 04 \(nxp) 01 02 03 04", "NXP Enable Privacy"),
            ("22 B9 04 \(nxp) 01 02 03 04", "NXP Destroy"),
            ("22 BB 04 \(nxp)", "NXP 64-bit Password Protection"),
            ("22 B1 02 \(st) 01 00 00 00 00 00 00 00 00", "ST Write Password"),
            ("22 A1 02 \(st) 04 0C", "ST Write Configuration"),
        ]
        for (frame, name) in frames {
            let r = try CLITests.run(["raw", "--trace"] + frame.split(separator: " ").map(String.init))
            #expect(r.code != 0 && r.err.contains(name) && r.err.contains("add --yes"), "\(frame): \(r.err)")
            #expect(!r.out.contains(">>") && !r.err.contains(">>"), "\(frame): something was sent: \(r.out)\(r.err)")
        }
    }
}

/// NXP privacy mode (Fixtures/privacy-field: a SLIX2 in privacy mode, privacy password 0F0F0F0F): the tag does not
/// answer an inventory; `read --privacy-password-file` with the right password makes it answer for the session
/// (GET RANDOM NUMBER and SET PASSWORD, non-addressed); with a wrong one the read fails, once, and the field is reset;
/// a password file others may read is refused.
@Suite struct PrivacyModeTests {
    @Test func aTagInPrivacyModeAnswersOnlyAfterItsPassword() throws {
        let field = CLITests.root.appendingPathComponent("Tests/IntegrationTests/Fixtures/privacy-field").path
        let dir = try CLITests.scratch("privacy", copying: [])
        defer { try? FileManager.default.removeItem(at: dir) }
        var made = 0
        func passwordFile(_ value: String, mode: mode_t = 0o600) throws -> String {
            made += 1
            let f = dir.appendingPathComponent("password-\(made)").path
            try "\(value)\n".write(toFile: f, atomically: true, encoding: .utf8)
            chmod(f, mode)
            return f
        }
        let hidden = try CLITests.run(["scan", "--field", field])
        #expect(hidden.out.contains("0 tag(s)"), "\(hidden.out)\(hidden.err)")
        let opened = try CLITests.run([
            "read", "--field", field, "--privacy-password-file", try passwordFile("0F0F0F0F"), "--trace",
        ])
        #expect(opened.code == 0 && opened.out.contains("50 52 49 56"), "\(opened.out)\(opened.err)")
        #expect(!opened.out.contains("0F 0F 0F 0F") && opened.out.contains("password privacy (0x04), XORed value **"))
        let wrong = try CLITests.run([
            "read", "--field", field, "--privacy-password-file", try passwordFile("01020304"),
        ])
        #expect(wrong.code != 0 && wrong.err.contains("the privacy password was rejected"), "\(wrong.err)")
        let open = try CLITests.run([
            "read", "--field", field, "--privacy-password-file", try passwordFile("0F0F0F0F", mode: 0o644),
        ])
        #expect(open.code != 0 && open.err.contains("chmod 600") && !open.err.contains("0F0F0F0F"), "\(open.err)")
    }
}
