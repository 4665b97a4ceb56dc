/// NXP ICODE Inventory Read (0xA0) and Fast Inventory Read (0xA1): an Inventory whose answer carries blocks
/// of the tag's memory, so a plan of a few blocks needs no separate read. Facts (issue 14 research notes):
/// - Request: flags (Inventory flag set, Option flag set here) | code | 0x04 (NXP) | [AFI if the AFI flag] |
///   mask length | mask (⌈length/8⌉ bytes) | first block | block count − 1. ICODE SLIX datasheet SL2S2002
///   Rev 3.4 §9.4.3, Table 23; NXP NFC Reader Library `phpalSli15693_Sw.c` (same field order).
/// - Slots and states as Inventory: 1 or 16 slots, the reader's EOF moves to the next slot, only Ready or
///   Selected tags answer (a quiet tag is silent); a tag that finds an error stays silent (SLIX datasheet
///   p.19; ICODE SLI spec §3.4.3.1; SLIX2 datasheet SL2S2602 p.28).
/// - Answer with the Option flag: flags | the UID bits not given by the mask and the slot number, as whole
///   bytes ("instead of padding with zeros up to the next byte boundary, the corresponding bits of the UID
///   are returned", SLIX datasheet Table 25), ending with UID byte 7 (0xE0) | the blocks, no security
///   status. So ⌈(64 − mask length − 4 with 16 slots) / 8⌉ UID bytes. NXP's reader library parses
///   8 − ⌊mask length / 8⌋ bytes instead, which differs with 16 slots when the mask length mod 8 is 1…4
///   (which one a real tag sends is UNVERIFIED): `decodeAnswer` takes either, telling them apart by length.
/// - 0xA1 answers at twice the data rate (53 kbit/s high rate), request and t1 unchanged (SLIX datasheet;
///   NXP library `phalICode`: "FAST INVENTORY READ … ICODE SLIX2/DNA").
/// - Chips: ICODE SLI (0xA0), SLIX, SLIX2, DNA (0xA0 and 0xA1). Not SLI-S/SLIX-S (they have Inventory Page
///   Read 0xB0/0xB1 instead); SLIX-L and ICODE 3 UNVERIFIED, so not used for them.
public struct NXPInventoryRead: Hashable, Sendable {
    public static let code: UInt8 = 0xA0, fastCode: UInt8 = 0xA1

    public var fast: Bool
    public var afi: UInt8?
    public var mask: InventoryMask
    public var first: BlockNumber
    /// Blocks asked for, 1…256 (sent as count − 1).
    public var count: Int

    public init(fast: Bool, afi: UInt8? = nil, mask: InventoryMask = .none, first: BlockNumber, count: Int) {
        self.fast = fast
        self.afi = afi
        self.mask = mask
        self.first = first
        self.count = count
    }

    /// The request: Inventory and Option flags set (the answer then carries the UID), AFI flag with `afi`.
    public func request(flags: RequestFlags, oneSlot: Bool) throws(FrameError) -> Request {
        guard first.value <= 0xFF, (1...256).contains(count) else {
            throw FrameError.invalidField(
                "Inventory Read takes blocks 0x00…0xFF and 1…256 of them; \(count) from \(first) asked")
        }
        let maxBits = oneSlot ? 64 : 60
        guard mask.length <= maxBits else {
            throw FrameError.invalidField(
                "Inventory Read mask of \(mask.length) bits is longer than the \(maxBits) bits allowed")
        }
        var f = flags.union([.inventory, .option])
        if oneSlot { f.insert(.oneSlot) } else { f.remove(.oneSlot) }
        if afi != nil { f.insert(.afi) } else { f.remove(.afi) }
        var p: [UInt8] = afi.map { [$0] } ?? []
        p.append(UInt8(mask.length))
        p += mask.onAirBytes
        p += [UInt8(first.value), UInt8(count - 1)]
        return Request(.custom(code: fast ? Self.fastCode : Self.code, manufacturer: .nxp, parameters: p), flags: f)
    }

