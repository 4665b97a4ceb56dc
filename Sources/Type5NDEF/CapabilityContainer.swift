import ISO15693

/// The NFC Forum Type 5 capability container at block 0, byte 0: 4 bytes, or 8 when MLEN (byte 2) is 0.
///
/// Byte 0: magic 0xE1 (1-byte block numbers) or 0xE2 (2-byte, extended commands). Byte 1: major version
/// (b7–6), minor (b5–4), read access (b3–2), write access (b1–0; 00 always, 11 never). Byte 2: MLEN, the
/// data area in 8-byte units. Byte 3: features: b0 Read Multiple Blocks, b1 IPREAD, b2 MLEN overflow
/// (Android/ST convention), b3 Lock Block, b4 Special Frame. 8-byte form: bytes 6–7 MLEN big-endian.
/// Source: `docs/reference/iso15693.md` §5.1 (RFAL `ndef_t5t`, AOSP `rw_i93`).
public struct CapabilityContainer: Equatable, Sendable {
    public enum Access: UInt8, Sendable {
        case always = 0, rfu1 = 1, proprietary = 2, never = 3
    }

    public var twoByteAddressing: Bool
    public var majorVersion: UInt8
    public var minorVersion: UInt8
    public var readAccess: Access
    public var writeAccess: Access
    /// Data area size in bytes (MLEN × 8).
    public var dataAreaBytes: Int
    public var readMultipleBlocks: Bool
    public var lockBlock: Bool
    public var specialFrame: Bool
    public var mlenOverflow: Bool
    public var ipRead: Bool
    /// 4 or 8.
    public var length: Int

    public init(
        twoByteAddressing: Bool = false, majorVersion: UInt8 = 1, minorVersion: UInt8 = 0, readAccess: Access = .always,
        writeAccess: Access = .always, dataAreaBytes: Int, readMultipleBlocks: Bool = false, lockBlock: Bool = false,
        specialFrame: Bool = false, mlenOverflow: Bool = false, ipRead: Bool = false, length: Int? = nil
    ) {
        self.twoByteAddressing = twoByteAddressing
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.readAccess = readAccess
        self.writeAccess = writeAccess
        self.dataAreaBytes = dataAreaBytes
        self.readMultipleBlocks = readMultipleBlocks
        self.lockBlock = lockBlock
        self.specialFrame = specialFrame
        self.mlenOverflow = mlenOverflow
        self.ipRead = ipRead
        self.length = length ?? (dataAreaBytes / 8 > 0xFF ? 8 : 4)
    }

    /// Reads a CC from the first bytes of the tag (at least 4; 8 when byte 2 is 0).
    public static func decode(_ b: [UInt8]) throws(NDEFError) -> CapabilityContainer {
        guard b.count >= 4 else { throw .capabilityContainer("needs 4 bytes, got \(b.count)") }
        guard b[0] == 0xE1 || b[0] == 0xE2 else {
            throw .capabilityContainer(
                "magic number 0x\(Hex.format([b[0]])) is neither 0xE1 nor 0xE2: the tag is not NDEF-formatted")
        }
        let major = b[1] >> 6, minor = (b[1] >> 4) & 0x03
        guard major == 1 else {
            throw .capabilityContainer(
                "mapping version \(major).\(minor) is not 1.x; this reader handles major version 1 only")
        }
        let read = Access(rawValue: (b[1] >> 2) & 0x03) ?? .never
        guard read == .always else {
            throw .capabilityContainer(
                "read access is not granted (bits \(read.rawValue)); the mapping forbids reading")
        }
        var mlenBytes = Int(b[2]) * 8
        var length = 4
        if b[2] == 0 {
            guard b.count >= 8 else {
                throw .capabilityContainer("MLEN 0 announces an 8-byte CC but only \(b.count) bytes were given")
            }
            mlenBytes = (Int(b[6]) << 8 | Int(b[7])) * 8
            length = 8
            guard mlenBytes > 0 else { throw .capabilityContainer("the 8-byte CC has MLEN 0: no data area") }
        }
        return CapabilityContainer(
            twoByteAddressing: b[0] == 0xE2, majorVersion: major, minorVersion: minor, readAccess: read,
            writeAccess: Access(rawValue: b[1] & 0x03) ?? .never, dataAreaBytes: mlenBytes,
            readMultipleBlocks: b[3] & 0x01 != 0, lockBlock: b[3] & 0x08 != 0, specialFrame: b[3] & 0x10 != 0,
            mlenOverflow: b[3] & 0x04 != 0, ipRead: b[3] & 0x02 != 0, length: length)
    }

