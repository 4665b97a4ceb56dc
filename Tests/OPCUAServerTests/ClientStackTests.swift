import Foundation
import NIOConcurrencyHelpers
import OPCUA
import Testing

@testable import OPCUAServer

/// Python with the OPC UA client stacks nobody here wrote: asyncua (PyPI, FreeOpcUa's Python stack) and o6
/// (PyPI, o6 Automation's Python binding of open62541): `VLOGGER_OPCUA_PYTHON`, else `python3`. In CI
/// (`VLOGGER_REQUIRE_OPCUA_CLIENTS=1`) a missing one fails the suite instead of skipping it.
func opcuaPython() -> String? {
    let env = ProcessInfo.processInfo.environment
    let python = env["VLOGGER_OPCUA_PYTHON"] ?? "python3"
    if env["VLOGGER_REQUIRE_OPCUA_CLIENTS"] == "1" { return python }
    return (try? TestProcess.run(python, ["-c", "import asyncua, o6"], seconds: 60).code) == 0 ? python : nil
}

/// A child process with a deadline: its exit code and what it printed.
enum TestProcess {
    struct Outcome {
        let code: Int32
        let stdout: String
        let stderr: String
    }

    static func run(_ executable: String, _ arguments: [String], seconds: Double) throws -> Outcome {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [executable] + arguments
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // SIGKILL: a client stuck in native code may not end on SIGTERM.
        let pid = p.processIdentifier
        let killer = DispatchWorkItem { if p.isRunning { kill(pid, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: killer)
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        killer.cancel()
        return Outcome(
            code: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
            stderr: String(decoding: e, as: UTF8.self))
    }
}

/// A server on a free loopback port with test-only keys made here, a users file and a trust list the test
/// changes while it runs.
final class TestServer: @unchecked Sendable {
    let server: OPCUAServer
    let port: Int
    let dir: URL
    let clientCert: URL
    let clientKey: URL
    let clientFingerprint: String
    let serverCertificate: ApplicationCertificate
    let clientKeyPair: RSAKeyPair
    let clientCertificate: ApplicationCertificate
    private let trustedBox: NIOLockedValueBox<Set<String>>
    let rejectedBox = NIOLockedValueBox<[String]>([])

    static let password = "pässwort-42"

    init(
        trustClient: Bool = true, maxSessions: Int = 20, clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("opcua-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let serverKey = try RSAKeyPair(bits: 2048)
        let serverCert = try ApplicationCertificate.make(
            key: serverKey, applicationUri: "urn:vlogger:test:server", applicationName: "vlogger test",
            hosts: ["localhost", "127.0.0.1"], notBefore: Date().addingTimeInterval(-3600))
        let key = try RSAKeyPair(bits: 2048)
        let cert = try ApplicationCertificate.make(
            key: key, applicationUri: "urn:vlogger:test:asyncua", applicationName: "asyncua test",
            hosts: ["localhost"], notBefore: Date().addingTimeInterval(-3600))
        clientCert = dir.appendingPathComponent("client.der")
        clientKey = dir.appendingPathComponent("client-key.pem")
        try Data(cert.der).write(to: clientCert)
        try key.pem.write(to: clientKey, atomically: true, encoding: .utf8)
        clientFingerprint = cert.fingerprint
        clientKeyPair = key
        clientCertificate = cert
        let trusted = NIOLockedValueBox<Set<String>>(trustClient ? [cert.fingerprint] : [])
        trustedBox = trusted
        let rejected = rejectedBox
        let users = try UsersFile(UsersFile.line(name: "operator", password: Self.password) ?? "")
        var config = ServerConfiguration(
            host: "127.0.0.1", port: 0, applicationUri: "urn:vlogger:test:server", applicationName: "vlogger test",
            identity: ServerIdentity(certificate: serverCert, key: serverKey), security: EndpointSecurity.all,
            users: { users }, trusted: { trusted.withLockedValue { $0 } },
            rejected: { c in rejected.withLockedValue { $0.append(c.fingerprint) } })
        config.maxSessions = maxSessions
        self.serverCertificate = serverCert
        let core = ServerCore(
            configuration: config, addressSpace: try AddressSpace.standard(applicationUri: "urn:vlogger:test:server"),
            clock: clock)
        server = OPCUAServer(core: core)
        let bound = try await server.start()
        port = bound
    }

    func trust(_ fingerprint: String) { trustedBox.withLockedValue { _ = $0.insert(fingerprint) } }

    var url: String { "opc.tcp://127.0.0.1:\(port)" }

    /// Runs a client (`asyncua` or `o6`: Clients/NAME_client.py) while the server posts an event every 100 ms.
    func client(
        _ name: String, _ python: String, _ security: String, user: Bool, password: String = password,
        expectRefusal: Bool = false
    ) async throws -> [String: Any] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Clients/\(name)_client.py").path
        var args = [script, url, security, "--cert", clientCert.path, "--key", clientKey.path]
        if user { args += ["--user", "operator", "--password", password] }
        if expectRefusal { args.append("--expect-refusal") }
        // Events from a timer on a dispatch queue, and the client waited for off the cooperative pool: tests that
        // block its few threads (one per core) must not hold the events back.
        let core = server.core
        let counter = NIOLockedValueBox(0)
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
        timer.schedule(deadline: .now(), repeating: .milliseconds(100))
        timer.setEventHandler {
            let n = counter.withLockedValue {
                $0 += 1; return $0
            }
            core.post(ServerEvent(time: Date(), message: "test event \(n)", severity: 500))
        }
        timer.resume()
        defer { timer.cancel() }
        let arguments = args
        let outcome = try await withCheckedThrowingContinuation {
            (k: CheckedContinuation<TestProcess.Outcome, Error>) in
            DispatchQueue.global().async {
                k.resume(with: Result { try TestProcess.run(python, arguments, seconds: 120) })
            }
        }
        guard outcome.code == 0, let line = outcome.stdout.split(separator: "\n").last,
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
            throw ClientFailure(
                description: "\(name) \(security) exit \(outcome.code): \(outcome.stdout)\n\(outcome.stderr)")
        }
        return json
    }

    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: dir)
    }

    struct ClientFailure: Error, CustomStringConvertible {
        let description: String
    }
}

