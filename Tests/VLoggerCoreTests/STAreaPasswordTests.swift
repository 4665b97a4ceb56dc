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
import VLoggerCLI
import DriverSim

/// ST25DV area passwords (docs/reference/tag-passwords.md, "ST25DV areas"; the ST25DV data sheets DocID027603 Rev 4
/// and DS13519 Rev 2): the area map from the ENDAi and RFAiSS registers, PRESENT PASSWORD before a queued write or a
/// plan read of a protected area, one attempt, and refusals before the air where no password can help.
@Suite(.serialized, .drivers) struct STAreaPasswordTests {
    static let uid = "E002260012345678"
    static let password1 = "0011223344556677"
    static let password2 = "8899AABBCCDDEEFF"
    /// Area 1 blocks 0–7 (ENDA1 0), open; area 2 blocks 8–15 (ENDA2 1), writes need RF_PWD_1 (RFA2SS 0x05: PWD_CTRL
    /// 01b, RW_PROTECTION 01b); area 3 blocks 16–23 (ENDA3 2), reads and writes need RF_PWD_2 (0x0A: 10b, 10b); area 4
    /// blocks 24–2047, open.
    static let registers: [UInt8] = [0x00, 0x00, 0x05, 0x01, 0x0A, 0x02, 0x00]

    @Test func theAreaMapAsTheDataSheetDefinesIt() throws {
        // Factory state: every ENDAi at its maximum, one area over the memory (DS13519 Table 4: 04K 0Fh → last block
        // 007Fh; 64K FFh → 07FFh; "Last RF block address of area = 8 × ENDAi + 7").
        let k04 = try #require(STSecurity.areas(registers: [0, 0x0F, 0, 0x0F, 0, 0x0F, 0], blockCount: 128))
        #expect(k04 == [.init(number: 1, firstBlock: 0, lastBlock: 0x7F, password: 0, protection: 0)])
        let k64 = try #require(STSecurity.areas(registers: [0, 0xFF, 0, 0xFF, 0, 0xFF, 0], blockCount: 2048))
        #expect(k64.count == 1 && k64[0].lastBlock == 0x7FF)
        let four = try #require(STSecurity.areas(registers: Self.registers, blockCount: 2048))
        #expect(four.map(\.firstBlock) == [0, 8, 16, 24] && four.map(\.lastBlock) == [7, 15, 23, 2047])
        #expect(four[1].writeNeedsSession && !four[1].readNeedsSession && four[1].password == 1)
        #expect(four[2].writeNeedsSession && four[2].readNeedsSession && four[2].password == 2)
        // "Area 1 is always readable": RW_PROTECTION 11b there forbids writes only.
        let a1 = try #require(STSecurity.areas(registers: [0x0D, 0x00, 0, 0xFF, 0, 0xFF, 0], blockCount: 2048)?.first)
        #expect(!a1.readNeedsSession && a1.writeForbidden)
        // ENDA1 > ENDA2 breaks the data sheet's rule: no map.
        #expect(STSecurity.areas(registers: [0, 0x02, 0, 0x01, 0, 0xFF, 0], blockCount: 2048) == nil)
    }

    /// `info` says what each area allows; `dump` keeps the registers, so a simulated copy has the same areas.
    @Test func infoAndDumpShowTheAreas() throws {
        let r = try Self.rig(secrets: nil)
        let client = r.agent.session.client
        let uid = try UID(parsing: Self.uid)
        #expect(
            try client.stAreas(uid, blockCount: 2048)?.map(\.description) == [
                "area 1, blocks 0x0000–0x0007: read open, write open",
                "area 2, blocks 0x0008–0x000F: read open, write with RF_PWD_1",
                "area 3, blocks 0x0010–0x0017: read with RF_PWD_2, write with RF_PWD_2",
                "area 4, blocks 0x0018–0x07FF: read open, write open",
            ])
        // Area 3's reads need RF_PWD_2: no whole dump, and the error says why.
        do {
            _ = try TagDump.dump(client, uid: uid)
            Issue.record("a dump over a read-protected area")
        } catch { #expect("\(error)".contains("area 3, blocks 0x0010–0x0017: read with RF_PWD_2"), "\(error)") }
        // Area 3 writable with RF_PWD_2 but readable by all (RW_PROTECTION 01b): the dump keeps the registers.
        var open = Self.registers
        open[4] = 0x06
        var image = r.tag.image
        image.stAreaRegisters = open
        let field = SimulatedField()
        field.add(SimulatedTag(image: image, profile: .st25dv64k))
        let dumped = try TagDump.dump(ReaderSession(reader: SimulatorReader.switchedOn(field)).client, uid: uid)
        #expect(dumped.stAreaRegisters == open)
        let back = try TagImageFormat.vlogger.decode(try TagImageFormat.vlogger.encode(dumped))
        #expect(back.stAreaRegisters == open && back.stPasswords.isEmpty)
    }

