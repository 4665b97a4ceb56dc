import ISO15693

/// What the reader hears after sending a frame (or a slot marker).
public enum AirOutcome: Equatable, Sendable {
    /// One tag answered; the frame as on air, CRC included.
    case response([UInt8])
    case silence
    /// Two or more tags answered at once.
    case collision
}

/// One exchange on air and how long it took, in carrier cycles.
public struct AirExchange: Equatable, Sendable {
    public let outcome: AirOutcome
    /// Reader frame (or slot-marker EOF) on air.
    public let readerTime: AirTime
    /// From the end of the reader's frame to the end of the tag's answer (or of the listening window).
    public let listenTime: AirTime
    /// The whole exchange including the t2 guard time the reader keeps before its next frame.
    public let total: AirTime
}

/// Faults to inject into a simulated field.
public enum Fault: Sendable {
    /// The next `count` answers (of one tag, or of any tag when nil) are lost.
    case noResponse(uid: UID?, count: Int)
    /// The next `count` answers carry a wrong CRC.
    case corruptCRC(uid: UID?, count: Int)
    /// The tag leaves the field after `exchanges` more exchanges.
    case leaveAfter(uid: UID, exchanges: Int)
    /// The next `count` single answers collide with a phantom tag's answer.
    case collision(count: Int)
    /// Writes to this tag take `extra` longer to program than its profile says.
    case slowWrite(uid: UID, extra: AirTime)
}

/// A reader's RF field holding any number of simulated tags. It receives frames exactly as they go on air
/// (CRC included), lets every tag in the field answer as its chip would, resolves inventory slots and
/// collisions, applies injected faults, and charges every exchange its air time.
public final class SimulatedField {
    public private(set) var tags: [SimulatedTag] = []
    public var coding: ReaderCoding = .oneOfFour
    public private(set) var isOn = false
    /// All air time spent since the field was created.
    public private(set) var elapsed: AirTime = .zero
    public private(set) var exchangeCount = 0
    /// Called after a write or lock changed a tag (the field folder persists it).
    public var onTagChanged: ((SimulatedTag) -> Void)?

    private var slots: [[SimulatedTag]]? = nil
    private var slotIndex = 0
    private var slotFlags = RequestFlags()
    private var slotRequest: Request?
    private var noResponse: [(uid: UID?, count: Int)] = []
    private var corruptCRC: [(uid: UID?, count: Int)] = []
    private var departures: [(uid: UID, atExchange: Int)] = []
    private var arrivals: [(tag: SimulatedTag, atExchange: Int)] = []
    private var collisions = 0

    public init(tags: [SimulatedTag] = []) {
        for t in tags { add(t) }
    }

    public func add(_ tag: SimulatedTag) {
        tags.removeAll { $0.uid == tag.uid }
        tag.state = isOn ? .ready : .powerOff
        tags.append(tag)
    }

    @discardableResult
    public func remove(_ uid: UID) -> SimulatedTag? {
        guard let i = tags.firstIndex(where: { $0.uid == uid }) else { return nil }
        // Out of the field, the tag has no power: its password sessions and privacy opening end.
        tags[i].state = .powerOff
        return tags.remove(at: i)
    }

    public func tag(_ uid: UID) -> SimulatedTag? { tags.first { $0.uid == uid } }

    /// Schedules `tag` to enter the field after `exchanges` more exchanges.
    public func arrive(_ tag: SimulatedTag, afterExchanges exchanges: Int) {
        arrivals.append((tag, exchangeCount + exchanges))
    }

    public func inject(_ fault: Fault) {
        switch fault {
        case let .noResponse(uid, count): noResponse.append((uid, count))
        case let .corruptCRC(uid, count): corruptCRC.append((uid, count))
        case let .leaveAfter(uid, n): departures.append((uid, exchangeCount + n))
        case let .collision(count): collisions += count
        case let .slowWrite(uid, extra): tag(uid)?.extraProgrammingTime = extra
        }
    }

    /// Field on: every tag powers up into Ready.
    public func powerOn() {
        isOn = true
        for t in tags where t.state == .powerOff { t.state = .ready }
    }

