import Testing
@testable import ISO15693

@Suite struct UIDTests {
    @Test func onAirOrderIsLeastSignificantFirst() throws {
        // pm3 trace: inventory answer 00 01 83 60 79 3E 98 80 07 E0 carries UID E0 07 80 98 3E 79 60 83 (TI).
        let answer: [UInt8] = [0x00, 0x01, 0x83, 0x60, 0x79, 0x3E, 0x98, 0x80, 0x07, 0xE0]
        let r = try Response.decode(answer, to: Request(.inventory(afi: nil, mask: .none)))
        guard case let .inventory(dsfid, uid) = r.body else { Issue.record("not an inventory answer"); return }
        #expect(dsfid == 0x01)
        #expect(uid.description == "E00780983E796083")
        #expect(uid.manufacturer == .texasInstruments)
        #expect(uid.onAirBytes == Array(answer[2...]))
    }

    @Test func parsingAndPrinting() throws {
        let a = try UID(parsing: "E004015012345678")
        let b = try UID(parsing: "E0 04 01 50 12 34 56 78")
        let c = try UID(parsing: "e0:04:01:50:12:34:56:78")
        #expect(a == b && b == c)
        #expect(a.spaced == "E0 04 01 50 12 34 56 78")
        #expect(a.serial == 0x0150_1234_5678)
        // ISO/IEC 15693-3: the most significant byte is 0xE0.
        #expect(throws: ParseError.self) { try UID(parsing: "E104015012345678") }
        #expect(throws: ParseError.self) { try UID(parsing: "E0040150123456") }
        #expect(throws: FrameError.self) { try UID(onAir: [1, 2, 3]) }
    }

    @Test func manufacturerRegister() {
        // ISO/IEC 7816-6 register as reproduced in Proxmark3 cmdhf14a.c (2024 edition).
        #expect(ManufacturerCode(0x02).name == "ST Microelectronics SA France")
        #expect(ManufacturerCode(0x04).name == "NXP Semiconductors Germany")
        #expect(ManufacturerCode(0x07).name == "Texas Instrument France")
        #expect(ManufacturerCode(0x16).name == "EM Microelectronic-Marin SA Switzerland")
        #expect(ManufacturerCode(0x7E).name == "Holtek Taiwan")
        // Every code 0x01–0x7E is registered except 0x6E and 0x6F, absent from the register copy.
        for code in UInt8(0x01)...0x7E where code != 0x6E && code != 0x6F {
            #expect(ManufacturerCode(code).name != nil, "code \(code)")
        }
        #expect(ManufacturerCode.lookup("NXP") == .nxp)
        #expect(ManufacturerCode.lookup("0x07") == .texasInstruments)
    }

    @Test func icModels() throws {
        func model(_ s: String, ic: UInt8? = nil, blocks: Int? = nil) throws -> ICModel? {
            ICModel.identify(uid: try UID(parsing: s), icReference: ic, blockCount: blocks)
        }
        // NXP: byte 5 = ICODE type, byte 4 bits 3–4 = SLIX (10) / SLIX2 (01) (Flipper SlixUidLayout; pm3 bits 35/36).
        #expect(try model("E004010012345678") == .icodeSLI)
        #expect(try model("E004011012345678") == .icodeSLIX)
        #expect(try model("E004010812345678") == .icodeSLIX2)
        #expect(try model("E004011812345678") == .icodeDNA)
        #expect(try model("E004021012345678") == .icodeSLIXS)
        #expect(try model("E004031012345678") == .icodeSLIXL)
        // ICODE 3 (pm3 mask 0xFFFFFF78…: byte 4 bits 3–6 = 0100), e.g. E004012001110CDE; it was named ICODE SLI.
        #expect(try model("E004012001110CDE") == .icode3)
        // ST: IC codes from ST datasheets and pm3 (docs/reference/iso15693.md Part 2 §2.1).
        #expect(try model("E002240000000001") == .st25dv04k)
        #expect(try model("E002260000000001", blocks: 2048) == .st25dv64k)
        #expect(try model("E002260000000001", blocks: 512) == .st25dv16k)
        #expect(try model("E002230000000001") == .st25tv02k512)
        // IC code 0x08: the ST25TV02KC; 16 blocks is the ST25TV512C (pm3 uidmapping; docs/reference/chip-codes.md §1.5).
        #expect(try model("E002080000000001") == .st25tv02kc)
        #expect(try model("E002080000000001", blocks: 16) == .st25tv512c)
        #expect(try model("E002440000000001") == .lris64k)
        // TI (pm3 uidmapping): 0x80 Plus chip, 0xC0 Standard, 0xC4 Pro.
        #expect(try model("E007800000000001") == .tagitHFIPlus)
        #expect(try model("E007C00000000001") == .tagitHFIStandard)
        #expect(try model("E007C40000000001") == .tagitHFIPro)
        #expect(try model("E007A20000000001") == .rf430frl15xh)
        // Tag-it HF-I Plus inlay (E0 07 0x…) and chip (E0 07 1x…), pm3 uidmapping with 20-bit prefixes.
        #expect(try model("E007050000000001") == .tagitHFIPlus && model("E007170000000001") == .tagitHFIPlus)
        #expect(try model("E007300000000001") == nil)
        #expect(try model("E016240000000001") == .em4233)
        #expect(
            try model("E016040000000001") == .em4034 && model("E0163C0000000001") == .em4237
                && model("E016780000000001") == .em4425)
        #expect(try model("E005000000000001") == .mydVicinity && model("E005A10000000001") == .mydVicinity)
        #expect(try model("E0051E0000000001") == .mydMove && model("E005230000000001") == .mydMove)
        #expect(try model("E008010000000001") == .mb89r118)
        #expect(try model("E0FF010000000001") == nil)
    }
}
