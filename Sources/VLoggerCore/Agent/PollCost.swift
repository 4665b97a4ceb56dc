import ISO15693
import Readers

/// The physical lower bound of a cycle's air time: the same reads with no retries, no collisions and no
/// slack, each range in as few Read Multiple Blocks as the chip and the reader frame allow, plus one
/// inventory round in which each tag answers in a slot of its own.
public enum PollCost {
    /// Merges wanted reads into contiguous ranges (with security if any part needs it).
    public static func merge(_ reads: [PlanRead]) -> [PlanRead] {
        var out: [PlanRead] = []
        for r in reads.sorted(by: { $0.first < $1.first }) {
            if var last = out.last, r.first.int <= last.first.int + last.count {
                last.count = max(last.count, r.first.int + r.count - last.first.int)
                last.security = last.security || r.security
                out[out.count - 1] = last
            } else {
                out.append(r)
            }
        }
        return out
    }

    static func exchange(
        request: Int, response: Int, flags: RequestFlags, coding: ReaderCoding = .oneOfFour, fast: Bool = false
    ) -> AirTime {
        AirTiming.readerFrame(bytes: request, coding: coding) + AirTiming.t1
            + (fast
                ? AirTiming.fastTagFrame(bytes: response, flags: flags)
                : AirTiming.tagFrame(bytes: response, flags: flags)) + AirTiming.t2
    }

    /// The least air time in which an inventory can find `tags` tags: the lesser of one one-slot inventory per
    /// tag and ⌈tags/16⌉ 16-slot rounds with every tag alone in its slot (no anti-collision algorithm does
    /// better on this timing); for none, a one-slot request and its empty slot.
    public static func inventory(tags: Int, flags: RequestFlags, slotMarkers: Bool = true) -> AirTime {
        // Inventory request: flags, command, mask length, CRC = 5 bytes; answer: flags, DSFID, UID, CRC = 12.
        let request = AirTiming.readerFrame(bytes: 5, coding: .oneOfFour)
        if tags <= 0 { return request + AirTiming.emptySlot(flags) }
        let oneSlotEach = exchange(request: 5, response: 12, flags: flags) * tags
        // One-slot requests only (PC/SC): at best one answered request per tag.
        guard slotMarkers, tags > 1 else { return oneSlotEach }
        let answered = exchange(request: 5, response: 12, flags: flags) - request
        let empty = AirTiming.emptySlot(flags)
        func round(_ k: Int) -> AirTime { request + AirTiming.readerEOF * 15 + answered * k + empty * (16 - k) }
        let rounds = round(16) * (tags / 16) + (tags % 16 == 0 ? .zero : round(tags % 16))
        return min(oneSlotEach, rounds)
    }

    /// The least air time in which NXP's (Fast) Inventory Read can find `tags` ICODE tags with `blocks` 4-byte
    /// blocks each: as `inventory`, with the request's 8 bytes (flags, code, 0x04, mask length, first block,
    /// count, CRC) and each answer's 1 + 8 UID + 4·blocks + 2 CRC bytes, at twice the rate when `fast`.
    public static func inventoryRead(tags: Int, blocks: Int, flags: RequestFlags, fast: Bool, slotMarkers: Bool = true)
        -> AirTime
    {
        let request = AirTiming.readerFrame(bytes: 8, coding: .oneOfFour)
        if tags <= 0 { return .zero }
        let answer = 1 + 8 + 4 * blocks + 2
        let oneSlotEach = exchange(request: 8, response: answer, flags: flags, fast: fast) * tags
        guard slotMarkers, tags > 1 else { return oneSlotEach }
        let answered = exchange(request: 8, response: answer, flags: flags, fast: fast) - request
        let empty = AirTiming.emptySlot(flags)
        func round(_ k: Int) -> AirTime { request + AirTiming.readerEOF * 15 + answered * k + empty * (16 - k) }
        let rounds = round(16) * (tags / 16) + (tags % 16 == 0 ? .zero : round(tags % 16))
        return min(oneSlotEach, rounds)
    }

    /// Addressed reads of a range as the client makes them (the client's own planner: chunks, 1- or 2-byte
    /// block numbers, the extended commands), each frame sized by encoding it.
    public static func read(
        _ r: PlanRead, memory: TagMemory, limits: ReaderLimits, flags: RequestFlags, fast: Bool = false
    ) -> AirTime {
        let perBlock = memory.blockSize + (r.security ? 1 : 0)
        var total = AirTime.zero
        let someUID = UID(manufacturer: ManufacturerCode(0), serial: 0)  // every UID is 8 bytes on air
        for step in ISO15693Client.readSteps(
            memory, first: r.first, count: r.count, security: r.security, limits: limits, fast: fast)
        {
            var f = flags.union(.address)
            if r.security { f.insert(.option) }
            if step.protocolExtension { f.insert(.protocolExtension) }
            let request =
                ((try? Request(step.command, flags: f, addressing: .addressed(someUID)).encode().count) ?? 12) + 2
            total =
                total
                + exchange(request: request, response: 1 + step.count * perBlock + 2, flags: flags, fast: step.fast)
        }
        return total
    }
}
