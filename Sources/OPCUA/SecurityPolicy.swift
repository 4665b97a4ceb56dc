// The symmetric part of OPC UA's RSA security policies (OPC 10000-7's policy tables; the key derivation OPC
// 10000-6 §6.7.5): the keys a secure channel derives from its two nonces with P_SHA256, HMAC-SHA256 signatures,
// AES-CBC without padding. The asymmetric part (RSA-OAEP, PKCS#1 v1.5 signatures over the OPN) comes with the
// certificates. Basic128Rsa15 and Basic256 are deprecated (SHA-1) and left out.

import Crypto
import CryptoExtras
import Foundation

/// A security policy's facts: its URI and the lengths of its keys and nonces (asyncua 2.1.0's
/// `security_policies.py` has the same numbers; docs/reference/opcua.md).
public struct SecurityPolicy: Hashable, Sendable {
    public let uri: String
    /// HMAC-SHA256 key, AES key and IV lengths, in bytes (0 for None).
    public let signingKeyLength: Int
    public let encryptingKeyLength: Int
    public let ivLength: Int
    /// The length of the nonces of OpenSecureChannel (0 for None).
    public let nonceLength: Int

    public static let none = SecurityPolicy(
        uri: "http://opcfoundation.org/UA/SecurityPolicy#None", signingKeyLength: 0, encryptingKeyLength: 0,
        ivLength: 0, nonceLength: 0)
    public static let basic256Sha256 = SecurityPolicy(
        uri: "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256", signingKeyLength: 32,
        encryptingKeyLength: 32, ivLength: 16, nonceLength: 32)
    public static let aes128Sha256RsaOaep = SecurityPolicy(
        uri: "http://opcfoundation.org/UA/SecurityPolicy#Aes128_Sha256_RsaOaep", signingKeyLength: 32,
        encryptingKeyLength: 16, ivLength: 16, nonceLength: 32)

    public static let all: [SecurityPolicy] = [.none, .basic256Sha256, .aes128Sha256RsaOaep]

    /// The policy of `uri`; nil for one vlogger does not offer (Bad_SecurityPolicyRejected).
    public static func named(_ uri: String) -> SecurityPolicy? { all.first { $0.uri == uri } }

    /// One side's keys: it signs with `signing`, encrypts with `encrypting` and `iv`.
    public struct Keys: Hashable, Sendable {
        public let signing: [UInt8]
        public let encrypting: [UInt8]
        public let iv: [UInt8]
    }

    /// The keys of both sides from the two nonces (OPC 10000-6 §6.7.5): the client's are P_SHA256 with the server's
    /// nonce as secret and the client's as seed, the server's the other way round; each cut as signing key,
    /// encrypting key, IV.
    public func keys(clientNonce: [UInt8], serverNonce: [UInt8]) -> (client: Keys, server: Keys) {
        func cut(_ b: [UInt8]) -> Keys {
            Keys(
                signing: Array(b[0..<signingKeyLength]),
                encrypting: Array(b[signingKeyLength..<(signingKeyLength + encryptingKeyLength)]),
                iv: Array(b[(signingKeyLength + encryptingKeyLength)...]))
        }
        let n = signingKeyLength + encryptingKeyLength + ivLength
        return (
            cut(Self.pSHA256(secret: serverNonce, seed: clientNonce, count: n)),
            cut(Self.pSHA256(secret: clientNonce, seed: serverNonce, count: n))
        )
    }

    /// P_SHA256 (RFC 5246 §5's P_hash with HMAC-SHA256): A(0) = seed, A(i) = HMAC(secret, A(i−1)); the output is
    /// HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed) + …, cut to `count` bytes.
    public static func pSHA256(secret: [UInt8], seed: [UInt8], count: Int) -> [UInt8] {
        let key = SymmetricKey(data: secret)
        var out: [UInt8] = []
        out.reserveCapacity(count + 32)
        var a = seed
        while out.count < count {
            a = Array(HMAC<SHA256>.authenticationCode(for: a, using: key))
            out += HMAC<SHA256>.authenticationCode(for: a + seed, using: key)
        }
        return Array(out.prefix(max(0, count)))
    }

    /// The HMAC-SHA256 signature of a symmetric chunk (everything before the signature).
    public static func sign(_ data: [UInt8], key: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    /// Whether `signature` is `data`'s, compared in time independent of where they differ.
    public static func verify(_ data: [UInt8], signature: [UInt8], key: [UInt8]) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: data, using: SymmetricKey(data: key))
    }

    /// A failure of the symmetric cryptography (a length that is not whole blocks, a key of the wrong size).
    public struct CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// AES-CBC without padding (the chunk's own padding makes whole 16-byte blocks, OPC 10000-6 §6.7.2.5).
    public static func encrypt(_ data: [UInt8], keys: Keys) throws(CryptoError) -> [UInt8] {
        do {
            return Array(
                try AES._CBC.encrypt(
                    data, using: SymmetricKey(data: keys.encrypting), iv: AES._CBC.IV(ivBytes: keys.iv), noPadding: true
                ))
        } catch { throw CryptoError(description: "AES-CBC encryption of \(data.count) bytes: \(error)") }
    }

    public static func decrypt(_ data: [UInt8], keys: Keys) throws(CryptoError) -> [UInt8] {
        do {
            return Array(
                try AES._CBC.decrypt(
                    data, using: SymmetricKey(data: keys.encrypting), iv: AES._CBC.IV(ivBytes: keys.iv), noPadding: true
                ))
        } catch { throw CryptoError(description: "AES-CBC decryption of \(data.count) bytes: \(error)") }
    }
}
