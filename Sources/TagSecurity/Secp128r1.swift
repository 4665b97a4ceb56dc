/// ECDSA signature verification on the curve secp128r1, the curve of NXP's and ST's originality signatures.
///
/// Written here rather than taken from a library: OpenSSL has the curve but would add a system library (and its
/// deprecated low-level EC API) for one verification per tag; swift-crypto and BoringSSL do not have the curve.
/// Verification needs only public data, no constant time, and 128-bit arithmetic, which Swift's `UInt128`
/// gives: a field element fits one integer and a product two (`multipliedFullWidth`). The curve's domain
/// parameters are SEC 2 v1.0 (Certicom, 2000) §2.3.1; docs/reference/originality-signatures.md names the sources and
/// the independent check (Python's `ecdsa` agrees on every sample).
public enum Secp128r1 {
    /// The field prime p = 2^128 − 2^97 − 1.
    static let p = UInt128(0xFFFF_FFFD_FFFF_FFFF_FFFF_FFFF_FFFF_FFFF)
    /// a = p − 3.
    static let a = UInt128(0xFFFF_FFFD_FFFF_FFFF_FFFF_FFFF_FFFF_FFFC)
    static let b = UInt128(0xE875_79C1_1079_F43D_D824_993C_2CEE_5ED3)
    /// The base point G.
    static let g = Point(
        x: UInt128(0x161F_F752_8B89_9B2D_0C28_607C_A52C_5B86), y: UInt128(0xCF5A_C839_5BAF_EB13_C02D_A292_DDED_7A83))
    /// The order n of G (the cofactor is 1).
    static let n = UInt128(0xFFFF_FFFE_0000_0000_75A3_0D1B_9038_A115)

    struct Point: Equatable {
        var x: UInt128
        var y: UInt128
    }

    /// Arithmetic modulo `m` (p or n), on values below `m`.
    struct Modulus {
        let m: UInt128
        func add(_ x: UInt128, _ y: UInt128) -> UInt128 {
            let (s, over) = x.addingReportingOverflow(y)
            return over || s >= m ? s &- m : s
        }
        func sub(_ x: UInt128, _ y: UInt128) -> UInt128 { x >= y ? x - y : x &- y &+ m }
        func mul(_ x: UInt128, _ y: UInt128) -> UInt128 {
            // x·y < m², so the high half is below m and the division cannot overflow.
            m.dividingFullWidth(x.multipliedFullWidth(by: y)).remainder
        }
        func pow(_ x: UInt128, _ e: UInt128) -> UInt128 {
            var result: UInt128 = 1
            var base = x
            var e = e
            while e > 0 {
                if e & 1 == 1 { result = mul(result, base) }
                base = mul(base, base)
                e >>= 1
            }
            return result
        }
        /// The inverse of a non-zero value (Fermat: m is prime).
        func inverse(_ x: UInt128) -> UInt128 { pow(x, m - 2) }
        func reduce(_ x: UInt128) -> UInt128 { x >= m ? x - m : x }
    }

    static let field = Modulus(m: p)
    static let order = Modulus(m: n)

    static func isOnCurve(_ q: Point) -> Bool {
        guard q.x < p, q.y < p else { return false }
        let f = field
        let right = f.add(f.add(f.mul(f.mul(q.x, q.x), q.x), f.mul(a, q.x)), b)
        return f.mul(q.y, q.y) == right
    }

    /// A point in Jacobian coordinates (x = X/Z², y = Y/Z³; Z = 0 is the point at infinity), so that adding and
    /// doubling need no inversion; one inversion turns the result back into affine coordinates.
    struct Jacobian {
        var x: UInt128, y: UInt128, z: UInt128
        static let infinity = Jacobian(x: 1, y: 1, z: 0)
        init(x: UInt128, y: UInt128, z: UInt128) {
            self.x = x
            self.y = y
            self.z = z
        }
        init(_ p: Point) { self.init(x: p.x, y: p.y, z: 1) }
    }

