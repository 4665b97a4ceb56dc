import Foundation
import ISO15693
import Readers
import VLoggerModel
import VLoggerOutbox
import VLoggerStore

/// A server's client using this agent's reader (OPC UA's Scan, ReadTag, WriteTag and their scalar twins, through
/// `FieldAccess`): run on the polling thread between two cycles (`PollingJob.exclusive`), with the agent's own
/// inventory, reads and write path. Each access is recorded: a write as the write path records it (`write_done` or
/// `write_failed` with the client as the origin, and the write itself), a scan or a read as an `access` event.
extension Agent {
    /// Every tag in the field now (the quiet ones woken, as an audit's round does; the next cycle quiets them again).
    /// Recorded as the client's access when `origin` is given (a continuous scan records its first round only).
    public func accessScan(origin: String?) -> Result<[UID], FieldAccessError> {
        let result: Result<[UID], FieldAccessError>
        do { result = .success(try inventoryEveryTag().map(\.uid)) } catch {
            result = .failure(Self.accessError(error))
        }
        guard let origin else { return result }
        recordAccess(
            "Scan", uid: nil, origin: origin,
            result.map { "\($0.count) tag\($0.count == 1 ? "" : "s") in the field" })
        return result
    }

    /// Bytes of a tag in the field, read by address in as few exchanges as the chip allows; blocks a password
    /// protects in its password session (the secrets file's passwords, `password` where the file holds none: the
    /// agent's plan reads' rules, `PasswordUnlock`).
    public func accessRead(_ uid: UID, _ range: TagRange, origin: String, password: TagPassword? = nil) -> Result<
        [UInt8], FieldAccessError
    > {
        let air = session.reader.airTime
        let result = accessRead(uid, range, given: password)
        // The air time the reader spent (a real reader's estimate, the simulator's model), for the access's record.
        let spent = (session.reader.airTime - air).milliseconds
        recordAccess(
            "Read", uid: uid, origin: origin,
            result.map {
                "\($0.count) bytes (\(Self.describe(range))), air \(String(format: "%.2f", spent)) ms"
            })
        return result
    }

    private func accessRead(_ uid: UID, _ range: TagRange, given: TagPassword?) -> Result<[UInt8], FieldAccessError> {
        guard tagsInField.contains(uid) else { return .failure(Self.notInField(uid, readerConfig.id)) }
        do {
            let m = try client.memory(of: uid)
            let (first, count, skip, length) = try Self.blocks(range, m)
            let bytes: [UInt8]
            switch try readGuarded(uid, first: first, count: count, given: given) {
            case .success(let b): bytes = b
            case .failure(let e): return .failure(e)
            }
            guard bytes.count >= skip + length else {
                return .failure(
                    FieldAccessError(.tagError, "the tag answered \(bytes.count) bytes for \(count) blocks"))
            }
            return .success(Array(bytes[skip..<(skip + length)]))
        } catch {
            return .failure(Self.accessError(error))
        }
    }

    /// Writes bytes through the write path: whole blocks as they are; a byte range within its blocks (the bytes
    /// around it read first and written back unchanged). The outcome is a write event with the client as its
    /// origin, the write made a write record.
    public func accessWrite(
        _ uid: UID, at start: TagRange.Start, data: [UInt8], origin: String, password: TagPassword? = nil
    ) -> Result<String, FieldAccessError> {
        let now = clock.now()
        let result = makeWrite(uid, at: start, data: data, origin: origin, now: now, given: password)
        recordWrite(uid, at: start, data: data, origin: origin, result, now: now)
        return result
    }

