import Foundation
import ISO15693
import Testing
@testable import VLoggerStore
import VLoggerModel

/// The store under file-system abuse. Facts from SQLite's documentation: in WAL mode a commit goes to the
/// `-wal` file and reaches the database file only at a checkpoint (sqlite.org/wal.html, "Checkpointing");
/// `PRAGMA wal_checkpoint(TRUNCATE)` copies every frame back and truncates the -wal to zero bytes
/// (sqlite.org/pragma.html#pragma_wal_checkpoint); `SQLITE_FCNTL_HAS_MOVED` tells whether the file a
/// connection holds was unlinked or renamed (sqlite.org/c3ref/c_fcntl_begin_atomic_write.html).
@Suite struct StoreFileTests {
    func batch(_ range: Range<Int>) -> Batch {
        var b = Batch()
        b.readings = range.map { reading($0) }
        return b
    }

    @Test func aCleanCloseLeavesEveryCommitInTheDatabaseFileAlone() throws {
        let path = scratchPath("c.db")
        let s = try Store(path: path)
        try s.write(batch(0..<75))
        s.close()
        // A backup of the .db alone (a copy, a temp cleaner that removed the -wal) holds all 75.
        let copy = scratchPath("copy.db")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        let ro = try Store(path: copy, readOnly: true)
        #expect(try ro.count("readings") == 75)
        ro.close()
        let walSize = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(walSize == 0)
    }

