import ISO15693
import Type5NDEF

/// Why an NDEF operation on a tag failed.
public enum NDEFTagError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The exchange with the tag failed (timeout, tag error, CRC…).
    case client(ClientError)
    /// No valid capability container: the tag is not NDEF-formatted (or uses a mapping this reader refuses).
    case notFormatted(String)
    /// The NDEF data on the tag is malformed, or a message does not fit.
    case content(NDEFError)
    /// The CC or the block locks forbid writing.
    case readOnly(String)
    /// The operation would destroy data and was not confirmed.
    case refused(String)

    public var description: String {
        switch self {
        case let .client(e): return "\(e)"
        case let .notFormatted(m):
            return "the tag is not NDEF-formatted: \(m) (`vlogger ndef format` formats an empty tag)"
        case let .content(e): return "\(e)"
        case let .readOnly(m): return "the tag is read-only: \(m)"
        case let .refused(m): return m
        }
    }
}

/// What a tag holds under the Type 5 NDEF mapping, as far as one read found.
public struct NDEFTagState: Sendable, Equatable {
    public var status: NDEFStatus
    /// Largest NDEF message the tag takes, in bytes (0 when not supported).
    public var capacity: Int
    /// The layout (nil when not supported).
    public var area: NDEFArea?
    /// Why the tag is not supported or read-only.
    public var reason: String?
    /// The NDEF message bytes ([] when the TLV is empty or absent).
    public var message: [UInt8]
    /// The memory read, from block 0 (the CC, the TLVs and the message).
    public var memoryRead: [UInt8]
    /// Blocks of the CC and the message found locked (only when lock status was asked for).
    public var lockedBlocks: [BlockNumber]

    /// The message's records (chunks joined).
    public func records() throws(NDEFError) -> [NDEFRecord] { try NDEFMessage.decode(message) }
}

/// What an NDEF write did.
public struct NDEFWriteReport: Sendable, Equatable {
    /// Message bytes written.
    public var messageBytes: Int
    public var capacity: Int
    /// Blocks written, counting the block of the length field twice (staged, then final).
    public var blocksWritten: Int
    /// Whether writes carried the Option flag (Special Frame in the CC, or a chip that needs it).
    public var option: Bool
    public var exchanges: Int
}

/// What making a tag read-only did.
public struct NDEFLockReport: Sendable, Equatable {
    public var cc: CapabilityContainer
    /// Blocks locked now, and blocks found already locked.
    public var locked: Int
    public var alreadyLocked: Int
    /// Why block locking stopped early (the chip refused Lock Block); nil when every block is locked.
    public var lockProblem: String?
    public var exchanges: Int
}

/// NFC Forum Type 5 NDEF on a tag, through the ordinary block commands: so it works on any reader driver.
/// Sources: docs/reference/iso15693.md Part 3 (RFAL `ndef_t5t`, AOSP `rw_i93`).
extension ISO15693Client {
    /// First read: CC and the start of the TLVs in one exchange for most messages (32 bytes).
    static let ndefFirstRead = 32

    /// Reads the CC, then the NDEF TLV: one read for the first 32 bytes, one more when the message goes past
    /// them (each split only where the chip's Read Multiple Blocks limit asks). With `lockStatus`, the lock
    /// bits of the blocks from the CC to the end of the message are read too, and a locked one makes the
    /// status read-only.
    /// `known`: memory from block 0 already read this cycle (whole blocks are used), so it is not read again.
    public func readNDEF(_ uid: UID, lockStatus: Bool = false, known: [UInt8] = []) throws(NDEFTagError) -> NDEFTagState
    {
        let m = try ndefMemory(uid)
        let memoryBytes = m.blockCount * m.blockSize
        var bytes = Array(known.prefix(min(memoryBytes, known.count / m.blockSize * m.blockSize)))
        var want = min(memoryBytes, Self.ndefFirstRead)
        var area: NDEFArea
        while true {
            try readUpTo(uid, m, want, into: &bytes)
            do throws(NDEFError) {
                switch try NDEFArea.scan(bytes, memoryBytes: memoryBytes) {
                case let .area(a):
                    area = a
                case let .needBytes(n):
                    guard n > bytes.count else { throw NDEFError.tlv("the TLV walk stalled at byte \(n)") }
                    // The end of a message is known exactly; a walk over other TLVs grows the read by doubling,
                    // so a long run of NULL TLVs costs a few reads, not one per block.
                    want = max(n, min(memoryBytes, bytes.count * 2))
                    continue
                }
            } catch {
                if case .capabilityContainer = error {
                    return NDEFTagState(
                        status: .notSupported, capacity: 0, area: nil, reason: "\(error)", message: [],
                        memoryRead: bytes, lockedBlocks: [])
                }
                throw .content(error)
            }
            break
        }
        let message = area.message.map { Array(bytes[$0]) } ?? []
        var state = NDEFTagState(
            status: area.status, capacity: area.capacity, area: area,
            reason: area.status == .readOnly
                ? "the CC grants no write access (byte 1 = 0x\(Hex.format([area.cc.encode()[1]])))" : nil,
            message: message, memoryRead: bytes, lockedBlocks: [])
        if lockStatus && state.status == .readWrite {
            // The block(s) of the TLV's type and length: every NDEF write rewrites them, so if one is locked
            // no message can be written. (A locked CC block alone does not stop NDEF writes.) One short read.
            let first = area.tlvOffset / m.blockSize
            let count =
                min(m.blockCount, (area.tlvOffset + 4 + m.blockSize - 1) / m.blockSize, area.areaEnd / m.blockSize + 1)
                - first
            do {
                let status = try securityStatus(uid, first: block(first), count: max(1, count))
                state.lockedBlocks = status.indices.filter { status[$0].isLocked }.compactMap {
                    BlockNumber(exactly: first + $0)
                }
            } catch {
                // A chip without lock status reporting: the CC alone decides.
                guard case .tag = error else { throw .client(error) }
            }
            if let first = state.lockedBlocks.first {
                state.status = .readOnly
                state.reason = "block \(first), which holds the NDEF TLV's length, is locked"
            }
        }
        return state
    }

