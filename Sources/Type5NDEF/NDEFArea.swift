import ISO15693

/// Whether a tag can hold NDEF and be written, as Core NFC's `NFCNDEFStatus` puts it (docs/reference/iso15693.md Part 4 §1.4):
/// not supported (no valid CC: not NDEF-formatted), read-write, read-only.
public enum NDEFStatus: String, Sendable, Equatable {
    case notSupported = "not-supported"
    case readWrite = "read-write"
    case readOnly = "read-only"
}

/// The NDEF layout of a tag's memory (offsets from block 0, byte 0): the CC, the data area, where the NDEF
/// Message TLV is (or where a new one goes) and the largest message that fits there.
public struct NDEFArea: Equatable, Sendable {
    public var cc: CapabilityContainer
    /// Bytes of memory the tag has (blocks × block size).
    public var memoryBytes: Int
    /// First byte of the data area: right after the CC (4 or 8).
    public var areaStart: Int { cc.length }
    /// Data area bytes: MLEN × 8 (for a 4-byte CC with the MLEN-overflow bit and MLEN 0xFF, the rest of the
    /// memory, as Android and ST do), never past the end of the memory.
    public var areaBytes: Int
    /// Memory offset of the NDEF Message TLV, or of where a new one would be written.
    public var tlvOffset: Int
    /// Memory offsets of the NDEF message now on the tag; nil when the area has no NDEF TLV.
    public var message: Range<Int>?
    /// What the CC allows: read-write or read-only (lock bits of blocks are the caller's to add).
    public var status: NDEFStatus { cc.isWritable ? .readWrite : .readOnly }

    public var areaEnd: Int { areaStart + areaBytes }

    /// The largest NDEF message, in bytes, that can be written at `tlvOffset`: the room left less the TLV's
    /// type and length (2 bytes up to 254, 4 bytes from 255).
    public var capacity: Int {
        let room = areaEnd - tlvOffset
        if room - 2 <= 0xFE { return max(0, room - 2) }
        return max(0xFE, min(0xFFFE, room - 4))
    }

    /// How far a read of the tag has got.
    public enum Scan: Equatable, Sendable {
        case area(NDEFArea)
        /// Read the memory up to this offset (exclusive) and scan again.
        case needBytes(Int)
    }

    /// Scans the first bytes of a tag's memory (block 0 onwards). Throws when the CC is not one this mapping
    /// reads (the tag is then "not supported") or a TLV is malformed; asks for more bytes when the TLV walk
    /// or the NDEF message goes past what was read.
    public static func scan(_ prefix: [UInt8], memoryBytes: Int) throws(NDEFError) -> Scan {
        guard memoryBytes >= 8 else {
            throw .capabilityContainer("the tag has \(memoryBytes) bytes of memory: too small for a CC and an NDEF TLV")
        }
        guard prefix.count >= 4 else { return .needBytes(4) }
        if prefix[2] == 0 && prefix.count < 8 && (prefix[0] == 0xE1 || prefix[0] == 0xE2) { return .needBytes(8) }
        let cc = try CapabilityContainer.decode(prefix)
        let room = memoryBytes - cc.length
        var bytes = cc.dataAreaBytes
        if cc.length == 4 && cc.mlenOverflow && bytes == 0xFF * 8 { bytes = room }
        let areaBytes = min(bytes, room)
        let start = cc.length
        let readArea = prefix.count > start ? Array(prefix[start..<min(prefix.count, start + areaBytes)]) : []
        switch try TLV.locate(in: readArea, areaSize: areaBytes) {
        case let .needBytes(n):
            return .needBytes(start + n)
        case let .found(l):
            return .area(
                NDEFArea(
                    cc: cc, memoryBytes: memoryBytes, areaBytes: areaBytes, tlvOffset: start + l.tlvOffset,
                    message: (start + l.valueOffset)..<(start + l.valueOffset + l.length)))
        case let .absent(at):
            return .area(
                NDEFArea(cc: cc, memoryBytes: memoryBytes, areaBytes: areaBytes, tlvOffset: start + at, message: nil))
        }
    }

    /// Decodes a whole memory image (block 0 first): the layout and the NDEF message bytes ([] when empty).
    public static func decode(image: [UInt8]) throws(NDEFError) -> (area: NDEFArea, message: [UInt8]) {
        switch try scan(image, memoryBytes: image.count) {
        case let .area(a):
            return (a, a.message.map { Array(image[$0]) } ?? [])
        case let .needBytes(n):
            throw .tlv("the image ends at byte \(image.count) but the NDEF data needs \(n)")
        }
    }

    /// What to write for `message`, in the NFC Forum order: first `staged` (the TLV with length 0, then
    /// the message and a Terminator when there is room), then `lengthField` at `lengthOffset` (the real
    /// length). Both are memory offsets. Throws `.tooLarge` with both sizes when the message does not fit.
    public func writePlan(for message: [UInt8]) throws(NDEFError) -> NDEFWritePlan {
        guard message.count <= capacity else { throw .tooLarge(message: message.count, capacity: capacity) }
        let length = TLV.lengthField(message.count)
        // Until the real length lands, the TLV reads as an empty message (03 00), whatever the length form.
        var staged: [UInt8] = [TLV.ndef] + [UInt8](repeating: 0, count: length.count) + message
        if tlvOffset + staged.count < areaEnd { staged.append(TLV.terminator) }
        return NDEFWritePlan(offset: tlvOffset, staged: staged, lengthOffset: tlvOffset + 1, lengthField: length)
    }
}

/// The bytes of an NDEF write (see `NDEFArea.writePlan`).
public struct NDEFWritePlan: Equatable, Sendable {
    public var offset: Int
    public var staged: [UInt8]
    public var lengthOffset: Int
    public var lengthField: [UInt8]

    /// The bytes from `offset` once both steps are done.
    public var final: [UInt8] {
        var b = staged
        b.replaceSubrange((lengthOffset - offset)..<(lengthOffset - offset + lengthField.count), with: lengthField)
        return b
    }
}

extension CapabilityContainer {
    /// The first bytes of a freshly formatted tag: this CC, an empty NDEF Message TLV (03 00), a Terminator.
    /// A 4-byte CC with the MLEN-overflow bit is followed by four NULL TLVs, so that the NDEF TLV is at byte 8
    /// (where neard looks on 8-byte blocks; `forFormatting`).
    public var formattedBytes: [UInt8] {
        encode() + (length == 4 && mlenOverflow ? [UInt8](repeating: TLV.null, count: 4) : []) + [
            TLV.ndef, 0x00, TLV.terminator,
        ]
    }

    /// This CC with write access "never" (how the mapping marks a read-only tag, docs/reference/iso15693.md Part 3 §5.3).
    public var readOnly: CapabilityContainer {
        var c = self
        c.writeAccess = .never
        return c
    }
}
