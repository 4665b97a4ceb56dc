import ISO15693

/// Why a client operation failed.
public enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The reader reported no usable answer (after the retries).
    case reader(ReaderError, command: String)
    /// The tag answered with its error flag.
    case tag(ISOErrorCode, command: String)
    /// The tag's answer does not follow ISO/IEC 15693-3.
    case malformed(FrameError, command: String)
    /// The operation cannot be done as asked (block out of range, wrong data size, …).
    case invalid(String)
    /// What was read back after a write is not what was written.
    case verifyFailed(block: BlockNumber, wrote: [UInt8], read: [UInt8])

    public var description: String {
        switch self {
        case let .reader(e, c): return "\(c): \(e)"
        case let .tag(e, c): return "\(c): the tag answered \(e)"
        case let .malformed(e, c): return "\(c): malformed answer: \(e)"
        case let .invalid(m): return m
        case let .verifyFailed(b, w, r): return "block \(b) reads back \(Hex.format(r)) after writing \(Hex.format(w))"
        }
    }

    /// True when retrying may help (no answer, garbled answer).
    public var isTransient: Bool {
        switch self {
        case .reader(.timeout, _), .reader(.crcError, _), .reader(.collision, _), .malformed: return true
        default: return false
        }
    }
}

/// How a tag's memory layout was found.
public enum MemorySource: String, Sendable, Codable {
    case getSystemInformation = "Get System Information (0x2B)"
    case protocolExtension = "Get System Information with the Protocol Extension flag"
    case extendedGetSystemInformation = "Extended Get System Information (0x3B)"
    case probed = "probing with Read Single Block (no Get System Information)"
}

/// A tag's memory as the client will address it.
public struct TagMemory: Sendable, Equatable {
    public var info: SystemInformation
    public var model: ICModel?
    public var source: MemorySource
    public var blockCount: Int
    public var blockSize: Int
    public enum Addressing: String, Sendable { case plain, extended, protocolExtension }
    public var addressing: Addressing
    public var maxBlocksPerRead: Int
    public var maxBlocksPerWrite: Int?
    public var writeNeedsOption: Bool
    /// The chip has ST's fast reads (by its IC model).
    public var stFastReads: Bool { model?.hasSTFastReads == true }
}

/// A tag found by inventory.
public struct InventoryEntry: Sendable, Equatable {
    public let uid: UID
    /// 0 for tags found by an Inventory Read (its answer has no DSFID).
    public let dsfid: UInt8
    public init(uid: UID, dsfid: UInt8) {
        self.uid = uid
        self.dsfid = dsfid
    }
}

/// Result of a write.
public struct WriteReport: Sendable, Equatable {
    public var blocks: Int
    public var exchanges: Int
    public var retries: Int
    public var verified: Bool
}

/// An ISO/IEC 15693 client over any `TagReader`. Each command is a small function that builds its request
/// and calls `send`, the one transceive path where retries, timing and error mapping live.
public final class ISO15693Client {
    public let reader: TagReader
    /// Data rate and subcarrier bits used in every request (default: high rate, one subcarrier).
    public var baseFlags: RequestFlags
    /// Extra attempts after a timeout or a garbled answer.
    public var retries: Int
    private var memoryCache: [UID: TagMemory] = [:]
    /// Use ST's fast reads where the chip has them and the reader hears them (default on).
    public var useFastReads = true
    private var fastRefused = Set<UID>()
    /// Optional custom commands each tag did not answer this visit (`optionalCustom`), by manufacturer and code.
    var unsupportedCustom: [UID: Set<UInt16>] = [:]
    /// Those of them that got silence or a garbled answer (not an error answer).
    var silentCustom: [UID: Set<UInt16>] = [:]
    public private(set) var exchanges = 0

    /// How commands to one tag are addressed: with its UID (default), to the selected tag (after
    /// `select`), or non-addressed (every tag in the field answers: use with one tag only).
    public enum AddressingMode: String, Sendable { case addressed, selected, nonAddressed = "non-addressed" }
    public var addressingMode: AddressingMode = .addressed

    public init(reader: TagReader, baseFlags: RequestFlags = [.highDataRate], retries: Int = 2) {
        self.reader = reader
        self.baseFlags = baseFlags.intersection([.highDataRate, .dualSubcarrier])
        self.retries = retries
    }