    /// Writes an NDEF message the NFC Forum way: the TLV with length 0 and the message (and a Terminator
    /// when there is room), then the real length, so a tag pulled away mid-write reads as empty, never as a
    /// half message. Refuses a message larger than the capacity, naming both sizes. The Option flag is set
    /// when the CC asks for Special Frame or the chip needs it for writes.
    @discardableResult
    public func writeNDEF(_ uid: UID, message: [UInt8]) throws(NDEFTagError) -> NDEFWriteReport {
        let before = exchanges
        let state = try readNDEF(uid)
        guard let area = state.area else { throw .notFormatted(state.reason ?? "no capability container") }
        guard area.cc.isWritable else { throw .readOnly(state.reason ?? "the CC grants no write access") }
        let plan: NDEFWritePlan
        do { plan = try area.writePlan(for: message) } catch { throw .content(error) }
        let m = try ndefMemory(uid)
        let bs = m.blockSize
        let option = area.cc.specialFrame || m.writeNeedsOption
        let firstBlock = plan.offset / bs
        let lastBlock = (plan.offset + plan.staged.count - 1) / bs
        let headerEnd = (plan.lengthOffset + plan.lengthField.count - 1) / bs
        // The bytes of the first and last blocks around the write are kept as they are.
        let known = try bytesOfBlocks(uid, m, firstBlock...lastBlock, prefix: state, plan: plan)
        func image(_ content: [UInt8]) -> [[UInt8]] {
            var b = known
            b.replaceSubrange(
                (plan.offset - firstBlock * bs)..<(plan.offset - firstBlock * bs + content.count), with: content)
            return stride(from: 0, to: b.count, by: bs).map { Array(b[$0..<($0 + bs)]) }
        }
        let staged = image(plan.staged), final = image(plan.final)
        let headerCount = headerEnd - firstBlock + 1
        var written = 0
        do throws(ClientError) {
            try writeBlocks(
                uid, first: block(firstBlock), blocks: Array(staged[0..<headerCount]), verify: false,
                option: option ? true : nil)
            written += headerCount
            if lastBlock > headerEnd {
                try writeBlocks(
                    uid, first: block(headerEnd + 1), blocks: Array(staged[headerCount...]), verify: true,
                    option: option ? true : nil)
                written += lastBlock - headerEnd
            }
            try writeBlocks(
                uid, first: block(firstBlock), blocks: Array(final[0..<headerCount]), verify: true,
                option: option ? true : nil)
            written += headerCount
        } catch {
            throw .client(error)
        }
        return NDEFWriteReport(
            messageBytes: message.count, capacity: area.capacity, blocksWritten: written, option: option,
            exchanges: exchanges - before)
    }

    /// Formats a tag for NDEF: a CC sized from the memory the chip reports (8-byte form past 2040 bytes,
    /// E2 past 256 blocks unless the chip uses the Protocol Extension flag), an empty NDEF TLV and a
    /// Terminator. A tag that already has a valid CC is left alone unless `force`. When the CC write is
    /// refused without the Option flag, it is written again with it and the CC asks for Special Frame
    /// (RFAL `ndefT5TPollerTagFormat`).
    @discardableResult
    /// `eightByte`: the NFC Forum 8-byte CC where a 4-byte one with the MLEN-overflow bit would do
    /// (`CapabilityContainer.forFormatting`).
    public func formatNDEF(_ uid: UID, force: Bool = false, eightByte: Bool = false) throws(NDEFTagError)
        -> CapabilityContainer
    {
        let m = try ndefMemory(uid)
        if !force {
            var head: [UInt8] = []
            try readUpTo(uid, m, 8, into: &head)
            if let cc = try? CapabilityContainer.decode(head) {
                throw .refused(
                    "already NDEF-formatted (CC \(Hex.format(cc.encode()))); formatting would erase its NDEF message: add --force to format anyway"
                )
            }
        }
        let addressing: Bool? =
            switch m.addressing {
            case .extended: true
            case .protocolExtension: false
            case .plain: nil
            }
        var cc = CapabilityContainer.forFormatting(
            blocks: m.blockCount, blockSize: m.blockSize, readMultiple: m.maxBlocksPerRead > 1,
            specialFrame: m.writeNeedsOption, twoByteAddressing: addressing, eightByte: eightByte)
        func blocks(_ cc: CapabilityContainer) -> [[UInt8]] {
            var b = cc.formattedBytes
            b += [UInt8](repeating: 0, count: (m.blockSize - b.count % m.blockSize) % m.blockSize)
            return stride(from: 0, to: b.count, by: m.blockSize).map { Array(b[$0..<($0 + m.blockSize)]) }
        }
        do throws(ClientError) {
            try writeBlocks(uid, first: 0, blocks: blocks(cc), verify: true, option: cc.specialFrame ? true : nil)
        } catch {
            // A chip that wants the Option flag either answers an error or, like the Tag-it, stays silent.
            let refused: Bool =
                switch error {
                case .tag, .reader(.timeout, _): true
                default: false
                }
            guard !cc.specialFrame, refused else { throw .client(error) }
            cc.specialFrame = true
            do throws(ClientError) {
                try writeBlocks(uid, first: 0, blocks: blocks(cc), verify: true, option: true)
            } catch { throw .client(error) }
        }
        return cc
    }

