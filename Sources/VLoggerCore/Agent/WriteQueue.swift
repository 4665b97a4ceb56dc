import Foundation
import ISO15693
import Readers
import VLoggerOutbox
import VLoggerStore
import VLoggerModel

/// The queued writes as the polling jobs see them: a copy of the store's queue, refreshed by the service
/// (not read from the store on a polling thread), with the writes each job has already handled so that one
/// is not tried again before its outcome is committed.
public final class PendingWrites: @unchecked Sendable {
    private let lock = NSLock()
    private var byUID: [UID: [QueuedWrite]] = [:]
    private var handled = Set<Int64>()

    public init() {}

    /// Replaces the copy with the store's queued writes.
    public func refresh(from store: Store) throws(StoreError) {
        // Every queued write, oldest first (the queue is bounded by Store.writeQueueLimit): a flood of new writes
        // never hides an older one.
        let queued = try store.queuedWrites(state: .queued, limit: Store.writeQueueLimit, oldestFirst: true)
        let grouped = Dictionary(grouping: queued, by: \.uid)
        let still = Set(queued.map(\.id))
        lock.withLock {
            byUID = grouped
            // A handled write whose outcome is committed has left the queue: forget it (the set stays small
            // over months).
            handled.formIntersection(still)
        }
    }

    /// The writes for `uid` that `reader` may make, oldest first.
    func writes(for uid: UID, reader: String) -> [QueuedWrite] {
        lock.withLock {
            (byUID[uid] ?? []).filter { !handled.contains($0.id) && ($0.reader == nil || $0.reader == reader) }
        }
    }

    func markHandled(_ id: Int64) { _ = lock.withLock { handled.insert(id) } }

    public var count: Int {
        lock.withLock { byUID.values.reduce(0) { $0 + $1.filter { !handled.contains($0.id) }.count } }
    }
}

extension Agent {
    /// Makes the queued writes of a tag that is in the field now. The read-back decides: data already on the
    /// tag (a write made before a crash cut off its record) is done without writing again; a locked block
    /// fails the write; a tag that leaves mid-write keeps its write queued for the next time it is seen.
    func performQueuedWrites(_ uid: UID, memory: TagMemory) {
        guard let queue = writeQueue else { return }
        for w in queue.writes(for: uid, reader: readerConfig.id) {
            let now = clock.now()
            func finish(_ state: QueuedWrite.State, _ result: String) {
                queue.markHandled(w.id)
                writer.add(WriteOutcome(id: w.id, state: state, result: result, time: now))
                let severity: Event.Severity = state == .done ? .info : .warning
                writer.add(
                    Event(
                        time: now, gateway: config.gatewayID, reader: readerConfig.id, location: readerConfig.location,
                        uid: uid,
                        kind: state == .done ? .writeDone : state == .expired ? .writeExpired : .writeFailed,
                        name: "\(w.id)",
                        severity: severity,
                        detail: "queued write \(w.id) (\(w.data.count) bytes from \(w.first)): \(result)",
                        origin: w.origin ?? "queue"))
                logger.notice(
                    "queued write \(w.id) to \(uid): \(state.rawValue): \(result)", metadata: ["uid": "\(uid)"])
            }
            if let e = w.expires, now > e {
                finish(.expired, "expired \(TimeSpec.format(e)) before the tag was seen"); continue
            }
            switch carryOut(w, uid, memory: memory, now: now) {
            case .none: continue  // the tag left or the air was bad: still queued, tried when the tag is seen again
            case .some((let state, let result)): finish(state, result)
            }
        }
    }

