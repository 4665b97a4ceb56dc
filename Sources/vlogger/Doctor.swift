import VLoggerModel
import ArgumentParser
import Foundation
import VLoggerCLI
import VLoggerCore
import VLoggerService

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check what makes a gateway fail on site, and say what to do about each problem.",
        discussion: """
            Checks, in one run: the configuration (with its rules and asset register); pcscd and its socket (when a \
            reader uses pcsc); each configured reader (opens, answers an inventory, the tags in its field); the store's \
            folder and file (permissions for the user running this, integrity) and the free disk under it; the system \
            clock (synchronised or not: every reading is timestamped); the [service] listen address (free, or held by \
            the vlogger service); each [sync] server, MQTT broker and webhook host (answers over TCP, allowed by the \
            unit's network drop-in); each MQTT broker at the protocol level (a probe connection that logs in with the \
            configured certificates and password, under a client id of its own, publishing nothing). Nothing is \
            written and no tag is changed. Run it as the service's user \
            (`sudo -u vlogger vlogger doctor --config /etc/vlogger/vlogger.toml`) to check that user's permissions. \
            Exit code 0 only when every check passes, 1 otherwise.
            """)

    @Option(help: ConfigPath.help)
    var config = ConfigPath.found

    @Flag(help: "Skip the readers (for instance while the service holds them).")
    var noReaders = false

    @Flag(
        help: "Machine-readable JSON output: {\"ok\": …, \"checks\": [{\"name\", \"status\", \"detail\", \"advice\"}]}."
    )
    var json = false

    func run() async throws {
        var doctor = Doctor(configPath: config)
        doctor.readers = !noReaders
        var checks = doctor.run()
        if let c = try? AgentConfig.load(config) {
            for p in await Gateway.probeOutputs(c) {
                if let f = p.failure {
                    checks.append(
                        .fail(p.check, "\(URLRedaction.redact(p.destination)): \(f.kind): \(f.message)", p.advice))
                } else {
                    checks.append(
                        .pass(
                            p.check,
                            p.detail.isEmpty
                                ? "\(URLRedaction.redact(p.destination)) accepted a probe connection (logged in, nothing published)"
                                : p.detail))
                }
            }
        }
        let ok = checks.allSatisfy { $0.status == .pass }
        if json {
            printJSON(
                DoctorJSON(
                    ok: ok,
                    checks: checks.map {
                        .init(
                            name: $0.name, status: $0.status == .pass ? "ok" : "fail", detail: $0.detail,
                            advice: $0.status == .pass ? nil : $0.advice)
                    }))
        } else {
            let width = checks.map(\.name.count).max() ?? 0
            for c in checks {
                let pad = String(repeating: " ", count: width - c.name.count)
                print("\(c.status == .pass ? "ok  " : "FAIL") \(c.name)\(pad)  \(c.detail)")
                if c.status == .fail { print("     \(String(repeating: " ", count: width))  → \(c.advice)") }
            }
            let failed = checks.filter { $0.status == .fail }.count
            print(failed == 0 ? "all \(checks.count) checks pass" : "\(failed) of \(checks.count) checks fail")
        }
        if !ok { throw ExitCode(1) }
    }
}
