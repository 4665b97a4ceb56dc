import Foundation
import TestDrivers
import Testing
@testable import VLoggerCore
import VLoggerSync
import VLoggerModel

/// `[sync]`: libpq's URI form (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS),
/// the password only from a file or a variable, never in the URL or a message.
@Suite(.drivers) struct SyncSettingsTests {
    @Test func libpqURIs() throws {
        let s = try SyncSettings(url: "postgresql://vlogger@db.plant.example:6432/fleet")
        #expect(
            s.host == "db.plant.example" && s.port == 6432 && s.user == "vlogger" && s.database == "fleet"
                && s.sslMode == .verifyFull)
        let d = try SyncSettings(url: "postgres://gw@10.0.0.5/fleet?sslmode=require")
        #expect(d.port == 5432 && d.sslMode == .require)
        let v6 = try SyncSettings(
            url: "postgresql://gw@[2001:db8::7]:5433/fleet?sslmode=verify-full&sslrootcert=/etc/ssl/fleet-ca.pem")
        #expect(
            v6.host == "2001:db8::7" && v6.port == 5433 && v6.caFile == "/etc/ssl/fleet-ca.pem"
                && v6.url == "postgresql://gw@[2001:db8::7]:5433/fleet")
        for bad in [
            "mysql://a@b/c", "postgresql://b/c", "postgresql://a@b", "postgresql://a@b:0/c", "postgresql://a@b:99999/c",
            "postgresql://a@b/c?sslmode=prefer", "postgresql://a@b/c?application_name=x", "postgresql://a@/c",
        ] {
            #expect(throws: VLoggerError.self, "\(bad)") { try SyncSettings(url: bad) }
        }
    }

    /// libpq's multi-host form (libpq-connect.html, "Specifying Multiple Hosts": `host1:port1,host2:port2`, each port
    /// defaulting to 5432) and `target_session_attrs` (`read-write`: a session that accepts writes; `any`).
    @Test func severalHostsOfACluster() throws {
        let s = try SyncSettings(url: "postgresql://gw@pg1:5441,pg2,[2001:db8::9]:5443/fleet")
        #expect(
            s.endpoints == [
                .init(host: "pg1", port: 5441), .init(host: "pg2", port: 5432), .init(host: "2001:db8::9", port: 5443),
            ])
        #expect(s.host == "pg1" && s.port == 5441)
        #expect(s.url == "postgresql://gw@pg1:5441,pg2:5432,[2001:db8::9]:5443/fleet")
        // Several hosts: the writable one by default (the sync only writes); one host: any, as libpq's default.
        #expect(s.effectiveTargetSession == .readWrite)
        #expect(try SyncSettings(url: "postgresql://gw@pg1/fleet").effectiveTargetSession == .any)
        let any = try SyncSettings(url: "postgresql://gw@pg1,pg2/fleet?target_session_attrs=any")
        #expect(any.effectiveTargetSession == .any)
        #expect(
            try SyncSettings(url: "postgresql://gw@haproxy:5000/fleet?target_session_attrs=read-write")
                .effectiveTargetSession == .readWrite)
        // Every host is a remote the unit must allow.
        #expect(s.remotes.map(\.port) == [5441, 5432, 5443])
        for bad in [
            "postgresql://gw@pg1,,pg2/fleet", "postgresql://gw@pg1,/fleet", "postgresql://gw@pg1:5432,pg2:0/fleet",
            "postgresql://gw@pg1/fleet?target_session_attrs=standby", "postgresql://gw@[::1]x/fleet",
            "postgresql://gw@" + Array(repeating: "h", count: 17).joined(separator: ",") + "/fleet",
        ] {
            #expect(throws: VLoggerError.self, "\(bad)") { try SyncSettings(url: bad) }
        }
    }

    @Test func theSafetyWindow() throws {
        let c = try AgentConfig.parse(
            "[sync]\nurl = \"postgresql://gw@db/fleet\"\nsafety-window = \"48h\"\n", file: "t.toml")
        #expect(c.outputs.sync?.safetyWindowMs == 172_800_000)
        #expect(
            try AgentConfig.parse("[sync]\nurl = \"postgresql://gw@db/fleet\"\n", file: "t.toml").outputs.sync?
                .safetyWindowMs == 86_400_000)
        #expect(throws: (any Error).self) {
            try AgentConfig.parse(
                "[sync]\nurl = \"postgresql://gw@db/fleet\"\nsafety-window = \"40d\"\n", file: "t.toml")
        }
    }

    /// `answer-timeout`: 5 min by default, 1 s…1 h; connecting is bounded by 30 s or it, if shorter.
    @Test func theAnswerTimeout() throws {
        let url = "[sync]\nurl = \"postgresql://gw@db/fleet\"\n"
        let d = try #require(try AgentConfig.parse(url, file: "t.toml").outputs.sync)
        #expect(d.answerTimeoutMs == 300_000 && d.connectLimitMs == 30_000)
        let short = try #require(
            try AgentConfig.parse(url + "answer-timeout = \"10s\"\n", file: "t.toml").outputs.sync)
        #expect(short.answerTimeoutMs == 10_000 && short.connectLimitMs == 10_000)
        for bad in ["0s", "2h", "soon"] {
            #expect {
                try AgentConfig.parse(url + "answer-timeout = \"\(bad)\"\n", file: "t.toml")
            } throws: { e in "\(e)".contains("t.toml:3") && "\(e)".contains("answer-timeout") }
        }
    }

    @Test func thePasswordNeverComesFromTheURLNorShows() throws {
        #expect { try SyncSettings(url: "postgresql://gw:s3cret-pw@db/fleet") } throws: { e in
            "\(e)".contains("password-file") && !"\(e)".contains("s3cret-pw")
        }
        // A config file with a password in the URL: the error names the line, not the password.
        #expect {
            try AgentConfig.parse("[sync]\nurl = \"postgresql://gw:s3cret-pw@db/fleet\"\n", file: "t.toml")
        } throws: { e in
            "\(e)".contains("t.toml:2") && !"\(e)".contains("s3cret-pw")
        }
        var s = try SyncSettings(url: "postgresql://gw@db/fleet")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-pw-\(UUID().uuidString)")
        try "  from-the-file  \nsecond line\n".write(to: file, atomically: true, encoding: .utf8)
        s.passwordFile = file.path
        #expect(try s.password() == "from-the-file")
        s.passwordFile = nil
        s.passwordEnv = "VLOGGER_SYNC_PASSWORD"
        #expect(try s.password(environment: ["VLOGGER_SYNC_PASSWORD": "from-env"]) == "from-env")
        #expect { try s.password(environment: [:]) } throws: { "\($0)".contains("VLOGGER_SYNC_PASSWORD is not set") }
        s.passwordEnv = nil
        #expect(try s.password() == nil)
    }

    @Test func theSyncSection() throws {
        let c = try AgentConfig.parse(
            """
            [sync]
            url = "postgresql://gw@db:5432/fleet"
            password-env = "FLEET_PW"
            sslmode = "require"
            batch-size = 500
            interval = "30s"
            """, file: "t.toml")
        #expect(
            c.outputs.sync?.batchSize == 500 && c.outputs.sync?.intervalMs == 30_000
                && c.outputs.sync?.sslMode == .require
                && c.outputs.sync?.passwordEnv == "FLEET_PW")
        #expect(throws: (any Error).self) {
            try AgentConfig.parse("[sync]\nurl = \"postgresql://gw@db/fleet\"\nbatch-size = 0\n", file: "t.toml")
        }
        #expect(throws: (any Error).self) {
            try AgentConfig.parse(
                "[sync]\nurl = \"postgresql://gw@db/fleet\"\npassword-env = \"A\"\npassword-file = \"b\"\n",
                file: "t.toml")
        }
        #expect(throws: (any Error).self) { try AgentConfig.parse("[sync]\nbatch-size = 5\n", file: "t.toml") }
    }

    /// A password must never be echoed, whatever shape the URL has.
    @Test func syncURLsWithAPasswordAreNeverEchoed() {
        for text in [
            "postgresql:/gw:hunter2@db.example:5432/fleet", "gw:hunter2@db.example/fleet",
            "host=db.example user=gw password=hunter2",
            "postgresql://gw%3Ahunter2@db.example/fleet", "postgresql://gw:hunter2@db.example/fleet",
        ] {
            var message = ""
            do { _ = try SyncSettings(url: text) } catch { message = "\(error)" }
            #expect(!message.isEmpty && !message.contains("hunter2"), "\(text): \(message)")
        }
    }
}