    /// Makes one write (queued, or a server's client's: `id` 0) to a tag in the field: the read-back decides (data
    /// already there is not written again; a locked block fails it), then written and verified, then locked when the
    /// write asks. The write made is recorded (with the write's origin); the outcome is the caller's to record. Nil
    /// when the tag did not answer (it left, or the air was bad): nothing was recorded as written. `given`: a client's
    /// password (`TagPassword`); a password of it the tag rejects is not remembered as the secrets file's, and a
    /// refusal is `.rejected` for a client (its password error) where a queued write fails.
    func carryOut(_ w: QueuedWrite, _ uid: UID, memory: TagMemory, now: Millis, given: TagPassword? = nil) -> (
        QueuedWrite.State, String
    )? {
        let option: Bool? = w.flags?.contains(.option) == true ? true : nil
        do {
            let size = memory.blockSize
            let count = w.operation == .lock ? 1 : w.data.count / size
            if w.operation == .lock {
                guard w.first.int < memory.blockCount else {
                    return (.failed, "block \(w.first) is past the end of the tag (\(memory.blockCount) blocks)")
                }
            } else {
                guard !w.data.isEmpty, w.data.count % size == 0 else {
                    return (.failed, "\(w.data.count) bytes is not a whole number of this tag's \(size)-byte blocks")
                }
                guard count <= memory.blockCount, w.first.int <= memory.blockCount - count else {
                    return (
                        .failed,
                        "blocks \(w.first)+\(count) run past the end of the tag (\(memory.blockCount) blocks)"
                    )
                }
            }
            // A password this tag rejected earlier (a plan read's, or another write's) is not given again until the
            // secrets file changes: a write is not tried (a lock of a block no password guards still is; a password it
            // needs is refused in the session, as one with a client's password is: `guarded`).
            if given == nil, w.operation != .lock,
                let kind = [PasswordMemory.Kind.read, .write].first(where: {
                    passwords.isRejected(uid, $0, secretsFile: config.secretsFile)
                })
            {
                return (
                    .rejected,
                    "password rejected earlier: this tag's \(kind) password was not accepted; correct the secrets file ([security] secrets-file), then \(w.id == 0 ? "write again" : "run `vlogger writes retry \(w.id)`")"
                )
            }
            // NXP page protection, ST25DV areas: the password session opens before the first read of a
            // protected page where it can matter, or after an error answer that protection may explain
            // (PasswordUnlock.guarded); a chip that does not answer the protection status has none. A lock is a
            // write of its block.
            if w.operation == .lock {
                switch try guarded(
                    uid, first: w.first, count: 1, for: .write, given: given,
                    { () throws(ClientError) -> Bool? in
                        if try session.client.securityStatus(uid, first: w.first, count: 1).first?.isLocked == true {
                            return nil
                        }
                        try session.client.lockBlock(uid, block: w.first, option: option)
                        return try session.client.securityStatus(uid, first: w.first, count: 1).first?.isLocked
                            == true
                    })
                {
                case .done(nil, _): return (.done, "block \(w.first) already locked (read back); not locked again")
                case .done(let locked, _):
                    return (
                        locked == true ? .done : .failed,
                        locked == true
                            ? "block \(w.first) locked and read back locked"
                            : "the tag accepted the lock but block \(w.first) reads back unlocked"
                    )
                case .stopped(let outcome): return stopped(outcome, w, uid, given: given)
                }
            }
            let blocks = stride(from: 0, to: w.data.count, by: size).map { Array(w.data[$0..<($0 + size)]) }
            let lockAfter = w.operation == .writeLock
            let step: QueuedWriteStep
            switch try guarded(
                uid, first: w.first, count: blocks.count, for: .write, given: given,
                { () throws(ClientError) -> QueuedWriteStep in
                    let current = try session.client.readBlocks(
                        uid, first: w.first, count: blocks.count, security: true)
                    if current.map(\.data) == blocks { return .alreadyThere(current) }
                    if let locked = current.first(where: { $0.security?.isLocked == true }) {
                        return .locked(locked.number)
                    }
                    return .written(
                        try session.client.writeBlocks(
                            uid, first: w.first, blocks: blocks, verify: true, option: option))
                })
            {
            case .done(let s, _): step = s
            case .stopped(let outcome): return stopped(outcome, w, uid, given: given)
            }
            var done: [String] = []
            switch step {
            case .alreadyThere(let current):
                if !lockAfter || current.allSatisfy({ $0.security?.isLocked == true }) {
                    return (
                        .done, "already on the tag\(lockAfter ? " and locked" : "") (read back); not written again"
                    )
                }
                done.append("data already on the tag (read back)")
            case .locked(let number):
                return (.failed, "block \(number) is locked")
            case .written(let report):
                writer.add(
                    WriteRecord(
                        time: now, gateway: config.gatewayID, uid: uid, first: w.first, data: w.data,
                        flags: w.flags,
                        result: w.id == 0 ? "ok" : "ok (queued write \(w.id))", verified: report.verified,
                        exchanges: report.exchanges,
                        origin: w.origin ?? "queue"))
                done.append("written and read back in \(report.exchanges) exchanges")
            }
            if lockAfter {
                // A block locked before a crash cut off the record is not locked again.
                let status = try session.client.securityStatus(uid, first: w.first, count: blocks.count)
                var n = 0
                for (k, st) in status.enumerated() where !st.isLocked {
                    guard let b = BlockNumber(exactly: w.first.int + k) else { continue }
                    try session.client.lockBlock(uid, block: b, option: option)
                    n += 1
                }
                let after = try session.client.securityStatus(uid, first: w.first, count: blocks.count)
                guard after.count == blocks.count, after.allSatisfy(\.isLocked) else {
                    return (
                        .failed,
                        done.joined(separator: "; ")
                            + "; the tag accepted the locks but a block reads back unlocked"
                    )
                }
                done.append("\(n) block(s) locked and read back locked")
            }
            return (.done, done.joined(separator: "; "))
        } catch  where error.isTransient {
            return nil
        } catch {
            return (.failed, "\(error)")
        }
    }
}

