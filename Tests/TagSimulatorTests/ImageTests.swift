import TagImages
import Foundation
import Testing
import ISO15693
@testable import TagSimulator

@Suite struct ImageTests {
    func sample() throws -> TagImage {
        var img = TagImage.blank(profile: .icodeSLIX2, uid: try UID(parsing: "E004010812345601"))
        img.blocks[0] = [0xE1, 0x40, 0x0A, 0x01]
        img.locked[0] = true
        img.afi = 0x07
        img.dsfidLocked = true
        return img
    }

    @Test func everyFormatRoundTrips() throws {
        let img = try sample()
        for format in TagImageFormat.allCases {
            var back = try format.decode(try format.encode(img))
            if format != .vlogger { back.profileID = img.profileID }
            #expect(back == img, "\(format)")
        }
    }

    @Test func proxmarkStoresTheUIDLeastSignificantFirst() throws {
        // pm3 fileutils.c json15_save_tag writes iso15_tag_t.uid, which holds the UID as received on air.
        let text = try TagImageFormat.proxmark3.encode(try sample())
        #expect(
            text.contains("\"uid\" : \"0156341208010" + "4E0\"") || text.contains("\"uid\": \"015634120801" + "04E0\""))
        #expect(text.contains("\"FileType\" : \"15693 v4\"") || text.contains("\"FileType\": \"15693 v4\""))
        #expect(text.contains("\"pagescount\" : \"50\"") || text.contains("\"pagescount\": \"50\""))
    }

    @Test func flipperFileFromTheirFormat() throws {
        // Keys of Flipper lib/nfc/protocols/iso15693_3 (ISO15693-3 device type), UID most-significant first.
        let text = """
            Filetype: Flipper NFC device
            Version: 4
            Device type: ISO15693-3
            UID: E0 04 03 11 22 33 44 55
            DSFID: 01
            AFI: 02
            IC Reference: 03
            Lock DSFID: true
            Lock AFI: false
            Block Count: 2
            Block Size: 04
            Data Content: 01 02 03 04 05 06 07 08
            Security Status: 00 01
            """
        let img = try TagImageFormat.flipper.decode(text)
        #expect(img.uid.description == "E004031122334455" && img.dsfid == 1 && img.afi == 2 && img.icReference == 3)
        #expect(
            img.dsfidLocked && !img.afiLocked && img.blocks == [[1, 2, 3, 4], [5, 6, 7, 8]]
                && img.locked == [false, true])
        // Updating keeps every other line (comments, SLIX keys) and changes only the tag's state.
        var changed = img
        changed.blocks[0] = [9, 9, 9, 9]
        let updated = try TagImageFormat.flipper.encode(changed, updating: text + "\nPassword EAS: 00 00 00 00\n")
        #expect(
            updated.contains("Data Content: 09 09 09 09 05 06 07 08") && updated.contains("Password EAS: 00 00 00 00"))
        #expect(throws: TagImageError.self) {
            try TagImageFormat.flipper.decode(text.replacingOccurrences(of: "Block Count: 2", with: "Block Count: 3"))
        }
        #expect(throws: TagImageError.self) {
            try TagImageFormat.flipper.decode(text.replacingOccurrences(of: "ISO15693-3", with: "NTAG216"))
        }
    }

    @Test func corruptImagesAreNamedErrors() throws {
        #expect(throws: TagImageError.self) { try TagImageFormat.vlogger.decode("{") }
        #expect(throws: TagImageError.self) {
            try TagImageFormat.vlogger.decode(
                #"{"format":"vlogger-tag-image","version":1,"uid":"E004010812345601","blockSize":4,"blocks":["0102"]}"#)
        }
        #expect(throws: TagImageError.self) {
            try TagImageFormat.vlogger.decode(
                #"{"format":"vlogger-tag-image","version":1,"uid":"E004010812345601","blockSize":4,"blocks":["01020304"],"colour":"red"}"#
            )
        }
        #expect(throws: TagImageError.self) { try TagImageFormat.proxmark3.decode(#"{"FileType":"15693","Card":{}}"#) }
    }

    @Test func fieldFolderPersistsWritesAcrossLoads() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-field-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let img = try sample()
        for format in TagImageFormat.allCases {
            let folder = try FieldFolder(url: dir)
            var i = img
            i.uid = try UID(
                parsing: "E0040108123456" + ["A1", "A2", "A3"][TagImageFormat.allCases.firstIndex(of: format)!])
            try folder.addFile(i, name: "tag-\(format.rawValue).\(format.fileExtension)", format: format)
        }
        let folder = try FieldFolder(url: dir)
        #expect(folder.field.tags.count == 3)
        folder.field.powerOn()
        for tag in folder.field.tags {
            let r = try Request(.writeSingleBlock(7, data: [0xCA, 0xFE, 0xBA, 0xBE]), addressing: .addressed(tag.uid))
                .encodeOnAir()
            _ = folder.field.transmit(r)
        }
        #expect(folder.persistError == nil)
        let again = try FieldFolder(url: dir)
        #expect(again.field.tags.allSatisfy { $0.image.blocks[7] == [0xCA, 0xFE, 0xBA, 0xBE] })
        #expect(Set(again.files.values.map(\.format)) == Set(TagImageFormat.allCases))
    }

    @Test func demoFieldLoads() throws {
        let demo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Config/demo-field")
        let folder = try FieldFolder(url: demo)
        #expect(folder.field.tags.count >= 8)
        // Block 0xF8 exists on the MB89R118 (256 × 8 bytes, FEIG tables).
        let mb = try #require(folder.field.tag(try UID(parsing: "E008010000004212")))
        #expect(mb.profile.id == "mb89r118" && mb.image.blocks[0xF8].count == 8)
        // The Proxmark3 and Flipper files map to their chip profiles by UID.
        #expect(folder.field.tag(try UID(parsing: "E007800000007777"))?.profile.id == "tagit-hfi-plus")
        for p in ChipProfile.all { #expect(!p.sources.isEmpty, "\(p.id) names its sources") }
    }
}

