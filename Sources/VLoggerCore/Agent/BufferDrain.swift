import ISO15693
import Readers
import VLoggerStore
import VLoggerModel

/// Moves the records of a reader's own buffer (FEIG buffered read mode) into the store without losing or
/// doubling one, across gateway crashes and restarts:
///
/// 1. the oldest records are read (the reader keeps returning the same head until it is cleared);
/// 2. their readings and a mark (how many records, their bytes) are committed in one transaction, through the store
///    writer, whose commit the drain waits for (`StoreWriter.commit`: it is the point of the order);
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
    /// The store writer: a drain's batches go through it (the one write path), each committed before the reader
    /// is told to clear what it returned.
    public let writer: StoreWriter
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
        reader: BufferedReader, writer: StoreWriter, gateway: String, readerID: String, location: String?,
        firstBlock: BlockNumber,
        maxRecords: Int = 100, maxRounds: Int = 50
    ) {
        self.reader = reader
        self.writer = writer
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
            if let mark = try writer.store.bufferMark(reader: readerID) {
                let head = try reader.readBuffer(maxRecords: mark.records)
                if head.count == mark.records && head.flatMap(\.raw) == mark.raw {
                    try reader.clearBuffer()
                    report.alreadyStored = mark.records
                } else {
                    report.staleMark = true
                }
                try writer.commit(Self.batch(marks: [.cleared(readerID, time: now)]))
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
                try writer.commit(batch)
                report.records += records.count
                report.readings += batch.readings.count
                try reader.clearBuffer()
                try writer.commit(Self.batch(marks: [.cleared(readerID, time: now)]))
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

/// The buffered read mode of one reader (`read-mode = "buffer"`): each cycle drains the reader's own buffer through
/// a `BufferDrain` and evaluates the rules on what the records hold.
final class BufferedPolling {
    private var drain: BufferDrain?
    /// What the buffer drains did so far.
    private(set) var totals = BufferDrain.Report()

    /// One cycle of a reader in buffered read mode: its buffer drained into the store, the rules on what the
    /// records hold.
    func cycle(_ report: inout CycleReport, now: Millis, agent: Agent) {
        let (session, readerConfig, config, log) = (agent.session, agent.readerConfig, agent.config, agent.log)
        /// The reader's own buffer (nil while a reader that is opened again at each command is closed).
        func bufferedReader() -> (any BufferedReader)? { session.reader.buffer }
        if bufferedReader() == nil {
            // A reader not open yet (ReopeningReader): any command opens it.
            do { try session.reader.fieldOn() } catch {
                log.error(uid: nil, kind: "buffer", ClientError.reader(error, command: "open"))
                report.readerFailed = true
                return
            }
        }
        guard let buffered = bufferedReader() else {
            log.error(
                uid: nil, kind: "buffer",
                ClientError.invalid(
                    "reader \(readerConfig.id) (\(session.reader.name)) has no buffer of its own; read-mode = \"buffer\" needs \(ReaderDrivers.names(with: .bufferedRead))"
                ))
            report.readerFailed = true
            return
        }
        if drain == nil || drain?.reader !== buffered {
            drain = BufferDrain(
                reader: buffered, writer: agent.writer, gateway: config.gatewayID, readerID: readerConfig.id,
                location: readerConfig.location, firstBlock: readerConfig.bufferBlock)
        }
        // The plan's fields that lie in the records' blocks are decoded as in polling (the plan as configured now).
        let plans = config
        let first = readerConfig.bufferBlock
        drain?.decode = { uid, data, blockSize in
            plans.plan(for: uid, model: ICModel.identify(uid: uid))?
                .decodedFields(memory: data, first: first, count: data.count / max(1, blockSize), blockSize: blockSize)
                ?? []
        }
        do {
            guard let drain else { return }
            let r = try drain.drain(now: now)
            totals.records += r.records
            totals.readings += r.readings
            totals.alreadyStored += r.alreadyStored
            if r.staleMark { totals.staleMark = true }
            report.tags = r.uids
            report.readings = r.readings
            log.counters.readings += r.readings
            // The rules, on what the records hold: UID, manufacturer and model rules, block values and decoded
            // fields of the blocks the reader was set to read. Lock rules are not evaluated (a buffered record has
            // no lock status), nor are rules on blocks outside the records.
            for uid in r.uids {
                // A record without blocks still gives the UID.
                let latest = r.latest[uid] ?? BufferDrain.Latest(blocks: [], decoded: [:])
                let model = ICModel.identify(uid: uid)
                var facts = TagFacts(uid: uid, model: model, blockSize: latest.blocks.first?.count ?? 0)
                for (i, b) in latest.blocks.enumerated() { facts.blocks[readerConfig.bufferBlock.int + i] = b }
                facts.fields = latest.decoded
                agent.evaluation.evaluate(agent.evaluation.applicable(uid: uid, model: model), facts)
            }
            if r.alreadyStored > 0 {
                log.logger.notice(
                    "reader \(readerConfig.id): \(r.alreadyStored) record(s) at the head of the reader's buffer were stored before the gateway stopped; cleared, not stored again"
                )
            }
        } catch {
            switch error {
            case .reader(let e):
                log.error(uid: nil, kind: "buffer", ClientError.reader(e, command: "Read Buffer"))
                switch e {
                case .device, .notSupported, .fieldOff, .readerStatus: report.readerFailed = true
                default: break
                }
            case .store(let e):
                log.logger.error(
                    "reader \(readerConfig.id): buffer drain: \(e); the records stay in the reader's buffer")
                report.readerFailed = true
            }
        }
    }
}
