import Foundation
import Testing

@testable import OPCUA

/// RSA-OAEP (SHA-1) and PKCS#1 v1.5 SHA-256 against Python `cryptography` (Fixtures/rsa-vectors.json, made by
/// make_rsa_vectors.py with a test-only 2048-bit key).
@Suite struct AsymmetricCryptoTests {
    struct Vectors: Decodable {
        let source, privateKeyPEM, publicKeyDER, message, signature, ciphertext: String
    }

    static let vectors: Vectors? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/rsa-vectors.json")
        return (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(Vectors.self, from: $0) }
    }()

    static let b = BinaryEncodingTests.bytes

    @Test func signaturesAndOAEPBlocksAreCryptographys() throws {
        let v = try #require(Self.vectors, "Fixtures/rsa-vectors.json")
        let key = try RSAKeyPair(pem: v.privateKeyPEM)
        #expect(key.size == 256 && key.publicKey.der == Self.b(v.publicKeyDER))
        let message = Self.b(v.message)
        // PKCS#1 v1.5 is deterministic: the same bytes as cryptography's.
        #expect(try AsymmetricCrypto.sign(message, with: key) == Self.b(v.signature))
        let peer = try RSAPublicKey(der: Self.b(v.publicKeyDER))
        #expect(AsymmetricCrypto.verify(message, signature: Self.b(v.signature), key: peer))
        var forged = Self.b(v.signature)
        forged[10] ^= 0x40
        #expect(!AsymmetricCrypto.verify(message, signature: forged, key: peer))
        // cryptography's two OAEP blocks (214 + 86 bytes of plaintext) decrypt to the message.
        #expect(AsymmetricCrypto.plaintextBlockSize(peer) == 214)
        #expect(try AsymmetricCrypto.decrypt(Self.b(v.ciphertext), with: key) == message)
        // Ours (random padding) decrypt back.
        let ours = try AsymmetricCrypto.encrypt(message, to: peer)
        #expect(ours.count == 512)
        #expect(try AsymmetricCrypto.decrypt(ours, with: key) == message)
    }

    @Test func brokenInputIsAnError() throws {
        let v = try #require(Self.vectors)
        let key = try RSAKeyPair(pem: v.privateKeyPEM)
        #expect(throws: SecurityPolicy.CryptoError.self) { try AsymmetricCrypto.decrypt([1, 2, 3], with: key) }
        var tampered = Self.b(v.ciphertext)
        tampered[5] ^= 1
        #expect(throws: SecurityPolicy.CryptoError.self) { try AsymmetricCrypto.decrypt(tampered, with: key) }
        #expect(throws: SecurityPolicy.CryptoError.self) { try RSAKeyPair(pem: "not a key") }
        #expect(throws: SecurityPolicy.CryptoError.self) { try RSAPublicKey(der: [0x30, 0x00]) }
    }
}