/// Two OPC UA stacks written by others as the clients of every policy and mode the server offers, anonymous and
/// with a user name: asyncua 2.1.0 (PyPI; FreeOpcUa's Python stack) and o6 2.2.0 (PyPI; o6 Automation's Python
/// binding of the open62541 C stack). Each browses everything below Root, reads every attribute of every node
/// (OPC 10000-4 §5.10.2: only Bad_AttributeIdInvalid may answer an attribute a class lacks), translates a browse
/// path, receives data changes and events, calls GetMonitoredItems (OPC 10000-5 §9.1) and closes.
@Suite(
    .serialized,
    .enabled(if: opcuaPython() != nil, "no Python asyncua and o6 here (pip install asyncua==2.1.0 o6==2.2.0)"))
struct ClientStackTests {
    static let clients = ["asyncua", "o6"]
    /// One RfidScanResult in OPC UA Binary (docs/reference/opcua.md, "One RfidScanResult"): no Location, CodeType
    /// "UID", ScanData's ByteString E004010012345678, 2026-01-01T00:00:00Z, one sighting (antenna 1, strength -40,
    /// the same time, power level 0).
    static let rfidScanResult59 =
        "00000000" + "03000000554944" + "01000000" + "08000000e004010012345678" + "00008192b17adc01" + "01000000"
        + "01000000" + "d8ffffff" + "00008192b17adc01" + "00000000"
    static let securities = [
        "None", "Basic256Sha256,Sign", "Basic256Sha256,SignAndEncrypt", "Aes128Sha256RsaOaep,SignAndEncrypt",
    ]

