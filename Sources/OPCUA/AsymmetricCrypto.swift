// The asymmetric part of OPC UA's RSA policies (Basic256Sha256 and Aes128_Sha256_RsaOaep; OPC 10000-7's tables):
// the OPN's body encrypted with RSA-OAEP (SHA-1, `http://www.w3.org/2001/04/xmlenc#rsa-oaep`) block by block, and
// signed with RSA PKCS#1 v1.5 over SHA-256 (`…xmldsig-more#rsa-sha256`). swift-crypto's RSA does the arithmetic.

import Crypto
import CryptoExtras
import Foundation

/// An RSA key pair of 2048 to 4096 bits (the server's application instance key).
public struct RSAKeyPair: Sendable {
    let signing: _RSA.Signing.PrivateKey
    /// The key as DER: swift-crypto's encryption keys are not Sendable, so one is made from it where it is used.
    let der: [UInt8]
    var encryption: _RSA.Encryption.PrivateKey {
        get throws { try _RSA.Encryption.PrivateKey(derRepresentation: der) }
    }

    /// A PKCS#8 or PKCS#1 PEM private key.
    public init(pem: String) throws(SecurityPolicy.CryptoError) {
        do {
            signing = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
            der = Array(signing.derRepresentation)
            _ = try _RSA.Encryption.PrivateKey(derRepresentation: der)
        } catch { throw SecurityPolicy.CryptoError(description: "the RSA private key: \(error)") }
        guard (2048...4096).contains(signing.keySizeInBits) else {
            throw SecurityPolicy.CryptoError(
                description: "an RSA key of \(signing.keySizeInBits) bits (2048 to 4096 are allowed)")
        }
    }

    /// A new key pair (the application certificate's, made on first start).
    public init(bits: Int = 2048) throws(SecurityPolicy.CryptoError) {
        do {
            signing = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: bits))
            der = Array(signing.derRepresentation)
        } catch { throw SecurityPolicy.CryptoError(description: "making an RSA key of \(bits) bits: \(error)") }
    }

    public var pem: String { signing.pemRepresentation }
    public var publicKey: RSAPublicKey { RSAPublicKey(signing: signing.publicKey) }
    /// The modulus' length in bytes (256 for 2048 bits): the size of a signature and of a ciphertext block.
    public var size: Int { signing.keySizeInBits / 8 }
}

/// An RSA public key (a peer certificate's).
public struct RSAPublicKey: Sendable {
    let signing: _RSA.Signing.PublicKey
    var encryption: _RSA.Encryption.PublicKey {
        get throws { try _RSA.Encryption.PublicKey(derRepresentation: signing.derRepresentation) }
    }

    init(signing: _RSA.Signing.PublicKey) { self.signing = signing }

    /// A DER SubjectPublicKeyInfo (as a certificate holds it).
    public init(der: [UInt8]) throws(SecurityPolicy.CryptoError) {
        do {
            signing = try _RSA.Signing.PublicKey(derRepresentation: der)
            _ = try _RSA.Encryption.PublicKey(derRepresentation: der)
        } catch { throw SecurityPolicy.CryptoError(description: "the RSA public key: \(error)") }
    }

    public var der: [UInt8] { Array(signing.derRepresentation) }
    public var size: Int { signing.keySizeInBits / 8 }
}

public enum AsymmetricCrypto {
    /// The most plaintext one OAEP (SHA-1) block carries: k − 2·20 − 2 bytes (RFC 8017 §7.1.1), 214 for 2048 bits.
    public static func plaintextBlockSize(_ key: RSAPublicKey) -> Int { key.size - 42 }

    /// `plaintext` encrypted to `key`, block by block.
    public static func encrypt(_ plaintext: [UInt8], to key: RSAPublicKey) throws(SecurityPolicy.CryptoError) -> [UInt8]
    {
        let block = plaintextBlockSize(key)
        var out: [UInt8] = []
        var i = 0
        repeat {
            let part = plaintext[i..<min(plaintext.count, i + block)]
            do { out += try key.encryption.encrypt(part, padding: .PKCS1_OAEP) } catch {
                throw SecurityPolicy.CryptoError(description: "RSA-OAEP encryption: \(error)")
            }
            i += block
        } while i < plaintext.count
        return out
    }

    /// `ciphertext` (whole blocks of the key's size) decrypted with `key`.
    public static func decrypt(_ ciphertext: [UInt8], with key: RSAKeyPair) throws(SecurityPolicy.CryptoError)
        -> [UInt8]
    {
        let k = key.size
        guard !ciphertext.isEmpty, ciphertext.count % k == 0 else {
            throw SecurityPolicy.CryptoError(
                description: "RSA-OAEP: \(ciphertext.count) bytes are not whole \(k)-byte blocks")
        }
        var out: [UInt8] = []
        for i in stride(from: 0, to: ciphertext.count, by: k) {
            do { out += try key.encryption.decrypt(ciphertext[i..<(i + k)], padding: .PKCS1_OAEP) } catch {
                throw SecurityPolicy.CryptoError(description: "RSA-OAEP decryption of block \(i / k): \(error)")
            }
        }
        return out
    }

    /// The PKCS#1 v1.5 SHA-256 signature of `data`.
    public static func sign(_ data: [UInt8], with key: RSAKeyPair) throws(SecurityPolicy.CryptoError) -> [UInt8] {
        do {
            return Array(
                try key.signing.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation)
        } catch { throw SecurityPolicy.CryptoError(description: "RSA signature: \(error)") }
    }

    public static func verify(_ data: [UInt8], signature: [UInt8], key: RSAPublicKey) -> Bool {
        key.signing.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: data),
            padding: .insecurePKCS1v1_5)
    }
}