    /// Field off: every tag loses its state.
    public func powerOff() {
        isOn = false
        slots = nil
        for t in tags { t.state = .powerOff }
    }

    /// Sends `onAir` (a request with its CRC). `listenTimeout` is how long after its EOF the reader listens
    /// for an answer that starts by itself; `eofAfter` is when the reader sends a lone EOF to collect the
    /// answer of a write-alike command sent with the Option flag (nil: it sends none).
    public func transmit(
        _ onAir: [UInt8], listenTimeout: AirTime = AirTiming.writeAlikeMaximum, eofAfter: AirTime? = nil
    ) -> AirExchange {
        exchangeCount += 1
        applySchedule()
        slots = nil
        let readerTime = AirTiming.readerFrame(bytes: onAir.count, coding: coding)
        if isOn, CRC16.isValid(onAir) {
            // A chip's part may read frames in a form of its own (an ams SL13A's custom commands, with or without
            // the manufacturer byte), which ISO decoding cannot assume: answered before anything is decoded.
            let body = Array(onAir.dropLast(2))
            let answers = tags.compactMap { t in t.rawAnswer(body).map { (t, $0.bytes, $0.delay) } }
            if let (tag, answer, delay) = answers.first {
                let flags = RequestFlags(rawValue: body[0])
                if answers.count > 1 {
                    return record(
                        .collision, reader: readerTime,
                        listen: AirTiming.t1 + AirTiming.tagFrame(bytes: answer.count + 2, flags: flags),
                        guardTime: true)
                }
                let start = AirTiming.t1 + delay
                if start > listenTimeout {
                    return record(.silence, reader: readerTime, listen: listenTimeout, guardTime: false)
                }
                return deliver(CRC16.appending(to: answer), from: tag, reader: readerTime, start: start, flags: flags)
            }
        }
        guard isOn, CRC16.isValid(onAir), let request = try? Request.decode(Array(onAir.dropLast(2))) else {
            // No field, or a frame no tag can decode: nobody answers.
            return record(
                .silence, reader: readerTime, listen: AirTiming.emptySlot(RequestFlags(rawValue: onAir.first ?? 0)),
                guardTime: false)
        }
        if request.flags.isInventory {
            slotFlags = request.flags
            slotRequest = request
            var groups = Array(repeating: [SimulatedTag](), count: request.inventorySlots ?? 16)
            for t in tags { if let s = t.inventorySlot(request) { groups[s].append(t) } }
            slots = groups
            slotIndex = 0
            return resolveSlot(reader: readerTime)
        }
        if case let .addressed(target) = request.addressing, case .select = request.command {
            // Select: the addressed tag enters Selected; any other selected tag returns to Ready.
            for t in tags where t.state == .selected && t.uid != target { t.state = .ready }
        }
        var answers: [(SimulatedTag, Response, AirTime, Bool, (() -> Void)?, Bool)] = []
        for t in tags where t.isAddressed(by: request) {
            if case let .answer(r, prog, waits, commit, ext) = t.reply(to: request) {
                answers.append((t, r, prog, waits, commit, ext))
            }
        }
        let flags = request.flags
        guard !answers.isEmpty else {
            let wait = eofAfter.map { $0 + AirTiming.readerEOF } ?? .zero
            return record(.silence, reader: readerTime, listen: wait + AirTiming.emptySlot(flags), guardTime: false)
        }
        if answers.count > 1 {
            let longest = answers.map { $0.1.encode().count + 2 }.max() ?? 3
            return record(
                .collision, reader: readerTime, listen: AirTiming.t1 + AirTiming.tagFrame(bytes: longest, flags: flags),
                guardTime: true)
        }
        var (tag, response, programming, waitsForEOF, commit, extendedSI) = answers[0]
        let start: AirTime
        if waitsForEOF {
            guard let eof = eofAfter else {
                // The tag waits for an EOF that never comes: the write stays pending and is lost.
                return record(.silence, reader: readerTime, listen: listenTimeout, guardTime: false)
            }
            if eof < programming {
                // The EOF came before programming ended: ISO error 0x13, the block keeps its old content.
                response = Response(body: .error(.blockNotProgrammed))
                commit = nil
            }
            start = eof + AirTiming.readerEOF + AirTiming.t1
        } else {
            start = AirTiming.t1 + programming
        }
        if let commit {
            commit()
            onTagChanged?(tag)
        }
        if !waitsForEOF && start > listenTimeout {
            // The tag answers after the reader stopped listening; what it programmed stays programmed.
            return record(.silence, reader: readerTime, listen: listenTimeout, guardTime: false)
        }
        let frame = CRC16.appending(
            to: response.encode(
                extendedSystemInformation: extendedSI,
                protocolExtension: flags.contains(.protocolExtension)))
        return deliver(
            frame, from: tag, reader: readerTime, start: start, flags: flags,
            fast: STFastRead.isFastRead(request.command))
    }