    @Test func aRemovedWALStopsTheWriterAndItsCommitsAreMergedIntoTheStore() throws {
        let path = scratchPath("w.db")
        let s = try Store(path: path)
        try s.write(batch(0..<40))
        try s.write(batch(40..<60))
        try FileManager.default.removeItem(atPath: path + "-wal")
        var caught: StoreError?
        do { try s.write(batch(60..<70)) } catch { caught = error }
        #expect(caught?.isFatal == true, "\(String(describing: caught))")
        #expect(
            caught?.message.contains("-wal") == true && caught?.message.contains("merged into") == true,
            "\(String(describing: caught))")
        // Nothing more is written, even when asked again.
        #expect(throws: StoreError.self) { try s.write(batch(70..<71)) }
        s.close()
        let again = try Store(path: path, readOnly: true)
        #expect(try again.count("readings") == 60)
    }

    @Test func aReplacedStoreFileIsLeftAloneAndWhatTheRunHadIsSaved() throws {
        let path = scratchPath("r.db")
        let backup = scratchPath("backup.db")
        do {
            let b = try Store(path: backup)
            try b.write(batch(0..<42))
            b.close()
        }
        let s = try Store(path: path)
        try s.write(batch(0..<100))
        // mv backup.db vlogger.db under the running store.
        #expect(rename(backup, path) == 0)
        var caught: StoreError?
        do { try s.write(batch(100..<110)) } catch { caught = error }
        #expect(
            caught?.isFatal == true && caught?.message.contains("removed or replaced") == true,
            "\(String(describing: caught))")
        s.close()
        // The replacement keeps its 42 rows; the run's 100 are in the orphaned copy the message names.
        let restored = try Store(path: path, readOnly: true)
        #expect(try restored.count("readings") == 42)
        restored.close()
        let folder = (path as NSString).deletingLastPathComponent
        let orphans = try FileManager.default.contentsOfDirectory(atPath: folder).filter {
            $0.hasPrefix("r.db.orphaned-") && $0.hasSuffix(".db")
        }
        #expect(orphans.count == 1)
        if let o = orphans.first {
            #expect(caught?.message.contains(o) == true)
            let saved = try Store(path: folder + "/" + o, readOnly: true)
            #expect(try saved.count("readings") == 100)
        }
    }

    /// An idle gateway (no batch after the change) finds it at close, saves what it held and says so; every other
    /// write path (the write queue here) is refused once it is known.
    @Test func aStoreReplacedWithNoBatchAfterwardsIsFoundAtClose() throws {
        let path = scratchPath("i.db")
        let backup = scratchPath("ib.db")
        do {
            let b = try Store(path: backup)
            try b.write(batch(0..<42))
            b.close()
        }
        let s = try Store(path: path)
        try s.write(batch(0..<7))
        #expect(rename(backup, path) == 0)
        var queued: StoreError?
        let uid = try UID(parsing: "E008010000004212")
        do { try s.enqueue(QueuedWrite(created: 0, uid: uid, first: 1, data: [1, 2, 3, 4])) } catch { queued = error }
        #expect(queued?.isFatal == true, "\(String(describing: queued))")
        s.close()
        #expect(s.identityError?.message.contains("removed or replaced") == true)
        let kept = try Store(path: path, readOnly: true)
        #expect(try kept.count("readings") == 42)
        kept.close()
    }

    /// A -wal removed before the first batch (the migrations made it at open) is noticed too.
    @Test func aWALRemovedBeforeTheFirstBatchIsNoticed() throws {
        let path = scratchPath("f.db")
        let s = try Store(path: path)
        try FileManager.default.removeItem(atPath: path + "-wal")
        var caught: StoreError?
        do { try s.write(batch(0..<3)) } catch { caught = error }
        #expect(caught?.isFatal == true && caught?.message.contains("-wal") == true, "\(String(describing: caught))")
        s.close()
    }

    @Test func oneRunPerStore() throws {
        let path = scratchPath("l.db")
        let first = try StoreRunLock(storePath: path)
        var caught: StoreError?
        do { _ = try StoreRunLock(storePath: path) } catch { caught = error }
        #expect(
            caught?.message.contains("another vlogger run (pid \(getpid()))") == true, "\(String(describing: caught))")
        first.release()
        // Released (or its process gone): the next run takes it.
        let second = try StoreRunLock(storePath: path)
        second.release()
    }

    @Test func aDeviceOrFolderIsNotAStore() {
        for (p, kind) in [("/dev/null", "a character device"), (NSTemporaryDirectory(), "a folder")] {
            var caught: StoreError?
            do { _ = try Store(path: p) } catch { caught = error }
            #expect(caught?.message.contains(kind) == true, "\(p): \(String(describing: caught))")
        }
    }

    @Test func theWriteQueueIsBoundedOldestFirstAndIdempotent() throws {
        let path = scratchPath("q.db")
        let s = try Store(path: path)
        defer { s.close() }
        let uid = try UID(parsing: "E008010000004212")
        func w(_ block: Int) -> QueuedWrite {
            QueuedWrite(
                created: Millis(block), uid: uid, first: BlockNumber(exactly: block & 0xFF)!, data: [1, 2, 3, 4])
        }
        let first = try s.enqueue(w(1))
        try s.enqueue((1..<Store.writeQueueLimit).map(w))
        var caught: StoreError?
        do { try s.enqueue(w(2)) } catch { caught = error }
        #expect(
            caught?.code == nil && caught?.message.contains("takes at most \(Store.writeQueueLimit)") == true,
            "\(String(describing: caught))")
        // The service's copy is every queued write, the oldest first: a flood never hides the first one.
        let oldest = try s.queuedWrites(state: .queued, limit: Store.writeQueueLimit, oldestFirst: true)
        #expect(oldest.count == Store.writeQueueLimit && oldest.first?.id == first)
        // The same Idempotency-Key queues once.
        #expect(try s.cancelWrite(first))
        let a = try s.enqueue(w(3), idempotencyKey: "k-1")
        let b = try s.enqueue(w(3), idempotencyKey: "k-1")
        #expect(!a.replayed && b.replayed && a.id == b.id && b.state == .queued)
        #expect(try s.cancelWrite(a.id))
        #expect(try s.enqueue(w(3), idempotencyKey: "k-1").state == .cancelled)
        var other: StoreError?
        do { _ = try s.enqueue(w(4), idempotencyKey: "k-1") } catch { other = error }
        #expect(other?.message.contains("was used for another write") == true, "\(String(describing: other))")
    }

    /// A damaged page in the middle of the readings (one 4 KiB page overwritten with 0xFF, as a failed sector
    /// reads back): a plain read stops there, `salvage` passes over that page's rows and keeps those after it.
    @Test func salvageKeepsTheRowsPastAHole() throws {
        let path = scratchPath("h.db")
        let s = try Store(path: path)
        for k in 0..<20 { try s.write(batch((k * 200)..<((k + 1) * 200))) }
        let instance = try s.instance()
        s.close()
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let h = try #require(FileHandle(forUpdatingAtPath: path))
        try h.seek(toOffset: UInt64(size / 2 / 4096 * 4096))
        try h.write(contentsOf: Data(repeating: 0xFF, count: 4096))
        try h.close()
        var plain: StoreError?
        do { _ = try Store(path: path, readOnly: true).readings() } catch { plain = error }
        #expect(plain?.code.map { $0 & 0xFF } == 11, "\(String(describing: plain))")
        let saved = scratchPath("saved.db")
        let report = try Store.salvage(from: path, into: saved)
        let readings = try #require(report.tables.first { $0.name == "readings" })
        #expect(readings.copied > 3000 && readings.copied < 4000 && !readings.skipped.isEmpty, "\(readings)")
        let out = try Store(path: saved, readOnly: true)
        let ids = try out.readings().map(\.data.last)
        #expect(ids.count == readings.copied)
        // Rows from both sides of the hole, the last batch's among them (reading 3999 carries 3999 & 0xFF).
        #expect(ids.last == UInt8(3999 & 0xFF))
        // The saved store is the same store to the central and the MQTT outputs (issue 46, item 15): its instance.
        #expect(try out.instance() == instance)
    }
}
