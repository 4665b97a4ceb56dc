import ISO15693
// Tag images are the simulator's tags: whoever uses the simulator sees them too.
import TagImages

/// How a simulated chip behaves: memory, supported commands, quirks, timing. Each profile names the source
/// of its numbers; where no public source gave a number, the profile says it is a modelling assumption.
public struct ChipProfile: Hashable, Sendable {
    /// Stable identifier used in tag images (`"icode-slix2"`).
    public let id: String
    public let model: ICModel?
    public let manufacturer: ManufacturerCode
    /// UID byte 5 and the bits of byte 4 that identify the product (see `ICModel.identify`).
    public let uidByte5: UInt8
    public let uidByte4Bits: UInt8
    public let blockCount: Int
    public let blockSize: Int
    public let icReference: UInt8?
    /// Fields returned by Get System Information; nil when the chip has no Get System Information.
    public let systemInfo: SystemInfoFields?
    /// Extended commands 0x30–0x34, 0x3B, 0x3C.
    public let supportsExtendedCommands: Bool
    /// Plain block commands and Get System Information need the Protocol Extension flag and 2-byte block
    /// numbers (ST M24LR64 / LRIS64K family); without it the chip answers `protocolExtensionError`.
    public let requiresProtocolExtension: Bool
    public let maxBlocksPerRead: Int
    /// nil: Write Multiple Blocks not supported.
    public let maxBlocksPerWrite: Int?
    /// Writes and locks are only carried out with the Option flag (TI Tag-it HF-I).
    public let writeRequiresOption: Bool
    /// Programming time of one block after the reader's EOF, on top of t1.
    public let programmingTimePerBlock: AirTime
    /// Error code for commands the chip does not know; nil: the chip stays silent.
    public var unsupportedCommandError: ISOErrorCode?
    public let blockOutOfRangeError: ISOErrorCode
    public let protocolExtensionError: ISOErrorCode
    public let sources: [String]
    /// ST's fast reads (0xC0/0xC3, and 0xC4/0xC5 on chips with extended commands), answered at twice the
    /// data rate (`STFastRead`).
    public var fastReads = false
    /// NXP's Inventory Read (0xA0) and Fast Inventory Read (0xA1, answer at twice the data rate): an
    /// Inventory whose answer carries blocks (`NXPInventoryRead`).
    public var inventoryRead = false
    /// NXP's READ SIGNATURE (0xBD: the image's signature) and GET NXP SYSTEM INFO (0xAB) (docs/reference/originality-signatures.md).
    public var nxpSecurity = false
    /// ST25DV area security: READ CONFIGURATION (0xA0) of the area registers, PRESENT PASSWORD (0xB3), reads and
    /// writes checked against the areas (docs/reference/tag-passwords.md, "ST25DV areas").
    public var stAreas = false

    public struct SystemInfoFields: Hashable, Sendable {
        public let dsfid: Bool, afi: Bool, memorySize: Bool, icReference: Bool
        public static let all = SystemInfoFields(dsfid: true, afi: true, memorySize: true, icReference: true)
    }

    public var memoryBytes: Int { blockCount * blockSize }

    /// A UID for this chip from a serial number (the product bits of bytes 5 and 4 are the profile's).
    public func makeUID(serial: UInt64) -> UID {
        var b4 = UInt8(truncatingIfNeeded: serial >> 32)
        if manufacturer == .nxp { b4 = (b4 & ~0x18) | uidByte4Bits }
        let s = UInt64(uidByte5) << 40 | UInt64(b4) << 32 | (serial & 0xFFFF_FFFF)
        return UID(manufacturer: manufacturer, serial: s)
    }

    // MARK: The profiles