    /// Makes the tag read-only for ever: the CC with write access "never", then Lock Block on every block
    /// from the CC to the end of the data area (RFAL `ndefT5TPollerSetReadOnly`, then `ndefT5TLockDevice`).
    /// Irreversible: the CLI asks for `--yes`.
    public func lockNDEF(_ uid: UID) throws(NDEFTagError) -> NDEFLockReport {
        let before = exchanges
        let state = try readNDEF(uid)
        guard let area = state.area else { throw .notFormatted(state.reason ?? "no capability container") }
        let m = try ndefMemory(uid)
        let bs = m.blockSize
        let cc = area.cc.readOnly
        let ccBlocks = (cc.length + bs - 1) / bs
        let option = area.cc.specialFrame ? true : nil
        if area.cc.isWritable {
            var b = Array(try bytesOfBlocks(uid, m, 0...(ccBlocks - 1), prefix: state, plan: nil))
            b.replaceSubrange(0..<cc.length, with: cc.encode())
            do throws(ClientError) {
                try writeBlocks(
                    uid, first: 0, blocks: stride(from: 0, to: b.count, by: bs).map { Array(b[$0..<($0 + bs)]) },
                    verify: true, option: option)
            } catch { throw .client(error) }
        }
        var report = NDEFLockReport(cc: cc, locked: 0, alreadyLocked: 0, lockProblem: nil, exchanges: 0)
        let count = min(m.blockCount, (area.areaEnd + bs - 1) / bs)
        for n in 0..<count {
            do throws(ClientError) {
                try lockBlock(uid, block: block(n), option: option)
                report.locked += 1
            } catch {
                if case let .tag(code, _) = error, code == .blockAlreadyLocked {
                    report.alreadyLocked += 1
                    continue
                }
                guard case .tag = error else { throw .client(error) }
                report.lockProblem =
                    "Lock Block on block \(block(n)) failed (\(error)); the CC says read-only but blocks \(block(n))… stay writable by raw block commands"
                break
            }
        }
        report.exchanges = exchanges - before
        return report
    }

    // MARK: Helpers

    private func ndefMemory(_ uid: UID) throws(NDEFTagError) -> TagMemory {
        do { return try memory(of: uid) } catch { throw .client(error) }
    }

    private func block(_ n: Int) -> BlockNumber { BlockNumber(exactly: n) ?? 0 }

    /// Extends `bytes` (memory from block 0) by whole blocks to at least `n` bytes.
    private func readUpTo(_ uid: UID, _ m: TagMemory, _ n: Int, into bytes: inout [UInt8]) throws(NDEFTagError) {
        let have = bytes.count / m.blockSize
        let need = min(m.blockCount, (n + m.blockSize - 1) / m.blockSize)
        guard need > have else { return }
        do {
            for b in try readBlocks(uid, first: block(have), count: need - have) { bytes += b.data }
        } catch { throw .client(error) }
    }

    /// The current bytes of `blocks`: from what `readNDEF` read, where it covers them; the first and last
    /// blocks read from the tag otherwise (the ones between are overwritten by `plan` anyway).
    private func bytesOfBlocks(
        _ uid: UID, _ m: TagMemory, _ blocks: ClosedRange<Int>, prefix state: NDEFTagState,
        plan: NDEFWritePlan?
    ) throws(NDEFTagError) -> [UInt8] {
        let bs = m.blockSize
        let prefix = state.memoryRead
        var out: [UInt8] = []
        for n in blocks {
            let inside = plan.map { p in n * bs >= p.offset && (n + 1) * bs <= p.offset + p.staged.count } ?? false
            if inside { out += [UInt8](repeating: 0, count: bs); continue }
            if (n + 1) * bs <= prefix.count { out += prefix[(n * bs)..<((n + 1) * bs)]; continue }
            do { out += try readBlocks(uid, first: block(n), count: 1)[0].data } catch { throw .client(error) }
        }
        return out
    }
}