    /// A client's write as its write event: every write asked for is one, made or not (a tag not in the field, a
    /// locked block, the reader down …).
    public func recordWrite(
        _ uid: UID, at start: TagRange.Start, data: [UInt8], origin: String, _ result: Result<String, FieldAccessError>,
        now: Millis? = nil
    ) {
        let now = now ?? clock.now()
        let at: String
        switch start {
        case .block(let b): at = "block \(b)"
        case .byte(let o): at = "byte \(o)"
        }
        let (kind, detail) = Self.writeEvent(result)
        writer.add(
            Event(
                time: now, gateway: config.gatewayID, reader: readerConfig.id, location: readerConfig.location,
                uid: uid, kind: kind, name: "", severity: kind == .writeDone ? .info : .warning,
                detail: "write from \(origin) (\(data.count) bytes from \(at)): \(detail)", origin: origin))
        logger.notice("write from \(origin) to \(uid): \(kind.rawValue): \(detail)", metadata: ["uid": "\(uid)"])
    }

    /// A client's lock (OPC UA's LockTag): whole blocks of a tag in the field, each locked through the queued
    /// writes' lock path (read back locked; one already locked is not locked again), in order, stopping at the first
    /// that fails. A range that is not whole blocks locks nothing: a lock is for ever. Recorded as a write event.
    public func accessLock(_ uid: UID, _ range: TagRange, origin: String, password: TagPassword? = nil) -> Result<
        String, FieldAccessError
    > {
        let now = clock.now()
        let result = makeLock(uid, range, origin: origin, now: now, given: password)
        recordLock(uid, range, origin: origin, result, now: now)
        return result
    }

    /// A client's write or lock outcome as its event's kind and detail.
    static func writeEvent(_ result: Result<String, FieldAccessError>) -> (Event.Kind, String) {
        switch result {
        case .success(let s): return (.writeDone, s)
        case .failure(let e): return (.writeFailed, e.message)
        }
    }

    /// A client's lock as its write event (made or not).
    public func recordLock(
        _ uid: UID, _ range: TagRange, origin: String, _ result: Result<String, FieldAccessError>, now: Millis? = nil
    ) {
        let (kind, detail) = Self.writeEvent(result)
        writer.add(
            Event(
                time: now ?? clock.now(), gateway: config.gatewayID, reader: readerConfig.id,
                location: readerConfig.location, uid: uid, kind: kind, name: "",
                severity: kind == .writeDone ? .info : .warning,
                detail: "lock from \(origin) (\(Self.describe(range))): \(detail)", origin: origin))
        logger.notice("lock from \(origin) of \(uid): \(kind.rawValue): \(detail)", metadata: ["uid": "\(uid)"])
    }

    private func makeLock(_ uid: UID, _ range: TagRange, origin: String, now: Millis, given: TagPassword?) -> Result<
        String, FieldAccessError
    > {
        guard tagsInField.contains(uid) else { return .failure(Self.notInField(uid, readerConfig.id)) }
        let memory: TagMemory
        let first: BlockNumber
        let count: Int
        do {
            memory = try client.memory(of: uid)
            let skip: Int
            let length: Int
            (first, count, skip, length) = try Self.blocks(range, memory)
            guard skip == 0, length == count * memory.blockSize else {
                return .failure(
                    FieldAccessError(
                        .outOfRange,
                        "a lock covers whole blocks of \(memory.blockSize) bytes: \(Self.describe(range)) does not; nothing locked"
                    ))
            }
        } catch {
            return .failure(Self.accessError(error))
        }
        var done: [String] = []
        for i in 0..<count {
            guard let b = first.advanced(by: i) else { break }
            let w = QueuedWrite(created: now, uid: uid, first: b, data: [], operation: .lock, origin: origin)
            guard let (state, result) = carryOut(w, uid, memory: memory, now: now, given: given) else {
                return .failure(
                    FieldAccessError(
                        .noAnswer,
                        "the tag did not answer at block \(b) (it may have left the field)\(done.isEmpty ? "" : "; before it: \(done.joined(separator: "; "))")"
                    ))
            }
            guard state == .done else {
                let kind: FieldAccessError.Kind = state == .rejected ? .password : .failed
                return .failure(
                    FieldAccessError(
                        kind, result + (done.isEmpty ? "" : "; before it: \(done.joined(separator: "; "))")))
            }
            done.append(result)
        }
        return .success(done.joined(separator: "; "))
    }

