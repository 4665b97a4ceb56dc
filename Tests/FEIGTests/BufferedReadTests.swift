import FEIG
import FEIGEmulator
import Foundation
import ISO15693
import Readers
import TagImages
import TagSimulator
import TestDrivers
import Testing
import VLoggerCore
import VLoggerStore
import DriverFEIG

/// FEIG buffered read mode: the reader's own records drained into the store, cleared only after the commit,
/// nothing lost or stored twice across a gateway that stops anywhere between the steps.
@Suite(.drivers) struct BufferedReadTests {
    /// A Read Buffer reply in the layout of the manuals (ID ISC.LRU3000 pp. 174–177: TR-DATA1, DATA-SETS, records
    /// of REC-LEN, IDD, DB, TIME) parses, and every length is checked against what is left.
    @Test func recordLayout() throws {
        let uid: [UInt8] = [0xE0, 0x04, 0x01, 0x50, 0x12, 0x34, 0x56, 0x78]
        let data = FEIGBuffer.encode(
            trData1: FEIGBuffer.iddBit | FEIGBuffer.dbBit | FEIGBuffer.timeBit,
            records: [(uid, [[4, 3, 2, 1], [8, 7, 6, 5]], [0, 0, 0, 9])])
        // TR-DATA1, DATA-SETS 1, REC-LEN 28: IDD (TR-TYPE 03, IDDT, IDD-LEN 8, UID), DB-N 2, DB-SIZE 4, 8 bytes, TIME.
        #expect(data.prefix(5) == [0x23, 0x00, 0x01, 0x00, 0x1C])
        let reply = try FEIGBuffer.parse(data)
        #expect(
            reply.records.count == 1 && reply.records[0].uid == uid
                && reply.records[0].blocks == [[4, 3, 2, 1], [8, 7, 6, 5]])
        #expect(reply.records[0].time == [0, 0, 0, 9] && reply.records[0].raw.count == 0x1C && !reply.lsbFirst)
        for cut in 1..<data.count {
            #expect(throws: FEIGReplyError.self) { try FEIGBuffer.parse(Array(data.prefix(cut))) }
        }
        #expect(throws: FEIGReplyError.self) { try FEIGBuffer.parse(data + [0]) }
    }

    /// A reader that fails where told: its clear (the gateway stops after the commit, before the reader cleared).
    final class FailingClear: BufferedReader {
        let inner: BufferedReader
        var failClears = 0
        init(_ inner: BufferedReader) { self.inner = inner }
        func readBuffer(maxRecords: Int) throws(ReaderError) -> [BufferedRecord] {
            try inner.readBuffer(maxRecords: maxRecords)
        }
        func clearBuffer() throws(ReaderError) {
            if failClears > 0 { failClears -= 1; throw .device("the gateway stopped here") }
            try inner.clearBuffer()
        }
    }

    @Test func drainStoresEveryRecordOnceAcrossStops() throws {
        let (field, images) = DriverTests.field()
        let emulator = FEIGReaderEmulator(field: field)
        let server = try FEIGTCPServer(emulator: emulator)
        server.start()
        defer { server.stop() }
        // Readings from before the gateway started: three rounds of the reader's own reads, 2 blocks each.
        for _ in 0..<3 { emulator.readIntoBuffer(first: 0, count: 2) }
        emulator.bufferedReadMode = true
        #expect(emulator.bufferedRecords == 3 * images.count)

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vlogger-brm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Store(path: dir.appendingPathComponent("v.db").path)
        defer { store.close() }
        let reader = try FEIGReader.open(try FEIGDevice.parse("tcp://127.0.0.1:\(server.port),timeout=500"))
        defer { reader.close() }
        // In buffered read mode the [0xB0] commands are refused by the reader (STATUS 0x82), typed.
        #expect(throws: ClientError.self) {
            try ISO15693Client(reader: reader).readBlocks(images[0].uid, first: 0, count: 1)
        }

        let failing = FailingClear(reader)
        failing.failClears = 1
        let writer = StoreWriter(store: store, batchSize: 50, flushIntervalMs: 2000)
        let commits = CommitCount()
        writer.onCommit = { _, _, _, _ in commits.add() }
        let drain = BufferDrain(
            reader: failing, writer: writer, gateway: "gw", readerID: "feig-1", location: "dock", firstBlock: 0,
            maxRecords: 10)
        // Stop 1: the first 10 records committed, the clear never reached the reader.
        #expect(throws: BufferDrain.Failure.self) { try drain.drain(now: 1_000) }
        #expect(try store.count("readings") == 10)
        #expect(try store.bufferMark(reader: "feig-1")?.records == 10)
        #expect(emulator.bufferedRecords == 3 * images.count)
        // The next drain finds those 10 again at the head: cleared, not stored twice; the rest stored.
        let r = try drain.drain(now: 2_000)
        #expect(r.alreadyStored == 10 && r.records == 3 * images.count - 10 && !r.staleMark)
        #expect(try store.count("readings") == 3 * images.count)
        #expect(try store.bufferMark(reader: "feig-1") == nil)
        #expect(emulator.bufferedRecords == 0)
        // Every batch went through the store writer and is in its totals (the drain waits for each commit).
        #expect(writer.stats.committedReadings == 3 * images.count && commits.value == writer.stats.commits)
        // Each reading is the tag's memory (blocks 0 and 1, in memory order after the per-block reversal).
        for image in images {
            let rows = try store.readings(uid: image.uid)
            #expect(
                rows.count == 3 && rows.allSatisfy { $0.data == image.blocks[0] + image.blocks[1] && $0.block == 0 },
                "\(image.uid)")
        }

        // Stop 2: a mark whose records the reader had already cleared (the gateway stopped after the clear):
        // the buffer's head differs, the mark goes, new records are stored as usual.
        emulator.bufferedReadMode = false
        emulator.readIntoBuffer(first: 0, count: 2)
        emulator.bufferedReadMode = true
        var stale = Batch()
        stale.bufferMarks = [
            BufferMark(reader: "feig-1", records: 2, raw: [0, 7, 1, 2, 3, 0, 7, 1, 2, 3], time: 2_500)
        ]
        try store.write(stale)
        let r2 = try drain.drain(now: 3_000)
        #expect(r2.staleMark && r2.alreadyStored == 0 && r2.records == images.count)
        #expect(try store.count("readings") == 4 * images.count)

        // A power cut empties the reader's buffer; the drain finds nothing (what the reader lost is lost).
        emulator.bufferedReadMode = false
        emulator.readIntoBuffer(first: 0, count: 2)
        emulator.powerCycle()
        emulator.bufferedReadMode = true
        #expect(try drain.drain(now: 4_000).records == 0)
        #expect(try store.count("readings") == 4 * images.count)
    }
}

/// A count shared with the store writer's commit callback.
final class CommitCount: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.withLock { n += 1 } }
    var value: Int { lock.withLock { n } }
}
