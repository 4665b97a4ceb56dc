import Testing

@testable import ISO15693

/// Answers of real tags quoted in public issue threads, decoded as ISO/IEC 15693-3 and NXP's data sheets say.
@Suite struct PublicAnswerTests {
    /// Proxmark3 issue #2101 (https://github.com/RfidResearchGroup/proxmark3/issues/2101, a TI-based glucose sensor):
    /// `hf 15 info` printed `SYSINFO: 00 04 65 72 3F 0B 00 A4 07 E0 FF 07` as "19 (or 18) bytes/blocks x 90 blocks".
    /// Per ISO/IEC 15693-3 (Get System Information: info flags 0x04 = only the memory size; its two bytes are the
    /// block count − 1 and the block size − 1 in bits 0–4) that is 256 blocks of 8 bytes, as the thread's own read
    /// of an 8-byte block shows. vlogger decodes it so; Proxmark3's printout of that time was wrong.
    @Test func proxmark3SysinfoWithOnlyTheMemorySize() throws {
        let request = Request(.getSystemInformation)
        let answer: [UInt8] = [0x00, 0x04, 0x65, 0x72, 0x3F, 0x0B, 0x00, 0xA4, 0x07, 0xE0, 0xFF, 0x07]
        guard case let .systemInformation(info) = try Response.decode(answer, to: request).body else {
            Issue.record("not a system information answer")
            return
        }
        #expect(info.uid.description == "E007A4000B3F7265")
        #expect(info.blockCount == 256 && info.blockSize == 8)
        #expect(info.dsfid == nil && info.afi == nil && info.icReference == nil)
    }

    /// pynfcreader issue #2 (https://github.com/gvinet/pynfcreader/issues/2, a TI Tag-it family tag): the answer
    /// `00 04 A2 5F 7A 01 00 A0 07 E0 F3 07` crashed a parser that expected DSFID and AFI; it is 244 blocks of 8 bytes.
    @Test func pynfcreaderSysinfoWithOnlyTheMemorySize() throws {
        let answer: [UInt8] = [0x00, 0x04, 0xA2, 0x5F, 0x7A, 0x01, 0x00, 0xA0, 0x07, 0xE0, 0xF3, 0x07]
        guard case let .systemInformation(info) = try Response.decode(answer, to: Request(.getSystemInformation)).body
        else {
            Issue.record("not a system information answer")
            return
        }
        #expect(info.uid.description == "E007A000017A5FA2" && info.blockCount == 244 && info.blockSize == 8)
    }

    /// Proxmark3 pull request #3279 (https://github.com/RfidResearchGroup/proxmark3/pull/3279, an ICODE 3):
    /// GET NXP SYSTEM INFO's raw answer `00 00 00 00 FF FD 00 00` — protection pointer 0, condition 0, lock bits 0,
    /// feature flags 0x0000FDFF — which Proxmark3 prints as "READ SIGNATURE command supported" (bit 8) and
    /// "Password protection for READ SIGNATURE command not supported" (bit 9).
    @Test func icode3NXPSystemInfo() throws {
        let raw: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0xFF, 0xFD, 0x00, 0x00]
        let info = try #require(NXPSecurity.SystemInfo(Array(raw.dropFirst())))
        #expect(info.protectionPointer == 0 && info.protectionCondition == 0 && info.lockBits == 0)
        #expect(info.features == 0x0000_FDFF && info.hasSignature && info.features & (1 << 9) == 0)
        // The ICODE 3's SYSINFO in the same output: 76 blocks of 4 bytes, IC reference 0x01.
        let sysinfo: [UInt8] = [
            0x00, 0x0F, 0xDE, 0x0C, 0x11, 0x01, 0x20, 0x01, 0x04, 0xE0, 0x00, 0x00, 0x4B, 0x03, 0x01,
        ]
        guard case let .systemInformation(i) = try Response.decode(sysinfo, to: Request(.getSystemInformation)).body
        else {
            Issue.record("not a system information answer")
            return
        }
        #expect(i.uid.description == "E004012001110CDE")
        #expect(i.blockCount == 76 && i.blockSize == 4 && i.icReference == 0x01)
    }
}