    /// The Inventory Read in a decoded request (the tag's side), or nil when it is none or its fields do not fit.
    public init?(_ request: Request) {
        guard request.flags.isInventory, case let .custom(code, manufacturer, p) = request.command,
            manufacturer == .nxp, code == Self.code || code == Self.fastCode
        else { return nil }
        var i = 0
        var afi: UInt8?
        if request.flags.contains(.afi) {
            guard p.count > i else { return nil }
            afi = p[i]; i += 1
        }
        guard p.count > i else { return nil }
        let length = Int(p[i]); i += 1
        let maxBits = request.flags.contains(.oneSlot) ? 64 : 60
        let maskBytes = (length + 7) / 8
        guard length <= maxBits, p.count == i + maskBytes + 2 else { return nil }
        var v: UInt64 = 0
        for (k, b) in p[i..<(i + maskBytes)].enumerated() { v |= UInt64(b) << (8 * UInt64(k)) }
        guard let mask = try? InventoryMask(length: length, value: v) else { return nil }
        i += maskBytes
        self.init(
            fast: code == Self.fastCode, afi: afi, mask: mask, first: BlockNumber(UInt16(p[i])),
            count: Int(p[i + 1]) + 1)
    }

    /// UID bytes in the answer per the SLIX datasheet: the bits not known from the mask and the slot, whole bytes.
    public static func uidBytes(maskLength: Int, sixteenSlots: Bool) -> Int {
        max(0, (64 - maskLength - (sixteenSlots ? 4 : 0) + 7) / 8)
    }

    /// The answer body after the flags byte (the tag's side): the top `uidBytes` UID bytes on air (least
    /// significant first, ending with 0xE0), then the blocks.
    public static func answerBody(uid: UID, maskLength: Int, sixteenSlots: Bool, blocks: [[UInt8]]) -> [UInt8] {
        let n = uidBytes(maskLength: maskLength, sixteenSlots: sixteenSlots)
        return Array(uid.onAirBytes.suffix(n)) + blocks.flatMap { $0 }
    }

    /// The UID and blocks of an answer (flags byte first, no CRC) to this request in `slot` (0 with one slot).
    /// The UID's low bits come from the mask and the slot number, the rest from the answer; `blockSize` is
    /// the chip's (4 on every ICODE). Either UID length (datasheet or NXP library, see above) is taken.
    public func decodeAnswer(_ frame: [UInt8], slot: Int, sixteenSlots: Bool, blockSize: Int) throws(FrameError) -> (
        uid: UID, blocks: [BlockRead]
    ) {
        guard let flags = frame.first else { throw FrameError.empty }
        if ResponseFlags(rawValue: flags).contains(.error) {
            throw FrameError.invalidField(
                "Inventory Read answered with the error flag (\(Hex.format(frame))); the chip stays silent on errors")
        }
        let data = count * blockSize
        let k = frame.count - 1 - data
        let datasheet = Self.uidBytes(maskLength: mask.length, sixteenSlots: sixteenSlots)
        let library = 8 - mask.length / 8
        guard k == datasheet || k == library, k >= 0 else {
            throw FrameError.wrongLength(
                what:
                    "Inventory Read answer (\(count) × \(blockSize)-byte block\(count == 1 ? "" : "s") after the UID bytes)",
                expected: "\(1 + datasheet + data)", got: frame.count)
        }
        let known = sixteenSlots ? mask.length + 4 : mask.length
        guard known + 8 * k >= 64 else {
            throw FrameError.invalidField(
                "Inventory Read answer leaves UID bits unknown (\(known) from the mask and slot, \(8 * k) sent)")
        }
        var low = mask.value
        if sixteenSlots { low |= UInt64(slot & 0x0F) << UInt64(mask.length) }
        var high: UInt64 = 0
        for (i, b) in frame[1..<(1 + k)].enumerated() { high |= UInt64(b) << UInt64(8 * (8 - k + i)) }
        let uid = try UID(high | low)
        var blocks: [BlockRead] = []
        for i in 0..<count {
            let start = 1 + k + i * blockSize
            guard let n = first.advanced(by: i) else {
                throw FrameError.invalidField("block range from \(first) runs past 0xFFFF")
            }
            blocks.append(BlockRead(number: n, data: Array(frame[start..<(start + blockSize)]), security: nil))
        }
        return (uid, blocks)
    }
}
