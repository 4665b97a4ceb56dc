import Foundation
import Testing

/// Issue 33's check, through the command line as an operator runs it: a queued write to a password-protected page
/// of a simulated SLIX2 and a plan-free `vlogger write --secrets … --trace`; the password (4 bytes, in any spelling)
/// is nowhere in the trace, the run's log, the store file or any export table (docs/reference/tag-passwords.md).
@Suite(.serialized) struct PasswordCLITests {
    static let uid = "E004010812345699"
    static let password = "A1B2C3D4"

    @Test func aPasswordWriteLeavesNoPasswordBehind() throws {
        let dir = try CLITests.scratch("password-cli", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: dir) }
        try CLITests.writeOneReaderConfig(dir)
        let config = dir.appendingPathComponent("vlogger.toml")
        let field = dir.appendingPathComponent("demo-field")
        // A SLIX2 whose high page (0x10…) needs the write password.
        let blocks = (0..<80).map { _ in "\"00000000\"" }.joined(separator: ", ")
        try """
        {"format": "vlogger-tag-image", "version": 1, "profile": "icode-slix2", "uid": "\(Self.uid)",
         "icReference": "01", "blockSize": 4, "blocks": [\(blocks)],
         "nxpPasswords": {"write": "\(Self.password)"}, "protectionPointer": "10", "protectionCondition": "20"}
        """.write(to: field.appendingPathComponent("slix2-protected.json"), atomically: true, encoding: .utf8)
        let secrets = dir.appendingPathComponent("secrets.toml")
        try "[[tag]]\nuid = \"\(Self.uid)\"\nnxp-write = \"\(Self.password)\"\n".write(
            to: secrets, atomically: true, encoding: .utf8)
        chmod(secrets.path, 0o600)
        let text = try String(contentsOf: config, encoding: .utf8)
        try (text + "\n[security]\nsecrets-file = \"secrets.toml\"\n").write(
            to: config, atomically: true, encoding: .utf8)

        var said: [String] = []
        func cli(_ args: [String]) throws -> (code: Int32, out: String, err: String) {
            let r = try CLITests.run(args)
            said += [r.out, r.err]
            return r
        }
        let queued = try cli([
            "write", "--when-seen", "--uid", Self.uid, "--block", "0x12", "--data", "CAFEF00D", "--config", config.path,
        ])
        #expect(queued.code == 0, "\(queued.err)")
        let run = try cli([
            "run", "--config", config.path, "--cycles", "2", "--fast-clock", "--log-level", "trace",
        ])
        #expect(run.code == 0, "\(run.err)")
        let list = try cli(["writes", "list", "--config", config.path])
        #expect(list.out.contains("done") && list.out.contains("CAFEF00D"), "\(list.out)")
        // The same with `vlogger write` and its trace (the tag powered afresh: a new process, a new field).
        let direct = try cli([
            "write", "--field", field.path, "--uid", Self.uid, "--block", "0x13", "--data", "0BADF00D", "--secrets",
            secrets.path, "--trace",
        ])
        #expect(direct.code == 0, "\(direct.err)")
        #expect(direct.out.contains("NXP Set Password") && direct.out.contains("XORed value **"), "\(direct.out)")
        for table in ["readings", "events", "tags", "writes"] {
            let export = try cli([
                "export", "--config", config.path, "--since", "2000-01-01T00:00:00Z", "--table", table, "--format",
                "jsonl",
            ])
            #expect(export.code == 0, "\(table): \(export.err)")
        }
        #expect(said.joined().contains("CAFEF00D"))
        let spellings = ["A1B2C3D4", "A1 B2 C3 D4", "a1b2c3d4", "a1 b2 c3 d4"]
        for s in spellings {
            #expect(!said.contains { $0.contains(s) }, "\(s) in an output")
        }
        // The store file and its journal, byte for byte.
        let store = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasSuffix(".db") || $0.contains(".db-")
        }
        #expect(!store.isEmpty, "no store in \(dir.path)")
        for f in store {
            let data = try Data(contentsOf: dir.appendingPathComponent(f))
            #expect(data.range(of: Data([0xA1, 0xB2, 0xC3, 0xD4])) == nil, "the password's bytes in \(f)")
            for s in spellings { #expect(data.range(of: Data(s.utf8)) == nil, "\(s) in \(f)") }
        }
    }

    /// A damaged secrets file is found before it is needed: `write --secrets` refuses it before the reader opens
    /// (nothing on `--trace`), `config check` names its line, and neither repeats the value.
    @Test func aDamagedSecretsFileIsNamedBeforeTheAir() throws {
        let dir = try CLITests.scratch("secrets-damaged", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: dir) }
        try CLITests.writeOneReaderConfig(dir)
        let config = dir.appendingPathComponent("vlogger.toml")
        let secrets = dir.appendingPathComponent("secrets.toml")
        try "[[tag]]\nuid = \"E002260000C0FFEE\"\nst-password-1 = \"ABCDEF\"\n".write(
            to: secrets, atomically: true, encoding: .utf8)
        chmod(secrets.path, 0o600)
        let write = try CLITests.run([
            "write", "--field", dir.appendingPathComponent("demo-field").path, "--uid", "E002260000C0FFEE", "--block",
            "9", "--data", "01020304", "--secrets", secrets.path, "--trace",
        ])
        #expect(
            write.code == 1 && write.err.contains("secrets.toml:3: tag[1].st-password-1: 8 bytes in hex"),
            "\(write.err)")
        #expect(write.out.isEmpty && !write.err.contains("ABCDEF"), "\(write.out)")
        let text = try String(contentsOf: config, encoding: .utf8)
        try (text + "\n[security]\nsecrets-file = \"secrets.toml\"\n").write(
            to: config, atomically: true, encoding: .utf8)
        let check = try CLITests.run(["config", "check", "--config", config.path])
        #expect(check.code != 0 && check.err.contains("security.secrets-file"), "\(check.err)")
        #expect(check.err.contains("st-password-1: 8 bytes in hex") && !check.err.contains("ABCDEF"))
    }
}