    // MARK: The one transceive path

    /// Sends a request, waits as its command needs, decodes the answer; an error flag becomes
    /// `ClientError.tag`. Timeouts and garbled answers are retried `retries` times (not for Inventory).
    public func send(_ request: Request, blockSize: Int? = nil, retries: Int? = nil) throws(ClientError) -> Response {
        let name = request.command.code.name
        var attempt = 0
        let limit = retries ?? self.retries
        while true {
            do throws(ClientError) {
                exchanges += 1
                let response: Response
                do { response = try reader.execute(request, blockSize: blockSize) } catch {
                    switch error {
                    case let .invalid(m): throw ClientError.invalid("\(name): \(m)")
                    case let .reader(e): throw ClientError.reader(e, command: name)
                    case let .malformed(e): throw ClientError.malformed(e, command: name)
                    }
                }
                if case let .error(code) = response.body { throw ClientError.tag(code, command: name) }
                return response
            } catch {
                guard error.isTransient, attempt < limit else { throw error }
                attempt += 1
            }
        }
    }

    /// Sends a frame as is (flags, command, parameters; the reader adds the CRC) and returns the answer.
    public func raw(_ frame: [UInt8], wait: ResponseWait = .standard) throws(ClientError) -> [UInt8] {
        exchanges += 1
        do { return try reader.transceive(frame, wait: wait) } catch {
            throw ClientError.reader(error, command: "raw frame")
        }
    }

    private func request(_ command: Command, _ uid: UID?, option: Bool = false, protocolExtension: Bool = false)
        -> Request
    {
        var flags = baseFlags
        if option { flags.insert(.option) }
        if protocolExtension { flags.insert(.protocolExtension) }
        let addressing: Addressing
        switch (command, addressingMode, uid) {
        case (.stayQuiet, _, let u?), (.select, _, let u?): addressing = .addressed(u)
        case (_, .addressed, let u?): addressing = .addressed(u)
        case (_, .selected, _): addressing = .selected
        default: addressing = .nonAddressed
        }
        return Request(command, flags: flags, addressing: addressing)
    }

    // MARK: Inventory

    /// Finds every tag in the field: 16-slot Inventory rounds, each collided slot queried again with the
    /// mask extended by that slot's 4 bits (ISO/IEC 15693-3 Annex D), down to 64-bit masks if needed.
    /// On readers without slot markers (PC/SC), one-slot rounds with the mask grown one bit per collision.
    /// With `quiet`, each tag found is then sent Stay Quiet, so later inventories skip it until a field
    /// reset or Reset to Ready.
    /// With `oneSlotFirst`, a single one-slot request comes first (the fastest way to find a lone tag:
    /// 5.9 ms instead of 9.8+ ms); silence ends the search, a collision or garbled answer falls back to
    /// 16 slots.
    /// On readers that resolve collisions themselves (`hasReaderInventory`: a FEIG reader), their own
    /// inventory is asked instead.
    public func inventory(afi: UInt8? = nil, quiet: Bool = false, maxRounds: Int = 4096, oneSlotFirst: Bool = false)
        throws(ClientError) -> [InventoryEntry]
    {
        if reader.hasReaderInventory {
            exchanges += 1
            let found: [InventoryEntry]
            do { found = try reader.readerInventory(afi: afi) ?? [] } catch {
                throw ClientError.reader(error, command: "Inventory")
            }
            if quiet {
                for entry in found { try stayQuiet(entry.uid) }
            }
            return found
        }
        let found: [(UID, UInt8)] = try slotted(name: "Inventory", maxRounds: maxRounds, oneSlotFirst: oneSlotFirst) {
            mask, oneSlot in
            Request(.inventory(afi: afi, mask: mask), flags: oneSlot ? baseFlags.union(.oneSlot) : baseFlags)
        } parse: { answer, req, _, _ in
            guard let r = try? Response.decode(answer, to: req), case let .inventory(dsfid, uid) = r.body else {
                return nil
            }
            return (uid, dsfid)
        }
        if quiet {
            for (uid, _) in found { try stayQuiet(uid) }
        }
        return found.map { InventoryEntry(uid: $0.0, dsfid: $0.1) }
    }

