import Crypto
import Foundation
import Testing
import VLoggerStore
import VLoggerWebhook

/// The webhook output against a receiver written with Python's standard library
/// (Tests/IntegrationTests/Support/webhook_receiver.py): it checks every body's HMAC-SHA256 signature, answers
/// 500 to the first requests (retried with back-off), and 410 to departures (final: recorded, not retried).
@Suite(.serialized) struct WebhookTests {
    typealias CLI = CLITests
    typealias Fault = SyncFaultTests

    /// The signature header on RFC 4231's test case 2 (HMAC-SHA256, key "Jefe").
    @Test func theSignatureIsHMACSHA256AsRFC4231Has() {
        #expect(
            WebhookOutput.signature(
                Array("what do ya want for nothing?".utf8), key: SymmetricKey(data: Data("Jefe".utf8)))
                == "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func signedRetriedAndRefusedForGood() throws {
        let s = try AgentCLITests.setup(interval: "200ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let secret = s.dir.appendingPathComponent("webhook-secret").path
        try "a-webhook-secret-of-some-length\n".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        let portFile = s.dir.appendingPathComponent("port").path,
            out = s.dir.appendingPathComponent("requests.jsonl").path
        let receiver = try Fault.spawn(
            #"exec python3 "$@""#,
            [
                CLI.root.appendingPathComponent("Tests/IntegrationTests/Support/webhook_receiver.py").path, portFile,
                out, secret, "2", "departure",
            ], stdout: "/dev/null", stderr: s.dir.appendingPathComponent("receiver.err").path)
        defer {
            kill(receiver, SIGKILL)
            _ = Fault.wait(receiver)
        }
        let end = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: portFile) && Date() < end { Thread.sleep(forTimeInterval: 0.05) }
        let port = try String(contentsOfFile: portFile, encoding: .utf8)
        let text =
            try String(contentsOfFile: s.config, encoding: .utf8) + """

                [[output.webhook]]
                url = "http://127.0.0.1:\(port)/hooks/vlogger?token=abc"
                events = ["arrival", "departure", "violation"]
                secret-file = "\(secret)"
                interval = "200ms"
                """
        try text.write(toFile: s.config, atomically: true, encoding: .utf8)
        let run = try CLI.run(["run", "--config", s.config, "--duration", "8s"])
        #expect(run.code == 0, "\(run.err)")
        // What the back-off left is sent by hand, as the service's next rounds would.
        let send = try CLI.run(["outputs", "send", "--config", s.config, "webhook"])
        #expect(send.code == 0, "\(send.out)\(send.err)")

        let requests = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let store = try Store(path: s.store, readOnly: true)
        defer { store.close() }
        let events = try store.outbox(.events, after: 0, limit: 100_000)
        func key(_ r: OutboxRow) -> String { "gw-demo-01/events/\(r.id)" }
        let kind = { (r: OutboxRow) in r.value("kind", in: .events).text ?? "" }
        let wanted = events.filter { ["arrival", "violation"].contains(kind($0)) }
        let departures = events.filter { kind($0) == "departure" }
        #expect(wanted.count >= 5 && departures.count >= 1, "\(events.map(kind))")
        // Every body was signed with the secret, and names its row in the header too.
        #expect(
            requests.allSatisfy {
                $0["verified"] as? Bool == true && $0["key"] as? String == $0["header_key"] as? String
            })
        // The first two answers were 500; those rows were sent again and taken.
        #expect(requests.prefix(2).allSatisfy { $0["status"] as? Int == 500 })
        let taken = Set(requests.filter { $0["status"] as? Int == 200 }.compactMap { $0["key"] as? String })
        #expect(Set(wanted.map(key)).isSubset(of: taken), "missing: \(Set(wanted.map(key)).subtracting(taken))")
        // A departure was answered 410 once, recorded as an event, and not sent again.
        for d in departures {
            #expect(requests.filter { $0["key"] as? String == key(d) }.map { $0["status"] as? Int } == [410])
        }
        let refused = events.filter { $0.value("name", in: .events).text == "webhook-refused" }
        #expect(refused.count == departures.count)
        #expect(refused.allSatisfy { ($0.value("detail", in: .events).text ?? "").contains("answered 410") })
        // Only the kinds asked for went (and not its own refusals, nor the start and stop events).
        #expect(requests.allSatisfy { ["arrival", "departure", "violation"].contains($0["kind"] as? String ?? "") })
        // The URL's query (a token) is not in the refusal events.
        #expect(!refused.contains { ($0.value("detail", in: .events).text ?? "").contains("abc") })
    }
}
