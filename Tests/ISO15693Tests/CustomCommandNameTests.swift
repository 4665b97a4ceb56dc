import Testing

@testable import ISO15693

/// Every command Proxmark3's trace annotation names (`annotateIso15693` in `client/src/cmdhflist.c`, codes from
/// `include/protocols.h`: 15 ISO commands and 24 NXP custom commands, 39 in all) is named by `decode` as the same
/// command: one request frame per code, addressed, CRC appended, decoded by `Request.decode`. Proxmark3 names NXP's
/// codes whatever the manufacturer byte; here they are sent with NXP's (0x04), as a tag answers them.
@Suite struct CustomCommandNameTests {
    static let uid: [UInt8] = [0xEE, 0x5F, 0x9B, 0x00, 0x18, 0x01, 0x04, 0xE0]

    /// (code, parameters after the UID, Proxmark3's name, ours). Ours is Proxmark3's in words where they agree; where
    /// they differ the NXP data sheets' own name is ours (SL2S2602 SLIX2, SL2S5302 SLIX-L command tables).
    static let cases: [(UInt8, [UInt8], String, String)] = [
        (0x02, [], "STAY_QUIET", "Stay Quiet"),
        (0x20, [0x05], "READBLOCK", "Read Single Block"),
        (0x21, [0x05, 1, 2, 3, 4], "WRITEBLOCK", "Write Single Block"),
        (0x22, [0x05], "LOCKBLOCK", "Lock Block"),
        (0x23, [0x00, 0x03], "READ_MULTI_BLOCK", "Read Multiple Blocks"),
        (0x24, [0x00, 0x00, 1, 2, 3, 4], "WRITE_MULTI_BLOCK", "Write Multiple Blocks"),
        (0x25, [], "SELECT", "Select"),
        (0x26, [], "RESET_TO_READY", "Reset to Ready"),
        (0x27, [0x07], "WRITE_AFI", "Write AFI"),
        (0x28, [], "LOCK_AFI", "Lock AFI"),
        (0x29, [0x07], "WRITE_DSFID", "Write DSFID"),
        (0x2A, [], "LOCK_DSFID", "Lock DSFID"),
        (0x2B, [], "GET_SYSTEM_INFO", "Get System Information"),
        (0x2C, [0x00, 0x03], "READ_MULTI_SECSTATUS", "Get Multiple Block Security Status"),
        (0xA2, [], "SET_EAS", "NXP Set EAS"),
        (0xA3, [], "RESET_EAS", "NXP Reset EAS"),
        (0xA4, [], "LOCK_EAS", "NXP Lock EAS"),
        (0xA5, [], "EAS_ALARM", "NXP EAS Alarm"),
        (0xA6, [], "PASSWORD_PROTECT_EAS", "NXP Password Protect EAS/AFI"),
        (0xA7, [0x12, 0x34], "WRITE_EAS_ID", "NXP Write EAS ID"),
        (0xA8, [], "READ_EPC", "NXP Read EPC"),
        (0xAB, [], "GET_NXP_SYSTEM_INFO", "NXP Get NXP System Info"),
        (0xB2, [], "GET_RANDOM_NUMBER", "NXP Get Random Number"),
        (0xB3, [0x02, 0x1D, 0x3B, 0x1D, 0x3B], "SET_PASSWORD", "NXP Set Password"),
        (0xB4, [0x02, 1, 2, 3, 4], "WRITE_PASSWORD", "NXP Write Password"),
        (0xB5, [0x02], "LOCK_PASSWORD", "NXP Lock Password"),
        (0xB6, [0x10, 0x22], "PROTECT_PAGE", "NXP Protect Page"),
        (0xB7, [0x10], "LOCK_PAGE_PROTECTION", "NXP Lock Page Protection Condition"),
        (0xB8, [0x00, 0x03], "GET_MULTI_BLOCK_PROTECTION", "NXP Get Multiple Block Protection Status"),
        (0xB9, [1, 2, 3, 4], "DESTROY", "NXP Destroy"),
        (0xBA, [1, 2, 3, 4], "ENABLE_PRIVACY", "NXP Enable Privacy"),
        (0xBB, [], "64BIT_PASSWORD_PROTECTION", "NXP 64-bit Password Protection"),
        (0xBC, [], "STAYQUIET_PERSISTENT", "NXP Stay Quiet Persistent"),
        (0xBD, [], "READ_SIGNATURE", "NXP Read Signature"),
    ]

