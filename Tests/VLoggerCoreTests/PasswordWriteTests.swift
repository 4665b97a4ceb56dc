import Foundation
import ISO15693
import Readers
import TagImages
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import TagSimulator
@testable import VLoggerCore
import VLoggerCLI
import DriverSim

/// Queued writes to an NXP ICODE SLIX2 page that a password protects (docs/reference/tag-passwords.md): the
/// simulated chip follows the data sheet's semantics — SET PASSWORD with the password XORed with GET RANDOM
/// NUMBER's answer opens the session; a wrong one mutes the chip until its power is reset — and the agent writes
/// with the right password (done, read back), stops at once on a wrong one (one attempt, the field reset, the
/// write "rejected" until an operator retries), and refuses before trying when no password is configured. No
/// password appears in the trace, the store or the export.
@Suite(.serialized, .drivers) struct PasswordWriteTests {
    static let uid = "E004010812345699"
    static let password = "A1B2C3D4"

    struct Rig {
        let agent: Agent
        let store: Store
        let tag: SimulatedTag
        let trace: () -> [String]
        let dir: URL
    }

    /// A SLIX2 whose high page (blocks 0x10…) needs the write password, a queued write to block 0x12, and a
    /// secrets file holding `secret` (nil: no secrets file).
    static func rig(secret: String?) throws -> Rig {
        let dir = URL(fileURLWithPath: scratchPath("passwords"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var image = try TagImage(
            uid: UID(parsing: uid), blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 80), icReference: 0x01,
            profileID: "icode-slix2")
        image.nxpPasswords[NXPSecurity.writePassword] = try Hex.parse(password)
        image.protectionPointer = 0x10
        image.protectionCondition = 0x20
        let tag = SimulatedTag(image: image, profile: .icodeSLIX2)
        let field = SimulatedField()
        field.add(tag)
        var text = AgentTests.config
        if let secret {
            let file = try SecurityRig.secrets(
                "[[tag]]\nuid = \"\(uid)\"\nnxp-write = \"\(secret)\"\n",
                at: dir.appendingPathComponent("secrets.toml").path)
            text += "\n[security]\nsecrets-file = \"\(file)\"\n"
        }
        let r = try SecurityRig(
            config: text, dir: dir, field: field, store: "pw.db",
            writes: [
                QueuedWrite(
                    created: 1_763_800_000_000, uid: UID(parsing: uid), first: 0x12, data: [0xCA, 0xFE, 0xF0, 0x0D])
            ])
        return Rig(agent: r.agent, store: r.store, tag: tag, trace: r.trace, dir: dir)
    }

    /// No trace line, and no byte of the store file, holds the password, plainly or XORed with the last random number.
    static func expectNoPassword(_ r: Rig) throws {
        let plain = try Hex.parse(password)
        let xored = NXPSecurity.xor(plain, random: r.tag.random)
        for secret in [plain, xored] {
            let hex = Hex.format(secret)
            #expect(!r.trace().contains { $0.contains(hex) }, "\(hex) in the trace")
            let file = try Data(contentsOf: URL(fileURLWithPath: r.store.path))
            #expect(file.range(of: Data(secret)) == nil && file.range(of: Data(hex.utf8)) == nil)
        }
        // SET PASSWORD's line: the id, then the value and the CRC not shown.
        #expect(r.trace().contains { $0.contains("NXP Set Password") && $0.contains("XORed value **") })
        #expect(r.trace().contains { $0.contains("** (6 bytes)") })
    }

    @Test func theRightPasswordWritesAndReadsBack() throws {
        let r = try Self.rig(secret: Self.password)
        r.agent.run(cycles: 2, stop: StopSignal())
        r.agent.writer.commitNow()
        let w = try #require(try r.store.queuedWrite(1))
        #expect(w.state == .done, "\(w.result ?? "-")")
        #expect(r.tag.image.blocks[0x12] == [0xCA, 0xFE, 0xF0, 0x0D] && r.tag.passwordAttempts == 1)
        try Self.expectNoPassword(r)
        #expect(try r.store.events(kind: .writeDone).first?.name == "1")
        // Who asked, in the rows the outbox ships: the queue (docs/json.md, origin).
        let writes = try r.store.outbox(.writes, after: 0, limit: 10)
        #expect(writes.count == 1 && writes.first?.value("origin", in: .writes) == .text("queue"))
        let done = try r.store.outbox(.events, after: 0, limit: 100).filter {
            $0.value("kind", in: .events) == .text("write_done")
        }
        #expect(done.count == 1 && done.first?.value("origin", in: .events) == .text("queue"))
        print(
            "password write, trace:\n"
                + r.trace().filter { $0.contains("NXP") || $0.contains("Write Single") }.joined(separator: "\n"))
    }

    @Test func aWrongPasswordIsTriedOnceThenRejected() throws {
        let r = try Self.rig(secret: "00000000")
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        let w = try #require(try r.store.queuedWrite(1))
        #expect(
            w.state == .rejected && w.result?.contains("password rejected: the NXP write password") == true,
            "\(w.result ?? "-")")
        #expect(w.result?.contains("vlogger writes retry 1") == true)
        // One attempt in three cycles; the field was reset, so the chip answers again (it is not left mute).
        #expect(r.tag.passwordAttempts == 1 && r.tag.state != .muted)
        #expect(r.tag.image.blocks[0x12] == [0, 0, 0, 0])
        let failed = try r.store.events(kind: .writeFailed)
        #expect(failed.count == 1 && failed.first?.detail.contains("password rejected") == true)
        try Self.expectNoPassword(r)
        // A second write queued to the tag: the rejected password is not given again (the agent remembers it until
        // the secrets file changes).
        _ = try r.store.enqueue(
            QueuedWrite(created: 1_763_800_000_000, uid: UID(parsing: Self.uid), first: 0x13, data: [1, 2, 3, 4]))
        try r.agent.writeQueue?.refresh(from: r.store)
        r.agent.run(cycles: 1, stop: StopSignal())
        r.agent.writer.commitNow()
        let second = try #require(try r.store.queuedWrite(2))
        #expect(second.state == .rejected && second.result?.contains("password rejected earlier") == true)
        #expect(r.tag.passwordAttempts == 1)
        // An operator's retry queues it again.
        #expect(try r.store.retryWrite(1) && r.store.queuedWrite(1)?.state == .queued)
    }