/// The reproducers of the hostile-input pass that trapped (arithmetic overflow, a negative index): each is
/// a TagImageError now. Files like these are what `vlogger restore` reads for hardware readers too.
@Suite struct HostileImageTests {
    @Test func hugeAndNegativeNumbersInImagesAreErrors() {
        let flipper = """
            Filetype: Flipper NFC device
            Version: 4
            Device type: ISO15693-3
            UID: E0 04 03 11 22 33 44 55
            Block Count: 4611686018427387904
            Block Size: 04
            Data Content: 01 02 03 04
            """
        #expect { try TagImageFormat.flipper.decode(flipper) } throws: { "\($0)".contains("1…65536") }
        let project = """
            {"format": "vlogger-tag-image", "version": 1, "uid": "E008010000004212", "blockSize": 4,
             "blocks": ["00000000"], "lockedBlocks": ["0xFFFFFFFFFFFFFFFF"]}
            """
        #expect(throws: TagImageError.self) { try TagImageFormat.vlogger.decode(project) }
    }

    @Test func scenarioTimesBlocksAndBytesOutOfRangeAreErrors() throws {
        func scenario(_ step: String = "", _ signal: String = "") -> String {
            """
            { "vlogger-scenario": 1, "steps": [\(step)], "signals": [\(signal)] }
            """
        }
        let bad = [
            scenario(#"{ "at": 1e300, "do": "leave", "uid": "E008010000004212" }"#),
            scenario(#"{ "at": "1e300s", "do": "leave", "uid": "E008010000004212" }"#),
            scenario("", #"{ "uid": "E008010000004212", "block": 248, "byte": -1, "type": "u8" }"#),
            scenario("", #"{ "uid": "E008010000004212", "block": 9223372036854775807, "type": "u8" }"#),
            scenario("", #"{ "uid": "E008010000004212", "block": 248, "type": "u8", "period": -5 }"#),
        ]
        for text in bad {
            #expect(throws: TagImageError.self, "\(text)") { try Scenario.decode(text) }
        }
        // A signal past the end of a real tag writes nothing and traps nothing.
        let tag = SimulatedTag(
            image: try TagImage(uid: UID(manufacturer: .nxp, serial: 1), blockSize: 4, blocks: [[0, 0, 0, 0]]))
        tag.sense(block: 0, byte: 3, bytes: [1, 2, 3])
        tag.sense(block: Int.max, byte: Int.max, bytes: [9])
        #expect(tag.image.blocks == [[0, 0, 0, 1]])
    }
}

/// Real public files (Tests/Fixtures/public/SOURCES.md) nobody here wrote.
@Suite struct PublicFileTests {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/public")

    @Test func flipperSLIXUnitTestDumpsLoad() throws {
        for name in [
            "unleashed_unit_test_Slix_cap_default.nfc", "unleashed_unit_test_Slix_cap_accept_all_pass.nfc",
            "unleashed_unit_test_Slix_cap_missed.nfc",
        ] {
            let text = try String(contentsOf: Self.dir.appendingPathComponent(name), encoding: .utf8)
            #expect(TagImageFormat.detect(fileName: name, text: text) == .flipper)
            let image = try TagImageFormat.flipper.decode(text)
            // What the file says: UID E0 04 01 08 49 D0 DC 81, DSFID 01, AFI 3D, both locked, 80 blocks of 4 bytes
            // starting 03 0A 82 ED and ending E5 FF 00 01, none locked.
            #expect(image.uid.description == "E004010849D0DC81", "\(name)")
            #expect(image.dsfid == 0x01 && image.afi == 0x3D && image.dsfidLocked && image.afiLocked, "\(name)")
            #expect(
                image.blockCount == 80 && image.blockSize == 4 && image.blocks[0] == [0x03, 0x0A, 0x82, 0xED]
                    && image.blocks[79] == [0xE5, 0xFF, 0x00, 0x01])
            #expect(!image.locked.contains(true))
        }
    }

    @Test func proxmark3TraceOfAnInventoryDecodes() throws {
        // Proxmark3's trace records: timestamp (4 bytes LE), duration (2), length (2; bit 15 = from the tag),
        // the frame, then one parity byte per 8 frame bytes.
        let bytes = [UInt8](try Data(contentsOf: Self.dir.appendingPathComponent("hf_15_reader.trace")))
        var frames: [(fromTag: Bool, frame: [UInt8])] = []
        var i = 0
        while i + 8 <= bytes.count {
            let len = Int(bytes[i + 6]) | Int(bytes[i + 7] & 0x7F) << 8
            guard i + 8 + len <= bytes.count else { break }
            frames.append((bytes[i + 7] & 0x80 != 0, Array(bytes[(i + 8)..<(i + 8 + len)])))
            i += 8 + len + (len + 7) / 8
        }
        #expect(frames.count == 2 && i == bytes.count)
        let request = try Request.decode(try CRC16.strip(frames[0].frame))
        #expect(
            !frames[0].fromTag && request.command == .inventory(afi: nil, mask: .none) && request.inventorySlots == 1)
        let answer = try Response.decode(try CRC16.strip(frames[1].frame), to: request)
        guard case let .inventory(dsfid, uid) = answer.body else { Issue.record("not an inventory answer"); return }
        #expect(
            frames[1].fromTag && dsfid == 0x01 && uid.description == "E00780983E796083"
                && uid.manufacturer == .texasInstruments)
    }
}

/// Flipper `.nfc` writing and reading against the real SLIX dump (Tests/Fixtures/public) and Flipper's own
/// loader rules (iso15693_3.c, slix.c in Flipper's firmware: first occurrence of a key; legacy layout without
/// the Lock DSFID/AFI keys and N + 1 Security Status bytes, b0 DSFID lock, b1 AFI lock; SLIX type by UID).
@Suite struct FlipperFormatTests {
    static func real() throws -> String {
        try String(
            contentsOf: PublicFileTests.dir.appendingPathComponent("unleashed_unit_test_Slix_cap_default.nfc"),
            encoding: .utf8)
    }

    @Test func aCRLFFileIsRewrittenInPlaceWithItsLineEnds() throws {
        let crlf = try Self.real().replacingOccurrences(of: "\n", with: "\r\n")  // the real dump with CRLF line ends
        var image = try TagImageFormat.flipper.decode(crlf)
        let lf = try TagImageFormat.flipper.decode(try Self.real())
        #expect(image == lf)
        image.blocks[1] = [0xDE, 0xAD, 0xBE, 0xEF]
        let written = try TagImageFormat.flipper.encode(image, updating: crlf)
        // One set of keys, every line ending in CRLF, and Flipper's first-occurrence reading sees the new data.
        #expect(written.components(separatedBy: "Data Content:").count == 2)
        #expect(!written.replacingOccurrences(of: "\r\n", with: "").contains("\n") && written.hasSuffix("\r\n"))
        #expect(try TagImageFormat.flipper.decode(written).blocks[1] == [0xDE, 0xAD, 0xBE, 0xEF])
        // Every other line is kept: SLIX device type, passwords, capabilities.
        let keep = crlf.components(separatedBy: "\r\n").filter { !$0.hasPrefix("Data Content:") }
        let now = written.components(separatedBy: "\r\n").filter { !$0.hasPrefix("Data Content:") }
        #expect(keep == now)
    }

    @Test func theLegacySecurityLayoutGivesTheDSFIDAndAFILocks() throws {
        // The real dump turned into Flipper's legacy layout: no Lock DSFID / Lock AFI keys, and a first Security
        // Status byte 03 (DSFID and AFI locked) before the 80 block bytes, block 0 locked.
        var lines = try Self.real().components(separatedBy: "\n").filter {
            !$0.hasPrefix("Lock DSFID:") && !$0.hasPrefix("Lock AFI:")
        }
        let i = try #require(lines.firstIndex { $0.hasPrefix("Security Status:") })
        lines[i] = "Security Status: 03 01" + String(repeating: " 00", count: 79)
        let image = try TagImageFormat.flipper.decode(lines.joined(separator: "\n"))
        #expect(image.dsfidLocked && image.afiLocked && image.locked[0] && image.locked.filter { $0 }.count == 1)
        lines[i] = "Security Status: 00 01" + String(repeating: " 00", count: 79)
        let open = try TagImageFormat.flipper.decode(lines.joined(separator: "\n"))
        #expect(!open.dsfidLocked && !open.afiLocked && open.locked[0])
        // Written back, the file takes the current layout: lock keys, one status byte a block.
        let back = try TagImageFormat.flipper.encode(image, updating: lines.joined(separator: "\n"))
        let reread = try TagImageFormat.flipper.decode(back)
        #expect(back.contains("Lock DSFID: true") && back.contains("Lock AFI: true") && reread == image)
        // Flipper reads its keys in order, each searched forward from the last: the added lock keys go before
        // Block Count, not at the end of the file.
        let keys = back.components(separatedBy: "\n").compactMap { $0.split(separator: ":").first.map(String.init) }
        let order = [
            "DSFID", "AFI", "IC Reference", "Lock DSFID", "Lock AFI", "Block Count", "Block Size", "Data Content",
            "Security Status",
        ]
        #expect(
            order.compactMap { keys.firstIndex(of: $0) } == order.compactMap { keys.firstIndex(of: $0) }.sorted(),
            "\(keys)")
        lines[i] = "Security Status: 00 01"
        #expect(throws: TagImageError.self) { try TagImageFormat.flipper.decode(lines.joined(separator: "\n")) }
    }

    @Test func aNewExportOfASLIXTagIsASLIXAndWritesOnlyWhatIsKnown() throws {
        let image = try TagImageFormat.flipper.decode(try Self.real())
        let fresh = try TagImageFormat.flipper.encode(image)
        let loaded = try TagImageFormat.flipper.decode(fresh)
        #expect(fresh.contains("Device type: SLIX\n") && fresh.contains("IC Reference: 01") && loaded == image)
        // A file without DSFID, AFI and IC Reference keys is written back without them.
        let bare = try Self.real().components(separatedBy: "\n").filter {
            !$0.hasPrefix("DSFID:") && !$0.hasPrefix("AFI:") && !$0.hasPrefix("IC Reference:")
        }
        let partial = try TagImageFormat.flipper.decode(bare.joined(separator: "\n"))
        #expect(!partial.dsfidKnown && !partial.afiKnown && partial.icReference == nil)
        let out = try TagImageFormat.flipper.encode(partial)
        #expect(!out.contains("DSFID:") || out.contains("Lock DSFID:"))
        #expect(!out.contains("\nDSFID:") && !out.contains("\nAFI:") && !out.contains("IC Reference:"), "\(out)")
        // A TI tag is no SLIX.
        let ti = TagImage.blank(profile: .tagitHFIPlus, uid: ChipProfile.tagitHFIPlus.makeUID(serial: 7))
        #expect(try TagImageFormat.flipper.encode(ti).contains("Device type: ISO15693-3\n"))
    }

    /// Issue 53: Flipper's SLIX files keep every key through vlogger (flipperzero-firmware slix.c at 217bfac2,
    /// docs/reference/flipper-slix.md): the three unit-test files Flipper ships load and are written back byte for
    /// byte (the fresh writer writes Flipper's own comments and order), their SLIX values kept.
    @Test func flipperSLIXFilesComeBackByteForByte() throws {
        for name in [
            "unleashed_unit_test_Slix_cap_default.nfc", "unleashed_unit_test_Slix_cap_accept_all_pass.nfc",
            "unleashed_unit_test_Slix_cap_missed.nfc",
        ] {
            let text = try String(contentsOf: PublicFileTests.dir.appendingPathComponent(name), encoding: .utf8)
            let image = try TagImageFormat.flipper.decode(text)
            let written = try TagImageFormat.flipper.encode(image)
            #expect(written == text, "\(name):\n\(written)")
            // What the file says (Slix_cap_default.nfc): passwords read and write 00 00 00 00, privacy and destroy
            // 0F 0F 0F 0F, EAS 00 00 00 00; the signature A6 25 … 7E 3D; privacy off; pointer 0x32, condition 0x02
            // (the low page's writes guarded by the write password); EAS and PPL locked.
            #expect(image.nxpPasswords[0x01] == [0, 0, 0, 0] && image.nxpPasswords[0x04] == [0x0F, 0x0F, 0x0F, 0x0F])
            #expect(image.nxpPasswords[0x08] == [0x0F, 0x0F, 0x0F, 0x0F] && image.nxpPasswords[0x10] == [0, 0, 0, 0])
            #expect(image.signature?.prefix(4) == [0xA6, 0x25, 0x54, 0x03] && image.signature?.last == 0x3D)
            #expect(!image.privacy && image.protectionPointer == 0x32 && image.protectionCondition == 0x02)
            #expect(image.easLocked == true && image.protectionLocked == true)
            #expect(
                image.slixCapabilities
                    == (name.contains("accept_all") ? "AcceptAllPasswords" : name.contains("missed") ? nil : "Default"))
            // Through the project's JSON and back: the same image.
            #expect(try TagImageFormat.vlogger.decode(TagImageFormat.vlogger.encode(image)) == image)
        }
    }

