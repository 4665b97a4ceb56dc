import Foundation
import OPCUA
import OPCUAServer
import VLoggerModel

/// The OPC UA server's certificates on disk: `own/` (the server's certificate, DER, and its key, PEM, mode
/// 0600), `trusted/` and `rejected/` (client certificates, DER, named by their SHA-256 fingerprint). The server
/// makes its own on first start; a refused client lands in `rejected/`, and `vlogger opcua trust` moves it to
/// `trusted/`, which the server reads at each connection (no restart).
public struct PKIFolder: Sendable {
    public let path: String
    public init(path: String) { self.path = path }

    var own: URL { URL(fileURLWithPath: path).appendingPathComponent("own") }
    var trustedDir: URL { URL(fileURLWithPath: path).appendingPathComponent("trusted") }
    var rejectedDir: URL { URL(fileURLWithPath: path).appendingPathComponent("rejected") }
    var certificateFile: URL { own.appendingPathComponent("cert.der") }
    var keyFile: URL { own.appendingPathComponent("key.pem") }

    /// Refused certificates kept at most (the oldest go first): a scanner cannot fill the disk.
    static let rejectedLimit = 100

    /// The server's identity: read from `own/`, or made (2048-bit RSA, five years) when there is none. A certificate
    /// of another ApplicationUri is an error (every client would refuse it: Bad_CertificateUriInvalid, OPC 10000-4
    /// §5.6.2); `renew` replaces it.
    public func identity(applicationUri: String, hosts: [String], now: Date = Date()) throws(VLoggerError)
        -> ServerIdentity
    {
        if FileManager.default.fileExists(atPath: certificateFile.path) {
            let identity = try load()
            guard identity.certificate.applicationUri == applicationUri else {
                throw VLoggerError(
                    "the OPC UA server's certificate (\(certificateFile.path)) is for \(identity.certificate.applicationUri ?? "no ApplicationUri"), the server's ApplicationUri is \(applicationUri) ([opcua] application-uri or its default urn:vlogger:GATEWAY-ID): clients would refuse it; vlogger opcua renew makes a new one (clients then trust it again)"
                )
            }
            return identity
        }
        return try makeIdentity(applicationUri: applicationUri, hosts: hosts, now: now)
    }

    /// The configured host names and addresses the server's certificate does not name (a client that dials one
    /// refuses the server: Bad_CertificateHostNameInvalid).
    public func missingHosts(_ hosts: [String], in cert: ApplicationCertificate) -> [String] {
        hosts.filter { h in !cert.hostNames.contains { $0.lowercased() == h.lowercased() } }
    }

    /// A new certificate and key for `applicationUri` and `hosts` in place of the old ones, which are kept beside
    /// them (`cert-STAMP.der`, `key-STAMP.pem`, still 0600). Answers the old certificate (nil: there was none) and
    /// the new identity. The running service goes on with the old one until it restarts.
    public func renew(applicationUri: String, hosts: [String], now: Date = Date()) throws(VLoggerError) -> (
        old: ApplicationCertificate?, new: ServerIdentity
    ) {
        let fm = FileManager.default
        var old: ApplicationCertificate?
        if fm.fileExists(atPath: certificateFile.path) {
            old = try? ApplicationCertificate(der: Array((try? Data(contentsOf: certificateFile)) ?? Data()))
            let stamp = ISO8601DateFormatter().string(from: now).replacingOccurrences(of: ":", with: "")
            do {
                if fm.fileExists(atPath: keyFile.path) {
                    try fm.moveItem(at: keyFile, to: own.appendingPathComponent("key-\(stamp).pem"))
                }
                try fm.moveItem(at: certificateFile, to: own.appendingPathComponent("cert-\(stamp).der"))
            } catch { throw VLoggerError("keeping the old certificate in \(own.path): \(error)") }
        }
        return (old, try makeIdentity(applicationUri: applicationUri, hosts: hosts, now: now))
    }

