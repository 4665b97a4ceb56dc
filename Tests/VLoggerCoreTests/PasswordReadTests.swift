import Foundation
import ISO15693
@testable import Readers
import TagImages
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import TagSimulator
@testable import VLoggerCore
import DriverSim

/// A plan that reads an NXP ICODE SLIX2 page guarded by the read password (docs/reference/tag-passwords.md): the
/// agent gives the secrets file's read password once, in the read's RF session, and reads (the chip stays open
/// until its power is reset, so later cycles read without it); with no password configured it reports once a
/// visit and sends none; a wrong one is given once — the chip mutes, the field is reset, a critical event — and is
/// not given again until the secrets file changes.
@Suite(.serialized, .drivers) struct PasswordReadTests {
    static let uid = "E004010812345677"
    static let password = "5EC0DE01"
    static let data: [UInt8] = [0x42, 0x19, 0x07, 0x00]

    struct Rig {
        let agent: Agent
        let store: Store
        let tag: SimulatedTag
        let trace: () -> [String]
        let secrets: String
    }

    /// A SLIX2 whose low page (blocks 0…0x0F) needs the read password, a plan reading blocks 4 and 5, and a secrets
    /// file with `secret` as the read password (nil: no secrets file).
    static func rig(secret: String?) throws -> Rig {
        let dir = URL(fileURLWithPath: scratchPath("read-passwords"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var blocks = Array(repeating: [UInt8](repeating: 0, count: 4), count: 80)
        blocks[4] = data
        var image = try TagImage(
            uid: UID(parsing: uid), blockSize: 4, blocks: blocks, icReference: 0x01, profileID: "icode-slix2")
        image.nxpPasswords[NXPSecurity.readPassword] = try Hex.parse(password)
        image.protectionPointer = 0x10
        image.protectionCondition = 0x01  // low page: read password
        let tag = SimulatedTag(image: image, profile: .icodeSLIX2)
        let field = SimulatedField()
        field.add(tag)
        let file = dir.appendingPathComponent("secrets.toml").path
        var text = """
            [gateway]
            id = "gw-test"
            [polling]
            interval = "1s"
            departure-cycles = 2
            [[plan]]
            name = "guarded"
            match.model = "ICODE SLIX2"
              [[plan.read]]
              first = 4
              count = 2
              [[plan.field]]
              name = "cycles"
              block = 4
              type = "u16le"

            """
        if let secret {
            try SecurityRig.secrets("[[tag]]\nuid = \"\(uid)\"\nnxp-read = \"\(secret)\"\n", at: file)
            text += "[security]\nsecrets-file = \"\(file)\"\n"
        }
        let r = try SecurityRig(config: text, dir: dir, field: field, store: "pw.db")
        return Rig(agent: r.agent, store: r.store, tag: tag, trace: r.trace, secrets: file)
    }

    static func readings(_ r: Rig) throws -> [(time: Millis, uid: String, block: Int, data: [UInt8], decoded: String?)]
    {
        r.agent.writer.commitNow()
        return try r.store.readings()
    }

    @Test func theReadPasswordIsGivenOnceAndThePlanIsRead() throws {
        let r = try Self.rig(secret: Self.password)
        r.agent.run(cycles: 3, stop: StopSignal())
        let got = try Self.readings(r)
        // Three cycles, three readings of the guarded blocks, with the image's bytes (0x1942 = 6466).
        #expect(got.count == 3 && got.allSatisfy { $0.data == Self.data + [0, 0, 0, 0] })
        #expect(got.first?.decoded?.contains("6466") == true, "\(got.first?.decoded ?? "-")")
        // The chip stays open until its power is reset: one SET PASSWORD (read, 0x01) in three cycles.
        #expect(r.tag.passwordAttempts == 1 && r.tag.unlocked.contains(NXPSecurity.readPassword))
        #expect(r.trace().filter { $0.contains("NXP Set Password") }.count == 1)
        #expect(r.trace().contains { $0.contains("password read (0x01)") && $0.contains("XORed value **") })
        let hex = Self.password
        #expect(!r.trace().contains { $0.contains(hex) })
        #expect(try r.store.events(kind: .error).isEmpty)
    }

    @Test func noPasswordConfiguredIsReportedOnceAndNoneIsSent() throws {
        let r = try Self.rig(secret: nil)
        r.agent.run(cycles: 3, stop: StopSignal())
        #expect(try Self.readings(r).isEmpty)
        let events = try r.store.events(kind: .error)
        #expect(events.count == 1 && events.first?.name == "read-password", "\(events.map(\.detail))")
        #expect(events.first?.detail.contains("protected by the NXP read password") == true)
        #expect(r.tag.passwordAttempts == 0 && !r.trace().contains { $0.contains("NXP Get Random Number") })
    }

    @Test func aWrongPasswordIsGivenOnceUntilTheSecretsFileChanges() throws {
        let r = try Self.rig(secret: "00000000")
        r.agent.run(cycles: 4, stop: StopSignal())
        #expect(try Self.readings(r).isEmpty)
        // One attempt in four cycles; the field was reset, so the chip is not left mute.
        #expect(r.tag.passwordAttempts == 1 && r.tag.state != .muted)
        let rejected = try r.store.events(kind: .error).filter { $0.name == "password-rejected" }
        #expect(rejected.count == 1 && rejected.first?.severity == .critical)
        #expect(rejected.first?.detail.contains("the field was reset") == true)
        // An operator corrects the file: the right password is given once, and the plan is read.
        try SecurityRig.secrets(
            "[[tag]]\nuid = \"\(Self.uid)\"\nnxp-read = \"\(Self.password)\"\n# corrected\n", at: r.secrets)
        r.agent.run(cycles: 2, stop: StopSignal())
        #expect(try Self.readings(r).count == 2)
        #expect(r.tag.passwordAttempts == 2)
    }

    /// A garbled answer to SET PASSWORD: whether it was taken is not known, so it counts as a rejection (never
    /// resent).
    @Test func aGarbledAnswerIsARejection() throws {
        let o = try ISO15693Client.passwordOutcome { () throws(ClientError) in
            throw ClientError.reader(.crcError(.crcMismatch(expected: 1, found: 2)), command: "SET PASSWORD")
        }
        guard case .rejected(let why) = o else {
            Issue.record("\(o)")
            return
        }
        #expect(why.contains("garbled"))
    }
}
