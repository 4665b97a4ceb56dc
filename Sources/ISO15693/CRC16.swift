/// CRC-16 of ISO/IEC 13239 as used by ISO/IEC 15693-3 (also known as CRC-16/X-25, CRC-16/IBM-SDLC):
/// polynomial 0x1021 (0x8408 reflected), initial value 0xFFFF, reflected input and output, final XOR 0xFFFF.
/// On air the CRC follows the frame least-significant byte first.
public enum CRC16 {
    /// Residue left in the (non-inverted) register after running over a frame followed by its correct CRC.
    public static let residue: UInt16 = 0xF0B8

    private static let table: [UInt16] = (0..<256).map { n -> UInt16 in
        var crc = UInt16(n)
        for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x8408 : crc >> 1 }
        return crc
    }

    static func register<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        var crc: UInt16 = 0xFFFF
        for byte in bytes {
            crc = (crc >> 8) ^ table[Int((crc ^ UInt16(byte)) & 0xFF)]
        }
        return crc
    }

    /// The same register without the final XOR: CRC-16/MCRF4XX (polynomial 0x8408 reflected, preset 0xFFFF,
    /// no final XOR), the CRC of FEIG's host protocol frames (FEIG ID ISC.LRU3000 system manual p. 21), sent
    /// least-significant byte first. E.g. 0x56DD for `02 00 07 FF 33`.
    public static func mcrf4xx<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        register(bytes)
    }

    /// The CRC value of `bytes` (e.g. 0x0AF6 for `26 01 00`).
    public static func compute<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        register(bytes) ^ 0xFFFF
    }

    /// The two CRC bytes as sent on air: least-significant first (`26 01 00` → `F6 0A`).
    public static func onAirBytes<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
        let crc = compute(bytes)
        return [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }

    /// `frame` followed by its CRC, as it goes on air.
    public static func appending(to frame: [UInt8]) -> [UInt8] {
        frame + onAirBytes(frame)
    }

    /// True when the last two bytes of `frameWithCRC` are the correct CRC of the bytes before them.
    public static func isValid(_ frameWithCRC: [UInt8]) -> Bool {
        frameWithCRC.count >= 3 && register(frameWithCRC) == residue
    }

    /// Checks and removes the CRC of a frame received from the air.
    public static func strip(_ frameWithCRC: [UInt8]) throws(FrameError) -> [UInt8] {
        guard frameWithCRC.count >= 3 else {
            throw FrameError.truncated(what: "frame with CRC", needed: 3, got: frameWithCRC.count)
        }
        let body = Array(frameWithCRC.dropLast(2))
        let expected = compute(body)
        let found = UInt16(frameWithCRC[frameWithCRC.count - 2]) | UInt16(frameWithCRC[frameWithCRC.count - 1]) << 8
        guard expected == found else {
            throw FrameError.crcMismatch(expected: expected, found: found)
        }
        return body
    }
}