    private func load() throws(VLoggerError) -> ServerIdentity {
        do {
            let cert = try ApplicationCertificate(der: Array(try Data(contentsOf: certificateFile)))
            let key = try RSAKeyPair(pem: try String(contentsOf: keyFile, encoding: .utf8))
            guard cert.publicKey?.der == key.publicKey.der else {
                throw VLoggerError("\(certificateFile.path) is not the certificate of \(keyFile.path)")
            }
            return ServerIdentity(certificate: cert, key: key)
        } catch let e as VLoggerError {
            throw e
        } catch {
            throw VLoggerError("the OPC UA server's certificate in \(own.path): \(error)")
        }
    }

    private func makeIdentity(applicationUri: String, hosts: [String], now: Date) throws(VLoggerError)
        -> ServerIdentity
    {
        do {
            try make()
            let key = try RSAKeyPair(bits: 2048)
            let cert = try ApplicationCertificate.make(
                key: key, applicationUri: applicationUri, applicationName: "vlogger OPC UA server", hosts: hosts,
                notBefore: now.addingTimeInterval(-3600))
            // The key first: a certificate on disk always has its key beside it.
            try write(key.pem, to: keyFile, mode: 0o600)
            try Data(cert.der).write(to: certificateFile, options: .atomic)
            return ServerIdentity(certificate: cert, key: key)
        } catch {
            throw VLoggerError("making the OPC UA server's certificate in \(own.path): \(error)")
        }
    }

    /// Makes the folders (0700: the key is in them).
    func make() throws {
        for d in [URL(fileURLWithPath: path), own, trustedDir, rejectedDir] {
            try FileManager.default.createDirectory(
                at: d, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
    }

    private func write(_ text: String, to url: URL, mode: Int) throws {
        let tmp = url.appendingPathExtension("tmp")
        guard
            FileManager.default.createFile(
                atPath: tmp.path, contents: Data(text.utf8), attributes: [.posixPermissions: mode])
        else { throw VLoggerError("cannot write \(tmp.path)") }
        guard rename(tmp.path, url.path) == 0 else { throw VLoggerError("cannot move \(tmp.path) to \(url.path)") }
    }

    /// One certificate file of a folder, as listed.
    public struct Entry: Sendable, Equatable {
        public let fingerprint: String
        public let subject: String
        public let applicationUri: String?
        public let notValidAfter: Date
        public let trusted: Bool
    }

    private func certificates(in dir: URL) -> [(URL, ApplicationCertificate)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.sorted().compactMap { name in
            guard name.hasSuffix(".der") else { return nil }
            let url = dir.appendingPathComponent(name)
            guard let data = try? Data(contentsOf: url), data.count < 16_384,
                let cert = try? ApplicationCertificate(der: Array(data))
            else { return nil }
            return (url, cert)
        }
    }

    /// The trusted certificates' fingerprints (read at each connection).
    public func trustedFingerprints() -> Set<String> { Set(certificates(in: trustedDir).map { $0.1.fingerprint }) }

    /// Every trusted and rejected certificate.
    public func list() -> [Entry] {
        [(trustedDir, true), (rejectedDir, false)].flatMap { dir, trusted in
            certificates(in: dir).map {
                Entry(
                    fingerprint: $0.1.fingerprint, subject: $0.1.subject, applicationUri: $0.1.applicationUri,
                    notValidAfter: $0.1.notValidAfter, trusted: trusted)
            }
        }
    }

    /// The largest certificate kept or trusted (what `list` and the server read).
    static let maxCertificateSize = 16_384

    /// Keeps a refused client's certificate in `rejected/` (at most `rejectedLimit` files, counted by name, the
    /// oldest dropped; a certificate over 16 KiB is not kept).
    public func reject(_ cert: ApplicationCertificate) {
        guard cert.der.count < Self.maxCertificateSize, (try? make()) != nil else { return }
        let url = rejectedDir.appendingPathComponent("\(cert.fingerprint).der")
        guard !FileManager.default.fileExists(atPath: url.path) else { return }
        let fm = FileManager.default
        var kept = ((try? fm.contentsOfDirectory(atPath: rejectedDir.path)) ?? []).map {
            rejectedDir.appendingPathComponent($0)
        }
        func modified(_ u: URL) -> Date {
            (try? fm.attributesOfItem(atPath: u.path)[.modificationDate] as? Date) ?? .distantPast
        }
        while kept.count >= Self.rejectedLimit, let oldest = kept.min(by: { modified($0) < modified($1) }) {
            try? fm.removeItem(at: oldest)
            kept.removeAll { $0 == oldest }
        }
        try? Data(cert.der).write(to: url, options: .atomic)
    }

    /// Trusts a certificate: a rejected one by its fingerprint (or a unique prefix of 8 or more hex digits), or
    /// a DER or PEM file. Answers the certificate trusted.
    public func trust(_ what: String) throws(VLoggerError) -> Entry {
        let cert: ApplicationCertificate
        var rejectedFile: URL?
        if FileManager.default.fileExists(atPath: what) {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: what)), data.count < 65_536 else {
                throw VLoggerError("\(what) cannot be read")
            }
            guard let c = Self.parse(data) else {
                throw VLoggerError("\(what) is not an X.509 certificate (DER or PEM)")
            }
            guard c.der.count < Self.maxCertificateSize else {
                throw VLoggerError(
                    "\(what): a certificate of \(c.der.count) bytes (at most \(Self.maxCertificateSize))")
            }
            cert = c
        } else {
            let (url, c) = try find(what, in: rejectedDir, "rejected")
            cert = c
            rejectedFile = url
        }
        do {
            try make()
            try Data(cert.der).write(to: trustedDir.appendingPathComponent("\(cert.fingerprint).der"), options: .atomic)
        } catch { throw VLoggerError("writing to \(trustedDir.path): \(error)") }
        // Out of rejected/ only once it is in trusted/.
        if let rejectedFile { try? FileManager.default.removeItem(at: rejectedFile) }
        return Entry(
            fingerprint: cert.fingerprint, subject: cert.subject, applicationUri: cert.applicationUri,
            notValidAfter: cert.notValidAfter, trusted: true)
    }