    /// What a single one-slot Inventory heard.
    public enum Probe: Sendable, Equatable {
        case silent
        case lone(InventoryEntry)
        /// A collision or a garbled answer: more than one tag (or noise); resolve with a full inventory.
        case several
    }

    /// One one-slot Inventory: the cheapest way to learn whether any tag (still Ready) is in the field.
    public func probe(afi: UInt8? = nil) throws(ClientError) -> Probe {
        if reader.hasReaderInventory {
            let found = try inventory(afi: afi)
            return found.isEmpty ? .silent : found.count == 1 ? .lone(found[0]) : .several
        }
        let req = Request(.inventory(afi: afi, mask: .none), flags: baseFlags.union(.oneSlot))
        let frame: [UInt8]
        do { frame = try req.encode() } catch { throw ClientError.invalid("Inventory: \(error)") }
        do throws(ReaderError) {
            exchanges += 1
            let answer = try reader.transceive(frame, wait: .standard)
            guard let r = try? Response.decode(answer, to: req), case let .inventory(dsfid, uid) = r.body else {
                return .several
            }
            return .lone(InventoryEntry(uid: uid, dsfid: dsfid))
        } catch .timeout {
            return .silent
        } catch .collision, .crcError {
            return .several
        } catch {
            throw ClientError.reader(error, command: "Inventory")
        }
    }

    /// NXP's Inventory Read (0xA0), or with `fast` its Fast Inventory Read (0xA1, answers at twice the data
    /// rate): the same slotted search as `inventory`, but only ICODE chips that have the command answer, each
    /// with `count` blocks from `first` (4-byte blocks, as on every ICODE). Other tags stay silent, so a
    /// field with other chips still needs an `inventory` (send Stay Quiet to the tags found here first).
    /// A tag whose answer does not decode (fewer blocks near its end) is left out; the inventory finds it.
    public func inventoryRead(
        first: BlockNumber, count: Int, fast: Bool, afi: UInt8? = nil, maxRounds: Int = 4096,
        oneSlotFirst: Bool = true
    ) throws(ClientError) -> [(uid: UID, blocks: [BlockRead])] {
        // A reader with its own inventory sends no slotted custom commands: its tags are found by its
        // inventory and read by address.
        if reader.hasReaderInventory { return [] }
        let name = fast ? "Fast Inventory Read" : "Inventory Read"
        let found: [(UID, [BlockRead])] = try slotted(name: name, maxRounds: maxRounds, oneSlotFirst: oneSlotFirst) {
            mask, oneSlot throws(ClientError) in
            do {
                return try NXPInventoryRead(fast: fast, afi: afi, mask: mask, first: first, count: count).request(
                    flags: baseFlags, oneSlot: oneSlot)
            } catch { throw ClientError.invalid("\(name): \(error)") }
        } parse: { answer, req, mask, slot in
            let read = NXPInventoryRead(fast: fast, afi: afi, mask: mask, first: first, count: count)
            guard
                let (uid, blocks) = try? read.decodeAnswer(
                    answer, slot: slot, sixteenSlots: req.inventorySlots == 16, blockSize: 4),
                uid.manufacturer == .nxp
            else { return nil }
            return (uid, blocks)
        }
        return found.map { (uid: $0.0, blocks: $0.1) }
    }