    @Test(arguments: clients, securities)
    func everyPolicyAndIdentity(client: String, security: String) async throws {
        let python = try #require(opcuaPython())
        let s = try await TestServer()
        defer { Task { await s.stop() } }
        for user in [false, true] {
            let out = try await s.client(client, python, security, user: user)
            print("\(client) \(security) \(user ? "operator" : "anonymous"): \(out)")
            let nodes = try #require(out["nodes"] as? Int)
            #expect(nodes >= 100, "\(out)")
            #expect(out["badReadCount"] as? Int == 0, "\(out["badReads"] ?? "")")
            #expect(out["attributeReads"] as? Int == nodes * 27)
            #expect(out["translated"] as? String == "i=2258")
            #expect((out["changes"] as? Int ?? 0) >= 3)
            let events = try #require(out["events"] as? [[String: Any]])
            let message = events.first?["message"] as? String ?? ""
            #expect(message.hasPrefix("test event"))
            #expect(events.first?["severity"] as? Int == 500)
            #expect(out["monitoredItems"] as? Int == 2)
            #expect(
                out["namespaces"] as? [String] == [
                    "http://opcfoundation.org/UA/", "urn:vlogger:test:server", "http://opcfoundation.org/UA/DI/",
                    "http://opcfoundation.org/UA/AutoID/",
                ])
            // DI's DeviceSet (DI's NodeSet: ns=1;i=5001), found by a browse name in DI's namespace index as the
            // server's NamespaceArray gives it (o6 prints the index by its own table of namespace names).
            #expect((out["deviceSet"] as? String ?? "").hasSuffix(";i=5001"), "\(out["deviceSet"] ?? "")")
            if client == "asyncua" { #expect(out["deviceSet"] as? String == "ns=2;i=5001") }
            // OPC 10000-3 §8.48: a subtype's StructureDefinition lists its supertype's fields first. The NodeSet
            // lists UserNameIdentityToken's own three only; PolicyId is UserIdentityToken's (i=316).
            #expect(
                out["userNameTokenFields"] as? [String] == ["PolicyId", "UserName", "Password", "EncryptionAlgorithm"])
            #expect(out["userNameTokenBase"] as? String == "i=316")
            // AutoID's RfidScanResult as served: ScanResult's four fields, then its own Sighting (OPC 10000-3 §8.48).
            #expect(
                out["rfidScanResultFields"] as? [String] == [
                    "CodeType", "ScanData", "Timestamp", "Location", "Sighting",
                ], "\(out["rfidScanResultFields"] ?? "")")
            if client == "asyncua" {
                // DI's and AutoID's structures and enumerations, built by asyncua from their definitions alone.
                let loaded = Set(out["loadedTypes"] as? [String] ?? [])
                let expected: Set = [
                    "DeviceHealthEnumeration", "FetchResultDataType", "ParameterResultDataType",
                    "TransferResultDataDataType", "TransferResultErrorDataType", "UpdateBehavior",
                    "SoftwareVersionFileType", "RfidScanResult", "RfidSighting", "ScanData", "Location",
                    "ScanSettings", "AutoIdOperationStatusEnumeration",
                ]
                #expect(expected.isSubset(of: loaded), "\(loaded)")
                // One RfidScanResult encoded by asyncua's class built from the served definition: the 59 bytes of
                // docs/reference/opcua.md (UID E004010012345678, 2026-01-01Z, antenna 1, strength -40).
                #expect(out["rfidScanResultBytes"] as? String == Self.rfidScanResult59, "\(out)")
            } else {
                // Every DataType the generator gave a definition (59, as tools/opcua/nodeset.py counts them) decodes in open62541.
                #expect(out["definitions"] as? Int == 59, "\(out["definitions"] ?? "")")
            }
            #expect(out["closed"] as? Bool == true)
            // Everything the client opened is gone again.
            #expect(s.server.core.sessionCount == 0)
        }
    }

    /// A wrong password is refused (Bad_UserAccessDenied, OPC 10000-4 §5.6.3); the right one then gets in on
    /// the same server.
    @Test(arguments: clients)
    func aWrongPasswordIsRefused(client: String) async throws {
        let python = try #require(opcuaPython())
        let s = try await TestServer()
        defer { Task { await s.stop() } }
        let wrong = try await s.client(
            client, python, "Basic256Sha256,SignAndEncrypt", user: true, password: "wrong", expectRefusal: true)
        #expect((wrong["refused"] as? String ?? "").contains("BadUserAccessDenied"), "\(wrong)")
        // Counted for /metrics and /healthz (vlogger_output_failed_activations_total).
        let failed = s.server.core.statistics().failedActivations
        #expect(failed >= 1)
        let out = try await s.client(client, python, "None", user: true)
        #expect(out["closed"] as? Bool == true)
        #expect(s.server.core.statistics().failedActivations == failed)
        #expect(s.server.core.statistics().refusedCertificates == 0)
    }

    /// A client certificate nobody trusted is refused (Bad_CertificateUntrusted) and kept as rejected; trusted
    /// while the server runs, the same client gets in without a restart.
    @Test(arguments: clients)
    func anUntrustedCertificateIsRefusedThenTrusted(client: String) async throws {
        let python = try #require(opcuaPython())
        let s = try await TestServer(trustClient: false)
        defer { Task { await s.stop() } }
        let refused = try await s.client(
            client, python, "Basic256Sha256,SignAndEncrypt", user: false, expectRefusal: true)
        #expect(refused["refused"] is String, "\(refused)")
        #expect(s.rejectedBox.withLockedValue { $0 }.contains(s.clientFingerprint))
        // Counted for /metrics and /healthz (vlogger_output_refused_certificates_total).
        let refusals = s.server.core.statistics().refusedCertificates
        #expect(refusals >= 1)
        s.trust(s.clientFingerprint)
        let out = try await s.client(client, python, "Basic256Sha256,SignAndEncrypt", user: false)
        #expect(out["closed"] as? Bool == true)
        #expect(s.server.core.statistics().refusedCertificates == refusals)
    }
}