    public func encode() -> [UInt8] {
        let v = majorVersion << 6 | (minorVersion & 0x03) << 4 | readAccess.rawValue << 2 | writeAccess.rawValue
        var f: UInt8 = 0
        if readMultipleBlocks { f |= 0x01 }
        if ipRead { f |= 0x02 }
        if mlenOverflow { f |= 0x04 }
        if lockBlock { f |= 0x08 }
        if specialFrame { f |= 0x10 }
        let units = dataAreaBytes / 8
        if length == 8 {
            return [
                twoByteAddressing ? 0xE2 : 0xE1, v, 0, f, 0, 0, UInt8(truncatingIfNeeded: units >> 8),
                UInt8(truncatingIfNeeded: units),
            ]
        }
        return [twoByteAddressing ? 0xE2 : 0xE1, v, UInt8(min(units, 0xFF)), f]
    }

    /// The CC for an empty tag of `blocks × blockSize` bytes, as ST's RFAL formats with its NFC Forum option
    /// (`ndefT5TPollerTagFormat`, NFC Forum T5T 1.0 §4.3):
    /// - MLEN counts the memory in 8-byte units less one unit for the CC; the 8-byte form when the memory is
    ///   256 units (2048 bytes) or more: at exactly 2048 bytes an 8-byte CC with MLEN 255, where a 4-byte CC
    ///   could not say 256 units;
    /// - 0xE2 when there are more than 256 blocks, except on chips that reach them with the Protocol Extension
    ///   flag (RFAL's "legacy ST high density");
    /// - byte 3: Read Multiple Blocks only when the chip has it, Lock Block left clear (RFAL sets neither
    ///   unless asked; AOSP's NfcV format writes byte 3 = 0), Special Frame for chips whose writes need the
    ///   Option flag (RFAL sets it when a plain CC write fails).
    ///
    /// Except (`eightByte` false, the default) on a tag of exactly 2048 bytes reached with 1-byte block numbers (256
    /// blocks of 8 bytes: the MB89R118): there the 4-byte CC `E1 40 FF 05` (MLEN 0xFF with the MLEN-overflow bit,
    /// as Android's `rw_i93` formats) followed by four NULL TLVs, so that the NDEF TLV starts at byte 8. That is the
    /// one layout every stack with a Type 5 reader we could read accepts — Android's and NXP's Linux `rw_i93`
    /// (both branches), neard, ST's RFAL, vlogger — where the 8-byte CC is rejected by NXP's Linux `master` and
    /// neard, and the plain 4-byte CC is missed by neard on 8-byte blocks (docs/reference/t5t-cc-layouts.md).
    public static func forFormatting(
        blocks: Int, blockSize: Int, readMultiple: Bool, lockBlock: Bool = false,
        specialFrame: Bool = false, twoByteAddressing: Bool? = nil, eightByte: Bool = false
    ) -> CapabilityContainer {
        let units = blocks * blockSize / 8
        let e2 = twoByteAddressing ?? (blocks > 256)
        // Larger memories keep the 8-byte CC: only it can say their size (the stacks were compared at 2048 bytes).
        if units == 256, !e2, !eightByte {
            return CapabilityContainer(
                twoByteAddressing: false, dataAreaBytes: 0xFF * 8, readMultipleBlocks: readMultiple,
                lockBlock: lockBlock, specialFrame: specialFrame, mlenOverflow: true, length: 4)
        }
        let eight = units >= 256
        let area = min(max(units - 1, 0), eight ? 0xFFFF : 0xFF) * 8
        return CapabilityContainer(
            twoByteAddressing: twoByteAddressing ?? (blocks > 256), dataAreaBytes: area,
            readMultipleBlocks: readMultiple,
            lockBlock: lockBlock, specialFrame: specialFrame, length: eight ? 8 : 4)
    }

    public var isWritable: Bool { writeAccess == .always }
}
