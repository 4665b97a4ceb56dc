import Foundation
import Testing

@testable import ISO15693

/// IC models as the stacks gateways run name them (issue "Tag knowledge that agrees with the stacks gateways
/// run", items 1 and 2). Every case comes from a public source, named per case; the facts and their commits
/// and pages are in docs/reference/chip-codes.md.
@Suite struct ChipCodeTests {
    struct Case: CustomStringConvertible {
        let uid: String
        let icReference: UInt8?
        let model: ICModel?
        let source: String
        var description: String { "\(uid) ic-ref \(icReference.map { String($0, radix: 16) } ?? "-"): \(source)" }
    }

    static func c(_ uid: String, _ model: ICModel?, ic: UInt8? = nil, _ source: String) -> Case {
        Case(uid: uid, icReference: ic, model: model, source: source)
    }

    /// The cases of a run of ST-style codes: UID `E0 <mfr> <code> 00 00 00 00 01`, with the code as the IC
    /// reference too when `ic`.
    static func codes(
        _ manufacturer: UInt8, _ range: ClosedRange<Int>, _ model: ICModel?, ic: Bool, _ source: String
    ) -> [Case] {
        range.map { code in
            c(String(format: "E0%02X%02X0000000001", manufacturer, code), model, ic: ic ? UInt8(code) : nil, source)
        }
    }

    /// Android's rw_i93 (AOSP-14, GrapheneOS-Archive/platform_system_nfc @4400ddb `src/nfc/tags/rw_i93.cc`,
    /// `src/nfc/include/tags_defs.h`): every (manufacturer, code) its rw_i93_get_product_version maps to a
    /// product — 44 cases (docs/reference/chip-codes.md §1–§3). ST and onsemi are identified from the IC
    /// reference there; the ST cases put the same code in the UID (AOSP's RW_I93CheckLegacyProduct reads the
    /// UID byte with the same families, rw_i93.cc:4309–4341).
    static let aosp: [Case] = {
        var out: [Case] = [
            c("E004010000000001", .icodeSLI, "rw_i93.cc:83–84, tags_defs.h:634 (ICODE SLI)"),
            c("E004020000000001", .icodeSLIS, "rw_i93.cc:85–86, tags_defs.h:636 (SLI-S)"),
            c("E004030000000001", .icodeSLIL, "rw_i93.cc:87–88, tags_defs.h:638 (SLI-L)"),
            c("E007000000000001", .tagitHFIPlus, "rw_i93.cc:92–94, tags_defs.h:649 (Plus inlay, mask 0xFE)"),
            c("E007010000000001", .tagitHFIPlus, "rw_i93.cc:92–94 (Plus inlay)"),
            c("E007800000000001", .tagitHFIPlus, "rw_i93.cc:95–97, tags_defs.h:651 (Plus chip)"),
            c("E007810000000001", .tagitHFIPlus, "rw_i93.cc:95–97 (Plus chip)"),
            c("E007C00000000001", .tagitHFIStandard, "rw_i93.cc:98–100, tags_defs.h:653"),
            c("E007C10000000001", .tagitHFIStandard, "rw_i93.cc:98–100"),
            c("E007C40000000001", .tagitHFIPro, "rw_i93.cc:101–103, tags_defs.h:655"),
            c("E007C50000000001", .tagitHFIPro, "rw_i93.cc:101–103"),
            c("E0025A0000000001", .m24lr04er, ic: 0x5A, "rw_i93.cc:108–109, tags_defs.h:680–681"),
            c("E0024E0000000001", .m24lr16er, ic: 0x4E, "rw_i93.cc:110–111, tags_defs.h:682–684"),
            c("E0024D0000000001", .m24lr16dw, ic: 0x4D, "rw_i93.cc:112–113, tags_defs.h:685–687"),
            c("E0025E0000000001", .m24lr64er, ic: 0x5E, "rw_i93.cc:114–115, tags_defs.h:688–690"),
            c("E002260000000001", .st25dv16kOr64k, ic: 0x26, "rw_i93.cc:116–117, tags_defs.h:694–697"),
            c("E002240000000001", .st25dv04k, ic: 0x24, "rw_i93.cc:118–119, tags_defs.h:691–693"),
        ]
        out += codes(0x02, 0x40...0x43, .lri1k, ic: true, "tags_defs.h:668–669 (010000xx)")
        out += codes(0x02, 0x20...0x22, .lri2k, ic: true, "tags_defs.h:670–671 (001000xx)")
        // 0x23: AOSP's LRI2K family; pm3 (cmdhf15.c:110–111) names the ST25TV02K/ST25TV512 there, a chip ST
        // declares LRI2K-compatible (DS12074): the exact code wins (chip-codes.md §1.5.1, §6).
        out += codes(0x02, 0x23...0x23, .st25tv02k512, ic: true, "tags_defs.h:670–671 vs pm3 cmdhf15.c:110–111")
        out += codes(0x02, 0x28...0x2B, .lris2k, ic: true, "tags_defs.h:672–673 (001010xx)")
        out += codes(0x02, 0x44...0x47, .lris64k, ic: true, "tags_defs.h:674–676 (010001xx)")
        out += codes(0x02, 0x2C...0x2F, .m24lr64, ic: true, "tags_defs.h:677–679 (001011xx)")
        let onsemi: [(Int, ICModel, String)] = [
            (0x1A, .n36rw02, "716"), (0x2A, .n24rf04, "718"), (0x2E, .n24rf04e, "720"), (0x4A, .n24rf16, "722"),
            (0x4E, .n24rf16e, "724"), (0x6A, .n24rf64, "726"), (0x6E, .n24rf64e, "728"),
        ]
        for (code, model, line) in onsemi {
            out += codes(0x67, code...code, model, ic: true, "rw_i93.cc:142–169, tags_defs.h:\(line)")
        }
        return out
    }()