    /// The slotted search shared by Inventory and NXP's Inventory Read: `request` builds the round for a
    /// mask (one slot or 16), `parse` turns a slot's answer into a UID and what came with it (nil: garbled).
    private func slotted<T>(
        name: String, maxRounds: Int, oneSlotFirst: Bool,
        request: (InventoryMask, Bool) throws(ClientError) -> Request,
        parse: ([UInt8], Request, InventoryMask, Int) -> (UID, T)?
    ) throws(ClientError) -> [(UID, T)] {
        var found: [UID: T] = [:]
        var order: [UID] = []
        var pending: [InventoryMask] = [.none]
        var rounds = 0
        if oneSlotFirst {
            let req = try request(.none, true)
            let frame: [UInt8]
            do { frame = try req.encode() } catch { throw ClientError.invalid("\(name): \(error)") }
            var lone: (UID, T)?
            do throws(ReaderError) {
                exchanges += 1
                let answer = try reader.transceive(frame, wait: .standard)
                lone = parse(answer, req, .none, 0)
            } catch .timeout {
                return []
            } catch .collision, .crcError {
                // more than one tag: resolve with 16 slots below
            } catch {
                throw ClientError.reader(error, command: name)
            }
            if let lone { return [lone] }
        }
        while !pending.isEmpty {
            let mask = pending.removeFirst()
            rounds += 1
            guard rounds <= maxRounds else {
                throw ClientError.invalid(
                    "\(name) gave up after \(maxRounds) rounds with \(pending.count) collided slots left; the field is too crowded or too noisy"
                )
            }
            // Readers without slot markers (PC/SC) walk the UID tree with one-slot requests, one mask bit at a time.
            let markers = reader.supportsSlotMarkers
            let oneSlot = mask.length > 60 || !markers
            let req = try request(mask, oneSlot)
            let frame: [UInt8]
            do { frame = try req.encode() } catch { throw ClientError.invalid("\(name): \(error)") }
            for slot in 0..<(oneSlot ? 1 : 16) {
                let answer: [UInt8]
                do {
                    exchanges += 1
                    answer = slot == 0 ? try reader.transceive(frame, wait: .standard) : try reader.nextSlot()
                } catch .timeout {
                    continue
                } catch .collision, .crcError {
                    // Two or more tags (or a garbled answer): look again with 4 more mask bits.
                    if oneSlot {
                        if !markers && mask.length < 64 {
                            for v in 0...1 {
                                if let m = try? mask.extended(by: 1, with: UInt64(v)) { pending.append(m) }
                            }
                        }
                        continue
                    }
                    if mask.length + 4 <= 60 {
                        if let m = try? mask.extended(by: 4, with: UInt64(slot)) { pending.append(m) }
                    } else {
                        for v in 0..<16 {
                            if let m = try? mask.extended(by: 4, with: UInt64(slot)).extended(
                                by: 64 - mask.length - 4, with: UInt64(v))
                            {
                                pending.append(m)
                            }
                        }
                    }
                    continue
                } catch {
                    throw ClientError.reader(error, command: name)
                }
                guard let (uid, value) = parse(answer, req, mask, oneSlot ? 0 : slot) else { continue }
                if found[uid] == nil { order.append(uid) }
                found[uid] = value
            }
        }
        return order.compactMap { uid in found[uid].map { (uid, $0) } }
    }

    /// Stay Quiet (addressed; the tag does not answer).
    public func stayQuiet(_ uid: UID) throws(ClientError) {
        exchanges += 1
        do { _ = try reader.execute(request(.stayQuiet, uid), blockSize: nil) } catch {
            switch error {
            case .reader(.timeout): return
            case let .reader(e): throw ClientError.reader(e, command: "Stay Quiet")
            case let .invalid(m): throw ClientError.invalid("Stay Quiet: \(m)")
            // An answer to Stay Quiet (it should have none) changes nothing: the tag is quiet or will be asked again.
            case .malformed: return
            }
        }
    }

    /// A custom command (ISO/IEC 15693-3: codes 0xA0–0xDF, the IC manufacturer's code after the command code),
    /// addressed to `uid` as the client addresses; returns the bytes of the answer after its flags.
    /// A custom command's answer (its bytes after the flags). `retries`: how often a command that got no clean answer
    /// is sent again (nil: the client's setting; 0 for a command that must be sent once, such as SET PASSWORD).
    public func custom(
        _ uid: UID, code: UInt8, manufacturer: ManufacturerCode, parameters: [UInt8] = [], retries: Int? = nil
    ) throws(ClientError) -> [UInt8] {
        let r = try send(
            request(.custom(code: code, manufacturer: manufacturer, parameters: parameters), uid), retries: retries)
        switch r.body {
        case .data(let bytes): return bytes
        case .done: return []
        default:
            throw ClientError.invalid(
                "custom command 0x\(String(code, radix: 16, uppercase: true)): an answer of another command")
        }
    }

    public func resetToReady(_ uid: UID?) throws(ClientError) { _ = try send(request(.resetToReady, uid)) }
    public func select(_ uid: UID) throws(ClientError) { _ = try send(request(.select, uid)) }

    // MARK: Memory layout

