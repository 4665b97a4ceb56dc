import ISO15693

/// Buffered read mode: the reader reads tags on its own into a FIFO, the host fetches records with [0x22] Read
/// Buffer and deletes what it fetched with [0x32] Clear Data Buffer ([0x22] always returns the oldest records;
/// later ones are reached only after a clear). Layouts from FEIG's manuals (ID ISC.LRU3000 pp. 15, 174–177;
/// ID ISC.LR1002 p. 153; ID ISC.MR200 p. 14) and SDK (`FEDM_BRMTabItem.cpp`), as checked in
/// Tests/FEIGTests/FEIG-FACTS.md §5. The buffer lives in the reader's RAM: a power cut loses it.
///
/// Request: `DATA-SETS(2, MSB first)`. Reply (STATUS 0x00, 0x84, 0x93, 0x94): `TR-DATA1 [TR-DATA2 if
/// TR-DATA1 bit 7] DATA-SETS(2) records…`, each record `REC-LEN(2, the whole record) [IDD] [DB] [TIME 4]
/// [DATE 5] [ANT 1] [TR-DATA2 extras]` with the parts TR-DATA1/2 switch on. STATUS 0x92: the buffer is empty.
public enum FEIGBuffer {
    /// TR-DATA1 bits.
    public static let iddBit: UInt8 = 0x01, dbBit: UInt8 = 0x02, lsbFirstBit: UInt8 = 0x08, antBit: UInt8 = 0x10,
        timeBit: UInt8 = 0x20, dateBit: UInt8 = 0x40, extensionBit: UInt8 = 0x80
    /// TR-DATA2 bit 2: AFI and DSFID precede the UID inside the IDD (and IDD-LEN counts them).
    public static let afiDSFIDBit: UInt8 = 0x04

    public struct Record: Equatable, Sendable {
        /// The record's bytes as the reader sent them (REC-LEN included): the identity of a reading, so a
        /// record fetched twice (the gateway stopped before its clear) is recognized.
        public var raw: [UInt8]
        public var transponderType: UInt8?
        /// The UID, MSB first as sent (ISO 15693: 8 bytes, 0xE0 first).
        public var uid: [UInt8]?
        public var afi: UInt8?
        public var dsfid: UInt8?
        /// The blocks read, each in the reader's byte order (see `lsbFirst`).
        public var blockSize: Int?
        public var blocks: [[UInt8]] = []
        /// The reader's clock when it read the tag (4 bytes as sent; the manuals found give no layout).
        public var time: [UInt8]?
        public var date: [UInt8]?
        public var antenna: UInt8?
    }

    public struct Reply: Equatable, Sendable {
        public var trData1: UInt8
        public var trData2: UInt8?
        public var records: [Record]
        /// TR-DATA1 bit 3: block data LSB first (else MSB first, the reversed order of [0xB0] reads).
        public var lsbFirst: Bool { trData1 & FEIGBuffer.lsbFirstBit != 0 }
    }

    /// [0x22] request data for up to `count` records.
    public static func request(count: Int) -> [UInt8] {
        let n = max(1, min(count, 0xFFFF))
        return [UInt8(n >> 8), UInt8(n & 0xFF)]
    }