    /// FEIG's ID ISC system manuals (chip ID in UID bits 47–40) and ST's LRI64 datasheet (IC reference
    /// 000101xxb): 24 cases (docs/reference/chip-codes.md §1.3, §3, §4, §5).
    static let feigAndST: [Case] = {
        var out: [Case] = []
        let em = "FEIG ID ISC.MR200 p.110 §7.1.1: EM4034 1h = x00001xxb"
        out += codes(0x16, 0x04...0x07, .em4034, ic: false, em)
        out += codes(0x16, 0x84...0x87, .em4034, ic: false, em)
        let lri2k = "FEIG ID ISC.MR200 p.123 §7.1.14: LRI2k 8h = 001000xxb (bit 47–42)"
        out += codes(0x02, 0x20...0x22, .lri2k, ic: false, lri2k)
        // 0x23: see the AOSP list; FEIG's LRI2K family holds it too.
        out += codes(0x02, 0x23...0x23, .st25tv02k512, ic: false, lri2k + " vs pm3 cmdhf15.c:110–111")
        out += codes(0x02, 0x28...0x2B, .lris2k, ic: false, "FEIG ID ISC.MR200 p.123 §7.1.14: LRIS2k Ah = 001010xxb")
        out += codes(0x02, 0x14...0x17, .lri64, ic: true, "ST LRI64 datasheet, Get System Info: IC Ref 000101xxb")
        out += [
            c("E008000000000001", .mb89r116, "FEIG ID ISC.MR200 p.112 §7.1.3: MB89R116 0h = 00000000b"),
            c("E008010000000001", .mb89r118, "FEIG ID ISC.MR102 p.117 §8.3.3: MB89R118 1h = 00000001b"),
            c("E007C00000000001", .tagitHFIStandard, "FEIG ID ISC.MR200 p.124 §7.1.15: Ch = 1100xxxxb, Standard 000b"),
            c("E007C10000000001", .tagitHFIStandard, "FEIG ID ISC.MR200 p.124 §7.1.15"),
        ]
        return out
    }()

    static func identify(_ k: Case) throws -> ICModel? {
        ICModel.identify(uid: try UID(parsing: k.uid), icReference: k.icReference)
    }

