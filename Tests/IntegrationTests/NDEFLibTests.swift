import Foundation
import Testing

/// NDEF against an implementation nobody here wrote: Python's ndeflib (nfcpy's NDEF library, `pip install
/// ndeflib`). Messages made by vlogger are decoded by ndeflib, and messages made by ndeflib by vlogger. In CI
/// (`VLOGGER_REQUIRE_NDEFLIB=1`) a missing ndeflib is a failure; elsewhere the test says why it is skipped.
@Suite(.serialized) struct NDEFLibTests {
    typealias CLI = CLITests

    static var available: Bool { (try? ServiceTests.shell("python3 -c 'import ndef'").code) == 0 }

    func python(_ script: String, _ args: [String] = []) throws -> String {
        let r = try ServiceTests.shell("python3 -c \"$1\" \"${@:2}\"", [script] + args)
        #expect(r.code == 0, "\(r.err)")
        return r.out
    }

    @Test func bothWays() throws {
        guard Self.available else {
            #expect(
                ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_NDEFLIB"] == nil,
                "ndeflib is required here (pip install ndeflib)")
            return
        }
        let decode = """
            import sys, ndef
            for r in ndef.message_decoder(bytes.fromhex(sys.argv[1])):
                if isinstance(r, ndef.TextRecord): print('text', r.language, r.encoding, r.text)
                elif isinstance(r, ndef.SmartposterRecord): print('smartposter', r.resource.iri, r.title)
                elif isinstance(r, ndef.UriRecord): print('uri', r.iri)
                else: print('other', r.type, r.data.hex())
            """
        // vlogger → ndeflib: BCP 47 language tags with digits and variants, a URI, a Smart Poster with its URI.
        let ours = try CLI.run([
            "ndef", "encode", "--text", "Pallet 0001", "--lang", "es-419", "--text", "Grüße", "--lang", "de-CH-1901",
            "--uri", "https://example.com/p/1",
        ])
        #expect(ours.code == 0, "\(ours.err)")
        let seen = try python(decode, [ours.out.trimmingCharacters(in: .whitespacesAndNewlines)])
        // One --lang applies to every Text record (the last one given).
        #expect(
            seen == "text de-CH-1901 UTF-8 Pallet 0001\ntext de-CH-1901 UTF-8 Grüße\nuri https://example.com/p/1\n",
            "\(seen)")
        let poster = try CLI.run([
            "ndef", "encode", "--smart-poster", "--uri", "https://example.com/sp", "--text", "Shelf A3", "--lang", "en",
        ])
        let seenPoster = try python(decode, [poster.out.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(seenPoster == "smartposter https://example.com/sp Shelf A3\n", "\(seenPoster)")

        // ndeflib → vlogger.
        let encode = """
            import ndef
            recs = [ndef.TextRecord('Pallet 0001', 'es-419'), ndef.UriRecord('https://example.com/p/1'), ndef.SmartposterRecord('https://example.com/sp', title='Shelf A3')]
            print(b''.join(ndef.message_encoder(recs)).hex())
            """
        let hex = try python(encode).trimmingCharacters(in: .whitespacesAndNewlines)
        let theirs = try CLI.run(["ndef", "decode", "--json", hex])
        let obj = try JSONSerialization.jsonObject(with: Data(theirs.out.utf8)) as? [String: Any]
        let records = obj?["records"] as? [[String: Any]] ?? []
        #expect(records.count == 3, "\(theirs.out)\(theirs.err)")
        #expect(records.first?["lang"] as? String == "es-419" && records.first?["text"] as? String == "Pallet 0001")
        #expect(records.dropFirst().first?["uri"] as? String == "https://example.com/p/1")
        let inner = records.last?["records"] as? [[String: Any]] ?? []
        #expect(records.last?["kind"] as? String == "smart-poster" && records.last?["warning"] == nil)
        #expect(
            inner.contains { $0["uri"] as? String == "https://example.com/sp" }
                && inner.contains { $0["text"] as? String == "Shelf A3" })
    }
}
