import Foundation
import Testing

@testable import OPCUA

/// The symmetric cryptography of Basic256Sha256 and Aes128_Sha256_RsaOaep against fixed vectors from Python
/// `cryptography` and asyncua's P_SHA256 (Fixtures/crypto-vectors.json, made by make_crypto_vectors.py).
@Suite struct SecurityPolicyTests {
    struct Vectors: Decodable {
        struct Policy: Decodable {
            let name, clientKeys, serverKeys, message, clientSignature, clientCiphertext: String
        }
        let source, clientNonce, serverNonce: String
        let policies: [Policy]
    }

    static let vectors: Vectors? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/crypto-vectors.json")
        return (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(Vectors.self, from: $0) }
    }()

    static let b = BinaryEncodingTests.bytes

    @Test func keysSignaturesAndCiphertextAreTheVectors() throws {
        let v = try #require(Self.vectors, "Fixtures/crypto-vectors.json")
        #expect(v.policies.map(\.name) == ["Basic256Sha256", "Aes128_Sha256_RsaOaep"])
        for p in v.policies {
            let policy = try #require(SecurityPolicy.named("http://opcfoundation.org/UA/SecurityPolicy#\(p.name)"))
            let (client, server) = policy.keys(clientNonce: Self.b(v.clientNonce), serverNonce: Self.b(v.serverNonce))
            #expect(client.signing + client.encrypting + client.iv == Self.b(p.clientKeys), "\(p.name)")
            #expect(server.signing + server.encrypting + server.iv == Self.b(p.serverKeys), "\(p.name)")
            #expect(client.iv.count == 16 && client.encrypting.count == policy.encryptingKeyLength)
            let message = Self.b(p.message)
            let signature = SecurityPolicy.sign(message, key: client.signing)
            #expect(signature == Self.b(p.clientSignature), "\(p.name)")
            #expect(SecurityPolicy.verify(message, signature: signature, key: client.signing))
            var forged = signature
            forged[0] ^= 1
            #expect(!SecurityPolicy.verify(message, signature: forged, key: client.signing))
            #expect(!SecurityPolicy.verify(message, signature: signature, key: server.signing))
            let ciphertext = try SecurityPolicy.encrypt(message, keys: client)
            #expect(ciphertext == Self.b(p.clientCiphertext), "\(p.name)")
            #expect(try SecurityPolicy.decrypt(ciphertext, keys: client) == message)
        }
    }

    /// Not whole blocks: a typed error, not a trap (the chunk's padding is the caller's).
    @Test func aCiphertextOfPartBlocksIsAnError() throws {
        let keys = SecurityPolicy.basic256Sha256.keys(
            clientNonce: [UInt8](repeating: 1, count: 32), serverNonce: [UInt8](repeating: 2, count: 32)
        ).client
        #expect(throws: SecurityPolicy.CryptoError.self) { try SecurityPolicy.encrypt([1, 2, 3], keys: keys) }
        #expect(throws: SecurityPolicy.CryptoError.self) { try SecurityPolicy.decrypt([1, 2, 3], keys: keys) }
        #expect(SecurityPolicy.named("http://opcfoundation.org/UA/SecurityPolicy#Basic256") == nil)
    }
}