    /// The tag's memory layout, found once per UID and cached: Get System Information; with the Protocol
    /// Extension flag for chips that need it; Extended Get System Information when the plain one fails or
    /// reports a full 256 blocks; probing with Read Single Block when the chip has neither.
    public func memory(of uid: UID) throws(ClientError) -> TagMemory {
        if let m = memoryCache[uid] { return m }
        let guess = ICModel.identify(uid: uid)
        var info: SystemInformation?
        var source = MemorySource.getSystemInformation
        var lastError: ClientError?
        let attempts: [(Command, Bool, MemorySource)] =
            guess?.needsProtocolExtension == true
            ? [
                (.getSystemInformation, true, .protocolExtension),
                (.getSystemInformation, false, .getSystemInformation),
            ]
            : [
                (.getSystemInformation, false, .getSystemInformation),
                (.getSystemInformation, true, .protocolExtension),
            ]
        for (command, ext, src) in attempts {
            do {
                if case let .systemInformation(i) = try send(request(command, uid, protocolExtension: ext), retries: 1)
                    .body
                {
                    info = i
                    source = src
                    break
                }
            } catch {
                lastError = error
                if case .reader(.timeout, _) = error { break }  // a silent chip will not answer the variant either
            }
        }
        // 0x3B when the plain answer is missing, lacks the memory size, or may be capped at 256 blocks.
        let known = info.flatMap { ICModel.identify(uid: uid, icReference: $0.icReference, blockCount: $0.blockCount) }
        // A chip known to have 0x3B (its plain answer caps at 256 blocks) needs that answer: a damaged or missing
        // one is asked again once, and failing twice is an error with nothing cached, so the next call asks
        // again. (Taking the plain answer instead cached a 2048-block ST25DV64K as 256 blocks for a whole run.)
        // For any other chip, 0x3B is a guess: silence, a tag error or a reply that does not decode mean it has
        // none, and the plain answer (or probing) stands, as before.
        if info == nil || info?.blockCount == nil
            || (info?.blockCount == 256 && (known == nil || known?.usesExtendedCommands == true))
        {
            let expected = known?.usesExtendedCommands == true
            do {
                let i = try extendedSystemInformation(uid, retryDamaged: true, retrySilence: expected)
                if i.blockCount != nil || info == nil {
                    info = merge(info, i)
                    source = .extendedGetSystemInformation
                }
            } catch {
                switch error {
                case .reader(.crcError, _), .reader(.collision, _), .reader(.timeout, _), .malformed:
                    if expected { throw error }
                default:
                    break  // a tag error: the chip has no 0x3B
                }
            }
        }
        var layout: TagMemory
        if let info, let count = info.blockCount, let size = info.blockSize {
            let model = ICModel.identify(uid: uid, icReference: info.icReference, blockCount: count)
            let addressing: TagMemory.Addressing =
                source == .protocolExtension
                ? .protocolExtension
                : (count > 256 ? .extended : .plain)
            layout = TagMemory(
                info: info, model: model, source: source, blockCount: count, blockSize: size,
                addressing: addressing, maxBlocksPerRead: model?.maxBlocksPerRead ?? 256,
                maxBlocksPerWrite: model?.maxBlocksPerWrite, writeNeedsOption: model?.writeNeedsOption ?? false)
        } else {
            do {
                layout = try probe(uid, info: info)
            } catch {
                throw lastError.map {
                    ClientError.invalid(
                        "cannot find the memory of \(uid): Get System Information failed (\($0)) and probing failed (\(error))"
                    )
                } ?? error
            }
        }
        memoryCache[uid] = layout
        return layout
    }

    /// Whether reads of this tag use ST's fast reads.
    public func fastReads(_ uid: UID, _ m: TagMemory) -> Bool {
        useFastReads && m.stFastReads && reader.receivesFastResponses && !fastRefused.contains(uid)
    }

    /// Forgets what is known of a tag for its visit (all tags', or one's): its layout, a refusal of fast reads, the
    /// optional commands it did not answer.
    public func forget(_ uid: UID? = nil) {
        if let uid {
            memoryCache[uid] = nil; fastRefused.remove(uid); forgetOptional(uid)
        } else {
            memoryCache.removeAll(); fastRefused.removeAll(); unsupportedCustom.removeAll(); silentCustom.removeAll()
        }
    }