    @Test func aMalformedSLIXValueIsNamed() throws {
        let real = try Self.real()
        for (line, replacement, expected) in [
            ("Password Read: 00 00 00 00", "Password Read: 00 00", "'Password Read' has 2 bytes"),
            ("Privacy Mode: false", "Privacy Mode: maybe", "'Privacy Mode' is 'maybe'; it must be true or false"),
            ("Capabilities: Default", "Capabilities: Everything", "'Capabilities' is 'Everything'"),
            ("Protection Pointer: 32", "Protection Pointer: 3G", "Protection Pointer"),
            ("Lock EAS: true", "Lock EAS: 1", "'Lock EAS' is '1'"),
        ] {
            #expect(real.contains(line))
            do {
                _ = try TagImageFormat.flipper.decode(real.replacingOccurrences(of: line, with: replacement))
                Issue.record("\(replacement) was accepted")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
    }

    /// Each SLIX type keeps the keys Flipper's feature table gives it (slix.c `slix_type_features`): a SLIX-L has no
    /// read or write password, signature or page protection, so Flipper ignores such keys, and so does vlogger; a new
    /// file writes the type's keys in Flipper's order.
    @Test func eachSLIXTypeKeepsItsOwnKeys() throws {
        let slixL = try Self.real().replacingOccurrences(
            of: "UID: E0 04 01 08 49 D0 DC 81", with: "UID: E0 04 03 50 16 EA B6 29")
        let image = try TagImageFormat.flipper.decode(slixL)
        #expect(image.signature == nil && image.protectionPointer == nil && image.protectionLocked == nil)
        #expect(image.nxpPasswords.keys.sorted() == [0x04, 0x08, 0x10] && image.easLocked == true)
        let out = try TagImageFormat.flipper.encode(image)
        let keys = out.components(separatedBy: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ":").first.map(String.init)
        }
        let slixKeys = Array(keys.drop { $0 != "Capabilities" })
        #expect(
            slixKeys == [
                "Capabilities", "Password Privacy", "Password Destroy", "Password EAS", "Privacy Mode", "Lock EAS",
            ], "\(slixKeys)")
    }

