/// What a reader needs to know about an IC model beyond Get System Information. Sources as in
/// `docs/reference/iso15693.md` Part 2 §1.4 and §2; entries marked "assumption" have no public source yet.
extension ICModel {
    /// Writes and locks must carry the Option flag (the tag then waits for the reader's EOF).
    /// TI Tag-it HF-I: pm3 ("-o needed for TI"), FEIG WR-OPTION = 1, Linux trf7970a driver.
    public var writeNeedsOption: Bool {
        switch self {
        case .tagitHFIPlus, .tagitHFIStandard, .tagitHFIPro: return true
        default: return false
        }
    }

    /// Plain block commands need the Protocol Extension flag with 2-byte block numbers
    /// (M24LR64-R and LRIS64K datasheets; RFAL `legacySTHighDensity`). The M24LR16E-R, M24LR16D-W and
    /// M24LR64E-R (512 and 2048 blocks) answer Get System Information with their memory size only with that
    /// flag (Android `rw_i93.cc`, docs/reference/chip-codes.md §1.2).
    public var needsProtocolExtension: Bool {
        switch self {
        case .m24lr64, .lris64k, .m24lr16er, .m24lr16dw, .m24lr64er: return true
        default: return false
        }
    }

    /// Largest Write Multiple Blocks the chip takes; nil = write one block at a time.
    /// ST25DV/ST25TV: at most 4 (datasheet, ST forum); MB89R118: 2 (FEIG); RF430FRL15xH: 24 bytes, 3 blocks of 8
    /// (TI on TI E2E, docs/reference/sensor-tags.md).
    public var maxBlocksPerWrite: Int? {
        switch self {
        case .st25dv04k, .st25dv16k, .st25dv64k, .st25dv16kOr64k, .st25dvKC, .st25tv04kp, .st25tv16k64k: return 4
        case .rf430frl15xh: return 3
        case .mb89r116, .mb89r118: return 2
        default: return nil
        }
    }

    /// Largest Read Multiple Blocks to ask for, when known to be below the 256 of the command; 1 for chips
    /// without Read Multiple Blocks (read block by block with Read Single Block).
    /// - TI Tag-it HF-I Standard/Pro: 1. AOSP `rw_i93.cc` (`rw_i93_get_product_version`: "these support only
    ///   Inventory, Stay Quiet, Read Single Block, Write Single Block, Lock Block"); FEIG's ID ISC.MR200 manual
    ///   §7.1.15 marks the reader's Read Multiple Blocks for them "Single Read".
    /// - RF430FRL15xH: 3. "Limited to 24 bytes … due to a FIFO size limit on the device" (TI on TI E2E thread
    ///   424601), 3 blocks of 8 bytes (docs/reference/sensor-tags.md).
    /// - MB89R118, M24LR64: 32 (assumptions, see the simulator profiles).
    public var maxBlocksPerRead: Int? {
        switch self {
        case .tagitHFIStandard, .tagitHFIPro: return 1
        case .rf430frl15xh: return 3
        case .mb89r116, .mb89r118, .m24lr64: return 32
        default: return nil
        }
    }

    /// ST's fast reads 0xC0/0xC3 (0xC4/0xC5 above block 255): "custom fast read access up to 53 kbit/s"
    /// (ST25DV, ST25DV-KC, ST25TV16K/64K datasheets); M24LR64-R/-E-R "support the 53 kbit/s data rate with
    /// Fast commands" (datasheets).
    public var hasSTFastReads: Bool {
        switch self {
        case .st25dv04k, .st25dv16k, .st25dv64k, .st25dv16kOr64k, .st25dvKC, .st25tv16k64k, .m24lr64: return true
        default: return false
        }
    }

    /// NXP's Inventory Read 0xA0 (`NXPInventoryRead`): ICODE SLI (specification §3.4.3.1), SLIX (datasheet
    /// SL2S2002 p.19), SLIX2 (SL2S2602 §9.5.3.10), DNA (NXP Reader Library). SLI-S/SLIX-S have Inventory Page
    /// Read instead; SLIX-L and ICODE 3 are unverified, so left out.
    public var hasNXPInventoryRead: Bool {
        switch self {
        case .icodeSLI, .icodeSLIX, .icodeSLIX2, .icodeDNA: return true
        default: return false
        }
    }

    /// NXP chips with password-protected pages, asked GET MULTIPLE BLOCK PROTECTION STATUS (0xB8) before a write:
    /// the ICODE SLI-S (data sheet Rev. 3.0 §8.1.3.8, the one data sheet read that lists the command), and the
    /// SLIX-S, SLIX2, DNA and ICODE 3, whose read and write passwords protect pages (their B8 is not in a data sheet
    /// read: a chip that does not answer costs one exchange and counts as unprotected). The ICODE SLI and the
    /// original SLIX have no read or write password (SLI specification Rev 3.1 §3.4.3, SLIX SL2S2002 Table 12) and
    /// are not asked (docs/reference/optional-commands.md); nor are the SLI-L and SLIX-L (privacy, destroy and EAS
    /// passwords only).
    public var hasPageProtection: Bool {
        switch self {
        case .icodeSLIS, .icodeSLIXS, .icodeSLIX2, .icodeDNA, .icode3: return true
        default: return false
        }
    }

    /// Chips with more than 256 blocks reached through the extended commands 0x30–0x3C.
    public var usesExtendedCommands: Bool {
        switch self {
        case .st25dv16k, .st25dv64k, .st25dv16kOr64k, .st25dvKC, .st25tv16k64k: return true
        default: return false
        }
    }
}