    /// NXP ICODE SLIX2 (SL2S2602): 80 × 4-byte blocks, IC reference 0x01, no extended commands.
    public static let icodeSLIX2 = ChipProfile(
        id: "icode-slix2", model: .icodeSLIX2, manufacturer: .nxp, uidByte5: 0x01, uidByte4Bits: 0x08,
        blockCount: 80, blockSize: 4, icReference: 0x01, systemInfo: .all,
        supportsExtendedCommands: false, requiresProtocolExtension: false,
        maxBlocksPerRead: 80, maxBlocksPerWrite: nil, writeRequiresOption: false,
        programmingTimePerBlock: AirTime(ticks: 18 * 4096),
        unsupportedCommandError: .commandNotSupported, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "80 blocks × 4 bytes, IC reference 0x01: Flipper dumps ('Block Count: 80', 'IC Reference: 01') and pm3 (docs/reference/iso15693.md Part 2 §2.1)",
            "UID E0 04 01, byte 4 bit 3 = SLIX2 indicator: Flipper slix.c SlixUidLayout, pm3 uidmapping bit 35",
            "No Write Multiple Blocks: ICODE SLIX overview ('0x24 not natively supported', docs/reference/iso15693.md Part 2 §2.1)",
            "Read Multiple up to the end of memory: UNVERIFIED (NXP datasheet not retrieved); modelled as 80",
            "Programming time: no NXP figure found; modelled as the ST EEPROM figure 18 × 302 µs (assumption)",
            "Inventory Read 0xA0: SLIX2 datasheet SL2S2602 §9.5.3.10; Fast Inventory Read 0xA1 at 2× rate: NXP Reader Library phpalSli15693.h ('ICODE SLIX2/DNA'), layout as SLIX datasheet SL2S2002 Tables 23–25",
            "Inventory Read past the last block returns fewer blocks: ICODE SLI spec §3.5.3.1; assumed the same on SLIX2 (UNVERIFIED)",
            "READ SIGNATURE 0xBD answers 32 bytes: SLIX2 datasheet SL2S2602 §9.5.3.20 Tables 76–78; an image without a signature answers 'not supported' (a clone's behaviour varies)",
            "GET NXP SYSTEM INFO 0xAB: protection pointer, condition, lock bits (b0 AFI, b1 EAS, b2 DSFID, b3 page protection: NXP TagInfo, Flipper slix_i.h and an NTAG 5 library agree; the NXP data sheet's table not read), feature flags LE with b8 = originality signature (Flipper slix.h)",
        ], inventoryRead: true, nxpSecurity: true)

    /// NXP ICODE SLI (SL2 ICS20): 28 × 4-byte user blocks, no page protection, no NXP system information, no
    /// signature; a custom command it does not implement gets error 0x0F in addressed mode.
    public static let icodeSLI = ChipProfile(
        id: "icode-sli", model: .icodeSLI, manufacturer: .nxp, uidByte5: 0x01, uidByte4Bits: 0x00,
        blockCount: 28, blockSize: 4, icReference: nil,
        systemInfo: SystemInfoFields(dsfid: true, afi: true, memorySize: true, icReference: false),
        supportsExtendedCommands: false, requiresProtocolExtension: false,
        maxBlocksPerRead: 28, maxBlocksPerWrite: nil, writeRequiresOption: false,
        programmingTimePerBlock: AirTime(ticks: 18 * 4096),
        unsupportedCommandError: .unknownError, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "User blocks 0–27 of 4 bytes, UID E0 04 01 with byte 4 bits 3–4 = 00: FEIG tables and pm3 uidmapping (docs/reference/iso15693.md Part 2 §2.1)",
            "Custom commands: Inventory Read 0xA0 and the EAS commands only (SLI specification Rev 3.1 §3.4.3; FEIG ID ISC.MR/PR/PRH101 §8.3); no GET MULTIPLE BLOCK PROTECTION STATUS, GET NXP SYSTEM INFO or READ SIGNATURE (docs/reference/optional-commands.md)",
            "A command it does not support: error 0x0F in addressed or selected mode (SLI specification Rev 3.1 §3.5.2; the same in the SLI-S data sheet §8.4.2)",
            "No IC reference in Get System Information, Read Multiple up to the last block, one block per write, the programming time of the SLIX2 profile: assumptions (no source read gives them)",
        ], inventoryRead: true)

    /// ST ST25DV64K: 2048 × 4-byte blocks; blocks above 255 only through the extended commands; Write
    /// Multiple Blocks of at most 4 blocks; typical 5 ms programming per block.
    public static let st25dv64k = ChipProfile(
        id: "st25dv64k", model: .st25dv64k, manufacturer: .stMicroelectronics, uidByte5: 0x26, uidByte4Bits: 0,
        blockCount: 2048, blockSize: 4, icReference: 0x26, systemInfo: .all,
        supportsExtendedCommands: true, requiresProtocolExtension: false,
        maxBlocksPerRead: 256, maxBlocksPerWrite: 4, writeRequiresOption: false,
        programmingTimePerBlock: .microseconds(5000),
        unsupportedCommandError: .commandNotSupported, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "2048 × 4 bytes (end address 0x7FF), IC reference 0x26: ST25DV datasheet via docs/reference/iso15693.md Part 2 §2.1",
            "Extended commands 0x30–0x34, 0x3B, 0x3C for blocks > 255: RFAL rfal_st25xv / docs/reference/iso15693.md Part 2 §2.2",
            "Write Multiple Blocks ≤ 4 blocks; 'From RF: typical 5 ms for 1 block': ST25DV datasheet, ST forum (docs/reference/iso15693.md Part 2 §2.1)",
            "Read Multiple: 8-bit count, ≤ 256 blocks (docs/reference/iso15693.md Part 2 §2.1)",
            "Fast reads 0xC0/0xC3/0xC4/0xC5 at 53 kbit/s: ST25DV datasheet feature list, RFAL rfal_st25xv.c (issue 14 research notes)",
            "Areas (ENDAi, RFAiSS), READ CONFIGURATION, PRESENT PASSWORD and the errors 0x0F/0x10/0x12/0x15: ST25DV data sheets DocID027603 Rev 4 and DS13519 Rev 2 (docs/reference/tag-passwords.md)",
        ], fastReads: true, stAreas: true)

    /// ST ST25TV02KC: 80 × 4-byte blocks, IC reference 0x08; its TruST25 originality signature in user memory (key
    /// id `K04S` in block 0x3F, the signature as 64 ASCII hex digits in blocks 0x40–0x4F), which an image carries in
    /// its blocks.
    public static let st25tv02kc = ChipProfile(
        id: "st25tv02kc", model: .st25tv02kc, manufacturer: .stMicroelectronics, uidByte5: 0x08, uidByte4Bits: 0,
        blockCount: 80, blockSize: 4, icReference: 0x08, systemInfo: .all,
        supportsExtendedCommands: false, requiresProtocolExtension: false,
        maxBlocksPerRead: 80, maxBlocksPerWrite: nil, writeRequiresOption: false,
        programmingTimePerBlock: .microseconds(5000),
        unsupportedCommandError: .commandNotSupported, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "2560 bits of user memory (ST25TV02KC), 512 (ST25TV512C): ST data sheet DS13304 Rev 3, block diagram note 2",
            "last block 0x4F (80 blocks; 0x0F, 16 blocks, for the 512C), IC reference 0x08 checked with UID byte 5 = 0x08: ST's st25tags library (st25tvc.h: ST25TAGS_TVC_PRODUCT_CODE 0x08, TV02KC_END_MEM 0x4F, TV512C_END_MEM 0x0F); 4-byte blocks derived (2560 / 80)",
            "TruST25 signature in blocks 0x3F-0x4F: Proxmark3 cmdhf15.c StCheckSig (docs/reference/originality-signatures.md)",
            "Read Multiple up to the end of memory, no Write Multiple Blocks, 5 ms programming per block: assumptions (no source read gives them)",
        ])

    /// TI Tag-it HF-I Plus: 64 × 4-byte blocks; writes and locks need the Option flag (the tag waits for
    /// the reader's EOF).
    public static let tagitHFIPlus = ChipProfile(
        id: "tagit-hfi-plus", model: .tagitHFIPlus, manufacturer: .texasInstruments, uidByte5: 0x80, uidByte4Bits: 0,
        blockCount: 64, blockSize: 4, icReference: nil,
        systemInfo: SystemInfoFields(dsfid: true, afi: true, memorySize: true, icReference: false),
        supportsExtendedCommands: false, requiresProtocolExtension: false,
        maxBlocksPerRead: 64, maxBlocksPerWrite: 2, writeRequiresOption: true,
        programmingTimePerBlock: .microseconds(10_000),
        unsupportedCommandError: nil, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "64 × 4 bytes (2048 bit), UID E0 07 80 (chip): pm3 uidmapping (docs/reference/iso15693.md Part 2 §2.1)",
            "Writes need Option = 1 and an EOF: pm3 ('-o needed for TI'), FEIG WR-OPTION tables, Linux trf7970a (docs/reference/iso15693.md Part 2 §1.4)",
            "Programming time ≥ 10 ms: TI scbu011 as quoted by the Linux trf7970a driver (docs/reference/iso15693.md Part 2 §1.4)",
            "No IC reference in Get System Information, 2-block writes, silence on unknown commands: assumptions (no TI datasheet retrieved)",
        ])

    /// TI Tag-it HF-I Standard: 8 user blocks × 4 bytes, no Get System Information (a reader must probe).
    public static let tagitHFIStandard = ChipProfile(
        id: "tagit-hfi-standard", model: .tagitHFIStandard, manufacturer: .texasInstruments, uidByte5: 0xC0,
        uidByte4Bits: 0,
        blockCount: 8, blockSize: 4, icReference: nil, systemInfo: nil,
        supportsExtendedCommands: false, requiresProtocolExtension: false,
        maxBlocksPerRead: 1, maxBlocksPerWrite: nil, writeRequiresOption: true,
        programmingTimePerBlock: .microseconds(10_000),
        unsupportedCommandError: nil, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "11 blocks, user 0–7 (8 × 4 B), no 0x2B: FEIG tables (docs/reference/iso15693.md Part 2 §2.1)",
            "Only Read/Write Single Block and Lock Block, no Read Multiple Blocks (silent): AOSP rw_i93.cc rw_i93_get_product_version; FEIG MR200 manual §7.1.15 reads them 'Single Read'",
            "UID bits 47–41 = 1100 000 → byte 5 0xC0/0xC1: FEIG/pm3 (docs/reference/iso15693.md Part 2 §2.1)",
            "WR-OPTION = 1: FEIG (docs/reference/iso15693.md Part 2 §2.1)",
        ])

    /// TI RF430FRL152H sensor transponder: 243 × 8-byte FRAM blocks (Get System Information's memory size `F2 07`,
    /// the bytes TI's own reader tests for); memory size only (info flags 0x04, no IC reference); Read and Write
    /// Multiple Blocks of at most 24 bytes (3 blocks).
    public static let rf430frl152h = ChipProfile(
        id: "rf430frl152h", model: .rf430frl15xh, manufacturer: .texasInstruments, uidByte5: 0xA2, uidByte4Bits: 0,
        blockCount: 243, blockSize: 8, icReference: nil,
        systemInfo: SystemInfoFields(dsfid: false, afi: false, memorySize: true, icReference: false),
        supportsExtendedCommands: false, requiresProtocolExtension: false,
        maxBlocksPerRead: 3, maxBlocksPerWrite: 3, writeRequiresOption: false,
        programmingTimePerBlock: .zero,
        unsupportedCommandError: .commandNotSupported, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "243 × 8 bytes: TI's reader identifies the RF430FRL15xH by the raw memory size F2 07 (SLOA233 §4.3, nfc_app.c:314-321); info flags 0x04 only (SLOA233 §4.3); UID E0 07 A2 from a measured chip (docs/reference/sensor-tags.md)",
            "Read/Write Multiple Blocks limited to 24 bytes (3 blocks): TI on TI E2E thread 424601 (docs/reference/sensor-tags.md)",
            "The answer to a longer Read Multiple: error 0x0F here; a user saw 01 02 in 4-byte mode, the 8-byte answer is UNVERIFIED",
            "Block 0 = start and status, block 2 = ADC configuration, block 9 = the sampled ADC values: SLOA233 nfc_app.c (docs/reference/sensor-tags.md)",
            "FRAM writes: no datasheet figure; modelled with no programming time beyond t1",
        ])

    /// Fujitsu MB89R118: 256 × 8-byte FRAM blocks (block 0xF8 exists); Write Multiple ≤ 2 blocks.
    public static let mb89r118 = ChipProfile(
        id: "mb89r118", model: .mb89r118, manufacturer: .fujitsu, uidByte5: 0x01, uidByte4Bits: 0,
        blockCount: 256, blockSize: 8, icReference: nil,
        systemInfo: SystemInfoFields(dsfid: true, afi: true, memorySize: true, icReference: false),
        supportsExtendedCommands: false, requiresProtocolExtension: false,
        maxBlocksPerRead: 32, maxBlocksPerWrite: 2, writeRequiresOption: false,
        programmingTimePerBlock: .zero,
        unsupportedCommandError: .commandNotSupported, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "256 × 8 bytes = 2 KB, user 0–249; UID byte 5 = 0x01: FEIG tables (docs/reference/iso15693.md Part 2 §2.1)",
            "Write Multiple ≤ 2 blocks; WR-OPTION 0 or 1; FRAM: FEIG tables (docs/reference/iso15693.md Part 2 §2.1)",
            "Standard Read Multiple 'limited' (FEIG); 32 blocks per read is an assumption",
        ])

    /// ST M24LR64-R: 2048 × 4-byte blocks addressed with the Protocol Extension flag and 2-byte block numbers.
    public static let m24lr64 = ChipProfile(
        id: "m24lr64", model: .m24lr64, manufacturer: .stMicroelectronics, uidByte5: 0x2C, uidByte4Bits: 0,
        blockCount: 2048, blockSize: 4, icReference: 0x2C, systemInfo: .all,
        supportsExtendedCommands: false, requiresProtocolExtension: true,
        maxBlocksPerRead: 32, maxBlocksPerWrite: nil, writeRequiresOption: false,
        programmingTimePerBlock: AirTime(ticks: 18 * 4096),
        unsupportedCommandError: .commandNotSupported, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .unknownError,
        sources: [
            "2048 × 4 bytes; 'Protocol_extension_flag should be set to 1 … if 0, the M24LR64-R answers with an error code': M24LR64-R datasheet (docs/reference/iso15693.md Part 2 §2.1)",
            "Write time 'Wt = t1nom + 18 × 302 µs': M24LR64-R / LRIS64K datasheets (docs/reference/iso15693.md Part 2 §1.7 e)",
            "IC reference / UID byte 5 0x2C: UNVERIFIED; error code 0x0F for a missing Protocol Extension flag and 32-block reads: assumptions",
            "Fast reads 0xC0/0xC3 with 2-byte block numbers and the Protocol Extension flag at 53 kbit/s: M24LR64-R datasheet, RFAL rfal_st25xv.c",
        ], fastReads: true)

    /// Fudan FM13HT160-T5T temperature logger: the 1 KB user area (0x0000–0x03FF) as 256 × 4-byte blocks; its log
    /// and registers are reached by Fudan's custom commands (`FM13Logger`).
    public static let fm13ht160 = ChipProfile(
        id: "fm13ht160", model: nil, manufacturer: ManufacturerCode(0x1D), uidByte5: 0x70, uidByte4Bits: 0,
        blockCount: 256, blockSize: 4, icReference: nil,
        systemInfo: SystemInfoFields(dsfid: true, afi: true, memorySize: true, icReference: false),
        supportsExtendedCommands: false, requiresProtocolExtension: false,
        maxBlocksPerRead: 32, maxBlocksPerWrite: nil, writeRequiresOption: false,
        programmingTimePerBlock: AirTime(ticks: 18 * 4096),
        unsupportedCommandError: .commandNotSupported, blockOutOfRangeError: .blockNotAvailable,
        protocolExtensionError: .optionNotSupported,
        sources: [
            "UID E0 1D 70, user area 0x0000–0x03FF in 4-byte units, log at 0x1000, 4864 records: Fudan FM13DT160 datasheet §1.2.1, §2.2 (docs/reference/sensor-tags.md)",
            "B1/C6/CF/C0 answers as Fudan's SDK parses them (NFCUtils.java): docs/reference/sensor-tags.md; no air capture",
            "Get System Information fields, 32-block reads, EEPROM programming time: assumptions (the SDK does not use them)",
        ])

    public static let all: [ChipProfile] = [
        icodeSLIX2, icodeSLI, st25dv64k, st25tv02kc, tagitHFIPlus, tagitHFIStandard, rf430frl152h, mb89r118, m24lr64,
        fm13ht160,
    ]

    public static func named(_ id: String) -> ChipProfile? { all.first { $0.id == id } }

    /// The profile for a tag image that names none: by IC model from the UID, else a generic ISO 15693 chip
    /// of the image's size.
    public static func infer(uid: UID, blockCount: Int, blockSize: Int, icReference: UInt8?) -> ChipProfile {
        if let model = ICModel.identify(uid: uid, icReference: icReference, blockCount: blockCount),
            let p = all.first(where: { $0.model == model && $0.blockCount == blockCount && $0.blockSize == blockSize })
        {
            return p
        }
        return generic(uid: uid, blockCount: blockCount, blockSize: blockSize, icReference: icReference)
    }

    /// A plain ISO/IEC 15693-3 chip with every optional command of the base standard.
    public static func generic(uid: UID, blockCount: Int, blockSize: Int, icReference: UInt8?) -> ChipProfile {
        ChipProfile(
            id: "generic", model: ICModel.identify(uid: uid, icReference: icReference, blockCount: blockCount),
            manufacturer: uid.manufacturer, uidByte5: uid.byte(5), uidByte4Bits: 0,
            blockCount: blockCount, blockSize: blockSize, icReference: icReference,
            systemInfo: SystemInfoFields(dsfid: true, afi: true, memorySize: true, icReference: icReference != nil),
            supportsExtendedCommands: blockCount > 256, requiresProtocolExtension: false,
            maxBlocksPerRead: min(blockCount, 256), maxBlocksPerWrite: 4, writeRequiresOption: false,
            programmingTimePerBlock: AirTime(ticks: 18 * 4096),
            unsupportedCommandError: .commandNotSupported, blockOutOfRangeError: .blockNotAvailable,
            protocolExtensionError: .optionNotSupported,
            sources: ["generic ISO/IEC 15693-3 chip built from a tag image; behaviour per the base standard"])
    }
}

extension TagImage {
    /// A blank image for a profile (all bytes zero, nothing locked).
    public static func blank(profile: ChipProfile, uid: UID) -> TagImage {
        TagImage(
            unchecked: uid, blockSize: profile.blockSize,
            blocks: Array(repeating: Array(repeating: 0, count: profile.blockSize), count: profile.blockCount),
            icReference: profile.icReference, profileID: profile.id)
    }

    /// The chip profile this image runs on.
    public var profile: ChipProfile {
        if let id = profileID, let p = ChipProfile.named(id), p.blockCount == blockCount, p.blockSize == blockSize {
            return p
        }
        return ChipProfile.infer(uid: uid, blockCount: blockCount, blockSize: blockSize, icReference: icReference)
    }
}