    /// Parses a Read Buffer reply's data. Every length comes from outside: each is checked against what is left.
    public static func parse(_ data: [UInt8]) throws(FEIGReplyError) -> Reply {
        var i = 0
        func need(_ n: Int, _ what: String) throws(FEIGReplyError) {
            guard n >= 0, data.count - i >= n else {
                throw .malformed(
                    "Read Buffer reply ends inside \(what) (needs \(n) more bytes at offset \(i), \(data.count - i) left)"
                )
            }
        }
        try need(1, "TR-DATA1")
        let tr1 = data[i]; i += 1
        var tr2: UInt8?
        if tr1 & extensionBit != 0 {
            try need(1, "TR-DATA2")
            tr2 = data[i]; i += 1
        }
        try need(2, "DATA-SETS")
        let sets = Int(data[i]) << 8 | Int(data[i + 1]); i += 2
        var records: [Record] = []
        for n in 0..<sets {
            try need(2, "REC-LEN of record \(n + 1)")
            let start = i
            let length = Int(data[i]) << 8 | Int(data[i + 1])
            guard length >= 2 else {
                throw .malformed("record \(n + 1): REC-LEN \(length) is shorter than REC-LEN itself")
            }
            try need(length, "record \(n + 1) (REC-LEN \(length))")
            let end = start + length
            i += 2
            var r = Record(raw: Array(data[start..<end]))
            func take(_ k: Int, _ what: String) throws(FEIGReplyError) -> ArraySlice<UInt8> {
                guard k >= 0, end - i >= k else {
                    throw .malformed("record \(n + 1): \(what) needs \(k) bytes, REC-LEN leaves \(end - i)")
                }
                defer { i += k }
                return data[i..<(i + k)]
            }
            if tr1 & iddBit != 0 {
                let head = try take(3, "TR-TYPE, IDDT, IDD-LEN")
                r.transponderType = head[head.startIndex]
                var len = Int(head[head.startIndex + 2])
                if let tr2, tr2 & afiDSFIDBit != 0 {
                    guard len >= 2 else {
                        throw .malformed("record \(n + 1): IDD-LEN \(len) cannot hold AFI and DSFID")
                    }
                    let ad = try take(2, "AFI, DSFID")
                    r.afi = ad[ad.startIndex]; r.dsfid = ad[ad.startIndex + 1]
                    len -= 2
                }
                r.uid = Array(try take(len, "IDD"))
            }
            if tr1 & dbBit != 0 {
                let head = try take(3, "DB-N, DB-SIZE")
                let count = Int(head[head.startIndex]) << 8 | Int(head[head.startIndex + 1])
                let size = Int(head[head.startIndex + 2])
                guard count == 0 || (1...32).contains(size) else {
                    throw .malformed("record \(n + 1): DB-SIZE \(size) (ISO 15693 blocks have 1…32 bytes)")
                }
                r.blockSize = size
                let bytes = try take(count * size, "\(count) block(s) of \(size) bytes")
                r.blocks = stride(from: bytes.startIndex, to: bytes.endIndex, by: max(size, 1)).map {
                    Array(bytes[$0..<($0 + size)])
                }
            }
            if tr1 & timeBit != 0 { r.time = Array(try take(4, "TIME")) }
            if tr1 & dateBit != 0 { r.date = Array(try take(5, "DATE")) }
            if tr1 & antBit != 0 { r.antenna = try take(1, "ANT").first }
            // TR-DATA2 extras (inputs, MAC, antenna lists, direction) and future fields: skipped by REC-LEN.
            i = end
            records.append(r)
        }
        guard i == data.count else {
            throw .malformed("Read Buffer reply has \(data.count - i) bytes after its \(sets) record(s)")
        }
        return Reply(trData1: tr1, trData2: tr2, records: records)
    }

    /// Encodes a reply (the emulator's side): records with IDD (ISO 15693, 8-byte UID) and, where given,
    /// blocks and TIME.
    public static func encode(trData1: UInt8, records: [(uid: [UInt8], blocks: [[UInt8]], time: [UInt8]?)]) -> [UInt8] {
        var out: [UInt8] = [trData1, UInt8(records.count >> 8), UInt8(records.count & 0xFF)]
        for r in records {
            var body: [UInt8] = []
            if trData1 & iddBit != 0 { body += [0x03, 0x00, UInt8(r.uid.count)] + r.uid }
            if trData1 & dbBit != 0 {
                let size = r.blocks.first?.count ?? 4
                body +=
                    [UInt8(r.blocks.count >> 8), UInt8(r.blocks.count & 0xFF), UInt8(size)] + r.blocks.flatMap { $0 }
            }
            if trData1 & timeBit != 0 { body += r.time ?? [0, 0, 0, 0] }
            let length = body.count + 2
            out += [UInt8(length >> 8), UInt8(length & 0xFF)] + body
        }
        return out
    }
}
