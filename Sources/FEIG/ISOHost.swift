import ISO15693

/// The ISO 15693 host commands [0xB0] and [0xB1]: what goes after CONTROL in a request and what comes after
/// STATUS in a reply. Layouts from FEIG's system manuals (ID ISC.MR101 pp. 58–73, ID ISC.MR200 pp. 87–103,
/// ID ISC.MR102 pp. 92–105, ID ISC.LR200 pp. 85–97) and FEIG's SDK, as checked in Tests/FEIGTests/FEIG-FACTS.md §2:
///
/// - request data `SUB MODE [UID] …`, MODE bits 0–2 the addressing (0 non-addressed, 1 addressed with the UID
///   following MODE, 2 selected), bit 3 SEC (Read Multiple Blocks: with the blocks' security status), bit 5 EXT_ADR (BANK and a
///   two-byte DB-ADR, for blocks past 255), bit 7 MORE
///   (Inventory: the records a previous reply had no room for);
/// - the UID goes MSB first (0xE0 first, then the manufacturer code), the reverse of its order on air, in
///   requests and replies ("data will be sent always as MSB first if the Reader is in the Host Command Mode");
/// - block data go reversed block by block relative to the tag's memory ([0x23] replies, [0x24] requests);
/// - [0xB1] (manufacturer custom commands) `MFR SUB MODE [UID] …`.
public enum FEIGISO {
    /// MODE: addressing.
    public enum Addressing: Equatable, Sendable {
        case nonAddressed
        /// The UID in the reader's order (MSB first, 8 bytes).
        case addressed([UInt8])
        case selected

        var modeBits: UInt8 {
            switch self {
            case .nonAddressed: return 0x00
            case .addressed: return 0x01
            case .selected: return 0x02
            }
        }
    }

    /// MODE bit 3: Read Multiple Blocks returns each block's security status.
    public static let secBit: UInt8 = 0x08
    /// MODE bit 7: Inventory continues with the records the last reply had no room for (after STATUS 0x94).
    public static let moreBit: UInt8 = 0x80
    /// MODE bit 5 EXT_ADR: a BANK byte and a two-byte DB-ADR replace the one-byte DB-ADR in [0x22], [0x23], [0x24]
    /// and [0x2C] (ID ISC.MR102 manual pp. 92 and 105, ID CPR30 p. 64; FEIG SDK `FEDM_ISCReaderID.h`
    /// `FEDM_ISC_TMP_B0_MODE_EXT_ADR`, bit 5). Tags beyond block 255 need it.
    public static let extAdrBit: UInt8 = 0x20
    /// BANK for an ISO 15693 tag's memory in the extended form: BANK_NR 3, the user memory, with the access flag
    /// (bit 7) clear, as FEIG's SDK sends it for the ST M24LR64-R (`FedmIscTagHandler_ISO15693_STM_M24LR64R.cpp`:
    /// `FEDM_ISC_ISO_BANK_USER_MEMORY`, "user memory").
    public static let bankUserMemory: UInt8 = 0x03

    /// DB-ADR as a request carries it: one byte, or (EXT_ADR) BANK then the block number high byte first. The
    /// order follows the SDK's parameter layout, where the two-byte DB-ADR-EXT ends at the byte that holds the
    /// one-byte DB-ADR (`FEDM_ISC_TMP_B0_REQ_DB_ADR_EXT` = "03 10 09 02 02", `…_REQ_DB_ADR` = "03 10 09 03 01").
    public static func blockAddress(_ block: Int, extended: Bool) -> [UInt8] {
        extended
            ? [bankUserMemory, UInt8(truncatingIfNeeded: block >> 8), UInt8(truncatingIfNeeded: block)]
            : [UInt8(truncatingIfNeeded: block)]
    }

