/// The answer to Get System Information (0x2B) or Extended Get System Information (0x3B).
///
/// Layout (ISO/IEC 15693-3; pm3 `CmdHF15Info`, Flipper `ISO15693_3_SYSINFO_FLAG_*`, RFAL `NDEF_SYSINFO_FLAG_*`):
/// info flags, UID (8, LSB first), [DSFID], [AFI], [memory size], [IC reference], and for 0x3B also
/// [command list (4)], [CSI list]. Memory size is `blocks − 1` (1 byte, or 2 bytes LSB first with 0x3B or
/// the Protocol Extension flag) then `(block size − 1) & 0x1F`.
public struct SystemInformation: Hashable, Sendable, Codable {
    public var uid: UID
    public var dsfid: UInt8?
    public var afi: UInt8?
    public var blockCount: Int?
    public var blockSize: Int?
    public var icReference: UInt8?
    /// 0x3B only: MOI bit (b4 of the info flags): set when the tag uses two-byte block addressing.
    public var twoByteAddressing: Bool?
    /// 0x3B only: the 4-byte command list field, as received.
    public var commandList: [UInt8]?
    /// 0x3B only: the CSI field (a count byte, then that many crypto suite identifiers).
    public var cryptoSuites: [UInt8]?

    public init(
        uid: UID, dsfid: UInt8? = nil, afi: UInt8? = nil, blockCount: Int? = nil, blockSize: Int? = nil,
        icReference: UInt8? = nil, twoByteAddressing: Bool? = nil, commandList: [UInt8]? = nil,
        cryptoSuites: [UInt8]? = nil
    ) {
        self.uid = uid
        self.dsfid = dsfid
        self.afi = afi
        self.blockCount = blockCount
        self.blockSize = blockSize
        self.icReference = icReference
        self.twoByteAddressing = twoByteAddressing
        self.commandList = commandList
        self.cryptoSuites = cryptoSuites
    }

    public var infoFlags: UInt8 {
        var f: UInt8 = 0
        if dsfid != nil { f |= 0x01 }
        if afi != nil { f |= 0x02 }
        if blockCount != nil && blockSize != nil { f |= 0x04 }
        if icReference != nil { f |= 0x08 }
        if twoByteAddressing == true { f |= 0x10 }
        if commandList != nil { f |= 0x20 }
        if cryptoSuites != nil { f |= 0x40 }
        return f
    }

    static func decode(_ r: inout Reader, extended: Bool, protocolExtension: Bool) throws(FrameError)
        -> SystemInformation
    {
        let flags = try r.byte("info flags")
        if extended && flags & 0x80 != 0 {
            _ = try r.byte("second info flags byte")  // further info flags: none defined yet
        }
        var info = SystemInformation(uid: try r.uid())
        if flags & 0x01 != 0 { info.dsfid = try r.byte("DSFID") }
        if flags & 0x02 != 0 { info.afi = try r.byte("AFI") }
        if flags & 0x04 != 0 {
            let count =
                (extended || protocolExtension)
                ? Int(try r.le16("block count")) + 1 : Int(try r.byte("block count")) + 1
            info.blockCount = count
            info.blockSize = Int(try r.byte("block size") & 0x1F) + 1
        }
        if flags & 0x08 != 0 { info.icReference = try r.byte("IC reference") }
        if extended {
            info.twoByteAddressing = flags & 0x10 != 0
            if flags & 0x20 != 0 { info.commandList = try r.bytes(4, "command list") }
            if flags & 0x40 != 0 {
                let n = Int(try r.byte("CSI count"))
                info.cryptoSuites = try r.bytes(n, "CSI list")
            }
        } else if flags & 0xF0 != 0 {
            throw FrameError.invalidField("Get System Information info flags 0x\(Hex.format([flags])) set RFU bits 4–7")
        }
        try r.end(extended ? "Extended Get System Information response" : "Get System Information response")
        return info
    }

    func encode(extended: Bool, protocolExtension: Bool) -> [UInt8] {
        var out: [UInt8] = [infoFlags & (extended ? 0x7F : 0x0F)]
        out += uid.onAirBytes
        if let dsfid { out.append(dsfid) }
        if let afi { out.append(afi) }
        if let blockCount, let blockSize {
            let n = max(0, blockCount - 1)
            if extended || protocolExtension {
                out += [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF)]
            } else {
                out.append(UInt8(min(n, 0xFF)))
            }
            out.append(UInt8((blockSize - 1) & 0x1F))
        }
        if let icReference { out.append(icReference) }
        if extended {
            if let commandList { out += commandList }
            if let cryptoSuites { out.append(UInt8(cryptoSuites.count)); out += cryptoSuites }
        }
        return out
    }

    public var summary: String {
        var parts = ["UID \(uid)"]
        if let dsfid { parts.append("DSFID 0x\(Hex.format([dsfid]))") }
        if let afi { parts.append("AFI 0x\(Hex.format([afi]))") }
        if let blockCount, let blockSize { parts.append("\(blockCount) blocks × \(blockSize) bytes") }
        if let icReference { parts.append("IC reference 0x\(Hex.format([icReference]))") }
        return parts.joined(separator: ", ")
    }
}