    /// Flipper's own reader saves every ICODE type 02/03 as a SLIX (SLIX-S, SLIX-L), the SLIX bit set or not,
    /// and type 01 as a SLIX only with the SLIX or SLIX2 indicator (flipperzero-firmware
    /// lib/nfc/protocols/slix/slix.c `slix_get_type`, lines 331–355): an export follows the same rule, so
    /// Flipper loads it as it would have saved it.
    @Test func theFlipperDeviceTypeFollowsFlippersRule() throws {
        for (uid, type) in [
            ("E004020012345678", "SLIX"),  // ICODE SLI-S (SLIX bit clear): Flipper's SLIX-S
            ("E004030012345678", "SLIX"),  // ICODE SLI-L: Flipper's SLIX-L
            ("E004021012345678", "SLIX"), ("E004031012345678", "SLIX"),  // SLIX-S, SLIX-L
            ("E004011012345678", "SLIX"), ("E004010812345678", "SLIX"),  // SLIX (0b10), SLIX2 (0b01)
            ("E004010012345678", "ISO15693-3"),  // ICODE SLI: indicator 0b00
            ("E004011812345678", "ISO15693-3"),  // ICODE DNA: indicator 0b11
            ("E002260012345678", "ISO15693-3"),  // not NXP
        ] {
            let image = TagImage.blank(profile: .icodeSLIX2, uid: try UID(parsing: uid))
            #expect(try TagImageFormat.flipper.encode(image).contains("Device type: \(type)\n"), "\(uid)")
        }
    }
}

