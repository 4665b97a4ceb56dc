import Foundation
import Testing

@testable import OPCUA

/// A UserName token's password as asyncua 2.1.0's client encrypts it (Fixtures/secured-chunks.json), and the users
/// file's salted PBKDF2-SHA256 hashes against Python's hashlib.
@Suite struct UserIdentityTests {
    @Test func asyncuasEncryptedPasswordIsRead() throws {
        let v = try #require(SecuredChunkTests.vectors)
        let server = try RSAKeyPair(pem: v.serverKeyPEM)
        let nonce = SecuredChunkTests.b(v.sessionNonce)
        #expect(v.passwordAlgorithm == UserPassword.rsaOaep)
        let password = try UserPassword.decrypt(
            SecuredChunkTests.b(v.passwordSecret), algorithm: v.passwordAlgorithm, serverNonce: nonce, key: server)
        #expect(String(decoding: password, as: UTF8.self) == "pässwort-42")
        // Another session's nonce (a replayed token), another algorithm, another key: refused.
        func refused(_ body: () throws -> [UInt8]) -> StatusCode? {
            do {
                _ = try body()
                return nil
            } catch let e as IdentityRefusal { return e.status } catch { return nil }
        }
        var other = nonce
        other[0] ^= 1
        #expect(
            refused {
                try UserPassword.decrypt(
                    SecuredChunkTests.b(v.passwordSecret), algorithm: v.passwordAlgorithm, serverNonce: other,
                    key: server)
            } == .badIdentityTokenInvalid)
        #expect(
            refused {
                try UserPassword.decrypt(
                    SecuredChunkTests.b(v.passwordSecret), algorithm: "http://www.w3.org/2001/04/xmlenc#rsa-1_5",
                    serverNonce: nonce, key: server)
            } == .badIdentityTokenInvalid)
        #expect(
            refused {
                try UserPassword.decrypt(
                    SecuredChunkTests.b(v.passwordSecret), algorithm: v.passwordAlgorithm, serverNonce: nonce,
                    key: try RSAKeyPair(pem: v.clientKeyPEM))
            } == .badIdentityTokenInvalid)
    }

    /// hashlib.pbkdf2_hmac("sha256", "pässwort-42".encode(), bytes(range(16)), 210000) (Python 3.11) is
    /// 406433fe…95dc: a line with it accepts that password and nothing else.
    @Test func theUsersFileHoldsSaltedHashes() throws {
        let salt = (0..<16).map { String(format: "%02x", $0) }.joined()
        let text = """
            # users of the OPC UA server
            operator:pbkdf2-sha256:210000:\(salt):406433fe72ab0716eee13c031f384b8e90179328a0c50863477d84a06f7295dc

            """
        let file = try UsersFile(text)
        #expect(file.accepts(name: "operator", password: Array("pässwort-42".utf8)))
        #expect(!file.accepts(name: "operator", password: Array("pässwort-43".utf8)))
        #expect(!file.accepts(name: "nobody", password: Array("pässwort-42".utf8)))
        // A line made here accepts its password.
        let line = try #require(UsersFile.line(name: "engineer", password: "s3cret"))
        let made = try UsersFile(line)
        #expect(
            made.accepts(name: "engineer", password: Array("s3cret".utf8))
                && line.hasPrefix("engineer:pbkdf2-sha256:210000:"))
        #expect(UsersFile.line(name: "a:b", password: "x") == nil)
    }

    @Test func aBrokenUsersFileSaysWhichLine() {
        func error(_ text: String) -> String? {
            do {
                _ = try UsersFile(text)
                return nil
            } catch { return error.description }
        }
        let salt = String(repeating: "00", count: 16), hash = String(repeating: "11", count: 32)
        #expect(error("a:pbkdf2-sha256:210000:\(salt)") == "line 1: expected name:pbkdf2-sha256:rounds:salt:hash")
        #expect(error("\n# x\na:md5:210000:\(salt):\(hash)")?.hasPrefix("line 3: a: unknown scheme md5") == true)
        #expect(error("a:pbkdf2-sha256:1000:\(salt):\(hash)")?.contains("rounds 1000") == true)
        #expect(error("a:pbkdf2-sha256:210000:00:\(hash)")?.contains("salt of at least 16 bytes") == true)
        #expect(
            error("a:pbkdf2-sha256:210000:\(salt):\(hash)\na:pbkdf2-sha256:210000:\(salt):\(hash)") == "line 2: a twice"
        )
    }
}
