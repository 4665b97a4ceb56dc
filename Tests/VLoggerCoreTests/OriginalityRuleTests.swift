import Foundation
import ISO15693
import Readers
import TagImages
import TagSimulator
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import VLoggerCore
import DriverSim

/// The `originality` rule on simulated ICODE SLIX2s (docs/reference/originality-signatures.md): a genuine chip
/// (a UID and signature from Proxmark3's `tools/recover_pk.py`) passes; a clone that copied a genuine chip's
/// signature onto its own UID, and a clone that has none, are violations; the signature is read once per UID
/// (READ SIGNATURE, 0xBD 0x04, addressed), and the verdict is kept in the store's tags table.
@Suite(.drivers) struct OriginalityRuleTests {
    static let genuine = (
        uid: "E00401082AD28E83", signature: "CAE8183CB4823C765AFDEB78C9D66C959990FD52A5820E76E1D6E025D76EAD79"
    )

    static func slix2(_ uid: String, signature: String?) throws -> SimulatedTag {
        var image = try TagImage(
            uid: UID(parsing: uid), blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 80),
            icReference: 0x01, profileID: "icode-slix2")
        image.signature = try signature.map { try Hex.parse($0) }
        return SimulatedTag(image: image, profile: .icodeSLIX2)
    }

    @Test func genuinePassesClonesAreViolationsAndTheSignatureIsReadOnce() throws {
        let field = SimulatedField()
        field.add(try Self.slix2(Self.genuine.uid, signature: Self.genuine.signature))
        // A clone with the genuine chip's signature on another UID, and one that answers no signature.
        field.add(try Self.slix2("E00401086FC2621F", signature: Self.genuine.signature))
        field.add(try Self.slix2("E004010812345678", signature: nil))
        let session = ReaderSession(reader: SimulatorReader.switchedOn(field))
        let config = try AgentConfig.parse(AgentTests.config, file: "test.toml")
        let store = try Store(path: scratchPath("originality.db"))
        let rules = """
            [[rule]]
            name = "genuine slix2"
            kind = "originality"
            expect = "genuine"
            severity = "critical"
            match.model = "SLIX2"
            """
        let agent = Agent(
            config: config, rules: try RuleSet.parse(rules, file: "rules.toml"), register: nil, session: session,
            writer: StoreWriter(store: store, batchSize: 50, flushIntervalMs: 2000),
            clock: SimulatedClock(start: 1_763_800_000_000))
        var frames: [[UInt8]] = []
        agent.session.reader.trace = { e in if e.direction == .readerToTag { frames.append(e.bytes) } }
        agent.run(cycles: 3, stop: StopSignal())
        agent.writer.commitNow()
        let violations = try store.events(kind: .violation)
        #expect(Set(violations.compactMap { $0.uid?.description }) == ["E00401086FC2621F", "E004010812345678"])
        #expect(violations.allSatisfy { $0.name == "genuine slix2" && $0.severity == .critical })
        let clone = violations.first { $0.uid?.description == "E00401086FC2621F" }
        #expect(clone?.detail == "originality: signature does not verify (a clone, or an unknown key)", "\(violations)")
        let none = violations.first { $0.uid?.description == "E004010812345678" }
        // No signature in the image: the simulated SLIX2 answers 32 zero bytes (as Flipper's emulation does), which
        // is told apart from a chip type without a signature and from one that does not verify.
        #expect(
            none?.detail == "originality: the chip answered no signature (32 zero bytes: no signature programmed)",
            "\(violations)")
        // Three tags, three cycles: one READ SIGNATURE per tag.
        let requests = frames.filter { $0.count >= 3 && $0[1] == NXPSecurity.readSignature && $0[2] == 0x04 }
        #expect(requests.count == 3, "\(requests.count) READ SIGNATURE requests")
        let stored = try store.storedTag(UID(parsing: Self.genuine.uid))?.originality
        #expect(stored == "verified (NXP key for ICODE SLIX2/DNA/3)")
        #expect(
            try store.storedTag(UID(parsing: "E00401086FC2621F"))?.originality?.hasPrefix("signature does not verify")
                == true)
    }

    /// The rule's one key: anything but "genuine" is refused with its line.
    @Test func onlyGenuineIsExpected() {
        #expect {
            try RuleSet.parse("[[rule]]\nname = \"x\"\nkind = \"originality\"\nexpect = \"clone\"\n", file: "r.toml")
        } throws: {
            "\($0)".contains("r.toml:4") && "\($0)".contains("\"genuine\" is the only value")
        }
    }

    /// GET NXP SYSTEM INFO (0xAB) of the simulated SLIX2: feature bit 8 (originality signature) set when it has one.
    @Test func nxpSystemInfoSaysWhetherThereIsASignature() throws {
        let field = SimulatedField()
        let signed = try Self.slix2(Self.genuine.uid, signature: Self.genuine.signature)
        let unsigned = try Self.slix2("E004010812345678", signature: nil)
        field.add(signed)
        field.add(unsigned)
        let session = ReaderSession(reader: SimulatorReader.switchedOn(field))
        let a = try #require(
            NXPSecurity.SystemInfo(
                try session.client.custom(signed.uid, code: NXPSecurity.getSystemInfo, manufacturer: .nxp)))
        let b = try #require(
            NXPSecurity.SystemInfo(
                try session.client.custom(unsigned.uid, code: NXPSecurity.getSystemInfo, manufacturer: .nxp)))
        #expect(a.hasSignature && !b.hasSignature)
    }
}