/// How far a queued write got with the tag's blocks (inside its password session).
enum QueuedWriteStep {
    /// The blocks already hold the data (read back with their lock status).
    case alreadyThere([BlockRead])
    /// A block to be written is locked: nothing was written.
    case locked(BlockNumber)
    /// Written and verified by read-back.
    case written(WriteReport)
}

extension Agent {
    /// `PasswordUnlock.guarded` with the configuration's secrets file and the register's asset id of the tag.
    func guarded<T>(
        _ uid: UID, first: BlockNumber, count: Int, for purpose: PasswordUnlock.Purpose, given: TagPassword? = nil,
        askFirst: Bool = true, _ body: () throws(ClientError) -> T
    ) throws(ClientError) -> PasswordUnlock.Guarded<T> {
        let file = config.secretsFile
        return try PasswordUnlock.guarded(
            session.client, uid, first: first, count: count, for: purpose, secretsFile: file,
            asset: register?.rows[uid.description]?["asset_id"], given: given,
            rejectedEarlier: { [passwords] in passwords.isRejected(uid, $0 == .read ? .read : .write, secretsFile: file)
            },
            askFirst: askFirst, body)
    }

    /// A write or lock that its password session stopped, as its outcome. A rejected password mutes an NXP chip
    /// until its power is reset: the field is reset and nothing more is tried; a secrets-file password is not given
    /// again (a client's own, sent where the file holds none, is not remembered). A refusal (no password, a client's
    /// that is not the file's, one rejected before) sent no password: a client's password error, a queued write's
    /// failure; blocks no password opens fail either way.
    func stopped(_ outcome: PasswordUnlock.Outcome, _ w: QueuedWrite, _ uid: UID, given: TagPassword?) -> (
        QueuedWrite.State, String
    ) {
        switch outcome {
        case .rejected(let why), .givenRejected(let why):
            let file: Bool
            if case .rejected = outcome { file = true } else { file = false }
            if file {
                // The write password, and the read password when that was the one refused (an ST25DV's one password
                // opens reads and writes alike).
                passwords.reject(uid, .write, secretsFile: config.secretsFile)
                if why.contains("read password") || uid.manufacturer == .stMicroelectronics {
                    passwords.reject(uid, .read, secretsFile: config.secretsFile)
                }
            }
            session.resetField()
            let until =
                !file
                ? "the password given is not remembered"
                : w.id == 0
                    ? "not tried again until the secrets file changes"
                    : "not tried again until an operator runs `vlogger writes retry \(w.id)`"
            return (.rejected, "\(why); the field was reset; \(until)")
        case .refused(let why): return (w.id == 0 ? .rejected : .failed, why)
        case .forbidden(let why): return (.failed, why)
        case .open, .unlocked: return (.failed, "\(outcome)")
        }
    }
}