    /// Reads DB-ADR at the start of `p` (see `blockAddress`): the bank (nil in the one-byte form), the block and
    /// the parameters after it; nil when `p` is too short.
    public static func parseBlockAddress(_ p: [UInt8], extended: Bool) -> (bank: UInt8?, block: Int, rest: [UInt8])? {
        if extended {
            guard p.count >= 3 else { return nil }
            return (p[0], Int(p[1]) << 8 | Int(p[2]), Array(p[3...]))
        }
        guard let b = p.first else { return nil }
        return (nil, Int(b), Array(p.dropFirst()))
    }

    /// TR-TYPE of an ISO 15693 transponder in Inventory records (FEIG SDK `FEDM_ISC.h`).
    public static let trTypeISO15693: UInt8 = 0x03

    /// [0xB0] request data: `SUB MODE [UID] parameters`.
    public static func request(_ sub: UInt8, _ addressing: Addressing, modeExtra: UInt8 = 0, _ parameters: [UInt8] = [])
        -> [UInt8]
    {
        var out = [sub, addressing.modeBits | modeExtra]
        if case let .addressed(uid) = addressing { out += uid }
        return out + parameters
    }

    /// [0xB1] request data: `MFR SUB MODE [UID] parameters`.
    public static func customRequest(
        manufacturer: UInt8, _ sub: UInt8, _ addressing: Addressing, _ parameters: [UInt8] = []
    ) -> [UInt8] {
        [manufacturer] + request(sub, addressing, parameters)
    }

    /// The UID in the reader's order from its on-air order (LSB first) and back.
    public static func readerOrder(_ onAir: [UInt8]) -> [UInt8] { onAir.reversed() }

    /// Block data between the tag's memory order and the reader's (each block reversed; the same both ways).
    public static func reversedBlocks(_ data: [UInt8], blockSize: Int) -> [UInt8] {
        guard blockSize > 0, data.count % blockSize == 0 else { return data }
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        var i = 0
        while i < data.count {
            out += data[i..<(i + blockSize)].reversed()
            i += blockSize
        }
        return out
    }

    // MARK: Replies

    /// One record of an Inventory reply (MODE without ANT: `TR-TYPE DSFID UID[8]`).
    public struct InventoryRecord: Equatable, Sendable {
        public var transponderType: UInt8
        public var dsfid: UInt8
        /// MSB first, as the reader sends it.
        public var uid: [UInt8]
        public init(transponderType: UInt8, dsfid: UInt8, uid: [UInt8]) {
            self.transponderType = transponderType
            self.dsfid = dsfid
            self.uid = uid
        }
        public var encoded: [UInt8] { [transponderType, dsfid] + uid }
    }

    /// An Inventory reply's data (STATUS 0x00 or 0x94): `DATA-SETS` then DATA-SETS records of 10 bytes.
    public static func inventory(_ data: [UInt8]) throws(FEIGReplyError) -> [InventoryRecord] {
        guard let n = data.first else { throw .malformed("Inventory reply without DATA-SETS") }
        guard data.count == 1 + Int(n) * 10 else {
            throw .malformed(
                "Inventory reply announces \(n) record(s) of 10 bytes but carries \(data.count - 1) bytes after DATA-SETS"
            )
        }
        return (0..<Int(n)).map { i in
            let r = 1 + i * 10
            return InventoryRecord(transponderType: data[r], dsfid: data[r + 1], uid: Array(data[(r + 2)..<(r + 10)]))
        }
    }

    /// One block of a Read Multiple Blocks reply.
    public struct Block: Equatable, Sendable {
        /// SEC-STATUS (0x00 unless MODE had SEC; then bit 0 = locked, as ISO's block security status).
        public var security: UInt8
        /// In the reader's order (reversed against the tag's memory).
        public var data: [UInt8]
    }