/// Proxmark3 dumps as upstream writes and loads them: "15693 v4", `ISO15693_TAG_MAX_PAGES` 160 and
/// `ISO15693_TAG_MAX_SIZE` 2048 (include/iso15.h, client/src/fileutils.c), UID least-significant byte first.
@Suite struct Proxmark3FormatTests {
    @Test func onlyWhatUpstreamCanLoadIsWritten() throws {
        let slix2 = TagImage.blank(profile: .icodeSLIX2, uid: try UID(parsing: "E004010849D0DC81"))
        let text = try TagImageFormat.proxmark3.encode(slix2)
        #expect(
            text.contains("\"FileType\" : \"15693 v4\"") && text.contains("\"pagescount\" : \"50\"")
                && text.contains("\"uid\" : \"81DCD049080104E0\""))
        let back = try TagImageFormat.proxmark3.decode(text)
        #expect(
            back.uid == slix2.uid && back.blocks == slix2.blocks && back.locked == slix2.locked
                && back.icReference == slix2.icReference)
        // An ST25DV64K (2048 blocks) and 161 blocks of 4 bytes are refused with the limit named; 256 × 8 = 2048 bytes
        // but 256 pages is past 160 too.
        for (profile, uid) in [(ChipProfile.st25dv64k, "E002260000C0FFEE")] {
            let big = TagImage.blank(profile: profile, uid: try UID(parsing: uid))
            #expect(throws: TagImageError.self) { try TagImageFormat.proxmark3.encode(big) }
        }
        let p161 = try TagImage(
            uid: try UID(parsing: "E004010849D0DC81"), blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 161))
        do { _ = try TagImageFormat.proxmark3.encode(p161); Issue.record("161 pages written") } catch {
            #expect("\(error)".contains("at most 160 pages and 2048 bytes"))
        }
        let p160 = try TagImage(
            uid: try UID(parsing: "E004010849D0DC81"), blockSize: 4, blocks: Array(repeating: [1, 2, 3, 4], count: 160))
        #expect(try TagImageFormat.proxmark3.encode(p160).contains("\"pagescount\" : \"A0\""))
    }
}