    /// Extended Get System Information (0x3B). `retryDamaged`: a damaged answer (CRC, collision, malformed) is
    /// asked again once; `retrySilence`: so is silence (most chips without 0x3B stay silent, so by default it
    /// is not).
    public func extendedSystemInformation(_ uid: UID, retryDamaged: Bool = false, retrySilence: Bool = false)
        throws(ClientError) -> SystemInformation
    {
        let req = request(.extendedGetSystemInformation(parameters: 0x3F), uid)
        var attempt = 0
        while true {
            do throws(ClientError) {
                guard case let .systemInformation(i) = try send(req, retries: 0).body else {
                    throw ClientError.invalid("Extended Get System Information: unexpected answer")
                }
                return i
            } catch {
                let again: Bool
                switch error {
                case .reader(.crcError, _), .reader(.collision, _), .malformed: again = retryDamaged
                case .reader(.timeout, _): again = retrySilence
                default: again = false
                }
                guard again, attempt < 1 else { throw error }
                attempt += 1
            }
        }
    }

    private func merge(_ a: SystemInformation?, _ b: SystemInformation) -> SystemInformation {
        guard var m = a else { return b }
        m.blockCount = b.blockCount ?? m.blockCount
        m.blockSize = b.blockSize ?? m.blockSize
        m.icReference = m.icReference ?? b.icReference
        m.twoByteAddressing = b.twoByteAddressing
        m.commandList = b.commandList
        return m
    }

