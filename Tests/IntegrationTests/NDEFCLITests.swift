import Foundation
import Testing

/// `vlogger ndef …` end to end, one process per command, on a copy of the demo field. Facts: the Text
/// record `D1 01 05 54 02 65 6E 68 69` = "hi" in "en" from an M24LR04E dump (docs/reference/iso15693.md Part 3 §5.4); URI
/// prefix 0x04 = "https://" (URI RTD table, §5.4).
@Suite(.serialized) struct NDEFCLITests {
    typealias CLI = CLITests
    let slix2 = "E004010812345601"

    @Test func encodeAndDecodeWithoutATag() throws {
        let e = try CLI.run(["ndef", "encode", "--text", "hi"])
        #expect(e.code == 0 && e.out == "D101055402656E6869\n", "\(e.out)\(e.err)")
        let d = try CLI.run(["ndef", "decode", "D1 01 05 54 02 65 6E 68 69"])
        #expect(d.code == 0 && d.out.contains("1. Text (en): \"hi\""), "\(d.out)\(d.err)")
        // Records keep the order of the options; the URI loses its prefix to code 0x04.
        let two = try CLI.run(["ndef", "encode", "--uri", "https://example.com", "--text", "x", "--json"])
        let obj = try JSONSerialization.jsonObject(with: Data(two.out.utf8)) as? [String: Any]
        let kinds = (obj?["records"] as? [[String: Any]])?.compactMap { $0["kind"] as? String }
        #expect(kinds == ["uri", "text"], "\(two.out)")
        #expect(
            (obj?["hex"] as? String)?.hasPrefix("91010C55046578616D706C652E636F6D") == true,
            "MB, SR, TNF 1; 'U'; 0x04 example.com")
        // A memory image from block 0: CC, TLV, message, Terminator.
        let m = try CLI.run(["ndef", "decode", "--memory", "E1400201", "0309", "D101055402656E6869", "FE000000 00"])
        #expect(
            m.code == 0 && m.out.contains("data area 16 bytes, read-write") && m.out.contains("capacity 14 bytes")
                && m.out.contains("\"hi\""), "\(m.out)\(m.err)")
    }

    @Test func badInputIsATypedErrorWithANonZeroExit() throws {
        let cases: [([String], String)] = [
            (["ndef", "decode", "D1 01 09 54 02 65 6E"], "NDEF record"),  // payload length past the end
            (["ndef", "decode", "--memory", "0000000000000000"], "not NDEF-formatted"),
            (["ndef", "decode", "ZZ"], "hex"),
            (["ndef", "encode"], "at least one record"),
            (["ndef", "encode", "--mime", "text/plain"], "--file"),
            (["ndef", "encode", "--external", "nocolon", "--data", "01"], "domain:type"),
            (["ndef", "lock"], "--yes"),
        ]
        for (args, needle) in cases {
            let r = try CLI.run(args)
            #expect(r.code != 0 && r.err.contains(needle), "\(args): \(r.code) \(r.err)")
        }
    }

    @Test func smartPostersHaveExactlyOneURIAndLanguageTagsFollowBCP47() throws {
        // NFC Forum Smart Poster RTD: exactly one URI record. Refused when encoding …
        let none = try CLI.run(["ndef", "encode", "--smart-poster", "--text", "Pallet"])
        #expect(
            none.code != 0 && none.err.contains("a Smart Poster has exactly one URI record")
                && none.err.contains("0 given"), "\(none.err)")
        let two = try CLI.run([
            "ndef", "encode", "--smart-poster", "--uri", "https://a.example", "--uri", "https://b.example",
        ])
        #expect(two.code != 0 && two.err.contains("2 given"), "\(two.err)")
        let one = try CLI.run(["ndef", "encode", "--smart-poster", "--uri", "https://a.example", "--text", "A"])
        #expect(one.code == 0, "\(one.err)")
        // … and warned about when decoding: a Smart Poster (D1 02 'Sp') holding only a Text record "hi".
        let d = try CLI.run(["ndef", "decode", "D1 02 09 53 70 D1 01 05 54 02 65 6E 68 69"])
        #expect(d.code == 0 && d.out.contains("warning: not a valid Smart Poster: 0 URI records"), "\(d.out)\(d.err)")
        let dj = try CLI.run(["ndef", "decode", "--json", "D1 02 09 53 70 D1 01 05 54 02 65 6E 68 69"])
        #expect(dj.out.contains("\"warning\"") && dj.out.contains("0 URI records"), "\(dj.out)")
        // BCP 47 (RFC 5646) tags with digits and variants are language codes too; malformed ones are refused.
        for tag in ["es-419", "de-CH-1901", "zh-Hant-TW", "en"] {
            let r = try CLI.run(["ndef", "encode", "--text", "x", "--lang", tag, "--json"])
            #expect(r.code == 0 && r.out.contains("\"lang\" : \"\(tag)\""), "\(tag): \(r.out)\(r.err)")
        }
        for bad in [
            "1en", "en--US", "-en", "en_US", "e", "en-abcdefghi",
            String(repeating: "a", count: 8) + "-" + String(repeating: "b-", count: 30) + "c",
        ] {
            let r = try CLI.run(["ndef", "encode", "--text", "x", "--lang=\(bad)"])
            #expect(r.code != 0 && r.err.contains("BCP 47"), "\(bad): \(r.err)")
        }
    }

    @Test func writeThenReadOnTheDemoField() throws {
        let f = try CLI.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let r0 = try CLI.run(["ndef", "read", "--field", f.path, "--uid", slix2])
        #expect(
            r0.code == 0 && r0.out.contains("NDEF read-write, capacity 78 bytes")
                && r0.out.contains("Text (en): \"vlogger demo\""), "\(r0.out)\(r0.err)")

        let w = try CLI.run([
            "ndef", "write", "--field", f.path, "--uid", slix2, "--text", "Pallet 0001", "--lang", "de",
            "--uri", "https://www.example.com/p/0001",
        ])
        #expect(w.code == 0 && w.out.contains("read back and verified"), "\(w.out)\(w.err)")
        let r = try CLI.run(["ndef", "read", "--field", f.path, "--uid", slix2, "--json"])
        let obj = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any]
        let records = obj?["records"] as? [[String: Any]] ?? []
        #expect(obj?["status"] as? String == "read-write" && obj?["capacity"] as? Int == 78)
        #expect(
            records.count == 2 && records[0]["text"] as? String == "Pallet 0001"
                && records[0]["lang"] as? String == "de")
        #expect(records.count == 2 && records[1]["uri"] as? String == "https://www.example.com/p/0001")

        // Too large: refused with both sizes, the message on the tag untouched.
        let big = try CLI.run([
            "ndef", "write", "--field", f.path, "--uid", slix2, "--text", String(repeating: "x", count: 80),
        ])
        #expect(big.code != 0 && big.err.contains("is 87 bytes but this tag takes at most 78"), "\(big.err)")
        #expect(try CLI.run(["ndef", "read", "--field", f.path, "--uid", slix2]).out.contains("Pallet 0001"))
    }

    @Test func formatAndLockOnTheDemoField() throws {
        let f = try CLI.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let tagit = "E007800000007777"  // Tag-it HF-I Plus: writes need the Option flag
        let before = try CLI.run(["ndef", "read", "--field", f.path, "--uid", tagit])
        #expect(before.code != 0 && before.err.contains("not NDEF-formatted"), "\(before.err)")
        let fm = try CLI.run(["ndef", "format", "--field", f.path, "--uid", tagit])
        #expect(
            fm.code == 0 && fm.out.contains("CC E1 40 1F 11") && fm.out.contains("Special Frame"), "\(fm.out)\(fm.err)")
        #expect(try CLI.run(["ndef", "format", "--field", f.path, "--uid", tagit]).err.contains("--force"))
        let w = try CLI.run([
            "ndef", "write", "--field", f.path, "--uid", tagit, "--external", "example.com:tool", "--data", "004D",
        ])
        #expect(w.code == 0 && w.out.contains("with the Option flag"), "\(w.out)\(w.err)")
        let l = try CLI.run(["ndef", "lock", "--field", f.path, "--uid", tagit, "--yes"])
        // 64 × 4 bytes: CC + 248-byte area = 252 bytes = blocks 0x00–0x3E.
        #expect(
            l.code == 0 && l.out.contains("NDEF read-only") && l.out.contains("63 block(s) locked"), "\(l.out)\(l.err)")
        let again = try CLI.run(["ndef", "write", "--field", f.path, "--uid", tagit, "--text", "no"])
        #expect(again.code != 0 && again.err.contains("read-only"), "\(again.err)")
        let r = try CLI.run(["ndef", "read", "--field", f.path, "--uid", tagit])
        #expect(r.out.contains("External example.com:tool: 2 bytes 00 4D"), "\(r.out)")
    }
}
