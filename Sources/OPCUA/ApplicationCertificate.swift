// Application instance certificates (OPC 10000-6 §6.2.2; OPC 10000-4 §6.1.3): the server's own, made on its first
// start, and the checks a peer's certificate meets before its OPN is taken. As values: the PKI folder (own,
// trusted, rejected) is the server's. X.509 through swift-certificates.

import Crypto
import CryptoExtras
import Foundation
import SwiftASN1
import X509

/// A certificate as OPC UA uses one: its DER bytes, what it says, and its thumbprint.
public struct ApplicationCertificate: Sendable {
    public let der: [UInt8]
    let certificate: Certificate

    /// A DER certificate; a malformed one is a typed error.
    public init(der: [UInt8]) throws(SecurityPolicy.CryptoError) {
        do { certificate = try Certificate(derEncoded: der) } catch {
            throw SecurityPolicy.CryptoError(description: "not an X.509 certificate: \(error)")
        }
        self.der = der
    }

    /// The SHA-1 thumbprint, as the OPN's header names the receiver's certificate (OPC 10000-6 §6.7.2.3).
    public var thumbprint: [UInt8] { Array(Insecure.SHA1.hash(data: der)) }
    /// The SHA-1 thumbprint in hex (upper case), as most clients show a certificate.
    public var thumbprintHex: String { hex(Insecure.SHA1.hash(data: der), uppercase: true) }
    /// The SHA-256 fingerprint in hex, as `vlogger opcua certificates` lists it.
    public var fingerprint: String { hex(SHA256.hash(data: der), uppercase: true) }

    public var notValidBefore: Date { certificate.notValidBefore }
    public var notValidAfter: Date { certificate.notValidAfter }
    public var subject: String { certificate.subject.description }

    /// The ApplicationUri (the URI in the subject alternative names), and the host names and addresses there.
    public var applicationUri: String? {
        names.compactMap { if case .uniformResourceIdentifier(let u) = $0 { return u } else { return nil } }.first
    }
    public var hostNames: [String] {
        names.compactMap {
            switch $0 {
            case .dnsName(let d): return d
            case .ipAddress(let a) where a.bytes.count == 4: return a.bytes.map(String.init).joined(separator: ".")
            default: return nil
            }
        }
    }
    private var names: [GeneralName] {
        (try? certificate.extensions.subjectAlternativeNames).flatMap { $0 }.map(Array.init) ?? []
    }

    /// The RSA public key (nil for another kind of key).
    public var publicKey: RSAPublicKey? {
        _RSA.Signing.PublicKey(certificate.publicKey).map { RSAPublicKey(signing: $0) }
    }

    /// Whether the certificate is signed by its own key (a self-signed application certificate).
    public var isSelfSigned: Bool { certificate.publicKey.isValidSignature(certificate.signature, for: certificate) }

    /// A new self-signed application instance certificate for `key`: SHA-256 with RSA, the ApplicationUri and the
    /// host names and IPv4 addresses in the subject alternative names, the key usages and extended key usages an
    /// application instance certificate has (digital signature, non-repudiation, key and data encipherment,
    /// certificate signing; server and client authentication).
    public static func make(
        key: RSAKeyPair, applicationUri: String, applicationName: String, hosts: [String], notBefore: Date,
        years: Int = 5
    ) throws(SecurityPolicy.CryptoError) -> ApplicationCertificate {
        do {
            let name = try DistinguishedName {
                CommonName(applicationName)
                OrganizationName("vlogger")
            }
            var alternative: [GeneralName] = [.uniformResourceIdentifier(applicationUri)]
            for h in hosts {
                let parts = h.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
                if parts.count == 4 && h.split(separator: ".").count == 4 {
                    alternative.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(parts))))
                } else {
                    alternative.append(.dnsName(h))
                }
            }
            let extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(
                    KeyUsage(
                        digitalSignature: true, nonRepudiation: true, keyEncipherment: true, dataEncipherment: true,
                        keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
                SubjectAlternativeNames(alternative)
            }
            var serial = [UInt8](repeating: 0, count: 16)
            for i in serial.indices { serial[i] = UInt8.random(in: 0...255) }
            serial[0] &= 0x7F
            let certificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(bytes: serial),
                publicKey: Certificate.PublicKey(key.signing.publicKey), notValidBefore: notBefore,
                notValidAfter: notBefore.addingTimeInterval(Double(years) * 365.25 * 86_400), issuer: name,
                subject: name, signatureAlgorithm: .sha256WithRSAEncryption, extensions: extensions,
                issuerPrivateKey: Certificate.PrivateKey(key.signing))
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return try ApplicationCertificate(der: serializer.serializedBytes)
        } catch let e as SecurityPolicy.CryptoError {
            throw e
        } catch { throw SecurityPolicy.CryptoError(description: "making the application certificate: \(error)") }
    }

    /// Why a peer's certificate is refused (OPC 10000-4 §6.1.3's checks), with the status the server answers.
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        public let status: StatusCode
        public let description: String
    }

    /// The checks before a peer's OPN or session is taken: its own signature, its validity at `now`, the
    /// ApplicationUri it claims (when the client's ApplicationDescription says one), and whether it is trusted
    /// (its SHA-256 fingerprint among `trusted`).
    public func check(now: Date, applicationUri claimed: String?, trusted: Set<String>) -> Refusal? {
        guard isSelfSigned || trusted.contains(fingerprint) else {
            return Refusal(status: .badCertificateInvalid, description: "\(subject): its signature does not verify")
        }
        guard now >= notValidBefore, now <= notValidAfter else {
            return Refusal(
                status: .badCertificateTimeInvalid,
                description: "\(subject): valid from \(notValidBefore) to \(notValidAfter), not at \(now)")
        }
        if let claimed, applicationUri != claimed {
            return Refusal(
                status: .badCertificateUriInvalid,
                description: "\(subject): its ApplicationUri is \(applicationUri ?? "none"), the client says \(claimed)"
            )
        }
        guard trusted.contains(fingerprint) else {
            return Refusal(
                status: .badCertificateUntrusted,
                description: "\(subject) (\(fingerprint)) is not trusted: vlogger opcua trust \(fingerprint)")
        }
        return nil
    }
}
