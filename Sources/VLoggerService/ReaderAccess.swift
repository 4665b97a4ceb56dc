import Foundation
import ISO15693
import NIOConcurrencyHelpers
import VLoggerCore
import VLoggerModel
import VLoggerOutbox
import VLoggerStore

/// The gateway's `FieldAccess`: each operation on a reader's polling thread between two of its cycles (the polling
/// job's `exclusive`), with its agent; a queued write in the store's write queue, made when the tag is next seen.
/// Servers are made before the polling jobs: the jobs are attached once they exist.
final class ReaderAccess: FieldAccess, @unchecked Sendable {
    private let jobs = NIOLockedValueBox<[String: PollingJob]>([:])
    let store: Store
    let queued: Wakeup
    /// Operations waiting for or using each reader: past the limit an access is `busy` at once, and a reader that
    /// hangs holds no more than its own.
    private let waiting = NIOLockedValueBox<[String: Int]>([:])
    static let maxWaiting = 16

    init(store: Store, queued: Wakeup) {
        self.store = store
        self.queued = queued
    }

    func attach(_ list: [PollingJob]) {
        jobs.withLockedValue { j in for job in list { j[job.agent.readerConfig.id] = job } }
    }

    /// `refused`: what the agent records when the reader is down (a write's failed write event).
    private func run<T: Sendable>(
        _ reader: String, refused: (@Sendable (Agent, FieldAccessError) -> Void)? = nil,
        _ body: @escaping @Sendable (Agent) -> Result<T, FieldAccessError>
    )
        async -> Result<T, FieldAccessError>
    {
        guard let job = jobs.withLockedValue({ $0[reader] }) else {
            return .failure(FieldAccessError(.noReader, "this gateway has no reader \(reader)"))
        }
        let admitted = waiting.withLockedValue { w -> Bool in
            guard w[reader, default: 0] < Self.maxWaiting else { return false }
            w[reader, default: 0] += 1
            return true
        }
        guard admitted else {
            return .failure(
                FieldAccessError(.busy, "\(Self.maxWaiting) accesses wait for reader \(reader); try again"))
        }
        defer { waiting.withLockedValue { $0[reader, default: 1] -= 1 } }
        let agent = UncheckedBox(job.agent)
        return await job.exclusive { _ in
            guard agent.value.readerHealthy else {
                let e = FieldAccessError(.readerDown, "reader \(reader) fails its cycles now")
                refused?(agent.value, e)
                return .failure(e)
            }
            return body(agent.value)
        }
    }

    func scan(reader: String, origin: String?) async -> Result<[UID], FieldAccessError> {
        await run(reader) { $0.accessScan(origin: origin) }
    }

    func read(reader: String, uid: UID, _ range: TagRange, origin: String, password: TagPassword?) async -> Result<
        [UInt8], FieldAccessError
    > {
        await run(reader) { $0.accessRead(uid, range, origin: origin, password: password) }
    }

    func write(
        reader: String, uid: UID, at start: TagRange.Start, data: [UInt8], origin: String, password: TagPassword?
    )
        async -> Result<String, FieldAccessError>
    {
        await run(
            reader, refused: { $0.recordWrite(uid, at: start, data: data, origin: origin, .failure($1)) }
        ) { $0.accessWrite(uid, at: start, data: data, origin: origin, password: password) }
    }

    func lock(reader: String, uid: UID, _ range: TagRange, origin: String, password: TagPassword?) async -> Result<
        String, FieldAccessError
    > {
        await run(reader, refused: { $0.recordLock(uid, range, origin: origin, .failure($1)) }) {
            $0.accessLock(uid, range, origin: origin, password: password)
        }
    }

    func queueWrite(reader: String, uid: UID, firstBlock: Int, data: [UInt8], origin: String) async
        -> Result<Int64, FieldAccessError>
    {
        guard jobs.withLockedValue({ $0[reader] }) != nil else {
            return .failure(FieldAccessError(.noReader, "this gateway has no reader \(reader)"))
        }
        guard let first = BlockNumber(exactly: firstBlock) else {
            return .failure(FieldAccessError(.outOfRange, "block \(firstBlock) is not a block number (0…65535)"))
        }
        guard !data.isEmpty else { return .failure(FieldAccessError(.invalid, "no data to write")) }
        let w = QueuedWrite(
            created: Millis.now(), uid: uid, first: first, data: data, reader: reader, origin: origin)
        let (store, queued) = (self.store, self.queued)
        let result: Result<Int64, FieldAccessError> = await Blocking.run {
            do throws(StoreError) { return .success(try store.enqueue(w)) } catch {
                return .failure(FieldAccessError(e: error))
            }
        }
        if case .success = result { queued.signal() }
        return result
    }
}

extension FieldAccessError {
    init(e: StoreError) {
        // The store's refusals (no SQLite code): past the end of a known tag, not whole blocks, a full queue.
        let m = e.message
        self.init(m.contains("past the end") || m.contains("whole number") ? .outOfRange : .busy, m)
    }
}
