import Foundation
import ISO15693
import Readers
import TagSimulator
import TestDrivers
import Testing
import VLoggerModel
import VLoggerOutbox
import VLoggerStore

@testable import VLoggerCore

/// A server's client using the agent's reader (`FieldAccess`, OPC UA's ReadTag, WriteTag and their scalar twins):
/// the agent's own reads and write path, each access recorded. The demo field's SLIX2 (E004010812345601: 80 blocks of
/// 4 bytes, block 0 locked, Config/demo-field/slix2-pallet-0001.json) and ST25DV64K (E002260000C0FFEE).
@Suite(.drivers) struct AccessTests {
    static let slix2 = try! UID(parsing: "E004010812345601")
    static let st25 = try! UID(parsing: "E002260000C0FFEE")

    func rig() throws -> AgentTests.Rig {
        try AgentTests().rig { [Self.slix2, Self.st25].contains($0.uid) }
    }

    /// A tag that is not in the field is answered at once, without a frame on the air; a tag in it is read by
    /// address: blocks as they are on the tag, or a byte range inside them.
    @Test func readsAreAnsweredFromTheTagOrAtOnceForATagNotInTheField() throws {
        let r = try rig()
        let before = r.agent.client.exchanges
        let absent = r.agent.accessRead(Self.slix2, .blocks(first: 1, count: 2), origin: "opcua:test")
        #expect(
            absent == .failure(FieldAccessError(.notInField, "E004010812345601 is not in the field of reader reader")))
        #expect(r.agent.client.exchanges == before)
        r.agent.cycle()
        let image = try #require(r.field.tag(Self.slix2)).image
        let m = r.agent.client.exchanges
        let blocks = r.agent.accessRead(Self.slix2, .blocks(first: 1, count: 2), origin: "opcua:test")
        #expect(blocks == .success(image.blocks[1] + image.blocks[2]))
        // One Read Multiple Blocks: no protection status asked first of a SLIX2 (its page protection is asked only
        // after an error answer, as the plan reads do; AccessPasswordTests).
        #expect(r.agent.client.exchanges == m + 1)
        // Bytes 5…10: the last three of block 1 and the first three of block 2.
        let bytes = r.agent.accessRead(Self.slix2, .bytes(offset: 5, length: 6), origin: "opcua:test")
        #expect(bytes == .success(Array((image.blocks[1] + image.blocks[2])[1..<7])))
        // Past the end of its 80 blocks: refused before any air.
        let n = r.agent.client.exchanges
        guard case .failure(let e) = r.agent.accessRead(Self.slix2, .blocks(first: 79, count: 2), origin: "opcua:test")
        else {
            Issue.record("a read past the end succeeded")
            return
        }
        #expect(e.kind == .outOfRange && r.agent.client.exchanges == n)
        r.agent.writer.commitNow()
        let events = try r.store.events(kind: .access)
        #expect(events.count == 4)
        #expect(events.allSatisfy { $0.origin == "opcua:test" && $0.name == "Read" })
        #expect(events.filter { $0.severity == .warning }.count == 2)
    }

    /// A write goes through the write path: verified by read-back, recorded as a write with the client as its
    /// origin; the same write again finds its data on the tag and is not written twice; a byte range keeps the bytes
    /// around it; the other tag in the field is untouched; a locked block fails the write with nothing written.
    @Test func writesGoThroughTheWritePathAndAreNotMadeTwice() throws {
        let r = try rig()
        r.agent.cycle()
        let other = try #require(r.field.tag(Self.st25)).image.blocks
        let data: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF, 0x01, 0x02, 0x03, 0x04]
        let first = r.agent.accessWrite(Self.slix2, at: .block(10), data: data, origin: "opcua:plc")
        #expect((try? first.get())?.contains("written and read back") == true, "\(first)")
        #expect(Array(try #require(r.field.tag(Self.slix2)).image.blocks[10...11].joined()) == data)
        let again = r.agent.accessWrite(Self.slix2, at: .block(10), data: data, origin: "opcua:plc")
        #expect((try? again.get())?.contains("not written again") == true, "\(again)")
        // Two bytes from byte 41 (block 10's second byte): the rest of block 10 stays.
        let part = r.agent.accessWrite(Self.slix2, at: .byte(41), data: [0x55, 0x66], origin: "opcua:plc")
        #expect((try? part.get()) != nil, "\(part)")
        #expect(try #require(r.field.tag(Self.slix2)).image.blocks[10] == [0xDE, 0x55, 0x66, 0xEF])
        #expect(try #require(r.field.tag(Self.st25)).image.blocks == other)
        // Block 0 is locked (the image's lockedBlocks): the read-back finds it so and nothing is written.
        let locked = r.agent.accessWrite(Self.slix2, at: .block(0), data: [1, 2, 3, 4], origin: "opcua:plc")
        #expect((try? locked.get()) == nil)
        if case .failure(let e) = locked { #expect(e.kind == .locked, "\(e)") }
        r.agent.writer.commitNow()
        // Two writes made (the first and the byte range), three done (the second found its data there).
        #expect(try r.store.count("writes") == 2)
        let done = try r.store.events(kind: .writeDone)
        #expect(done.count == 3 && done.allSatisfy { $0.origin == "opcua:plc" })
        #expect(try r.store.events(kind: .writeFailed).count == 1)
    }

    /// A tag that leaves in the middle of a write: the client hears that the tag did not answer, and the write is
    /// a failed write event, not a done one.
    @Test func aTagLeavingMidWriteIsNoAnswer() throws {
        let r = try rig()
        r.agent.cycle()
        r.field.inject(.leaveAfter(uid: Self.slix2, exchanges: 1))
        let result = r.agent.accessWrite(Self.slix2, at: .block(20), data: [9, 9, 9, 9], origin: "opcua:plc")
        guard case .failure(let e) = result else {
            Issue.record("the write succeeded: \(result)")
            return
        }
        #expect(e.kind == .noAnswer)
        // Gone now: a write to it is answered at once, and is a failed write event too (one per write asked).
        let absent = r.agent.accessWrite(
            try UID(parsing: "E004010099999999"), at: .block(1), data: [1, 2, 3, 4], origin: "opcua:plc")
        #expect((try? absent.get()) == nil)
        r.agent.writer.commitNow()
        let failed = try r.store.events(kind: .writeFailed)
        #expect(failed.count == 2 && failed.allSatisfy { $0.origin == "opcua:plc" }, "\(failed)")
        #expect(failed.last?.detail.contains("not in the field") == true)
        #expect(try r.store.events(kind: .writeDone).isEmpty)
    }

    /// A client's lock (OPC UA's LockTag): whole blocks only (ISO 15693's Lock Block, 0x22, is per block and for ever:
    /// docs/reference/iso15693.md), so a range that is not whole blocks locks nothing; each block is read back locked,
    /// one already locked is not locked again; the other tag in the field keeps its locks; a tag not in the field is
    /// answered at once; every lock is a write event with the client as origin.
    @Test func aLockCoversWholeBlocksAndIsReadBackLocked() throws {
        let r = try rig()
        r.agent.cycle()
        let before = try #require(r.field.tag(Self.slix2)).image.locked
        let otherBefore = try #require(r.field.tag(Self.st25)).image.locked
        guard case .failure(let e) = r.agent.accessLock(Self.slix2, .bytes(offset: 6, length: 4), origin: "opcua:test")
        else {
            Issue.record("a lock of half blocks succeeded")
            return
        }
        let unchanged = try #require(r.field.tag(Self.slix2)).image.locked
        #expect(e.kind == .outOfRange && unchanged == before)
        let locked = r.agent.accessLock(Self.slix2, .bytes(offset: 8, length: 8), origin: "opcua:test")
        #expect(
            locked == .success("block 0x02 locked and read back locked; block 0x03 locked and read back locked"),
            "\(locked)")
        let after = try #require(r.field.tag(Self.slix2)).image.locked
        #expect(after[2] && after[3] && after[1] == before[1] && after[4] == before[4])
        #expect(try #require(r.field.tag(Self.st25)).image.locked == otherBefore)
        let again = r.agent.accessLock(Self.slix2, .blocks(first: 2, count: 1), origin: "opcua:test")
        #expect(again == .success("block 0x02 already locked (read back); not locked again"))
        let absent = r.agent.accessLock(
            try UID(parsing: "E004010899999999"), .blocks(first: 0, count: 1), origin: "opcua:test")
        #expect((try? absent.get()) == nil)
        r.agent.writer.commitNow()
        let events = try r.store.events(kind: .writeDone) + r.store.events(kind: .writeFailed)
        #expect(events.filter { $0.detail.hasPrefix("lock from opcua:test") }.count == 4, "\(events.map(\.detail))")
        #expect(events.allSatisfy { $0.origin == "opcua:test" })
    }
}
