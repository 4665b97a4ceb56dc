import Foundation
import ISO15693
import Readers
import TagImages
import TestDrivers
import Testing
import VLoggerModel
import VLoggerOutbox
import VLoggerStore

@testable import TagSimulator
@testable import VLoggerCore

/// A password given with a client's access (OPC UA's ReadTag, WriteTag and LockTag `Password`; `TagPassword`) on an
/// NXP ICODE SLIX2 whose high page a password protects. The simulated chip follows the data sheet's semantics
/// (docs/reference/tag-passwords.md): the protection pointer splits the memory into pages, the protection condition
/// says which password guards reading and writing each, SET PASSWORD opens the session, and a wrong one mutes the chip
/// until its power is reset. The rules under test (docs/opcua.md, "Passwords"): where the secrets file holds no
/// password for the tag, the one given is sent; where it holds any, the one given must be one of them and the file's are
/// sent, or no password is sent to the tag; a rejected file password is not sent again (blocks that need none are read
/// and locked still), a rejected given one resets the field and is not remembered. No password reaches the trace or
/// the store.
@Suite(.serialized, .drivers) struct AccessPasswordTests {
    static let uid = try! UID(parsing: "E004010812345677")
    static let write: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4]
    static let read: [UInt8] = [0x0B, 0x1E, 0x2D, 0x3C]

    struct Rig {
        let agent: Agent
        let store: Store
        let tag: SimulatedTag
        let trace: () -> [String]
    }

    /// A SLIX2 of 80 blocks (block 0x11 holding 11 22 33 44) whose high page (blocks 0x10…) needs the passwords `condition` names (0x10 read, 0x20
    /// write), in the field and seen by one cycle; `secrets`: the secrets file's entry for it (nil: none configured).
    static func rig(condition: UInt8, secrets: String?) throws -> Rig {
        let dir = URL(fileURLWithPath: scratchPath("access-passwords"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var image = try TagImage(
            uid: uid, blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 80), icReference: 0x01,
            profileID: "icode-slix2")
        image.nxpPasswords[NXPSecurity.readPassword] = read
        image.nxpPasswords[NXPSecurity.writePassword] = write
        image.blocks[0x11] = [0x11, 0x22, 0x33, 0x44]
        image.protectionPointer = 0x10
        image.protectionCondition = condition
        let tag = SimulatedTag(image: image, profile: .icodeSLIX2)
        let field = SimulatedField()
        field.add(tag)
        var text = AgentTests.config
        if let secrets {
            let file = try SecurityRig.secrets(
                "[[tag]]\nuid = \"\(uid)\"\n\(secrets)\n", at: dir.appendingPathComponent("secrets.toml").path)
            text += "\n[security]\nsecrets-file = \"\(file)\"\n"
        }
        let r = try SecurityRig(config: text, dir: dir, field: field, store: "access-pw.db")
        r.agent.run(cycles: 1, stop: StopSignal())
        return Rig(agent: r.agent, store: r.store, tag: tag, trace: r.trace)
    }

    static func message<T>(_ r: Result<T, FieldAccessError>) -> String {
        if case .failure(let e) = r { return "\(e.kind): \(e.message)" }
        return "success"
    }

    /// No trace line and no byte of the store holds a password, plainly or XORed with the chip's last random number.
    static func expectNoPassword(_ r: Rig, _ passwords: [[UInt8]]) throws {
        r.agent.writer.commitNow()
        let file = try Data(contentsOf: URL(fileURLWithPath: r.store.path))
        for p in passwords {
            for secret in [p, NXPSecurity.xor(p, random: r.tag.random)] {
                let hex = Hex.format(secret)
                #expect(!r.trace().contains { $0.contains(hex) }, "\(hex) in the trace")
                #expect(file.range(of: Data(secret)) == nil && file.range(of: Data(hex.utf8)) == nil)
            }
        }
    }

    /// No secrets file: the page is refused before the air without a password; a wrong one given is tried once (the
    /// chip mutes, the field is reset) and not held against the next call; the right one writes and locks.
    @Test func aClientsPasswordOpensAPageTheSecretsFileDoesNotHold() throws {
        let r = try Self.rig(condition: 0x20, secrets: nil)
        let data: [UInt8] = [0xCA, 0xFE, 0xF0, 0x0D]
        let none = r.agent.accessWrite(Self.uid, at: .block(0x12), data: data, origin: "opcua:plc")
        #expect(Self.message(none).hasPrefix("password:") && Self.message(none).contains("no secrets file"))
        #expect(r.tag.passwordAttempts == 0)
        let short = r.agent.accessWrite(
            Self.uid, at: .block(0x12), data: data, origin: "opcua:plc", password: TagPassword([1, 2, 3]))
        #expect(Self.message(short).contains("the password given is 3 bytes"), "\(Self.message(short))")
        #expect(r.tag.passwordAttempts == 0)
        let wrong = r.agent.accessWrite(
            Self.uid, at: .block(0x12), data: data, origin: "opcua:plc", password: TagPassword([9, 9, 9, 9]))
        #expect(Self.message(wrong).hasPrefix("password:") && Self.message(wrong).contains("password rejected"))
        #expect(r.tag.passwordAttempts == 1 && r.tag.state != .muted && r.tag.image.blocks[0x12] == [0, 0, 0, 0])
        // Not remembered as a secrets-file password would be: the next call without one is refused for want of a file.
        let after = r.agent.accessWrite(Self.uid, at: .block(0x12), data: data, origin: "opcua:plc")
        #expect(Self.message(after).contains("no secrets file"), "\(Self.message(after))")
        let right = r.agent.accessWrite(
            Self.uid, at: .block(0x12), data: data, origin: "opcua:plc", password: TagPassword(Self.write))
        #expect(Self.message(right) == "success")
        #expect(r.tag.image.blocks[0x12] == data && r.tag.passwordAttempts == 2)
        // A byte range inside the page: its blocks are read, then written back whole, in the same session.
        let bytes = r.agent.accessWrite(
            Self.uid, at: .byte(0x13 * 4 + 1), data: [0x77], origin: "opcua:plc", password: TagPassword(Self.write))
        #expect(Self.message(bytes) == "success" && r.tag.image.blocks[0x13] == [0, 0x77, 0, 0])
        // A lock is a write of its block: refused without the password, made with it.
        let unlocked = r.agent.accessLock(Self.uid, .blocks(first: 0x14, count: 1), origin: "opcua:plc")
        #expect(Self.message(unlocked).hasPrefix("password:") && r.tag.image.locked[0x14] == false)
        let locked = r.agent.accessLock(
            Self.uid, .blocks(first: 0x14, count: 1), origin: "opcua:plc", password: TagPassword(Self.write))
        #expect(Self.message(locked) == "success" && r.tag.image.locked[0x14] == true)
        try Self.expectNoPassword(r, [Self.write, [9, 9, 9, 9]])
    }

    /// A secrets file holding both passwords: a read of the read-protected page uses the file's (nothing given); a
    /// password given that is not one of the file's is refused with no password sent to the tag (the page's protection status is asked); one that is opens the
    /// page with the file's passwords.
    @Test func aClientsPasswordMustBeOneTheSecretsFileHolds() throws {
        let r = try Self.rig(
            condition: 0x30,
            secrets: "nxp-read = \"\(Hex.format(Self.read))\"\nnxp-write = \"\(Hex.format(Self.write))\"")
        let before = r.tag.passwordAttempts
        let read = r.agent.accessRead(Self.uid, .blocks(first: 0x11, count: 1), origin: "opcua:plc")
        #expect(try read.get() == [0x11, 0x22, 0x33, 0x44])
        #expect(r.tag.passwordAttempts == before + 1)
        let sent = r.trace().filter { $0.contains("NXP Get Random Number") || $0.contains("NXP Set Password") }.count
        let foreign = r.agent.accessWrite(
            Self.uid, at: .block(0x12), data: [1, 2, 3, 4], origin: "opcua:plc", password: TagPassword([5, 6, 7, 8]))
        #expect(
            Self.message(foreign).hasPrefix("password:")
                && Self.message(foreign).contains("not one the secrets file holds"), "\(Self.message(foreign))"
        )
        #expect(
            r.trace().filter { $0.contains("NXP Get Random Number") || $0.contains("NXP Set Password") }.count == sent)
        #expect(r.tag.passwordAttempts == before + 1 && r.tag.image.blocks[0x12] == [0, 0, 0, 0])
        let foreignRead = r.agent.accessRead(
            Self.uid, .blocks(first: 0x11, count: 1), origin: "opcua:plc", password: TagPassword(Self.write.reversed()))
        #expect(
            Self.message(foreignRead).contains("not one the secrets file holds"), "\(Self.message(foreignRead))")
        // The read password given for a write that needs both: the file's two are sent.
        let own = r.agent.accessWrite(
            Self.uid, at: .block(0x12), data: [1, 2, 3, 4], origin: "opcua:plc", password: TagPassword(Self.read))
        #expect(Self.message(own) == "success" && r.tag.image.blocks[0x12] == [1, 2, 3, 4])
        try Self.expectNoPassword(r, [Self.read, Self.write])
        // Each access is recorded, its password never.
        r.agent.writer.commitNow()
        let failed = try r.store.events(kind: .writeFailed)
        #expect(failed.count == 1 && failed.first?.origin == "opcua:plc")
    }

    /// The secrets file's read password is wrong: rejected once, remembered, and not sent again, even when a client
    /// gives that same value; blocks of the page no password guards are still read and locked; a client's password
    /// that the file does not hold is refused although it is the tag's.
    @Test func aRejectedFilePasswordIsNotSentAgain() throws {
        let r = try Self.rig(
            condition: 0x30, secrets: "nxp-read = \"00000000\"\nnxp-write = \"\(Hex.format(Self.write))\"")
        let first = r.agent.accessRead(Self.uid, .blocks(first: 0x11, count: 1), origin: "opcua:plc")
        #expect(Self.message(first).hasPrefix("password:") && Self.message(first).contains("password rejected"))
        #expect(r.tag.passwordAttempts == 1 && r.tag.state != .muted)
        let low = r.agent.accessRead(Self.uid, .blocks(first: 0x02, count: 1), origin: "opcua:plc")
        #expect(try low.get() == [0, 0, 0, 0])
        let lock = r.agent.accessLock(Self.uid, .blocks(first: 0x03, count: 1), origin: "opcua:plc")
        #expect(Self.message(lock) == "success" && r.tag.image.locked[0x03] == true)
        let same = r.agent.accessRead(
            Self.uid, .blocks(first: 0x11, count: 1), origin: "opcua:plc", password: TagPassword([0, 0, 0, 0]))
        #expect(
            Self.message(same).contains("rejected the NXP read password of the secrets file earlier"),
            "\(Self.message(same))")
        let tags = r.agent.accessRead(
            Self.uid, .blocks(first: 0x11, count: 1), origin: "opcua:plc", password: TagPassword(Self.read))
        #expect(Self.message(tags).contains("not one the secrets file holds"), "\(Self.message(tags))")
        #expect(r.tag.passwordAttempts == 1)
    }

    /// The file holds the read password only; the page needs both for a write: the file's read password given is
    /// not sent in the write password's place (the file has no nxp-write: refused), nor is the tag's write password
    /// the file does not hold.
    @Test func aFileWithOnePasswordIsNotFilledInByTheClient() throws {
        let r = try Self.rig(condition: 0x30, secrets: "nxp-read = \"\(Hex.format(Self.read))\"")
        let filled = r.agent.accessWrite(
            Self.uid, at: .block(0x12), data: [1, 2, 3, 4], origin: "opcua:plc", password: TagPassword(Self.read))
        #expect(Self.message(filled).contains("the secrets file has no nxp-write"), "\(Self.message(filled))")
        let other = r.agent.accessWrite(
            Self.uid, at: .block(0x12), data: [1, 2, 3, 4], origin: "opcua:plc", password: TagPassword(Self.write))
        #expect(Self.message(other).contains("not one the secrets file holds"), "\(Self.message(other))")
        #expect(r.tag.passwordAttempts == 0 && r.tag.image.blocks[0x12] == [0, 0, 0, 0])
    }
}