    /// 2P ("dbl-2001-b" of the Explicit-Formulas Database, for a = −3).
    static func double(_ p1: Jacobian) -> Jacobian {
        let f = field
        guard p1.z != 0, p1.y != 0 else { return .infinity }
        let delta = f.mul(p1.z, p1.z), gamma = f.mul(p1.y, p1.y)
        let beta = f.mul(p1.x, gamma)
        let t = f.mul(f.sub(p1.x, delta), f.add(p1.x, delta))
        let alpha = f.add(f.add(t, t), t)
        let beta4 = f.add(f.add(beta, beta), f.add(beta, beta))
        let x3 = f.sub(f.mul(alpha, alpha), f.add(beta4, beta4))
        let yz = f.add(p1.y, p1.z)
        let z3 = f.sub(f.sub(f.mul(yz, yz), gamma), delta)
        let gamma2 = f.mul(gamma, gamma)
        let gamma8 = f.add(
            f.add(f.add(gamma2, gamma2), f.add(gamma2, gamma2)), f.add(f.add(gamma2, gamma2), f.add(gamma2, gamma2)))
        let y3 = f.sub(f.mul(alpha, f.sub(beta4, x3)), gamma8)
        return Jacobian(x: x3, y: y3, z: z3)
    }

    /// P + Q ("add-2007-bl").
    static func add(_ p1: Jacobian, _ p2: Jacobian) -> Jacobian {
        if p1.z == 0 { return p2 }
        if p2.z == 0 { return p1 }
        let f = field
        let z1z1 = f.mul(p1.z, p1.z), z2z2 = f.mul(p2.z, p2.z)
        let u1 = f.mul(p1.x, z2z2), u2 = f.mul(p2.x, z1z1)
        let s1 = f.mul(f.mul(p1.y, p2.z), z2z2), s2 = f.mul(f.mul(p2.y, p1.z), z1z1)
        let h = f.sub(u2, u1)
        let rr = f.sub(s2, s1)
        if h == 0 { return rr == 0 ? double(p1) : .infinity }
        let h2 = f.add(h, h)
        let i = f.mul(h2, h2)
        let j = f.mul(h, i)
        let r = f.add(rr, rr)
        let v = f.mul(u1, i)
        let x3 = f.sub(f.sub(f.mul(r, r), j), f.add(v, v))
        let s1j = f.mul(s1, j)
        let y3 = f.sub(f.mul(r, f.sub(v, x3)), f.add(s1j, s1j))
        let zz = f.add(p1.z, p2.z)
        let z3 = f.mul(f.sub(f.sub(f.mul(zz, zz), z1z1), z2z2), h)
        return Jacobian(x: x3, y: y3, z: z3)
    }

    /// The affine point, or nil for the point at infinity.
    static func affine(_ p1: Jacobian) -> Point? {
        guard p1.z != 0 else { return nil }
        let f = field
        let zi = f.inverse(p1.z)
        let zi2 = f.mul(zi, zi)
        return Point(x: f.mul(p1.x, zi2), y: f.mul(p1.y, f.mul(zi2, zi)))
    }

    /// k·P by double and add; nil is the point at infinity.
    static func multiply(_ k: UInt128, _ point: Point) -> Point? {
        affine(multiply(k, Jacobian(point)))
    }

    static func multiply(_ k: UInt128, _ point: Jacobian) -> Jacobian {
        var result = Jacobian.infinity
        var bit = 127 - k.leadingZeroBitCount
        while bit >= 0 {
            result = double(result)
            if (k >> UInt128(bit)) & 1 == 1 { result = add(result, point) }
            bit -= 1
        }
        return result
    }

    /// A public key from its uncompressed encoding (`04 ‖ X ‖ Y`, 33 bytes); nil when it is not one or not on the curve.
    static func publicKey(_ bytes: [UInt8]) -> Point? {
        guard bytes.count == 33, bytes[0] == 0x04 else { return nil }
        let q = Point(x: integer(bytes[1..<17]), y: integer(bytes[17..<33]))
        return isOnCurve(q) ? q : nil
    }

    /// Big-endian bytes (at most 16) as an integer.
    static func integer(_ bytes: ArraySlice<UInt8>) -> UInt128 {
        bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
    }

    /// Whether `signature` (r ‖ s, 16 bytes each, big-endian) is a valid ECDSA signature of the message whose
    /// hash value is `digest` under `publicKey` (SEC 1 v2 §4.1.4: the digest's leftmost 128 bits as the integer e;
    /// a digest of 16 bytes or fewer is the integer itself, as NXP's unhashed 8-byte UID is).
    public static func verify(digest: [UInt8], signature: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 32, let q = Self.publicKey(publicKey) else { return false }
        let r = integer(signature[0..<16]), s = integer(signature[16..<32])
        guard r >= 1, r < n, s >= 1, s < n else { return false }
        let e = order.reduce(integer(digest.prefix(16)))
        let w = order.inverse(s)
        let u1 = order.mul(e, w), u2 = order.mul(r, w)
        guard let x = affine(add(multiply(u1, Jacobian(g)), multiply(u2, Jacobian(q)))) else { return false }
        return order.reduce(x.x) == r
    }
}
