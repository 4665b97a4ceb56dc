import ISO15693
import Testing

@testable import TagSecurity

/// Originality signatures of real chips (Proxmark3 `tools/recover_pk.py` self-test samples, with the keys of
/// Proxmark3 `client/src/crypto/originality.c`; docs/reference/originality-signatures.md).
@Suite struct OriginalityTests {
    static let nxp: [(uid: String, signature: String)] = [
        ("E0040118009B5FEE", "32D9E7579CD77E6F1FA11419231E874826984C5F189FDE1421684563A9663377"),
        ("E00401082AD28E83", "CAE8183CB4823C765AFDEB78C9D66C959990FD52A5820E76E1D6E025D76EAD79"),
        ("E00401086FC2621F", "9F47BF33D9ED62A62AFEF5685BC4006CFB290C344EAD5C5B49BF976804A9EE62"),
    ]
    static let st: [(uid: String, signature: String)] = [
        ("E00208000A227AAA", "FE458A550ACD30B45B9C4D10676FC63E30AC69027217547FBDF04A8F7942AD3B"),
        ("E00208000A17DB6E", "B3ED5025F16455AAC6012CA1C1FC5F94F8C805AF1EF6A86B646081C9916CDD2E"),
        ("E00208000A174F60", "AB42F1FA68D7470F91D4ED77C4D951B1B4AAB006812BE194BFEB7AAE48E4FA45"),
    ]

    /// SEC 2 v1.0 §2.3.1: the base point is on the curve, and n·G is the point at infinity (n is its order).
    @Test func theCurveIsSecp128r1() {
        #expect(Secp128r1.isOnCurve(Secp128r1.g))
        #expect(Secp128r1.multiply(Secp128r1.n, Secp128r1.g) == nil)
        #expect(Secp128r1.multiply(Secp128r1.n - 1, Secp128r1.g)?.x == Secp128r1.g.x)
        #expect(Originality.keys.allSatisfy { Secp128r1.publicKey($0.publicKey) != nil }, "every key is on the curve")
    }

    @Test func realNXPSignaturesVerify() throws {
        for (text, signature) in Self.nxp {
            let uid = try UID(parsing: text)
            #expect(Originality.scheme(for: uid, model: nil) == .nxpReadSignature, "\(text) is an SLIX2 or DNA")
            let verdict = Originality.verify(uid, signature: try Hex.parse(signature), scheme: .nxpReadSignature)
            #expect(verdict == .verified(key: "NXP key for ICODE SLIX2/DNA/3"), "\(text): \(verdict)")
        }
    }

    @Test func realSTTruST25SignaturesVerify() throws {
        for (text, signature) in Self.st {
            let uid = try UID(parsing: text)
            #expect(Originality.scheme(for: uid, model: nil) == .stTruST25, "\(text) is an ST25TV02KC/512C")
            let verdict = Originality.verify(uid, signature: try Hex.parse(signature), scheme: .stTruST25)
            #expect(verdict == .verified(key: "ST TruST25 key 04 for ST25TV02KC/512C"), "\(text): \(verdict)")
        }
    }

    /// One flipped bit anywhere — in the signature or in the UID — and the signature no longer verifies; nor does
    /// a signature under the other scheme's message (wrong byte order or hashing).
    @Test func oneFlippedBitFails() throws {
        let uid = try UID(parsing: Self.nxp[0].uid)
        let signature = try Hex.parse(Self.nxp[0].signature)
        for bit in stride(from: 0, to: 256, by: 7) {
            var bad = signature
            bad[bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(Originality.verify(uid, signature: bad, scheme: .nxpReadSignature) == .invalid, "bit \(bit)")
        }
        let other = UID(manufacturer: uid.manufacturer, serial: uid.serial ^ 1)
        #expect(Originality.verify(other, signature: signature, scheme: .nxpReadSignature) == .invalid)
        #expect(Originality.verify(uid, signature: signature, scheme: .stTruST25) == .invalid)
        #expect(
            Originality.verify(uid, signature: Array(signature.prefix(31)), scheme: .nxpReadSignature)
                == .malformed("31 bytes, not 32"))
        // r or s of zero, or at least n, is refused before any arithmetic (SEC 1 v2 §4.1.4 step 1).
        #expect(
            !Secp128r1.verify(
                digest: uid.onAirBytes, signature: [UInt8](repeating: 0, count: 32),
                publicKey: Originality.keys[0].publicKey))
        #expect(
            !Secp128r1.verify(
                digest: uid.onAirBytes, signature: [UInt8](repeating: 0xFF, count: 32),
                publicKey: Originality.keys[0].publicKey))
    }

    /// The TruST25 layout: `K04S` in block 0x3F, 64 ASCII hex digits in blocks 0x40–0x4F.
    @Test func trust25Blocks() throws {
        let signature = Self.st[0].signature
        let blocks = Array("K04S".utf8) + Array(signature.utf8)
        #expect(try Originality.trust25Signature(blocks).get() == Hex.parse(signature))
        #expect(
            Originality.trust25Signature([UInt8](repeating: 0, count: 68)) == .failure(.missing("block 0x3F is empty")))
        var wrongKey = blocks
        wrongKey[2] = 0x35
        #expect(
            Originality.trust25Signature(wrongKey)
                == .failure(.malformed("block 0x3F is 4B 30 35 53, not the key id K04S")))
        var notHex = blocks
        notHex[10] = 0x5A
        #expect(Originality.trust25Signature(notHex) == .failure(.malformed("blocks 0x40–0x4F are not 64 hex digits")))
    }
}