    /// The write itself: the whole blocks it comes to, then the write path (`carryOut`).
    private func makeWrite(
        _ uid: UID, at start: TagRange.Start, data: [UInt8], origin: String, now: Millis, given: TagPassword?
    ) -> Result<String, FieldAccessError> {
        guard tagsInField.contains(uid) else { return .failure(Self.notInField(uid, readerConfig.id)) }
        guard !data.isEmpty else { return .failure(FieldAccessError(.invalid, "no data to write")) }
        let write: QueuedWrite
        let memory: TagMemory
        do {
            let m = try client.memory(of: uid)
            memory = m
            switch start {
            case .block(let b):
                guard data.count % m.blockSize == 0 else {
                    return .failure(
                        FieldAccessError(
                            .outOfRange,
                            "\(data.count) bytes is not a whole number of this tag's \(m.blockSize)-byte blocks"))
                }
                let (first, _, _, _) = try Self.blocks(.blocks(first: b, count: data.count / m.blockSize), m)
                write = QueuedWrite(created: now, uid: uid, first: first, data: data, origin: origin)
            case .byte(let offset):
                let (first, count, skip, _) = try Self.blocks(.bytes(offset: offset, length: data.count), m)
                var blocks = data
                if skip != 0 || data.count != count * m.blockSize {
                    // The blocks the range touches, with the new bytes in place.
                    var current: [UInt8]
                    switch try readGuarded(uid, first: first, count: count, given: given) {
                    case .success(let b): current = b
                    case .failure(let e): return .failure(e)
                    }
                    guard current.count == count * m.blockSize else {
                        return .failure(FieldAccessError(.tagError, "the tag answered \(current.count) bytes"))
                    }
                    current.replaceSubrange(skip..<(skip + data.count), with: data)
                    blocks = current
                }
                write = QueuedWrite(created: now, uid: uid, first: first, data: blocks, origin: origin)
            }
        } catch {
            return .failure(Self.accessError(error))
        }
        guard let (state, result) = carryOut(write, uid, memory: memory, now: now, given: given) else {
            return .failure(
                FieldAccessError(
                    .noAnswer,
                    "the tag did not answer (it may have left the field): the write may or may not have reached it; calling again reads it back first and writes only what is not there"
                ))
        }
        switch state {
        case .done: return .success(result)
        case .rejected: return .failure(FieldAccessError(.password, result))
        default:
            let kind: FieldAccessError.Kind =
                result.contains("is locked") ? .locked : result.contains("past the end") ? .outOfRange : .failed
            return .failure(FieldAccessError(kind, result))
        }
    }

    /// Blocks read in the password session they need (`guarded` for reading; a read password the tag rejected before
    /// is refused there, not sent again, as the plan reads do). One the tag rejects now resets the field (the chip is
    /// mute until its power is reset); a secrets-file one is remembered.
    private func readGuarded(_ uid: UID, first: BlockNumber, count: Int, given: TagPassword?) throws(ClientError)
        -> Result<[UInt8], FieldAccessError>
    {
        switch try guarded(
            uid, first: first, count: count, for: .read, given: given, askFirst: given != nil,
            { () throws(ClientError) -> [UInt8] in
                try client.readBlocks(uid, first: first, count: count).flatMap(\.data)
            }
        ) {
        case .done(let bytes, _): return .success(bytes)
        case .stopped(.rejected(let why)):
            passwords.reject(uid, .read, secretsFile: config.secretsFile)
            if uid.manufacturer == .stMicroelectronics {
                passwords.reject(uid, .write, secretsFile: config.secretsFile)
            }
            session.resetField()
            return .failure(FieldAccessError(.password, "\(why); the field was reset"))
        case .stopped(.givenRejected(let why)):
            session.resetField()
            return .failure(FieldAccessError(.password, "\(why); the field was reset"))
        case .stopped(.forbidden(let why)): return .failure(FieldAccessError(.locked, why))
        case .stopped(.refused(let why)): return .failure(FieldAccessError(.password, why))
        case .stopped(let outcome): return .failure(FieldAccessError(.failed, "\(outcome)"))
        }
    }