    @Test func noPasswordConfiguredIsRefusedBeforeTheAir() throws {
        let r = try Self.rig(secret: nil)
        r.agent.run(cycles: 1, stop: StopSignal())
        r.agent.writer.commitNow()
        let w = try #require(try r.store.queuedWrite(1))
        #expect(w.state == .failed && w.result?.contains("no secrets file is configured") == true, "\(w.result ?? "-")")
        #expect(r.tag.passwordAttempts == 0 && !r.trace().contains { $0.contains("NXP Get Random Number") })
    }

    /// The secrets file: mode 0600 or stricter, UIDs, prefixes and assets; a bad value is named by its line without
    /// repeating it.
    @Test func theSecretsFileIsCheckedAndNeverShown() throws {
        let dir = URL(fileURLWithPath: scratchPath("secrets"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("s.toml").path
        try """
        [[tag]]
        uid = "E0040108*"
        nxp-write = "11111111"
        [[tag]]
        uid = "E004010812345699"
        nxp-write = "22222222"
        [[tag]]
        asset = "PAL-7"
        nxp-read = "33333333"
        """.write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)
        #expect { try TagSecrets.load(file) } throws: { "\($0)".contains("mode 644") && "\($0)".contains("chmod 600") }
        chmod(file, 0o600)
        let s = try TagSecrets.load(file)
        #expect(s.nxpPassword(0x02, uid: try UID(parsing: "E004010812345699"), asset: nil) == [0x22, 0x22, 0x22, 0x22])
        #expect(s.nxpPassword(0x02, uid: try UID(parsing: "E004010800000001"), asset: nil) == [0x11, 0x11, 0x11, 0x11])
        #expect(
            s.nxpPassword(0x01, uid: try UID(parsing: "E004010800000001"), asset: "PAL-7") == [0x33, 0x33, 0x33, 0x33])
        #expect(s.nxpPassword(0x01, uid: try UID(parsing: "E004010800000001"), asset: nil) == nil)
        #expect(!"\(s)".contains("1111") && "\(s)" == "3 tag secrets (values not shown)")
        #expect {
            try TagSecrets.parse("[[tag]]\nuid = \"E004010812345699\"\nnxp-write = \"SECRETXY\"\n", file: "s.toml")
        } throws: { "\($0)".contains("s.toml:3") && !"\($0)".contains("SECRETXY") }
    }
}

