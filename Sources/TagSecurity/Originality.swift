import Crypto
import ISO15693

/// Originality signatures: how a genuine chip proves it was made by its manufacturer (docs/reference/originality-signatures.md).
///
/// - NXP (ICODE SLIX2, ICODE DNA, ICODE 3, NTAG 5): the custom command READ SIGNATURE (0xBD) answers 32 bytes,
///   ECDSA over secp128r1 of the 8-byte UID in over-the-air order (least-significant byte first), not hashed.
/// - ST TruST25 on the ST25TV02KC/512C: no command; block 0x3F holds the key id (`K04S`) and blocks 0x40–0x4F the
///   signature as 64 ASCII hex digits, ECDSA over secp128r1 of SHA-256 of the UID most-significant byte first.
public enum Originality {
    /// How a chip's signature is read and what it signs.
    public enum Scheme: String, Sendable, Equatable {
        /// NXP READ SIGNATURE (0xBD): the UID least-significant byte first, unhashed.
        case nxpReadSignature = "nxp-read-signature"
        /// ST TruST25 in user memory (blocks 0x3F–0x4F): SHA-256 of the UID most-significant byte first.
        case stTruST25 = "st-trust25"
    }

    /// A manufacturer's published public key, with the chips it signs.
    public struct Key: Sendable, Equatable {
        public let name: String
        public let scheme: Scheme
        /// Uncompressed (`04 ‖ X ‖ Y`), 33 bytes.
        public let publicKey: [UInt8]
    }

    /// The keys vlogger knows (Proxmark3 `client/src/crypto/originality.c`, which lists them with their chips;
    /// checked here against real signatures from Proxmark3's `tools/recover_pk.py` and by Python's `ecdsa`).
    public static let keys: [Key] = [
        Key(
            name: "NXP key for ICODE SLIX2/DNA/3", scheme: .nxpReadSignature,
            publicKey: bytes("048878A2A2D3EEC336B4F261A082BD71F9BE11C4E2E896648B32EFA59CEA6E59F0")),
        Key(
            name: "NXP key for NTAG 5 (and NTAG21x)", scheme: .nxpReadSignature,
            publicKey: bytes("04494E1A386D3D3CFE3DC10E5DE68A499B1C202DB5B132393E89ED19FE5BE8BC61")),
        Key(
            name: "ST TruST25 key 04 for ST25TV02KC/512C", scheme: .stTruST25,
            publicKey: bytes("04101E188A8B4CDDBC62D5BC3E0E6850F0C2730E744B79765A0E079907FBDB01BC")),
    ]

    /// The scheme a chip's signature follows, from its UID (and model when known); nil for a chip that has none
    /// vlogger can check (SLIX, SLIX-S, SLIX-L have no signature; other ST families' keys are not published).
    public static func scheme(for uid: UID, model: ICModel?) -> Scheme? {
        switch model ?? ICModel.identify(uid: uid) {
        case .icodeSLIX2, .icodeDNA, .icode3: return .nxpReadSignature
        case .st25tv02kc, .st25tv512c: return .stTruST25
        default: return nil
        }
    }

    /// What a check found.
    public enum Verdict: Error, Sendable, Equatable, CustomStringConvertible {
        /// The signature verifies under the named key.
        case verified(key: String)
        /// The chip's type has no originality signature vlogger can check (an ICODE SLI, SLIX, SLIX-S or SLIX-L, a chip
        /// whose maker publishes no key): nothing was asked.
        case notOnThisChip(String)
        /// A chip whose type has a signature gave none: READ SIGNATURE refused or not answered, 32 zero bytes (none
        /// programmed), or memory that holds none.
        case missing(String)
        /// What the chip gave is not a signature (wrong length, not hex, an unknown key id).
        case malformed(String)
        /// A well-formed signature that no known key verifies: a clone, or a chip whose key is not known.
        case invalid

        public var isGenuine: Bool { if case .verified = self { return true } else { return false } }

        public var description: String {
            switch self {
            case .verified(let key): return "verified (\(key))"
            case .notOnThisChip(let why): return "no signature on this chip type (\(why))"
            case .missing(let why): return "the chip answered no signature (\(why))"
            case .malformed(let why): return "malformed signature (\(why))"
            case .invalid: return "signature does not verify (a clone, or an unknown key)"
            }
        }
    }

    /// The message a scheme signs for a UID: its hash value as ECDSA takes it.
    public static func digest(_ uid: UID, _ scheme: Scheme) -> [UInt8] {
        switch scheme {
        case .nxpReadSignature: return uid.onAirBytes
        case .stTruST25: return Array(SHA256.hash(data: uid.displayBytes))
        }
    }

    /// Checks a 32-byte signature (r ‖ s) of `uid` against the keys of `scheme`.
    public static func verify(_ uid: UID, signature: [UInt8], scheme: Scheme) -> Verdict {
        guard signature.count == 32 else { return .malformed("\(signature.count) bytes, not 32") }
        // All zero: no signature was programmed (what Flipper's emulation of a SLIX2 file without one answers).
        if signature.allSatisfy({ $0 == 0 }) { return .missing("32 zero bytes: no signature programmed") }
        let digest = digest(uid, scheme)
        for key in keys where key.scheme == scheme {
            if Secp128r1.verify(digest: digest, signature: signature, publicKey: key.publicKey) {
                return .verified(key: key.name)
            }
        }
        return .invalid
    }

    /// The TruST25 signature from the 17 blocks 0x3F–0x4F (4 bytes each): `K04S` then 64 ASCII hex digits.
    public static func trust25Signature(_ blocks: [UInt8]) -> Result<[UInt8], Verdict> {
        guard blocks.count >= 68 else { return .failure(.missing("\(blocks.count) bytes of blocks 0x3F–0x4F")) }
        let keyID = Array(blocks[0..<4])
        guard keyID == Array("K04S".utf8) else {
            if keyID.allSatisfy({ $0 == 0 || $0 == 0xFF }) { return .failure(.missing("block 0x3F is empty")) }
            return .failure(.malformed("block 0x3F is \(Hex.format(keyID)), not the key id K04S"))
        }
        let text = String(decoding: blocks[4..<68], as: UTF8.self)
        guard let signature = try? Hex.parse(text), signature.count == 32 else {
            return .failure(.malformed("blocks 0x40–0x4F are not 64 hex digits"))
        }
        return .success(signature)
    }

    static func bytes(_ hex: String) -> [UInt8] { (try? Hex.parse(hex)) ?? [] }
}
