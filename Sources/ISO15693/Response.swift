/// Block security status (one byte per block; bit 0 = locked). Returned before each block when a read has
/// the Option flag, and by Get Multiple Block Security Status.
public struct BlockSecurityStatus: OptionSet, Hashable, Sendable, Codable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let locked = BlockSecurityStatus(rawValue: 0x01)
    public var isLocked: Bool { contains(.locked) }
}

/// One block as read from a tag.
public struct BlockRead: Hashable, Sendable {
    public let number: BlockNumber
    public let data: [UInt8]
    /// Present when the read had the Option flag.
    public let security: BlockSecurityStatus?
    public init(number: BlockNumber, data: [UInt8], security: BlockSecurityStatus?) {
        self.number = number
        self.data = data
        self.security = security
    }
}

/// What a response carries after its flags byte, decoded for the command it answers.
public enum ResponseBody: Hashable, Sendable {
    case error(ISOErrorCode)
    case inventory(dsfid: UInt8, uid: UID)
    /// Flags only: writes, locks, Select, Reset to Ready, AFI/DSFID writes and locks.
    case done
    case blocks([BlockRead])
    case systemInformation(SystemInformation)
    case securityStatus([BlockSecurityStatus])
    /// Custom, proprietary and other commands: the bytes after the flags, not interpreted.
    case data([UInt8])
}

/// A tag's response: flags and body. Frames are without CRC.
public struct Response: Hashable, Sendable {
    public let flags: ResponseFlags
    public let body: ResponseBody

    public init(flags: ResponseFlags = [], body: ResponseBody) {
        if case .error = body { self.flags = flags.union(.error) } else { self.flags = flags }
        self.body = body
    }

    /// Decodes the response to `request`. `blockSize` (from Get System Information) makes read responses
    /// strict; without it the block size is inferred from the length and the request's block count.
    public static func decode(_ frame: [UInt8], to request: Request, blockSize: Int? = nil) throws(FrameError)
        -> Response
    {
        guard let first = frame.first else { throw FrameError.empty }
        let flags = ResponseFlags(rawValue: first)
        let name = request.command.code.name
        if flags.contains(.error) {
            guard frame.count == 2 else {
                throw FrameError.wrongLength(
                    what: "error response to \(name)", expected: "2 (flags, error code)", got: frame.count)
            }
            return Response(flags: flags, body: .error(ISOErrorCode(frame[1])))
        }
        var r = Reader(frame, from: 1)
        let option = request.flags.contains(.option)
        switch request.command {
        case .inventory:
            let dsfid = try r.byte("DSFID")
            let uid = try r.uid()
            try r.end("Inventory response")
            return Response(flags: flags, body: .inventory(dsfid: dsfid, uid: uid))
        case .stayQuiet:
            throw FrameError.invalidField("a tag never answers Stay Quiet, yet \(frame.count) byte(s) came back")
        case .writeSingleBlock, .lockBlock, .writeMultipleBlocks, .select, .resetToReady, .writeAFI, .lockAFI,
            .writeDSFID, .lockDSFID, .extendedWriteSingleBlock, .extendedLockBlock, .extendedWriteMultipleBlocks:
            try r.end("\(name) response")
            return Response(flags: flags, body: .done)
        case let .readSingleBlock(b), let .extendedReadSingleBlock(b):
            return Response(
                flags: flags,
                body: .blocks(
                    try decodeBlocks(&r, first: b, count: 1, option: option, blockSize: blockSize, name: name)))
        case let .readMultipleBlocks(f, n), let .extendedReadMultipleBlocks(f, n):
            return Response(
                flags: flags,
                body: .blocks(
                    try decodeBlocks(&r, first: f, count: n, option: option, blockSize: blockSize, name: name)))
        case .getSystemInformation:
            let info = try SystemInformation.decode(
                &r, extended: false, protocolExtension: request.flags.contains(.protocolExtension))
            return Response(flags: flags, body: .systemInformation(info))
        case .extendedGetSystemInformation:
            let info = try SystemInformation.decode(&r, extended: true, protocolExtension: false)
            return Response(flags: flags, body: .systemInformation(info))
        case let .getMultipleBlockSecurityStatus(_, n), let .extendedGetMultipleBlockSecurityStatus(_, n):
            let bytes = try r.bytes(n, "security status")
            try r.end("\(name) response")
            return Response(flags: flags, body: .securityStatus(bytes.map { BlockSecurityStatus(rawValue: $0) }))
        case .custom, .proprietary, .other:
            return Response(flags: flags, body: .data(r.rest()))
        }
    }

    static func decodeBlocks(
        _ r: inout Reader, first: BlockNumber, count: Int, option: Bool,
        blockSize: Int?, name: String
    ) throws(FrameError) -> [BlockRead] {
        let total = r.remaining
        let per = option ? 1 : 0
        let size: Int
        if let blockSize {
            size = blockSize
            guard total == count * (blockSize + per) else {
                throw FrameError.wrongLength(
                    what: "\(name) response (\(count) × \(blockSize)-byte block\(option ? " + security byte" : ""))",
                    expected: "\(1 + count * (blockSize + per))", got: total + 1)
            }
        } else {
            guard count > 0, total % count == 0, (1...32).contains(total / count - per) else {
                throw FrameError.wrongLength(
                    what: "\(name) response for \(count) block(s)",
                    expected: "1 + \(count) × (1…32\(option ? " + 1" : ""))", got: total + 1)
            }
            size = total / count - per
        }
        var blocks: [BlockRead] = []
        blocks.reserveCapacity(count)
        for i in 0..<count {
            let sec: BlockSecurityStatus? = option ? BlockSecurityStatus(rawValue: try r.byte("security status")) : nil
            let data = try r.bytes(size, "block data")
            guard let number = first.advanced(by: i) else {
                throw FrameError.invalidField("block range starting at \(first) runs past 0xFFFF")
            }
            blocks.append(BlockRead(number: number, data: data, security: sec))
        }
        return blocks
    }

    /// The response frame without CRC (the tag simulator's encoder).
    public func encode(extendedSystemInformation: Bool = false, protocolExtension: Bool = false) -> [UInt8] {
        var out: [UInt8] = [flags.rawValue]
        switch body {
        case let .error(code): out.append(code.rawValue)
        case let .inventory(dsfid, uid): out.append(dsfid); out += uid.onAirBytes
        case .done: break
        case let .blocks(blocks):
            for b in blocks {
                if let s = b.security { out.append(s.rawValue) }
                out += b.data
            }
        case let .systemInformation(info):
            out += info.encode(extended: extendedSystemInformation, protocolExtension: protocolExtension)
        case let .securityStatus(s): out += s.map(\.rawValue)
        case let .data(d): out += d
        }
        return out
    }

    /// One line of meaning.
    public var summary: String {
        switch body {
        case let .error(code): return "error flag, \(code)"
        case let .inventory(dsfid, uid):
            return "UID \(uid), DSFID 0x\(Hex.format([dsfid])), manufacturer \(uid.manufacturer)"
        case .done: return "OK"
        case let .blocks(blocks):
            return blocks.map { b in
                "\(b.number): \(Hex.format(b.data))"
                    + (b.security.map { $0.isLocked ? " [locked]" : " [unlocked]" } ?? "")
            }.joined(separator: "; ")
        case let .systemInformation(info): return info.summary
        case let .securityStatus(s): return "security status " + s.map { $0.isLocked ? "L" : "-" }.joined()
        case let .data(d): return d.isEmpty ? "OK (no data)" : "data \(Hex.format(d))"
        }
    }
}