    /// Finds block size and count without Get System Information: block 0 gives the size, a binary search
    /// over Read Single Block (error 0x10/0x0F or silence = past the end) the count, as pm3 `hf 15 dump` does.
    private func probe(_ uid: UID, info: SystemInformation?) throws(ClientError) -> TagMemory {
        let model = ICModel.identify(uid: uid)
        func readable(_ n: Int) -> [UInt8]? {
            guard let b = BlockNumber(exactly: n),
                case let .blocks(blocks)? = try? send(request(.readSingleBlock(b), uid), retries: 0).body
            else { return nil }
            return blocks.first?.data
        }
        guard let first = readable(0) else {
            throw ClientError.invalid("\(uid) answers neither Get System Information nor Read Single Block 0x00")
        }
        var lo = 0, hi = 256  // lo readable, hi not
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if readable(mid) != nil { lo = mid } else { hi = mid }
        }
        var i = info ?? SystemInformation(uid: uid)
        i.blockCount = lo + 1
        i.blockSize = first.count
        return TagMemory(
            info: i, model: model, source: .probed, blockCount: lo + 1, blockSize: first.count,
            addressing: .plain, maxBlocksPerRead: model?.maxBlocksPerRead ?? 256,
            maxBlocksPerWrite: model?.maxBlocksPerWrite, writeNeedsOption: model?.writeNeedsOption ?? false)
    }

    // MARK: Blocks

    private func checkRange(_ m: TagMemory, _ first: BlockNumber, _ count: Int) throws(ClientError) {
        guard count >= 1 else { throw ClientError.invalid("block count must be at least 1") }
        // count ≤ the tag's block count (at most 65,536) before any sum, so nothing overflows.
        guard count <= m.blockCount, first.int <= m.blockCount - count else {
            throw ClientError.invalid(
                "\(count) block(s) from \(first) run past the end of the tag: it has \(m.blockCount) blocks (0x00…\(BlockNumber(exactly: m.blockCount - 1) ?? 0))"
            )
        }
    }

    /// One exchange of a read: the blocks it covers and the command that reads them.
    public struct ReadStep: Sendable, Equatable {
        public let first: BlockNumber
        public let count: Int
        public let command: Command
        /// Sent with the Protocol Extension flag (2-byte block numbers on chips that use it).
        public let protocolExtension: Bool
        /// One of ST's fast reads: the answer comes at twice the data rate.
        public var fast = false
    }

    /// The next exchange of a read from block `next` (of `end`), at most `chunk` blocks: the one planner that
    /// both `readBlocks` and the air-time model (`PollCost`) use.
    public static func readStep(_ m: TagMemory, next: Int, end: Int, chunk: Int, fast: Bool = false) -> ReadStep {
        var n = max(1, min(chunk, end - next))
        // Do not let a plain (1-byte) read run across block 255 into the extended range.
        if m.addressing == .extended && next <= 255 && next + n - 1 > 255 { n = 256 - next }
        let first = BlockNumber(exactly: next) ?? 0
        let wide = next + n - 1 > 255
        if fast {
            let layout: STFastRead.Layout =
                m.addressing == .protocolExtension ? .protocolExtension : (wide ? .extended : .plain)
            var step = ReadStep(
                first: first, count: n, command: STFastRead.command(first: first, count: n, layout: layout),
                protocolExtension: layout == .protocolExtension)
            step.fast = true
            return step
        }
        switch m.addressing {
        case .protocolExtension:
            return ReadStep(
                first: first, count: n,
                command: n == 1 ? .readSingleBlock(first) : .readMultipleBlocks(first: first, count: n),
                protocolExtension: true)
        case .extended where wide:
            return ReadStep(
                first: first, count: n,
                command: n == 1 ? .extendedReadSingleBlock(first) : .extendedReadMultipleBlocks(first: first, count: n),
                protocolExtension: false)
        default:
            return ReadStep(
                first: first, count: n,
                command: n == 1 ? .readSingleBlock(first) : .readMultipleBlocks(first: first, count: n),
                protocolExtension: false)
        }
    }

    /// The largest read the chip and a reader with `limits` take in one exchange.
    public static func readChunk(_ m: TagMemory, security: Bool, limits: ReaderLimits) -> Int {
        let perBlock = m.blockSize + (security ? 1 : 0)
        return min(m.maxBlocksPerRead, max(1, (limits.maxResponseBytes - 1) / perBlock), 256)
    }

    /// The exchanges `readBlocks` makes for a range when no answer is refused.
    public static func readSteps(
        _ m: TagMemory, first: BlockNumber, count: Int, security: Bool, limits: ReaderLimits, fast: Bool = false
    ) -> [ReadStep] {
        let chunk = readChunk(m, security: security, limits: limits)
        var out: [ReadStep] = []
        var next = first.int
        let end = first.int + count
        while next < end {
            let step = readStep(m, next: next, end: end, chunk: chunk, fast: fast)
            out.append(step)
            next += step.count
        }
        return out
    }

    /// Reads `count` blocks from `first` in as few exchanges as the chip and the reader allow. With
    /// `security`, each block comes with its lock status.
    public func readBlocks(_ uid: UID, first: BlockNumber, count: Int, security: Bool = false) throws(ClientError)
        -> [BlockRead]
    {
        let m = try memory(of: uid)
        try checkRange(m, first, count)
        var chunk = Self.readChunk(m, security: security, limits: reader.limits)
        var out: [BlockRead] = []
        out.reserveCapacity(count)
        var next = first.int
        let end = first.int + count
        while next < end {
            let step = Self.readStep(m, next: next, end: end, chunk: chunk, fast: fastReads(uid, m))
            let (n, command, ext) = (step.count, step.command, step.protocolExtension)
            do throws(ClientError) {
                let r = try send(
                    request(command, uid, option: security, protocolExtension: ext), blockSize: m.blockSize)
                var got: [BlockRead] = []
                switch r.body {
                case let .blocks(b): got = b
                case let .data(body) where step.fast:
                    do {
                        got = try Response.blocks(
                            body, first: step.first, count: n, option: security, blockSize: m.blockSize,
                            name: "Fast Read")
                    } catch {
                        throw ClientError.malformed(error, command: "Fast Read")
                    }
                default: break
                }
                guard got.count == n else { throw ClientError.invalid("\(command.code.name): expected \(n) blocks") }
                out += got
                next += n
            } catch {
                // A tag that refuses the fast read (not the chip its UID says, or a variant without it): plain
                // reads from now on for this tag.
                if step.fast, case let .tag(code, _) = error,
                    [.commandNotSupported, .commandNotRecognized, .optionNotSupported].contains(code)
                {
                    fastRefused.insert(uid)
                    continue
                }
                // A chip that refuses long reads: halve the chunk and go on (not for a missing block).
                if case let .tag(code, _) = error, code != .blockNotAvailable, n > 1 {
                    chunk = max(1, n / 2)
                    continue
                }
                throw error
            }
        }
        return out
    }

    /// Writes whole blocks from `first`, with Write Multiple Blocks where the chip takes it, the Option
    /// flag where the chip needs it, then reads back and compares. A block whose answer is lost or whose
    /// read-back differs is written again, at most `retries` times.
    @discardableResult
    public func writeBlocks(
        _ uid: UID, first: BlockNumber, blocks: [[UInt8]], verify: Bool = true,
        option: Bool? = nil
    ) throws(ClientError) -> WriteReport {
        let m = try memory(of: uid)
        try checkRange(m, first, blocks.count)
        for (i, b) in blocks.enumerated() where b.count != m.blockSize {
            throw ClientError.invalid(
                "block \(BlockNumber(exactly: first.int + i) ?? first) data has \(b.count) bytes; this tag's blocks have \(m.blockSize) (\(m.blockCount) blocks × \(m.blockSize) bytes)"
            )
        }
        let useOption = option ?? m.writeNeedsOption
        var report = WriteReport(blocks: blocks.count, exchanges: 0, retries: 0, verified: false)
        let before = exchanges
        var i = 0
        // An ST25DV refuses a Write Multiple Blocks across an area border (error 0x0F); its borders fall after blocks
        // 8 × ENDAi + 7, so chunks aligned on their own size never cross one.
        let aligned = STSecurity.hasAreas(m.model)
        while i < blocks.count {
            let most = m.maxBlocksPerWrite ?? 1
            var n = min(most, blocks.count - i)
            if aligned, most > 1 { n = min(n, most - (first.int + i) % most) }
            let start = BlockNumber(exactly: first.int + i) ?? first
            let data = Array(blocks[i..<(i + n)].joined())
            var attempt = 0
            while true {
                do throws(ClientError) {
                    try writeChunk(m, uid, start, n, data, option: useOption)
                    break
                } catch {
                    guard error.isTransient, attempt < retries else { throw error }
                    attempt += 1
                    report.retries += 1
                    // The answer may be lost while the write happened (pm3, RFAL): check before writing again.
                    if let back = try? readBlocks(uid, first: start, count: n), Array(back.map(\.data).joined()) == data
                    {
                        break
                    }
                }
            }
            i += n
        }
        if verify {
            var attempt = 0
            while true {
                let back = try readBlocks(uid, first: first, count: blocks.count)
                guard let bad = back.indices.first(where: { back[$0].data != blocks[$0] }) else { break }
                guard attempt < retries else {
                    throw ClientError.verifyFailed(block: back[bad].number, wrote: blocks[bad], read: back[bad].data)
                }
                attempt += 1
                report.retries += 1
                try writeChunk(m, uid, back[bad].number, 1, blocks[bad], option: useOption)
            }
            report.verified = true
        }
        report.exchanges = exchanges - before
        return report
    }

    private func writeChunk(_ m: TagMemory, _ uid: UID, _ start: BlockNumber, _ n: Int, _ data: [UInt8], option: Bool)
        throws(ClientError)
    {
        let wide = start.int + n - 1 > 255
        let command: Command
        var ext = false
        switch m.addressing {
        case .protocolExtension:
            ext = true
            command =
                n == 1 ? .writeSingleBlock(start, data: data) : .writeMultipleBlocks(first: start, count: n, data: data)
        case .extended where wide:
            command =
                n == 1
                ? .extendedWriteSingleBlock(start, data: data)
                : .extendedWriteMultipleBlocks(first: start, count: n, data: data)
        default:
            command =
                n == 1 ? .writeSingleBlock(start, data: data) : .writeMultipleBlocks(first: start, count: n, data: data)
        }
        _ = try send(request(command, uid, option: option, protocolExtension: ext), retries: 0)
    }

    /// Locks a block for ever. Irreversible.
    public func lockBlock(_ uid: UID, block: BlockNumber, option: Bool? = nil) throws(ClientError) {
        let m = try memory(of: uid)
        try checkRange(m, block, 1)
        let command: Command =
            (m.addressing == .extended && block.int > 255) ? .extendedLockBlock(block) : .lockBlock(block)
        _ = try send(
            request(
                command, uid, option: option ?? m.writeNeedsOption,
                protocolExtension: m.addressing == .protocolExtension), retries: 0)
    }

    /// Lock status of blocks, via Get Multiple Block Security Status (falls back to reads with the Option flag).
    public func securityStatus(_ uid: UID, first: BlockNumber, count: Int) throws(ClientError) -> [BlockSecurityStatus]
    {
        try readBlocks(uid, first: first, count: count, security: true).map { $0.security ?? [] }
    }
}