    /// The reader's lone EOF that moves a 16-slot inventory to its next slot.
    public func nextSlot() -> AirExchange {
        guard slots != nil, slotIndex + 1 < (slots?.count ?? 0) else {
            return record(
                .silence, reader: AirTiming.readerEOF, listen: AirTiming.emptySlot(slotFlags), guardTime: false)
        }
        slotIndex += 1
        return resolveSlot(reader: AirTiming.readerEOF)
    }

    private func resolveSlot(reader: AirTime) -> AirExchange {
        let group = slots?[slotIndex] ?? []
        if group.isEmpty {
            return record(.silence, reader: reader, listen: AirTiming.emptySlot(slotFlags), guardTime: false)
        }
        guard let request = slotRequest else {
            return record(.silence, reader: reader, listen: AirTiming.emptySlot(slotFlags), guardTime: false)
        }
        // NXP's Fast Inventory Read answers at twice the data rate.
        let fast = NXPInventoryRead(request)?.fast == true
        if group.count > 1 {
            let longest = group.map { $0.inventoryAnswer(request).count + 2 }.max() ?? 12
            let frame =
                fast
                ? AirTiming.fastTagFrame(bytes: longest, flags: slotFlags)
                : AirTiming.tagFrame(bytes: longest, flags: slotFlags)
            return record(.collision, reader: reader, listen: AirTiming.t1 + frame, guardTime: true)
        }
        let t = group[0]
        let frame = CRC16.appending(to: t.inventoryAnswer(request))
        return deliver(frame, from: t, reader: reader, start: AirTiming.t1, flags: slotFlags, fast: fast)
    }

    private func deliver(
        _ frame: [UInt8], from tag: SimulatedTag, reader: AirTime, start: AirTime, flags: RequestFlags,
        fast: Bool = false
    ) -> AirExchange {
        let listen =
            start
            + (fast
                ? AirTiming.fastTagFrame(bytes: frame.count, flags: flags)
                : AirTiming.tagFrame(bytes: frame.count, flags: flags))
        if take(&noResponse, tag.uid) {
            return record(.silence, reader: reader, listen: start + AirTiming.tagSOF(flags), guardTime: false)
        }
        if collisions > 0 {
            collisions -= 1
            return record(.collision, reader: reader, listen: listen, guardTime: true)
        }
        var out = frame
        if take(&corruptCRC, tag.uid) { out[out.count - 1] ^= 0x5A }
        return record(.response(out), reader: reader, listen: listen, guardTime: true)
    }

    private func take(_ list: inout [(uid: UID?, count: Int)], _ uid: UID) -> Bool {
        guard let i = list.firstIndex(where: { ($0.uid == nil || $0.uid == uid) && $0.count > 0 }) else { return false }
        list[i].count -= 1
        if list[i].count == 0 { list.remove(at: i) }
        return true
    }

    private func applySchedule() {
        for d in departures where d.atExchange < exchangeCount { remove(d.uid) }
        departures.removeAll { $0.atExchange < exchangeCount }
        for a in arrivals where a.atExchange < exchangeCount { add(a.tag) }
        arrivals.removeAll { $0.atExchange < exchangeCount }
    }

    private func record(_ outcome: AirOutcome, reader: AirTime, listen: AirTime, guardTime: Bool) -> AirExchange {
        let total = reader + listen + (guardTime ? AirTiming.t2 : .zero)
        elapsed = elapsed + total
        return AirExchange(outcome: outcome, readerTime: reader, listenTime: listen, total: total)
    }
}