    /// A Read Multiple Blocks reply's data: `DB-N DB-SIZE` then DB-N × (`SEC-STATUS` + DB-SIZE bytes).
    public static func blocks(_ data: [UInt8], expected: Int) throws(FEIGReplyError) -> (size: Int, blocks: [Block]) {
        guard data.count >= 2 else { throw .malformed("Read Multiple Blocks reply shorter than DB-N and DB-SIZE") }
        let n = Int(data[0]), size = Int(data[1])
        guard n == expected else {
            throw .malformed("Read Multiple Blocks reply has \(n) block(s) where \(expected) were asked")
        }
        guard (1...32).contains(size) else {
            throw .malformed("Read Multiple Blocks reply gives DB-SIZE \(size) (ISO 15693 blocks have 1…32 bytes)")
        }
        guard data.count == 2 + n * (1 + size) else {
            throw .malformed(
                "Read Multiple Blocks reply: \(n) block(s) of 1 + \(size) bytes need \(2 + n * (1 + size)) bytes, it has \(data.count)"
            )
        }
        let blocks = (0..<n).map { i -> Block in
            let r = 2 + i * (1 + size)
            return Block(security: data[r], data: Array(data[(r + 1)..<(r + 1 + size)]))
        }
        return (size, blocks)
    }

    /// A Get System Information reply's data: `DSFID UID[8] AFI MEM-SIZE IC-REF`. MEM-SIZE is the block-size byte
    /// first (size − 1 in bits 0–4), then the number of blocks − 1: one byte (13-byte reply), or two bytes, high
    /// byte first, for a tag with more than 256 blocks (14-byte reply). FEIG's SDK reads both forms
    /// (`FEDM_ISCReader.cpp` `Set_0xB0_0x2B_IsoTableData`: "block length (single or high byte)", then the low byte
    /// and IC-REF when the reply has 14 bytes).
    public struct SystemInfo: Equatable, Sendable {
        public var dsfid: UInt8
        /// MSB first.
        public var uid: [UInt8]
        public var afi: UInt8
        /// Block size − 1 (bits 0–4) as the tag reports it.
        public var blockSizeByte: UInt8
        /// Number of blocks − 1 (0…0xFFFF).
        public var blockCountField: UInt16
        /// MEM-SIZE has the two-byte block count (the 14-byte reply).
        public var wideMemorySize: Bool
        public var icReference: UInt8
        public init(
            dsfid: UInt8, uid: [UInt8], afi: UInt8, blockSizeByte: UInt8, blockCountField: UInt16,
            wideMemorySize: Bool? = nil, icReference: UInt8
        ) {
            self.dsfid = dsfid
            self.uid = uid
            self.afi = afi
            self.blockSizeByte = blockSizeByte
            self.blockCountField = blockCountField
            self.wideMemorySize = wideMemorySize ?? (blockCountField > 0xFF)
            self.icReference = icReference
        }
        public var blockCount: Int { Int(blockCountField) + 1 }
        public var blockSize: Int { Int(blockSizeByte & 0x1F) + 1 }
        public var encoded: [UInt8] {
            let count: [UInt8] =
                wideMemorySize
                ? [UInt8(blockCountField >> 8), UInt8(blockCountField & 0xFF)]
                : [UInt8(truncatingIfNeeded: blockCountField)]
            return [dsfid] + uid + [afi, blockSizeByte] + count + [icReference]
        }
    }

    public static func systemInfo(_ data: [UInt8]) throws(FEIGReplyError) -> SystemInfo {
        switch data.count {
        case 13:
            return SystemInfo(
                dsfid: data[0], uid: Array(data[1..<9]), afi: data[9], blockSizeByte: data[10],
                blockCountField: UInt16(data[11]), wideMemorySize: false, icReference: data[12])
        case 14:
            return SystemInfo(
                dsfid: data[0], uid: Array(data[1..<9]), afi: data[9], blockSizeByte: data[10],
                blockCountField: UInt16(data[11]) << 8 | UInt16(data[12]), wideMemorySize: true, icReference: data[13])
        default:
            throw .malformed(
                "Get System Information reply has \(data.count) bytes, 13 or 14 expected (DSFID, UID, AFI, MEM-SIZE of 2 or 3 bytes, IC-REF)"
            )
        }
    }

