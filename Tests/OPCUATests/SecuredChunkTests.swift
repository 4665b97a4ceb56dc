import Crypto
import Foundation
import Testing

@testable import OPCUA

/// Chunks secured with Basic256Sha256 against asyncua 2.1.0's (Fixtures/secured-chunks.json, made by
/// make_secured_chunks.py with two test-only keys): its OPN (signed with the client's key, encrypted to the
/// server's) opened as the server opens it; its MSG chunks (SignAndEncrypt, Sign) opened, and written here again
/// to the same bytes.
@Suite struct SecuredChunkTests {
    struct Vectors: Decodable {
        let source, clientKeyPEM, serverKeyPEM, clientCertificate, serverCertificate, clientPublicKey: String
        let clientNonce, serverNonce, opnBody, msgBody, opn, msgSignAndEncrypt, msgSign: String
        let password, sessionNonce, passwordSecret, passwordAlgorithm: String
    }

    static let vectors: Vectors? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/secured-chunks.json")
        return (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(Vectors.self, from: $0) }
    }()

    static let b = BinaryEncodingTests.bytes

    @Test func asyncuasOPNOpensAsTheServerOpensIt() throws {
        let v = try #require(Self.vectors, "Fixtures/secured-chunks.json")
        let server = try RSAKeyPair(pem: v.serverKeyPEM)
        let client = try RSAPublicKey(der: Self.b(v.clientPublicKey))
        let opn = try SecureChunk(Self.b(v.opn), opening: .asymmetric(own: server, peer: client))
        #expect(opn.body == Self.b(v.opnBody) && opn.sequenceNumber == 1 && opn.requestId == 1)
        // The asymmetric header: the policy, the client's certificate, the SHA-1 thumbprint of the server's.
        let thumbprint = Array(Insecure.SHA1.hash(data: Self.b(v.serverCertificate)))
        #expect(
            opn.security
                == .asymmetric(
                    policyUri: SecurityPolicy.basic256Sha256.uri, senderCertificate: Self.b(v.clientCertificate),
                    receiverThumbprint: thumbprint))
        // Tampered ciphertext, a signature by another key, or the wrong receiving key: Bad_SecurityChecksFailed.
        var tampered = Self.b(v.opn)
        tampered[tampered.count - 3] ^= 1
        #expect(
            TransportTests.status { _ = try SecureChunk(tampered, opening: .asymmetric(own: server, peer: client)) }
                == .badSecurityChecksFailed)
        #expect(
            TransportTests.status {
                _ = try SecureChunk(Self.b(v.opn), opening: .asymmetric(own: server, peer: server.publicKey))
            } == .badSecurityChecksFailed)
        let other = try RSAKeyPair(pem: v.clientKeyPEM)
        #expect(
            TransportTests.status { _ = try SecureChunk(Self.b(v.opn), opening: .asymmetric(own: other, peer: client)) }
                == .badSecurityChecksFailed)
    }

    /// The server's answer, sealed here, opens with the client's keys (OAEP is random: not compared with bytes).
    @Test func anOPNSealedHereOpensOnTheOtherSide() throws {
        let v = try #require(Self.vectors)
        let server = try RSAKeyPair(pem: v.serverKeyPEM), client = try RSAKeyPair(pem: v.clientKeyPEM)
        let chunk = SecureChunk(
            kind: .open, channelId: 5,
            security: .asymmetric(
                policyUri: SecurityPolicy.basic256Sha256.uri, senderCertificate: [1, 2], receiverThumbprint: [3]),
            sequenceNumber: 1, requestId: 1, body: Array(0..<200))
        let sealed = try chunk.sealed(with: .asymmetric(own: server, peer: client.publicKey))
        let header = try MessageHeader.parse(sealed, maxSize: 65_536)
        #expect(Int(header.size) == sealed.count)
        let opened = try SecureChunk(sealed, opening: .asymmetric(own: client, peer: server.publicKey))
        #expect(opened.body == chunk.body && opened.sequenceNumber == 1 && opened.requestId == 1)
    }

    /// A receiver key over 2048 bits: the sender adds the padding's high byte (its cipher block is over 256 bytes).
    @Test func aKeyOver2048BitsTakesTheExtraPaddingByte() throws {
        let v = try #require(Self.vectors)
        let big = try RSAKeyPair(bits: 3072), small = try RSAKeyPair(pem: v.clientKeyPEM)
        #expect(big.size == 384)
        for n in [0, 1, 100, 500] {
            let chunk = SecureChunk(
                kind: .open, channelId: 1,
                security: .asymmetric(
                    policyUri: SecurityPolicy.basic256Sha256.uri, senderCertificate: nil, receiverThumbprint: nil),
                sequenceNumber: 3, requestId: 4, body: [UInt8](repeating: 0x5A, count: n))
            let sealed = try chunk.sealed(with: .asymmetric(own: small, peer: big.publicKey))
            #expect(try SecureChunk(sealed, opening: .asymmetric(own: big, peer: small.publicKey)).body == chunk.body)
        }
    }

    @Test func asyncuasMSGChunksOpenAndAreWrittenTheSame() throws {
        let v = try #require(Self.vectors)
        let keys = SecurityPolicy.basic256Sha256.keys(
            clientNonce: Self.b(v.clientNonce), serverNonce: Self.b(v.serverNonce))
        for (name, encrypt) in [("msgSignAndEncrypt", true), ("msgSign", false)] {
            let bytes = Self.b(name == "msgSign" ? v.msgSign : v.msgSignAndEncrypt)
            // The server opens with the client's keys as remote.
            let server = ChunkCrypto.symmetric(local: keys.server, remote: keys.client, encrypt: encrypt)
            let chunk = try SecureChunk(bytes, opening: server)
            #expect(chunk.body == Self.b(v.msgBody) && chunk.requestId == 2 && chunk.channelId == 5, "\(name)")
            #expect(chunk.security == .symmetric(tokenId: 9))
            // The client's side, here, writes the same bytes (HMAC, AES-CBC and the padding are deterministic).
            let client = ChunkCrypto.symmetric(local: keys.client, remote: keys.server, encrypt: encrypt)
            #expect(try chunk.sealed(with: client) == bytes, "\(name)")
            var tampered = bytes
            tampered[30] ^= 0x80
            #expect(
                TransportTests.status { _ = try SecureChunk(tampered, opening: server) } == .badSecurityChecksFailed)
        }
    }
}
