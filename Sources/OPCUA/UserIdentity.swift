// Users of the server (OPC 10000-4 §7.36.2.2 and §7.36.4): a UserName token's password as the client sends it,
// and the users file it is checked against, which holds salted PBKDF2-SHA256 hashes, never a password.

import Crypto
import CryptoExtras
import Foundation

/// Why a user identity is refused, with the status ActivateSession answers.
public struct IdentityRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: StatusCode
    public let description: String
}

public enum UserPassword {
    /// The algorithm URI of an encrypted password under Basic256Sha256 and Aes128_Sha256_RsaOaep.
    public static let rsaOaep = "http://www.w3.org/2001/04/xmlenc#rsa-oaep"

    /// The password of a UserName token: encrypted with `algorithm` to the server's key, the plaintext a
    /// ByteString of the password's UTF-8 followed by the server's last nonce (which must be `serverNonce`); or
    /// sent as it is when `algorithm` is nil or empty (the caller allows that only on an encrypted channel).
    public static func decrypt(
        _ secret: [UInt8], algorithm: String?, serverNonce: [UInt8], key: RSAKeyPair
    ) throws(IdentityRefusal) -> [UInt8] {
        guard let algorithm, !algorithm.isEmpty else { return secret }
        guard algorithm == rsaOaep else {
            throw IdentityRefusal(status: .badIdentityTokenInvalid, description: "password encrypted with \(algorithm)")
        }
        let plain: [UInt8]
        do { plain = try AsymmetricCrypto.decrypt(secret, with: key) } catch {
            throw IdentityRefusal(status: .badIdentityTokenInvalid, description: "the password does not decrypt")
        }
        var r = BinaryReader(
            plain, limits: DecodingLimits(maxStringLength: 0, maxByteStringLength: 4096, maxArrayLength: 0, maxDepth: 1)
        )
        guard let token = try? r.readByteString(), token.count >= serverNonce.count,
            Array(token.suffix(serverNonce.count)) == serverNonce
        else {
            throw IdentityRefusal(
                status: .badIdentityTokenInvalid, description: "the password does not end with this session's nonce")
        }
        return Array(token.dropLast(serverNonce.count))
    }
}

/// The users file: one `name:pbkdf2-sha256:rounds:salt:hash` line per user (salt and hash in hex), `#` comments
/// and blank lines aside. Written by `vlogger opcua user add`; the server reads it at start and on SIGHUP.
public struct UsersFile: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public let name: String
        public let rounds: Int
        public let salt: [UInt8]
        public let hash: [UInt8]
    }
    public private(set) var entries: [String: Entry] = [:]

    /// PBKDF2-SHA256 rounds of a new entry: swift-crypto's checked minimum (OWASP's 2023 advice for
    /// PBKDF2-HMAC-SHA256 is 600,000; the file records each entry's own).
    public static let defaultRounds = 210_000

    /// An error of the file, with its line.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public let line: Int
        public let message: String
        public var description: String { "line \(line): \(message)" }
    }

    public init(_ text: String) throws(ParseError) {
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let f = line.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 5, !f[0].isEmpty else {
                throw ParseError(line: i + 1, message: "expected name:pbkdf2-sha256:rounds:salt:hash")
            }
            guard f[1] == "pbkdf2-sha256" else {
                throw ParseError(line: i + 1, message: "\(f[0]): unknown scheme \(f[1]) (pbkdf2-sha256)")
            }
            guard let rounds = Int(f[2]), (Self.defaultRounds...10_000_000).contains(rounds) else {
                throw ParseError(line: i + 1, message: "\(f[0]): rounds \(f[2]) (210000 to 10000000)")
            }
            guard let salt = bytes(hex: f[3]), salt.count >= 16, let hash = bytes(hex: f[4]), hash.count == 32 else {
                throw ParseError(
                    line: i + 1, message: "\(f[0]): a salt of at least 16 bytes and a 32-byte hash, in hex")
            }
            guard entries[f[0]] == nil else { throw ParseError(line: i + 1, message: "\(f[0]) twice") }
            entries[f[0]] = Entry(name: f[0], rounds: rounds, salt: salt, hash: hash)
        }
    }

    static func pbkdf2(_ password: [UInt8], salt: [UInt8], rounds: Int) -> [UInt8]? {
        guard
            let key = try? KDF.Insecure.PBKDF2.deriveKey(
                from: password, salt: salt, using: .sha256, outputByteCount: 32, rounds: rounds)
        else { return nil }
        return key.withUnsafeBytes { Array($0) }
    }

    /// The line of a new entry (a random 16-byte salt).
    public static func line(name: String, password: String, rounds: Int = defaultRounds) -> String? {
        guard !name.isEmpty, !name.contains(":"), !name.contains("\n") else { return nil }
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        guard let hash = pbkdf2(Array(password.utf8), salt: salt, rounds: rounds) else { return nil }
        return "\(name):pbkdf2-sha256:\(rounds):\(hex(salt)):\(hex(hash))"
    }

    /// Whether `password` is `name`'s; the hashes compared in time independent of where they differ. An unknown
    /// user costs the same work as a known one.
    public func accepts(name: String, password: [UInt8]) -> Bool {
        let e =
            entries[name]
            ?? Entry(name: name, rounds: Self.defaultRounds, salt: [UInt8](repeating: 0, count: 16), hash: [])
        guard let derived = Self.pbkdf2(password, salt: e.salt, rounds: e.rounds), derived.count == 32 else {
            return false
        }
        var diff: UInt8 = e.hash.count == 32 ? 0 : 1
        for (a, b) in zip(derived, e.hash + [UInt8](repeating: 0, count: max(0, 32 - e.hash.count))) { diff |= a ^ b }
        return diff == 0 && entries[name] != nil
    }
}