    /// A Get Multiple Block Security Status reply's data: `DB-N` then DB-N status bytes.
    public static func securityStatus(_ data: [UInt8], expected: Int) throws(FEIGReplyError) -> [UInt8] {
        guard let n = data.first, Int(n) == expected, data.count == 1 + expected else {
            throw .malformed(
                "Get Multiple Block Security Status reply: \(expected) status byte(s) expected after DB-N, got \(Hex.format(data))"
            )
        }
        return Array(data.dropFirst())
    }
}

/// A reply whose data do not have the layout of its command.
public enum FEIGReplyError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    public var description: String {
        switch self {
        case .malformed(let s): return s
        }
    }
}

/// What [0x66] Get Reader Info (MODE 0x00) tells: `SW-REV(2) D-REV HW-TYPE SW-TYPE TR-TYPE(2) RX-BUF(2)
/// TX-BUF(2)`. SW-TYPE is the reader type (FEIG SDK `FEDM_ISC.h`; ID ISC.LRU3000 manual pp. 123–124).
public struct FEIGReaderInfo: Equatable, Sendable {
    public var softwareRevision: UInt16
    public var developmentRevision: UInt8
    public var hardwareType: UInt8
    public var readerType: UInt8
    public var transponderTypes: UInt16
    public var receiveBuffer: UInt16
    public var transmitBuffer: UInt16

    public init(
        softwareRevision: UInt16, developmentRevision: UInt8, hardwareType: UInt8, readerType: UInt8,
        transponderTypes: UInt16, receiveBuffer: UInt16, transmitBuffer: UInt16
    ) {
        self.softwareRevision = softwareRevision
        self.developmentRevision = developmentRevision
        self.hardwareType = hardwareType
        self.readerType = readerType
        self.transponderTypes = transponderTypes
        self.receiveBuffer = receiveBuffer
        self.transmitBuffer = transmitBuffer
    }

    /// Reader types by SW-TYPE (FEIG SDK `FEDM_ISC.h`; LRU3000 = 94 agrees with its manual).
    public static let typeNames: [UInt8: String] = [
        45: "ID ISC.LR1002", 74: "ID ISC.MR100", 75: "ID ISC.MR200", 76: "ID ISC.MR101", 77: "ID ISC.MR102",
        86: "ID CPR30", 94: "ID ISC.LRU3000",
    ]

    public static func decode(_ data: [UInt8]) throws(FEIGReplyError) -> FEIGReaderInfo {
        guard data.count >= 11 else { throw .malformed("Get Reader Info reply has \(data.count) bytes, 11 expected") }
        return FEIGReaderInfo(
            softwareRevision: UInt16(data[0]) << 8 | UInt16(data[1]), developmentRevision: data[2],
            hardwareType: data[3],
            readerType: data[4], transponderTypes: UInt16(data[5]) << 8 | UInt16(data[6]),
            receiveBuffer: UInt16(data[7]) << 8 | UInt16(data[8]),
            transmitBuffer: UInt16(data[9]) << 8 | UInt16(data[10]))
    }

    public var encoded: [UInt8] {
        [
            UInt8(softwareRevision >> 8), UInt8(softwareRevision & 0xFF), developmentRevision, hardwareType, readerType,
            UInt8(transponderTypes >> 8), UInt8(transponderTypes & 0xFF), UInt8(receiveBuffer >> 8),
            UInt8(receiveBuffer & 0xFF),
            UInt8(transmitBuffer >> 8), UInt8(transmitBuffer & 0xFF),
        ]
    }

    /// "ID ISC.MR102 (type 77), firmware 03.05.00" or "reader type 12 (not known here), …".
    public var summary: String {
        let type =
            Self.typeNames[readerType].map { "\($0) (type \(readerType))" }
            ?? "reader type \(readerType) (not known here)"
        return
            "\(type), firmware \(Hex.format([UInt8(softwareRevision >> 8)])).\(Hex.format([UInt8(softwareRevision & 0xFF)])).\(Hex.format([developmentRevision]))"
    }
}