    /// Proxmark3's name in words: underscores as spaces; ours without the manufacturer's prefix.
    static func words(_ s: String) -> String {
        s.replacingOccurrences(of: "_", with: " ").replacingOccurrences(of: "NXP ", with: "").uppercased()
    }

    @Test func everyCodeProxmark3NamesIsNamed() throws {
        var agreeing = 0
        for (code, parameters, pm3, ours) in Self.cases {
            let custom = code >= 0xA0
            let frame = [0x22, code] + (custom ? [0x04] : []) + Self.uid + parameters
            let request = try Request.decode(frame)
            #expect(request.summary.hasPrefix(ours + (custom ? " for manufacturer" : "")), "\(pm3): \(request.summary)")
            #expect(!request.summary.contains("Custom command"), "\(pm3): \(request.summary)")
            if Self.words(ours) == Self.words(pm3) { agreeing += 1 }
        }
        // Inventory, and the Inventory Reads, are inventory-flagged frames (no UID): named too.
        let inventory = try Request.decode([0x26, 0x01, 0x00])
        #expect(inventory.summary.hasPrefix("Inventory"))
        for (code, pm3, ours) in [
            (UInt8(0xA0), "INVENTORY_READ", "NXP Inventory Read"),
            (0xA1, "FAST_INVENTORY_READ", "NXP Fast Inventory Read"),
            (0xB0, "INVENTORY_PAGE_READ", "NXP Inventory Page Read"),
            (0xB1, "FAST_INVENTORY_PAGE_READ", "NXP Fast Inventory Page Read"),
        ] {
            // One slot, no mask, blocks (or pages) 0x10… 4 of them.
            let r = try Request.decode([0x26, code, 0x04, 0x00, 0x10, 0x03])
            let unit = code >= 0xB0 ? "page" : "block"
            #expect(r.summary.hasPrefix("\(ours) for manufacturer"), "\(pm3): \(r.summary)")
            #expect(r.summary.contains("mask 0 bits, first \(unit) 0x10, 4 \(unit)s"), "\(r.summary)")
            if Self.words(ours) == Self.words(pm3) { agreeing += 1 }
        }
        #expect(Self.cases.count + 4 + 1 == 39)
        // The names that differ in words are the data sheets' fuller names of the same commands (Read Single Block
        // for READBLOCK, Lock Page Protection Condition for LOCK_PAGE_PROTECTION, …).
        print("decode names all 39 commands Proxmark3 annotates; \(agreeing) word for word as Proxmark3")
        #expect(agreeing >= 20, "\(agreeing) of 38 agree word for word")
    }

    /// A password never appears in a decoded frame: SET PASSWORD's XORed value, WRITE PASSWORD's new one, ST's
    /// PRESENT PASSWORD.
    @Test func passwordsAreMasked() throws {
        let set = try Request.decode([0x22, 0xB3, 0x04] + Self.uid + [0x02, 0xDE, 0xAD, 0xBE, 0xEF])
        #expect(set.summary.contains("password write (0x02), XORed value **") && !set.summary.contains("DE AD"))
        let write = try Request.decode([0x22, 0xB4, 0x04] + Self.uid + [0x01, 0xDE, 0xAD, 0xBE, 0xEF])
        #expect(write.summary.contains("password read (0x01), new value **") && !write.summary.contains("DE"))
        let st = try Request.decode([0x02, 0xB3, 0x02, 0x01, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(st.summary.hasPrefix("ST Present Password") && st.summary.contains("password 1 (8 bytes) **"))
        #expect(!st.summary.contains("05 06"))
    }
}
