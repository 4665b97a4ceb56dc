import ISO15693
import Readers
import VLoggerStore
import VLoggerModel

/// Moves the records of a reader's own buffer (FEIG buffered read mode) into the store without losing or
/// doubling one, across gateway crashes and restarts:
///
/// 1. the oldest records are read (the reader keeps returning the same head until it is cleared);
/// 2. their readings and a mark (how many records, their bytes) are committed in one transaction;
/// 3. the reader is told to clear what it returned;
/// 4. the mark goes.
///
/// A crash between 2 and 3 leaves the mark: the next drain reads that many records, finds the same bytes, and
/// clears them without storing them again. A crash between 3 and 4 leaves a mark whose records are gone: the
/// buffer's head differs, the mark goes, and the new records are stored as usual. A reader that lost power
/// lost its buffer (FEIG: "in case of power down … all datasets got lost"); nothing on the gateway can
/// bring those back.
public final class BufferDrain {
    public struct Report: Sendable, Equatable {
        /// Records fetched and stored this time.
        public var records = 0
        public var readings = 0
        /// Records that a commit before a crash had stored already: cleared, not stored again.
        public var alreadyStored = 0
        /// A mark whose records were no longer at the buffer's head (cleared before the crash, or lost).
        public var staleMark = false
        public var uids: [UID] = []
        /// Each tag's newest record of this drain (its blocks from `firstBlock`), for the rules.
        public var latest: [UID: Latest] = [:]
    }

    /// A tag's newest record in a drain: the block data (from `firstBlock`) and the fields decoded from it.
    public struct Latest: Sendable, Equatable {
        public var blocks: [[UInt8]]
        public var decoded: [String: FieldValue]
    }

    public let reader: BufferedReader
    public let store: Store
    public let gateway: String
    public let readerID: String
    public let location: String?
    /// The block the records' data start at (the reader's buffered-read configuration chooses the blocks).
    public let firstBlock: BlockNumber
    /// Records fetched per Read Buffer.
    public let maxRecords: Int
    /// Read Buffer rounds per drain at most (the buffer fills while the gateway catches up).
    public let maxRounds: Int

    /// Decodes a record's fields (the plan's fields that fall in its blocks): (uid, bytes from `firstBlock`,
    /// block size) → fields. Nil: readings carry no decoded fields.
    public var decode: (@Sendable (UID, [UInt8], Int) -> [(name: String, value: FieldValue)])?

    public init(
        reader: BufferedReader, store: Store, gateway: String, readerID: String, location: String?,
        firstBlock: BlockNumber,
        maxRecords: Int = 100, maxRounds: Int = 50
    ) {
        self.reader = reader
        self.store = store
        self.gateway = gateway
        self.readerID = readerID
        self.location = location
        self.firstBlock = firstBlock
        self.maxRecords = max(1, maxRecords)
        self.maxRounds = max(1, maxRounds)
    }

    public enum Failure: Error, CustomStringConvertible {
        case reader(ReaderError)
        case store(StoreError)
        public var description: String {
            switch self {
            case .reader(let e): return "reader buffer: \(e)"
            case .store(let e): return "reader buffer: \(e)"
            }
        }
    }

    public func drain(now: Millis) throws(Failure) -> Report {
        var report = Report()
        do {
            if let mark = try store.bufferMark(reader: readerID) {
                let head = try reader.readBuffer(maxRecords: mark.records)
                if head.count == mark.records && head.flatMap(\.raw) == mark.raw {
                    try reader.clearBuffer()
                    report.alreadyStored = mark.records
                } else {
                    report.staleMark = true
                }
                try store.write(Self.batch(marks: [.cleared(readerID, time: now)]))
            }
            for _ in 0..<maxRounds {
                let records = try reader.readBuffer(maxRecords: maxRecords)
                if records.isEmpty { break }
                var batch = Batch()
                for r in records {
                    guard let uid = r.uid else { continue }
                    if !report.uids.contains(uid) { report.uids.append(uid) }
                    batch.add(
                        TagRecord(
                            uid: uid, seen: now, manufacturer: uid.manufacturer.description, reader: readerID,
                            location: location))
                    guard !r.blocks.isEmpty else { continue }
                    let data = r.blocks.flatMap { $0 }
                    let decoded = decode?(uid, data, r.blocks[0].count) ?? []
                    batch.readings.append(
                        Reading(
                            time: now, gateway: gateway, reader: readerID, location: location, uid: uid,
                            first: firstBlock,
                            count: r.blocks.count, data: data, decoded: decoded))
                    report.latest[uid] = Latest(
                        blocks: r.blocks,
                        decoded: Dictionary(decoded.map { ($0.name, $0.value) }, uniquingKeysWith: { _, b in b }))
                }
                batch.bufferMarks = [
                    BufferMark(reader: readerID, records: records.count, raw: records.flatMap(\.raw), time: now)
                ]
                try store.write(batch)
                report.records += records.count
                report.readings += batch.readings.count
                try reader.clearBuffer()
                try store.write(Self.batch(marks: [.cleared(readerID, time: now)]))
                if records.count < maxRecords { break }
            }
        } catch let e as ReaderError {
            throw .reader(e)
        } catch let e as StoreError {
            throw .store(e)
        } catch {
            throw .store(StoreError("\(error)"))
        }
        return report
    }

    static func batch(marks: [BufferMark]) -> Batch {
        var b = Batch()
        b.bufferMarks = marks
        return b
    }
}