/// Proxmark3's dumps of 2020–2024 ("15693", "15693 v2", "15693 v3"), which its current client still loads for
/// `hf 15 restore`, `eload` and `view` (docs/reference/proxmark3-dumps.md). Each file here is built as that
/// version's writer builds it: `raw` for "15693" (commit 5ceb83673, client/fileutils.c lines 377–381),
/// `blocks.N` of 4 or 8 bytes for v2 and v3 (commit fb23d2047, client/src/fileutils.c lines 483–500).
@Suite struct Proxmark3LegacyDumpTests {
    static let memory: [UInt8] = [0xE1, 0x40, 0x10, 0x01, 0x03, 0x0B, 0xD1, 0x01, 0x07, 0x54, 0x02, 0x68]

    @Test func theFirstFormatIsOneHexStringOf4ByteBlocks() throws {
        let text = #"{"Created": "proxmark3", "FileType": "15693", "raw": "E1401001030BD1010754026800000000"}"#
        let image = try TagImageFormat.proxmark3.decode(text, fileName: "/tmp/hf-15-E004010812345678-dump.json")
        #expect(image.blockSize == 4 && image.blockCount == 4)
        #expect(image.blocks.flatMap { $0 }.prefix(12) == Self.memory[...])
        // The UID from Proxmark3's default file name (most significant byte first); nothing else is known.
        #expect(image.uid.description == "E004010812345678" && image.dsfid == 0 && image.locked.allSatisfy { !$0 })
        // Without such a name the UID is Proxmark3's own placeholder, E0 and zeros (fileutils.c line 1994).
        #expect(try TagImageFormat.proxmark3.decode(text).uid.description == "E000000000000000")
        // Half blocks and more than 2048 bytes are refused, with the reason.
        #expect(throws: TagImageError.self) {
            try TagImageFormat.proxmark3.decode(#"{"FileType": "15693", "raw": "E14010"}"#)
        }
        let huge = String(repeating: "00", count: 2052)
        #expect(throws: TagImageError.self) {
            try TagImageFormat.proxmark3.decode("{\"FileType\": \"15693\", \"raw\": \"\(huge)\"}")
        }
    }

    @Test func versionsTwoAndThreeHaveBlocksOfFourAndEightBytes() throws {
        let v2 = """
            {"Created": "proxmark3", "FileType": "15693 v2",
             "blocks": {"0": "E1401001", "1": "030BD101", "2": "07540268", "3": "0000"}}
            """
        let image = try TagImageFormat.proxmark3.decode(v2)
        #expect(image.blockSize == 4 && image.blockCount == 4)
        #expect(image.blocks[0...2].flatMap { $0 } == Self.memory)
        // A shorter block is padded with zeros, as Proxmark3's loader does (fileutils.c lines 2050–2057).
        #expect(image.blocks[3] == [0, 0, 0, 0])
        // 256 blocks of 8 bytes (an MB89R118, 2048 bytes): Proxmark3 wrote such v3 files; vlogger reads them.
        var blocks: [String] = []
        for i in 0..<256 { blocks.append("\"\(i)\": \"\(String(format: "%016X", i))\"") }
        let v3 = "{\"FileType\": \"15693 v3\", \"blocks\": {\(blocks.joined(separator: ", "))}}"
        let big = try TagImageFormat.proxmark3.decode(v3, fileName: "hf-15-E008010000004212-dump-1.json")
        #expect(big.blockSize == 8 && big.blockCount == 256 && big.blocks[255] == [0, 0, 0, 0, 0, 0, 0, 0xFF])
        #expect(big.uid.description == "E008010000004212")
        // Blocks stop at the first missing key; a block longer than the version's size is refused.
        let gap = try TagImageFormat.proxmark3.decode(
            #"{"FileType": "15693 v2", "blocks": {"0": "01020304", "2": "05060708"}}"#)
        #expect(gap.blockCount == 1)
        #expect(throws: TagImageError.self) {
            try TagImageFormat.proxmark3.decode(#"{"FileType": "15693 v2", "blocks": {"0": "0102030405"}}"#)
        }
        #expect(throws: TagImageError.self) {
            try TagImageFormat.proxmark3.decode(#"{"FileType": "15693 v3", "blocks": {}}"#)
        }
        // Other file types are still refused, and the message names those that are read.
        #expect {
            try TagImageFormat.proxmark3.decode(#"{"FileType": "mfcard", "blocks": {}}"#)
        } throws: { "\($0)".contains("15693 v2") }
    }
}
