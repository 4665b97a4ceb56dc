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
import DriverSim

/// A write never depends on an optional custom command (issue 54; docs/reference/optional-commands.md). Facts:
/// the ICODE SLI has no page protection, no read or write password and no GET MULTIPLE BLOCK PROTECTION STATUS
/// (SLI specification Rev 3.1 §3.4.3: Inventory Read and the EAS commands are its custom set), and answers a command
/// it does not support with error 0x0F in addressed mode (§3.5.2); a chip behind some readers, or another chip, may
/// stay silent instead. Both are "not supported" for the tag's visit; only a chip with page protection, a password
/// in the secrets file, or an error answer protection may explain makes vlogger ask the status.
@Suite(.serialized, .drivers) struct OptionalCommandTests {
    /// The ICODE SLI of the issue's transcript (UID byte 5 = 0x01, byte 4 bits 3–4 = 00: an SLI by pm3's
    /// uidmapping and Flipper's SlixUidLayout).
    static let sli = "E00401008A5C982E"

    struct Air {
        let client: ISO15693Client
        let reader: SimulatorReader
        let field: SimulatedField
        let tag: SimulatedTag
        let lines: () -> [String]
    }

    static func air(_ uid: String, profile: ChipProfile, blocks: Int, configure: (inout TagImage) -> Void = { _ in })
        throws -> Air
    {
        var image = try TagImage(
            uid: UID(parsing: uid), blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: blocks),
            icReference: profile.icReference, profileID: profile.id)
        configure(&image)
        let tag = SimulatedTag(image: image, profile: profile)
        let field = SimulatedField()
        field.add(tag)
        let reader = SimulatorReader.switchedOn(field)
        var lines: [String] = []
        let formatter = TraceFormatter { lines.append($0) }
        reader.trace = { formatter.handle($0) }
        return Air(client: ISO15693Client(reader: reader), reader: reader, field: field, tag: tag, lines: { lines })
    }

    static func write(_ a: Air, _ uid: UID, block: BlockNumber, _ data: [UInt8], secrets: String? = nil) throws
        -> PasswordUnlock.Guarded<WriteReport>
    {
        try PasswordUnlock.guarded(
            a.client, uid, first: block, count: 1, for: .write, secretsFile: secrets, asset: nil
        ) { () throws(ClientError) in
            try a.client.writeBlocks(uid, first: block, blocks: [data], verify: true)
        }
    }

    @Test func anICODESLIIsWrittenWithoutAskingItsProtection() throws {
        let a = try Self.air(Self.sli, profile: .icodeSLI, blocks: 28)
        let uid = try UID(parsing: Self.sli)
        #expect(try a.client.memory(of: uid).model == .icodeSLI)
        let before = a.client.exchanges
        guard case .done(let report, .open) = try Self.write(a, uid, block: 3, [0xCA, 0xFE, 0xF0, 0x0D]) else {
            Issue.record("the write did not go through"); return
        }
        #expect(report.verified && a.tag.image.blocks[3] == [0xCA, 0xFE, 0xF0, 0x0D])
        // The write and its read-back: nothing else on the air.
        #expect(a.client.exchanges - before == 2, "\(a.lines().joined(separator: "\n"))")
        #expect(!a.lines().contains { $0.contains("Protection Status") })
    }

    @Test func theSLIAnswersAnUnsupportedCustomCommandWithError0x0F() throws {
        let a = try Self.air(Self.sli, profile: .icodeSLI, blocks: 28)
        let uid = try UID(parsing: Self.sli)
        let answer = try a.client.optionalCustom(
            uid, code: NXPSecurity.getMultipleBlockProtectionStatus, manufacturer: .nxp, parameters: [0, 0])
        #expect(answer == .notSupported("custom command 0xB8: the tag answered \(ISOErrorCode.unknownError)"))
        // Remembered for the visit: not sent again until the tag has left.
        let n = a.client.exchanges
        #expect(try a.client.nxpProtectionStatus(uid, first: 0, count: 1) == nil && a.client.exchanges == n)
        a.client.forget(uid)
        #expect(try a.client.nxpProtectionStatus(uid, first: 0, count: 1) == nil && a.client.exchanges == n + 1)
    }

    /// A chip with page protection (a SLIX2 by its UID) is asked first; when it stays silent (a reader in front of it
    /// that drops custom commands, modelled by a silent profile), the write goes ahead and the query is not sent
    /// again in the visit. A mandatory command's silence keeps its meaning: the write fails, transiently.
    @Test func silenceToTheStatusQueryNeverAbandonsAWrite() throws {
        let uid = "E004010812345601"
        let a = try Self.air(uid, profile: .icodeSLIX2, blocks: 80)
        a.tag.silentToCustomCommands = true
        let u = try UID(parsing: uid)
        guard case .done(let first, .open) = try Self.write(a, u, block: 0x10, [1, 2, 3, 4]) else {
            Issue.record("the first write did not go through"); return
        }
        #expect(first.verified && a.tag.image.blocks[0x10] == [1, 2, 3, 4])
        // Sent once with the client's two retries, then known as not supported.
        #expect(a.lines().filter { $0.contains("Protection Status") }.count == 3)
        guard case .done = try Self.write(a, u, block: 0x11, [5, 6, 7, 8]) else {
            Issue.record("the second write did not go through"); return
        }
        #expect(a.lines().filter { $0.contains("Protection Status") }.count == 3)
        // The tag leaves: the write itself times out, an error that keeps its meaning.
        _ = a.field.remove(u)
        #expect(throws: ClientError.self) { try Self.write(a, u, block: 0x12, [9, 9, 9, 9]) }
        do {
            _ = try Self.write(a, u, block: 0x12, [9, 9, 9, 9])
        } catch let e as ClientError {
            #expect(e.isTransient && "\(e)".contains("Write Single Block"), "\(e)")
        }
    }

    /// A page-protected chip the UID does not name as one (a SLIX2's memory and commands under an ICODE SLI UID): the
    /// write goes at once, the tag answers 0x0F, and only then is the status asked, the write password given and the
    /// write made.
    @Test func anErrorAnswerProtectionMayExplainAsksTheStatusThen() throws {
        let uid = "E004010012345677"  // byte 4 bits 3–4 = 00: an ICODE SLI
        let a = try Self.air(uid, profile: .icodeSLIX2, blocks: 80) { image in
            image.nxpPasswords[NXPSecurity.writePassword] = [0xA1, 0xB2, 0xC3, 0xD4]
            image.protectionPointer = 0x10
            image.protectionCondition = 0x20
        }
        let u = try UID(parsing: uid)
        #expect(try a.client.memory(of: u).model == .icodeSLI)
        let dir = URL(fileURLWithPath: scratchPath("optional"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // No secrets file: the page is unprotected below the pointer, refused above it with the reason.
        guard case .done(_, .open) = try Self.write(a, u, block: 0x02, [1, 1, 1, 1]) else {
            Issue.record("the low page was not written"); return
        }
        #expect(!a.lines().contains { $0.contains("Protection Status") })
        guard case .stopped(.refused(let why)) = try Self.write(a, u, block: 0x12, [2, 2, 2, 2]) else {
            Issue.record("the high page was not refused"); return
        }
        #expect(why.contains("write password") && why.contains("no secrets file"), "\(why)")
        let file = try SecurityRig.secrets(
            "[[tag]]\nuid = \"\(uid)\"\nnxp-write = \"A1B2C3D4\"\n", at: dir.appendingPathComponent("s.toml").path)
        guard case .done(let report, .unlocked) = try Self.write(a, u, block: 0x12, [2, 2, 2, 2], secrets: file) else {
            Issue.record("the high page was not written with the password"); return
        }
        #expect(report.verified && a.tag.image.blocks[0x12] == [2, 2, 2, 2] && a.tag.passwordAttempts == 1)
    }

    /// A queued write through the agent to an ICODE SLI: done, read back, and no protection status on the air.
    @Test func aQueuedWriteToAnSLIIsDone() throws {
        let dir = URL(fileURLWithPath: scratchPath("optional-agent"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let image = try TagImage(
            uid: UID(parsing: Self.sli), blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 28),
            profileID: "icode-sli")
        let tag = SimulatedTag(image: image, profile: .icodeSLI)
        let field = SimulatedField()
        field.add(tag)
        let r = try SecurityRig(
            config: AgentTests.config, dir: dir, field: field, store: "sli.db",
            writes: [
                QueuedWrite(
                    created: 1_763_800_000_000, uid: UID(parsing: Self.sli), first: 3, data: [0xCA, 0xFE, 0xF0, 0x0D])
            ])
        r.agent.run(cycles: 2, stop: StopSignal())
        r.agent.writer.commitNow()
        let w = try #require(try r.store.queuedWrite(1))
        #expect(w.state == .done, "\(w.result ?? "-")\n\(r.trace().joined(separator: "\n"))")
        #expect(tag.image.blocks[3] == [0xCA, 0xFE, 0xF0, 0x0D])
        #expect(!r.trace().contains { $0.contains("Protection Status") })
    }

    /// A chip with page protection whose status answer is lost on the air (three silent tries): the write goes, the
    /// tag refuses it with 0x0F, and the status is asked again then — answered now — so the password is given and the
    /// write made. A lost answer never turns a protected page into a failed write.
    @Test func aLostStatusAnswerIsAskedAgainWhenTheWriteIsRefused() throws {
        let uid = "E004010812345699"
        let a = try Self.air(uid, profile: .icodeSLIX2, blocks: 80) { image in
            image.nxpPasswords[NXPSecurity.writePassword] = [0xA1, 0xB2, 0xC3, 0xD4]
            image.protectionPointer = 0x10
            image.protectionCondition = 0x20
        }
        let u = try UID(parsing: uid)
        _ = try a.client.memory(of: u)
        let dir = URL(fileURLWithPath: scratchPath("optional-lost"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try SecurityRig.secrets(
            "[[tag]]\nuid = \"\(uid)\"\nnxp-write = \"A1B2C3D4\"\n", at: dir.appendingPathComponent("s.toml").path)
        a.field.inject(.noResponse(uid: u, count: 3))
        guard case .done(let report, .unlocked) = try Self.write(a, u, block: 0x12, [7, 7, 7, 7], secrets: file) else {
            Issue.record("the protected write did not go through"); return
        }
        #expect(report.verified && a.tag.image.blocks[0x12] == [7, 7, 7, 7] && a.tag.passwordAttempts == 1)
        // Three silent tries, then the one asked after the refusal.
        #expect(
            a.lines().filter { $0.contains("Protection Status") }.count == 4, "\(a.lines().joined(separator: "\n"))")
    }

    /// "Remembered for the visit": the agent forgets what a tag left unanswered when it sees the tag leave.
    @Test func theAgentForgetsUnansweredCommandsWhenTheTagLeaves() throws {
        let dir = URL(fileURLWithPath: scratchPath("optional-visit"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let u = try UID(parsing: Self.sli)
        let tag = SimulatedTag(
            image: try TagImage(
                uid: u, blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 28), profileID: "icode-sli"),
            profile: .icodeSLI)
        let field = SimulatedField()
        field.add(tag)
        // A write password in the secrets file for the SLI: the status is asked before the write (and refused 0x0F).
        let secrets = try SecurityRig.secrets(
            "[[tag]]\nuid = \"\(Self.sli)\"\nnxp-write = \"01020304\"\n", at: dir.appendingPathComponent("s.toml").path)
        let r = try SecurityRig(
            config: AgentTests.config + "\n[security]\nsecrets-file = \"\(secrets)\"\n", dir: dir, field: field,
            store: "visit.db",
            writes: [QueuedWrite(created: 1_763_800_000_000, uid: u, first: 3, data: [1, 2, 3, 4])])
        r.agent.run(cycles: 1, stop: StopSignal())
        r.agent.writer.commitNow()
        #expect(try r.store.queuedWrite(1)?.state == .done)
        let b8 = NXPSecurity.getMultipleBlockProtectionStatus
        #expect(r.agent.client.refusedEarlier(u, code: b8, manufacturer: .nxp))
        _ = field.remove(u)
        r.agent.run(cycles: 4, stop: StopSignal())
        #expect(!r.agent.client.refusedEarlier(u, code: b8, manufacturer: .nxp))
    }
}