    struct Rig {
        let agent: Agent
        let store: Store
        let tag: SimulatedTag
        let trace: () -> [String]
    }

    /// An ST25DV64K with the four areas above, the queued writes `writes` (first block, data), a plan reading
    /// `read` (first, count) and a secrets file with `secrets` (TOML keys; nil: no secrets file).
    static func rig(
        secrets: String?, writes: [(Int, [UInt8])] = [], read: (Int, Int)? = nil, registers: [UInt8] = registers,
        extraRead: (Int, Int)? = nil
    ) throws -> Rig {
        let dir = URL(fileURLWithPath: scratchPath("st-areas"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var blocks = Array(repeating: [UInt8](repeating: 0, count: 4), count: 2048)
        blocks[16] = [0x0C, 0x0A, 0x00, 0x00]
        var image = try TagImage(
            uid: UID(parsing: uid), blockSize: 4, blocks: blocks, icReference: 0x26, profileID: "st25dv64k")
        image.stAreaRegisters = registers
        image.stPasswords[1] = try Hex.parse(password1)
        image.stPasswords[2] = try Hex.parse(password2)
        let tag = SimulatedTag(image: image, profile: .st25dv64k)
        let field = SimulatedField()
        field.add(tag)
        var text = """
            [gateway]
            id = "gw-test"
            [polling]
            interval = "1s"
            departure-cycles = 2

            """
        if let read {
            text += """
                [[plan]]
                name = "st"
                match.model = "ST25DV64K"
                  [[plan.read]]
                  first = \(read.0)
                  count = \(read.1)

                """
            if let extraRead {
                text += """
                      [[plan.read]]
                      first = \(extraRead.0)
                      count = \(extraRead.1)

                    """
            }
        }
        if let secrets {
            let file = try SecurityRig.secrets(
                "[[tag]]\nuid = \"\(uid)\"\n\(secrets)\n", at: dir.appendingPathComponent("secrets.toml").path)
            text += "[security]\nsecrets-file = \"\(file)\"\n"
        }
        let r = try SecurityRig(
            config: text, dir: dir, field: field, store: "st.db",
            writes: try writes.map { first, data in
                QueuedWrite(
                    created: 1_763_800_000_000, uid: try UID(parsing: uid), first: BlockNumber(exactly: first)!,
                    data: data)
            })
        return Rig(agent: r.agent, store: r.store, tag: tag, trace: r.trace)
    }

    static func expectNoPassword(_ r: Rig) throws {
        for p in [password1, password2] {
            let bytes = try Hex.parse(p)
            #expect(!r.trace().contains { $0.contains(Hex.format(bytes)) }, "a password in the trace")
            let file = try Data(contentsOf: URL(fileURLWithPath: r.store.path))
            #expect(file.range(of: Data(bytes)) == nil && file.range(of: Data(p.utf8)) == nil)
        }
    }

    @Test func aWriteToAPasswordArea() throws {
        let r = try Self.rig(secrets: "st-password-1 = \"\(Self.password1)\"", writes: [(9, [0xCA, 0xFE, 0xF0, 0x0D])])
        r.agent.run(cycles: 2, stop: StopSignal())
        r.agent.writer.commitNow()
        let w = try #require(try r.store.queuedWrite(1))
        #expect(w.state == .done, "\(w.result ?? "-")")
        #expect(r.tag.image.blocks[9] == [0xCA, 0xFE, 0xF0, 0x0D] && r.tag.passwordAttempts == 1)
        #expect(r.tag.stSession == 1)
        // PRESENT PASSWORD's line: the password number shown, the 8 bytes and the CRC not.
        let line = try #require(r.trace().first { $0.contains("ST Present Password") })
        #expect(
            r.trace().contains("   ** (10 bytes)") || r.trace().contains { $0.contains("** (10 bytes)") }, "\(line)")
        try Self.expectNoPassword(r)
        print(
            "ST25DV area write, trace:\n"
                + r.trace().filter { $0.contains("ST ") || $0.contains("**") }.joined(separator: "\n"))
    }

    @Test func aWrongPasswordIsPresentedOnce() throws {
        let r = try Self.rig(secrets: "st-password-1 = \"FFFFFFFFFFFFFFFF\"", writes: [(9, [1, 2, 3, 4])])
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        let w = try #require(try r.store.queuedWrite(1))
        #expect(w.state == .rejected && w.result?.contains("password rejected: the ST25DV's RF_PWD_1") == true)
        #expect(w.result?.contains("PRESENT PASSWORD") == true, "\(w.result ?? "-")")
        #expect(r.tag.passwordAttempts == 1 && r.tag.image.blocks[9] == [0, 0, 0, 0] && r.tag.stSession == nil)
    }

    /// A client's password (OPC UA's WriteTag `Password`, `TagPassword`) for an area the secrets file has no
    /// password for: 8 bytes, presented as the area's RF password; another length is refused before the air.
    @Test func aClientsPasswordOpensAnArea() throws {
        let r = try Self.rig(secrets: nil)
        r.agent.run(cycles: 1, stop: StopSignal())
        let uid = try UID(parsing: Self.uid)
        let short = r.agent.accessWrite(
            uid, at: .block(9), data: [1, 2, 3, 4], origin: "opcua:plc", password: TagPassword([1, 2, 3, 4]))
        if case .failure(let e) = short {
            #expect(e.kind == .password && e.message.contains("is 8 bytes"), "\(e.message)")
        } else {
            Issue.record("a 4-byte password opened an ST25DV area")
        }
        #expect(r.tag.passwordAttempts == 0)
        let right = r.agent.accessWrite(
            uid, at: .block(9), data: [1, 2, 3, 4], origin: "opcua:plc",
            password: TagPassword(try Hex.parse(Self.password1)))
        #expect((try? right.get()) != nil, "\(right)")
        #expect(r.tag.image.blocks[9] == [1, 2, 3, 4] && r.tag.passwordAttempts == 1 && r.tag.stSession == 1)
        try Self.expectNoPassword(r)
    }

    @Test func refusalsBeforeTheAir() throws {
        // No secrets file; blocks over areas 2 and 3 (two passwords, one session at a time); area 1 made never
        // writable (RFA1SS 0x0C) is another tag's case below.
        let none = try Self.rig(secrets: nil, writes: [(9, [1, 2, 3, 4])])
        none.agent.run(cycles: 1, stop: StopSignal())
        none.agent.writer.commitNow()
        let w = try #require(try none.store.queuedWrite(1))
        #expect(w.state == .failed && w.result?.contains("no secrets file is configured") == true, "\(w.result ?? "-")")
        #expect(!none.trace().contains { $0.contains("ST Present Password") } && none.tag.passwordAttempts == 0)

        let span = try Self.rig(
            secrets: "st-password-1 = \"\(Self.password1)\"\nst-password-2 = \"\(Self.password2)\"",
            writes: [(15, [1, 2, 3, 4, 5, 6, 7, 8])])
        span.agent.run(cycles: 1, stop: StopSignal())
        span.agent.writer.commitNow()
        let s = try #require(try span.store.queuedWrite(1))
        #expect(s.state == .failed && s.result?.contains("span areas 2, 3") == true, "\(s.result ?? "-")")
        #expect(span.tag.passwordAttempts == 0)
    }

    @Test func aPlanReadsAReadProtectedArea() throws {
        let r = try Self.rig(secrets: "st-password-2 = \"\(Self.password2)\"", read: (16, 2))
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        let got = try r.store.readings()
        #expect(got.count == 3 && got.allSatisfy { $0.data == [0x0C, 0x0A, 0, 0, 0, 0, 0, 0] }, "\(got.count)")
        // The session stays open while the tag is powered: one PRESENT PASSWORD in three cycles.
        #expect(r.tag.passwordAttempts == 1 && r.tag.stSession == 2)
        #expect(try r.store.events(kind: .error).isEmpty)
        try Self.expectNoPassword(r)
    }

    /// A write from block 6 to 9 crosses the border of areas 1 and 2 (after block 7): the chip refuses a Write
    /// Multiple across it (0x0F), so the client's chunks stay inside (6–7, then 8–9), after RF_PWD_1 for area 2.
    @Test func aWriteOverAnAreaBorderIsChunkedAtIt() throws {
        let data: [UInt8] = Array(1...16)
        let r = try Self.rig(secrets: "st-password-1 = \"\(Self.password1)\"", writes: [(6, data)])
        r.agent.run(cycles: 2, stop: StopSignal())
        r.agent.writer.commitNow()
        let w = try #require(try r.store.queuedWrite(1))
        #expect(w.state == .done, "\(w.result ?? "-")")
        #expect(Array(r.tag.image.blocks[6...9].joined()) == data)
        let writes = r.trace().filter { $0.contains("Write Multiple") }
        #expect(writes.count == 2 && writes[0].contains("0x06") && writes[1].contains("0x08"), "\(writes)")
    }

    /// Plan reads of two read-protected areas with different passwords: one RF session at a time, so each range
    /// presents its own password (two a cycle), and both are read.
    @Test func twoAreasTwoPasswords() throws {
        let r = try Self.rig(
            secrets: "st-password-1 = \"\(Self.password1)\"\nst-password-2 = \"\(Self.password2)\"",
            read: (16, 1), registers: [0x00, 0x00, 0x09, 0x01, 0x0A, 0x02, 0x00], extraRead: (8, 1))
        r.agent.run(cycles: 2, stop: StopSignal())
        r.agent.writer.commitNow()
        #expect(try r.store.readings().count == 4 && r.store.events(kind: .error).isEmpty)
        #expect(r.tag.passwordAttempts == 4)
    }

    @Test func theSimulatedChipFollowsTheDataSheet() throws {
        let r = try Self.rig(secrets: nil)
        let client = r.agent.session.client
        let uid = try UID(parsing: Self.uid)
        // Area 3 is read-protected: 0x15; a Read Multiple from area 2 stops at its first block.
        #expect(throws: ClientError.self) { try client.readBlocks(uid, first: 16, count: 1) }
        // (its answer: the flags and the 8 bytes of blocks 14 and 15, not the 16 asked for).
        let request = Request(
            .readMultipleBlocks(first: 14, count: 4), flags: client.baseFlags, addressing: .addressed(uid))
        do {
            _ = try client.send(request, blockSize: 4)
            Issue.record("four blocks read over a read-protected area")
        } catch { #expect("\(error)".contains("expected 17 bytes, got 9"), "\(error)") }
        // The client's Read Multiple asks for 4 and gets 2: an error the agent takes as a guarded area.
        do {
            _ = try client.readBlocks(uid, first: 14, count: 4)
            Issue.record("four blocks read over a read-protected area")
        } catch { #expect(TagPlanReader.mayBeGuarded(uid, error), "\(error)") }
        // A wrong password: error 0x0F, no session; the password number 4: error 0x10.
        #expect(try client.stPresentPassword(uid, number: 2, password: Array(repeating: 0, count: 8)) != .accepted)
        #expect(r.tag.stSession == nil)
        #expect(throws: ClientError.self) {
            try client.custom(
                uid, code: 0xB3, manufacturer: .stMicroelectronics, parameters: [4] + Array(repeating: 0, count: 8))
        }
        #expect(try client.stPresentPassword(uid, number: 2, password: Hex.parse(Self.password2)) == .accepted)
        #expect(try client.readBlocks(uid, first: 16, count: 1).first?.data == [0x0C, 0x0A, 0, 0])
        #expect(try client.stAreas(uid, blockCount: 2048)?.map(\.number) == [1, 2, 3, 4])
    }
}