    @Test func androidsAndNXPsStacksAgree() throws {
        #expect(Self.aosp.count == 44)
        for k in Self.aosp { #expect(try Self.identify(k) == k.model, "\(k)") }
    }

    @Test func feigsManualsAndSTsDatasheetAgree() throws {
        #expect(Self.feigAndST.count == 24)
        for k in Self.feigAndST { #expect(try Self.identify(k) == k.model, "\(k)") }
    }

    /// The ST product code in the UID is the 6-bit code shifted left by two (FEIG "bit 47–42"; ST LRI64
    /// "only the 6 most significant bits are used"): Proxmark3's unshifted 0x05 and 0x0A name no ST product,
    /// and 0x08 is the ST25TV02KC/ST25TV512C alone (pm3 cmdhf15.c:112–113; 16 blocks: the 512C).
    @Test func theLRIFamilyCodesAreShiftedByTwoBits() throws {
        #expect(try ICModel.identify(uid: UID(parsing: "E002050000000001")) == nil)
        #expect(try ICModel.identify(uid: UID(parsing: "E0020A0000000001")) == nil)
        #expect(try ICModel.identify(uid: UID(parsing: "E002080000000001")) == .st25tv02kc)
        #expect(try ICModel.identify(uid: UID(parsing: "E002080000000001"), blockCount: 16) == .st25tv512c)
        #expect(!ICModel.st25tv02kc.name.contains("LRI"))
        // An ST UID whose byte names nothing is told by the IC reference of Get System Information.
        #expect(try ICModel.identify(uid: UID(parsing: "E002990000000001"), icReference: 0x5E) == .m24lr64er)
        // onsemi only by the IC reference: no source says what its UID carries.
        #expect(try ICModel.identify(uid: UID(parsing: "E0674E0000000001")) == nil)
        #expect(try ICModel.identify(uid: UID(parsing: "E0670000000000FF"), icReference: 0x4E) == .n24rf16e)
        // The same IC reference is another chip for another manufacturer (0x4E: ST M24LR16E-R, onsemi N24RF16E).
        #expect(try ICModel.identify(uid: UID(parsing: "E002000000000001"), icReference: 0x4E) == .m24lr16er)
        // EM4034's free bits do not reach the other EM codes (pm3 cmdhf15.c:203–217).
        #expect(try ICModel.identify(uid: UID(parsing: "E0160C0000000001")) == .em4035)
        #expect(try ICModel.identify(uid: UID(parsing: "E016880000000001")) == nil)
    }
}

/// A model's maker (used to judge whether a rule on one manufacturer can see a plan's model) is the manufacturer
/// code of every UID the model is told from: UID byte 6 is the IC manufacturer's code (ISO/IEC 15693-3, ISO/IEC
/// 7816-6), and `identify` tells a model only within its maker's codes.
@Suite struct ModelMakerTests {
    @Test func everyModelIsToldOnlyFromItsMakersUIDs() {
        var seen = Set<ICModel>()
        for code: UInt8 in [0x02, 0x04, 0x05, 0x07, 0x08, 0x16, 0x67] {
            for b5 in 0...255 {
                for b4: UInt8 in [0x00, 0x08, 0x10, 0x18, 0x20] {
                    let uid = UID(
                        manufacturer: ManufacturerCode(code), serial: UInt64(b5) << 40 | UInt64(b4) << 32 | 0x1234)
                    for reference: UInt8? in [nil, 0x1A, 0x2A, 0x2E, 0x4A, 0x4E, 0x6A, 0x6E, UInt8(b5)] {
                        for blocks: Int? in [nil, 16, 64, 80, 128, 512, 2048] {
                            guard let m = ICModel.identify(uid: uid, icReference: reference, blockCount: blocks)
                            else { continue }
                            #expect(m.manufacturer == uid.manufacturer, "\(m) from \(uid)")
                            seen.insert(m)
                        }
                    }
                }
            }
        }
        #expect(seen.count >= 40, "\(ICModel.allCases.filter { !seen.contains($0) })")
    }
}
