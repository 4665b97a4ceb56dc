import Testing
@testable import ISO15693

/// CRC-16 of ISO/IEC 13239. Vectors from independent public sources, as collected in
/// docs/reference/iso15693.md §6.6; each names its source.
@Suite struct CRCTests {
    static let vectors: [(frame: [UInt8], onAir: [UInt8], source: String)] = [
        (Array("123456789".utf8), [0x6E, 0x90], "check value 0x906E: Proxmark3 client/src/cmdanalyse.c"),
        (
            [0x26, 0x01, 0x00], [0xF6, 0x0A],
            "Inventory: Proxmark3 traces/hf_15_reader.trace and a public C# PM3 client"
        ),
        (
            [0x00, 0x01, 0x83, 0x60, 0x79, 0x3E, 0x98, 0x80, 0x07, 0xE0], [0xD4, 0x33],
            "TI inventory answer: Proxmark3 traces/hf_15_reader.trace"
        ),
        (
            [0x00, 0x00, 0x02, 0x28, 0xE0, 0x6D, 0x58, 0x01, 0x04, 0xE0], [0xD0, 0x60],
            "inventory answer: CR95HF log, ST community thread"
        ),
        (
            [0x00, 0xFF, 0x70, 0x5D, 0x86, 0x41, 0xCE, 0x59, 0x02, 0xE0], [0x56, 0x82],
            "inventory answer DSFID FF: CR95HF demo log"
        ),
        ([0x00, 0xE1, 0x40, 0x40, 0x01], [0xDF, 0x36], "read block 0 answer (CC): CR95HF demo log"),
        ([0x00, 0x03, 0x27, 0xD1, 0x01], [0xEE, 0x32], "read block 1 answer: CR95HF demo log"),
        ([0x05, 0x00, 0x08], [0x39, 0x73], "Proxmark3 cmdanalyse.c u15_c example"),
        ([0x02, 0x23, 0x00, 0x00], [0xF7, 0x29], "Read Multiple from 0: TinyOS-style reader driver"),
        ([0x02, 0x21, 0x00, 0x10, 0x11, 0x11, 0x11], [0x29, 0xAB], "Write block 0: TinyOS-style reader driver"),
        ([0x00, 0xFF, 0xFF, 0xFF, 0xFF], [0xEE, 0x3C], "real tag answer in Proxmark3 issue #2256"),
    ]

    @Test func publishedVectors() {
        for v in Self.vectors {
            #expect(CRC16.onAirBytes(v.frame) == v.onAir, "\(v.source)")
            #expect(CRC16.isValid(v.frame + v.onAir), "\(v.source)")
        }
    }

    @Test func residueAndStrip() throws {
        // ISO/IEC 13239 receive check: the register over message + CRC leaves 0xF0B8 (Proxmark3 crc16.h).
        #expect(CRC16.register([0x26, 0x01, 0x00, 0xF6, 0x0A]) == 0xF0B8)
        #expect(try CRC16.strip([0x26, 0x01, 0x00, 0xF6, 0x0A]) == [0x26, 0x01, 0x00])
        // pm3 cmdanalyse.c: "05 00 08 39 72" is the wrong CRC.
        #expect(throws: FrameError.crcMismatch(expected: 0x7339, found: 0x7239)) {
            try CRC16.strip([0x05, 0x00, 0x08, 0x39, 0x72])
        }
        #expect(throws: FrameError.self) { try CRC16.strip([0x26, 0x01]) }
    }
}