/// `dump` keeps what GET NXP SYSTEM INFO and READ SIGNATURE say of a SLIX2 (its page protection and originality
/// signature) in the project's image, so that a restore or a simulated copy knows them; `info` prints the protection.
@Suite(.drivers) struct NXPDumpTests {
    @Test func theDumpKeepsPageProtectionAndTheSignature() throws {
        var image = try TagImage(
            uid: UID(parsing: OriginalityRuleTests.genuine.uid), blockSize: 4,
            blocks: Array(repeating: [1, 2, 3, 4], count: 80), icReference: 0x01, profileID: "icode-slix2")
        image.signature = try Hex.parse(OriginalityRuleTests.genuine.signature)
        image.protectionPointer = 0x20
        image.protectionCondition = 0x20
        let field = SimulatedField()
        field.add(SimulatedTag(image: image, profile: .icodeSLIX2))
        let session = ReaderSession(reader: SimulatorReader.switchedOn(field))
        let dumped = try TagDump.dump(session.client, uid: image.uid)
        #expect(dumped.signature == image.signature)
        #expect(dumped.protectionPointer == 0x20 && dumped.protectionCondition == 0x20)
        let nxp = try #require(TagDump.nxpSystemInfo(session.client, image.uid))
        #expect(nxp.protectionText == "pointer 0x20; low page none, high page write password" && nxp.hasSignature)
        // The project's JSON keeps both, and reads them back.
        let text = try TagImageFormat.vlogger.encode(dumped)
        #expect(text.contains("\"protectionPointer\"") && text.contains("\"signature\""))
        let back = try TagImageFormat.vlogger.decode(text)
        #expect(back.signature == dumped.signature && back.protectionCondition == 0x20)
    }
}

/// ISO commands do not say whether the DSFID and AFI are locked; GET NXP SYSTEM INFO's lock bits do: b0 AFI, b1 EAS,
/// b2 DSFID, b3 page protection (docs/reference/tag-passwords.md: NXP TagInfo, Flipper `slix_i.h` and an NTAG 5
/// library agree; Proxmark3's DSFID test `& 0x03` is a bug). So a dump of a locked SLIX2 says so in Flipper's file.
@Suite(.drivers) struct NXPLockBitsTests {
    @Test func theLockBitsAsTheDecodersRead() throws {
        // Flags, pointer, condition, lock bits, 4 feature bytes: each lock alone.
        for (bits, afi, eas, dsfid, pp) in [
            (0x01, true, false, false, false), (0x02, false, true, false, false), (0x04, false, false, true, false),
            (0x08, false, false, false, true),
        ] {
            let info = try #require(NXPSecurity.SystemInfo([0x00, 0x00, UInt8(bits), 0, 0, 0, 0]))
            #expect(info.afiLocked == afi && info.easLocked == eas && info.dsfidLocked == dsfid)
            #expect(info.protectionLocked == pp)
        }
        // AFI and EAS locked is not a DSFID lock (Proxmark3's `& 0x03` would say it is).
        let both = try #require(NXPSecurity.SystemInfo([0x00, 0x00, 0x03, 0, 0, 0, 0]))
        #expect(!both.dsfidLocked && both.locksText == "AFI, EAS locked")
    }

    @Test func aDumpOfALockedSLIX2SaysSoInFlippersFile() throws {
        var image = try TagImage(
            uid: UID(parsing: "E004010812345601"), dsfidLocked: true, afi: 0x07, afiLocked: true, blockSize: 4,
            blocks: Array(repeating: [0, 0, 0, 0], count: 80), icReference: 0x01, profileID: "icode-slix2")
        image.dsfid = 0x2A
        let field = SimulatedField()
        field.add(SimulatedTag(image: image, profile: .icodeSLIX2))
        let session = ReaderSession(reader: SimulatorReader.switchedOn(field))
        let dumped = try TagDump.dump(session.client, uid: image.uid)
        #expect(dumped.dsfidLocked && dumped.afiLocked)
        let flipper = try TagImageFormat.flipper.encode(dumped)
        #expect(flipper.contains("Lock DSFID: true") && flipper.contains("Lock AFI: true"), "\(flipper)")
        // The same chip unlocked: false in both.
        image.dsfidLocked = false
        image.afiLocked = false
        let open = SimulatedField()
        open.add(SimulatedTag(image: image, profile: .icodeSLIX2))
        let again = try TagDump.dump(ReaderSession(reader: SimulatorReader.switchedOn(open)).client, uid: image.uid)
        #expect(!again.dsfidLocked && !again.afiLocked)
    }
}