    /// An `access` event: a client's command and its outcome.
    public func recordAccess(
        _ command: String, uid: UID?, origin: String, _ result: Result<String, FieldAccessError>
    ) {
        let (severity, detail): (Event.Severity, String)
        switch result {
        case .success(let s): (severity, detail) = (.info, "\(command) from \(origin): \(s)")
        case .failure(let e): (severity, detail) = (.warning, "\(command) from \(origin) failed: \(e.message)")
        }
        writer.add(
            Event(
                time: clock.now(), gateway: config.gatewayID, reader: readerConfig.id, location: readerConfig.location,
                uid: uid, kind: .access, name: command, severity: severity, detail: detail, origin: origin))
    }

    /// The blocks a range covers: the first, how many, the bytes to skip in the first, and the bytes wanted.
    static func blocks(_ range: TagRange, _ m: TagMemory) throws(FieldAccessError) -> (BlockNumber, Int, Int, Int) {
        let size = m.blockSize
        let total = m.blockCount
        let end = "the tag has \(total) blocks of \(size) bytes"
        switch range {
        case .blocks(let first, let count):
            guard count > 0 else { throw FieldAccessError(.invalid, "no blocks asked for") }
            guard first >= 0, first < total, count <= total - first, let b = BlockNumber(exactly: first) else {
                throw FieldAccessError(.outOfRange, "blocks \(first)+\(count) run past the end: \(end)")
            }
            return (b, count, 0, count * size)
        case .bytes(let offset, let length):
            guard length > 0 else { throw FieldAccessError(.invalid, "no bytes asked for") }
            guard offset >= 0, offset < total * size, length <= total * size - offset,
                let b = BlockNumber(exactly: offset / size)
            else {
                throw FieldAccessError(.outOfRange, "bytes \(offset)+\(length) run past the end: \(end)")
            }
            let last = (offset + length - 1) / size
            return (b, last - offset / size + 1, offset % size, length)
        }
    }

    static func describe(_ range: TagRange) -> String {
        switch range {
        case .blocks(let first, let count): return "blocks \(first)+\(count)"
        case .bytes(let offset, let length): return "bytes \(offset)+\(length)"
        }
    }

    static func notInField(_ uid: UID, _ reader: String) -> FieldAccessError {
        FieldAccessError(.notInField, "\(uid) is not in the field of reader \(reader)")
    }

    /// What a step of an access threw, as an access error.
    static func accessError(_ error: any Error) -> FieldAccessError {
        switch error {
        case let e as FieldAccessError: return e
        case let e as ClientError: return accessError(e)
        default: return FieldAccessError(.tagError, "\(error)")
        }
    }

    /// A client error as an access error.
    static func accessError(_ e: ClientError) -> FieldAccessError {
        switch e {
        case .reader(.timeout, _): return FieldAccessError(.noAnswer, "the tag did not answer (\(e))")
        case .reader(.device, _), .reader(.fieldOff, _), .reader(.notSupported, _):
            return FieldAccessError(.readerDown, "\(e)")
        case .reader: return FieldAccessError(.noAnswer, "\(e)")
        case .tag(let code, _):
            if code == .blockLocked || code == .blockAlreadyLocked { return FieldAccessError(.locked, "\(e)") }
            if code == .blockReadProtected { return FieldAccessError(.password, "\(e)") }
            if code == .blockNotAvailable { return FieldAccessError(.outOfRange, "\(e)") }
            return FieldAccessError(.tagError, "\(e)")
        case .malformed: return FieldAccessError(.tagError, "\(e)")
        case .invalid(let m): return FieldAccessError(.invalid, m)
        case .verifyFailed: return FieldAccessError(.failed, "\(e)")
        }
    }
}