    /// Takes a certificate out of `trusted/` (into `rejected/`, so it can be trusted again).
    public func untrust(_ fingerprint: String) throws(VLoggerError) -> Entry {
        let (url, cert) = try find(fingerprint, in: trustedDir, "trusted")
        try? FileManager.default.removeItem(at: url)
        reject(cert)
        return Entry(
            fingerprint: cert.fingerprint, subject: cert.subject, applicationUri: cert.applicationUri,
            notValidAfter: cert.notValidAfter, trusted: false)
    }

    private func find(_ text: String, in dir: URL, _ what: String) throws(VLoggerError) -> (URL, ApplicationCertificate)
    {
        let prefix = text.uppercased().replacingOccurrences(of: ":", with: "").replacingOccurrences(of: " ", with: "")
        guard prefix.count >= 8, prefix.allSatisfy(\.isHexDigit) else {
            throw VLoggerError(
                "'\(text)': a certificate's SHA-256 fingerprint or SHA-1 thumbprint (8 or more hex digits) or a file")
        }
        // The SHA-256 fingerprint vlogger prints, or the SHA-1 thumbprint most clients show (UaExpert, Ignition).
        let matches = certificates(in: dir).filter {
            $0.1.fingerprint.hasPrefix(prefix) || $0.1.thumbprintHex.hasPrefix(prefix)
        }
        guard matches.count == 1 else {
            throw VLoggerError(
                matches.isEmpty
                    ? "no \(what) certificate has the fingerprint \(text) (vlogger opcua certificates lists them)"
                    : "\(matches.count) \(what) certificates begin with \(text): give more digits")
        }
        return matches[0]
    }

    /// A certificate from DER or PEM bytes.
    static func parse(_ data: Data) -> ApplicationCertificate? {
        if let c = try? ApplicationCertificate(der: Array(data)) { return c }
        guard let text = String(data: data, encoding: .utf8),
            let begin = text.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = text.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<text.endIndex),
            let der = Data(
                base64Encoded: String(text[begin.upperBound..<end.lowerBound]), options: .ignoreUnknownCharacters)
        else { return nil }
        return try? ApplicationCertificate(der: Array(der))
    }
}
