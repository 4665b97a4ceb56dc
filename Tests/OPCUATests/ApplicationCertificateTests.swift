import Foundation
import Testing

@testable import OPCUA

/// Application instance certificates: one made here is read back by OpenSSL (nobody here wrote it) with the
/// extensions an OPC UA application certificate needs (OPC 10000-6 §6.2.2); one made by Python `cryptography`
/// (Fixtures/secured-chunks.json) is read here; a peer's certificate meets the checks of OPC 10000-4 §6.1.3.
@Suite struct ApplicationCertificateTests {
    static let now = Date(timeIntervalSince1970: 1_795_854_600)  // 2026-11-28T08:30:00Z

    static func openssl(_ args: [String], _ der: [UInt8]) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opcua-cert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("cert.der")
        try Data(der).write(to: file)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args + ["-inform", "DER", "-in", file.path]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test func aCertificateMadeHereIsWhatOpenSSLReads() throws {
        let key = try RSAKeyPair(bits: 2048)
        let cert = try ApplicationCertificate.make(
            key: key, applicationUri: "urn:gw-01:vlogger", applicationName: "vlogger gw-01",
            hosts: ["gw-01.plant.example", "192.168.10.20"], notBefore: Self.now)
        #expect(cert.applicationUri == "urn:gw-01:vlogger")
        #expect(cert.hostNames == ["gw-01.plant.example", "192.168.10.20"])
        #expect(cert.isSelfSigned && cert.thumbprint.count == 20 && cert.fingerprint.count == 64)
        #expect(cert.publicKey?.der == key.publicKey.der)
        #expect(cert.notValidBefore == Self.now)
        #expect(try ApplicationCertificate(der: cert.der).fingerprint == cert.fingerprint)
        let text = try Self.openssl(["x509", "-noout", "-text"], cert.der)
        for line in [
            "Signature Algorithm: sha256WithRSAEncryption", "Public-Key: (2048 bit)",
            "Subject: CN = vlogger gw-01, O = vlogger",
            "URI:urn:gw-01:vlogger", "DNS:gw-01.plant.example", "IP Address:192.168.10.20", "CA:FALSE",
            "Digital Signature, Non Repudiation, Key Encipherment, Data Encipherment, Certificate Sign",
            "TLS Web Server Authentication, TLS Web Client Authentication",
        ] {
            #expect(text.contains(line), "\(line)\n\(text)")
        }
        let fingerprint = try Self.openssl(["x509", "-noout", "-fingerprint", "-sha256"], cert.der)
        #expect(fingerprint.replacingOccurrences(of: ":", with: "").contains(cert.fingerprint), "\(fingerprint)")
    }

    @Test func aCertificateOfCryptographyIsReadHere() throws {
        let v = try #require(SecuredChunkTests.vectors)
        let cert = try ApplicationCertificate(der: SecuredChunkTests.b(v.clientCertificate))
        #expect(cert.publicKey?.der == SecuredChunkTests.b(v.clientPublicKey))
        #expect(cert.isSelfSigned && cert.subject.contains("vlogger test client"))
        #expect(cert.notValidBefore == Date(timeIntervalSince1970: 1_795_824_000))  // 2026-11-28T00:00:00Z
        #expect(throws: SecurityPolicy.CryptoError.self) { try ApplicationCertificate(der: [0x30, 0x03, 1, 2, 3]) }
    }

    @Test func aPeersCertificateMeetsTheChecks() throws {
        let key = try RSAKeyPair(bits: 2048)
        let cert = try ApplicationCertificate.make(
            key: key, applicationUri: "urn:client", applicationName: "client", hosts: [], notBefore: Self.now, years: 1)
        let trusted: Set<String> = [cert.fingerprint]
        #expect(cert.check(now: Self.now.addingTimeInterval(60), applicationUri: "urn:client", trusted: trusted) == nil)
        #expect(cert.check(now: Self.now, applicationUri: nil, trusted: []).map(\.status) == .badCertificateUntrusted)
        #expect(
            cert.check(now: Self.now.addingTimeInterval(-60), applicationUri: nil, trusted: trusted).map(\.status)
                == .badCertificateTimeInvalid)
        #expect(
            cert.check(now: Self.now.addingTimeInterval(2 * 366 * 86_400), applicationUri: nil, trusted: trusted).map(
                \.status) == .badCertificateTimeInvalid)
        #expect(
            cert.check(now: Self.now, applicationUri: "urn:other", trusted: trusted).map(\.status)
                == .badCertificateUriInvalid)
        // A byte of the signature changed: it parses, its signature no longer verifies.
        var tampered = cert.der
        tampered[tampered.count - 5] ^= 1
        let broken = try ApplicationCertificate(der: tampered)
        #expect(!broken.isSelfSigned)
        #expect(broken.check(now: Self.now, applicationUri: nil, trusted: []).map(\.status) == .badCertificateInvalid)
    }
}
