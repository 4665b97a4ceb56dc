/// A request as sent by a reader: flags, command, addressing. `encode()` is the one frame encoder of the
/// project and `decode(_:)` its inverse (used by the tag simulator and by `vlogger decode`). Frames here
/// are without CRC; `CRC16.appending(to:)` gives the on-air form.
public struct Request: Hashable, Sendable {
    public private(set) var flags: RequestFlags
    public let command: Command
    public let addressing: Addressing

    /// Builds a request whose flags agree with the command and the addressing: the Inventory flag is set
    /// for Inventory only; Address and Select follow `addressing`; for Inventory, AFI follows the command.
    /// Other bits (data rate, subcarrier, Option, Protocol Extension, slots) are taken from `flags`.
    public init(_ command: Command, flags: RequestFlags = [.highDataRate], addressing: Addressing = .nonAddressed) {
        var f = flags
        if case let .inventory(afi, _) = command {
            f.insert(.inventory)
            if afi != nil { f.insert(.afi) } else { f.remove(.afi) }
            self.addressing = .nonAddressed
        } else if case .custom = command, flags.contains(.inventory) {
            // A custom inventory command (NXP Inventory Read 0xA0/0xA1): bits 5–6 are the Inventory's AFI and
            // slot flags, taken as given; never addressed.
            self.addressing = .nonAddressed
        } else {
            f.remove(.inventory)
            f.remove([.select, .address])
            switch addressing {
            case .addressed: f.insert(.address)
            case .selected: f.insert(.select)
            case .nonAddressed: break
            }
            self.addressing = addressing
        }
        self.flags = f
        self.command = command
    }

    /// Number of slots of an Inventory request or a custom inventory command (1 or 16), nil for other commands.
    public var inventorySlots: Int? {
        guard flags.isInventory else { return nil }
        return flags.contains(.oneSlot) ? 1 : 16
    }

    /// Block numbers take two bytes: extended commands, or plain block commands with Protocol Extension.
    var usesWideBlockNumbers: Bool { command.code.wideBlockNumbers(flags) }

    // MARK: Encoding

    /// The frame without CRC.
    public func encode() throws(FrameError) -> [UInt8] {
        var out: [UInt8] = [flags.rawValue, command.code.rawValue]
        let wide = usesWideBlockNumbers
        func block(_ b: BlockNumber) throws(FrameError) {
            if wide {
                out += [UInt8(b.value & 0xFF), UInt8(b.value >> 8)]
            } else {
                guard b.value <= 0xFF else {
                    throw FrameError.invalidField(
                        "block \(b) needs an extended command (0x30–0x34) or the Protocol Extension flag; \(command.code.name) carries one byte"
                    )
                }
                out.append(UInt8(b.value))
            }
        }
        func count(_ n: Int, wideCount: Bool) throws(FrameError) {
            let limit = wideCount ? 65536 : 256
            guard (1...limit).contains(n) else {
                throw FrameError.invalidField("block count \(n) is outside 1…\(limit) for \(command.code.name)")
            }
            if wideCount { out += [UInt8((n - 1) & 0xFF), UInt8((n - 1) >> 8)] } else { out.append(UInt8(n - 1)) }
        }
        func blockData(_ data: [UInt8], blocks: Int) throws(FrameError) {
            guard !data.isEmpty, data.count % blocks == 0, (1...32).contains(data.count / blocks) else {
                throw FrameError.invalidField(
                    "\(data.count) data bytes do not make \(blocks) block(s) of 1…32 bytes each")
            }
            out += data
        }
        // Address: the UID follows the command byte (and the manufacturer byte of custom commands).
        func address() {
            if case let .addressed(uid) = addressing { out += uid.onAirBytes }
        }

        switch command {
        case let .inventory(afi, mask):
            let maxBits = flags.contains(.oneSlot) ? 64 : 60
            guard mask.length <= maxBits else {
                throw FrameError.invalidField(
                    "inventory mask of \(mask.length) bits is longer than \(maxBits) bits allowed with \(inventorySlots ?? 16) slot(s)"
                )
            }
            if let afi { out.append(afi) }
            out.append(UInt8(mask.length))
            out += mask.onAirBytes
            return out
        case .stayQuiet, .select:
            guard case .addressed = addressing else {
                throw FrameError.invalidField("\(command.code.name) must be addressed (Address flag and UID)")
            }
            address()
        case .resetToReady, .lockAFI, .lockDSFID, .getSystemInformation:
            address()
        case let .writeAFI(v), let .writeDSFID(v):
            address(); out.append(v)
        case let .readSingleBlock(b), let .lockBlock(b), let .extendedReadSingleBlock(b), let .extendedLockBlock(b):
            address(); try block(b)
        case let .writeSingleBlock(b, data), let .extendedWriteSingleBlock(b, data):
            address(); try block(b); try blockData(data, blocks: 1)
        case let .readMultipleBlocks(first, n), let .getMultipleBlockSecurityStatus(first, n):
            address(); try block(first); try count(n, wideCount: false)
        case let .extendedReadMultipleBlocks(first, n), let .extendedGetMultipleBlockSecurityStatus(first, n):
            address(); try block(first); try count(n, wideCount: true)
        case let .writeMultipleBlocks(first, n, data):
            address(); try block(first); try count(n, wideCount: false); try blockData(data, blocks: n)
        case let .extendedWriteMultipleBlocks(first, n, data):
            address(); try block(first); try count(n, wideCount: true); try blockData(data, blocks: n)
        case let .extendedGetSystemInformation(parameters):
            // The parameter byte precedes the UID (ISO/IEC 15693-3:2019 §10.4.19; RFAL puts it first too).
            out.append(parameters); address()
        case let .custom(code, manufacturer, parameters):
            guard CommandCode(code).kind == .custom else {
                throw FrameError.invalidField("custom command code 0x\(Hex.format([code])) is outside 0xA0…0xDF")
            }
            out.append(manufacturer.rawValue); address(); out += parameters
        case let .proprietary(code, parameters):
            guard CommandCode(code).kind == .proprietary else {
                throw FrameError.invalidField("proprietary command code 0x\(Hex.format([code])) is outside 0xE0…0xFF")
            }
            address(); out += parameters
        case let .other(_, parameters):
            address(); out += parameters
        }
        return out
    }

    /// The frame as it goes on air, with the CRC appended.
    public func encodeOnAir() throws(FrameError) -> [UInt8] { CRC16.appending(to: try encode()) }

    // MARK: Decoding

    /// Decodes a request frame without CRC. Anything that does not follow ISO/IEC 15693-3 is a `FrameError`.
    public static func decode(_ frame: [UInt8]) throws(FrameError) -> Request {
        guard frame.count >= 2 else {
            if frame.isEmpty { throw FrameError.empty }
            throw FrameError.truncated(what: "request (flags, command)", needed: 2, got: frame.count)
        }
        let flags = RequestFlags(rawValue: frame[0])
        let code = CommandCode(frame[1])
        var r = Reader(frame, from: 2)

        if flags.isInventory {
            switch code.layout {
            case .inventory:
                let afi: UInt8? = flags.contains(.afi) ? try r.byte("AFI") : nil
                let length = Int(try r.byte("mask length"))
                let maxBits = flags.contains(.oneSlot) ? 64 : 60
                guard length <= maxBits else {
                    throw FrameError.invalidField("inventory mask length \(length) exceeds \(maxBits) bits")
                }
                let maskBytes = try r.bytes((length + 7) / 8, "mask value")
                try r.end("Inventory")
                var v: UInt64 = 0
                for (i, b) in maskBytes.enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
                let mask = try InventoryMask(length: length, value: v)
                return Request(.inventory(afi: afi, mask: mask), flags: flags)
            case .custom:
                // Custom inventory commands (NXP Inventory Read 0xA0/0xA1): manufacturer byte, then their own fields.
                let mfr = try r.byte("manufacturer code")
                return Request(
                    .custom(code: code.rawValue, manufacturer: ManufacturerCode(mfr), parameters: r.rest()),
                    flags: flags)
            default:
                throw FrameError.invalidField(
                    "Inventory flag set on \(code.name); only Inventory and custom inventory commands use it")
            }
        }

        if flags.contains(.select) && flags.contains(.address) {
            throw FrameError.invalidField(
                "Select and Address flags are both set; ISO/IEC 15693-3 allows one or the other")
        }
        let wide = code.wideBlockNumbers(flags)
        func addressing() throws(FrameError) -> Addressing {
            if flags.contains(.address) { return .addressed(try r.uid()) }
            return flags.contains(.select) ? .selected : .nonAddressed
        }
        func block() throws(FrameError) -> BlockNumber {
            wide ? BlockNumber(try r.le16("block number")) : BlockNumber(UInt16(try r.byte("block number")))
        }
        func count() throws(FrameError) -> Int {
            code.wideCount ? Int(try r.le16("block count")) + 1 : Int(try r.byte("block count")) + 1
        }
        let name = code.name
        let command: Command
        let addr: Addressing
        switch code.layout {
        case .inventory:
            throw FrameError.invalidField("Inventory (0x01) without the Inventory flag")
        case .addressedOnly:
            addr = try addressing()
            guard case .addressed = addr else { throw FrameError.invalidField("\(name) must be addressed") }
            try r.end(name)
            command = try Command(code: code)
        case .nothing:
            addr = try addressing(); try r.end(name)
            command = try Command(code: code)
        case let .value(what):
            addr = try addressing(); let v = try r.byte(what); try r.end(name)
            command = try Command(code: code, value: v)
        case .block:
            addr = try addressing(); let b = try block(); try r.end(name)
            command = try Command(code: code, block: b)
        case .blockData:
            addr = try addressing(); let b = try block(); let data = r.rest()
            guard (1...32).contains(data.count) else {
                throw FrameError.wrongLength(what: name + " data", expected: "1…32", got: data.count)
            }
            command = try Command(code: code, block: b, data: data)
        case .blocks:
            addr = try addressing(); let b = try block(); let n = try count(); try r.end(name)
            command = try Command(code: code, block: b, count: n)
        case .blocksData:
            addr = try addressing(); let b = try block(); let n = try count(); let data = r.rest()
            guard !data.isEmpty, data.count % n == 0, (1...32).contains(data.count / n) else {
                throw FrameError.wrongLength(
                    what: "\(name) data for \(n) block(s)", expected: "a multiple of \(n), 1…32 per block",
                    got: data.count)
            }
            command = try Command(code: code, block: b, count: n, data: data)
        case .parametersThenAddress:
            let p = try r.byte("parameter byte"); addr = try addressing(); try r.end(name)
            command = try Command(code: code, value: p)
        case .custom:
            let mfr = try r.byte("IC manufacturer code"); addr = try addressing()
            command = .custom(code: code.rawValue, manufacturer: ManufacturerCode(mfr), parameters: r.rest())
        case .opaque:
            addr = try addressing()
            command = try Command(code: code, data: r.rest())
        }
        var request = Request(command, flags: flags, addressing: addr)
        request.flags = flags
        return request
    }

    /// One line of meaning, e.g. `Read Single Block 0xF8, addressed to E004…, flags 0x22 (high,address)`.
    public var summary: String {
        var s = command.code.name
        if case let .custom(code, m, _) = command, let name = CustomCommands.name(code, m) { s = name }
        switch command {
        case let .inventory(afi, mask):
            s += ", \(inventorySlots ?? 16) slot(s)"
            if let afi { s += ", AFI 0x\(Hex.format([afi]))" }
            s += ", \(mask)"
        case let .readSingleBlock(b), let .lockBlock(b), let .extendedReadSingleBlock(b), let .extendedLockBlock(b):
            s += " \(b)"
        case let .writeSingleBlock(b, d), let .extendedWriteSingleBlock(b, d):
            s += " \(b) ← \(Hex.format(d))"
        case let .readMultipleBlocks(f, n), let .extendedReadMultipleBlocks(f, n),
            let .getMultipleBlockSecurityStatus(f, n), let .extendedGetMultipleBlockSecurityStatus(f, n):
            s += " \(f)…\(f.advanced(by: n - 1)?.description ?? "?") (\(n) block\(n == 1 ? "" : "s"))"
        case let .writeMultipleBlocks(f, n, d), let .extendedWriteMultipleBlocks(f, n, d):
            s += " \(f)… (\(n) blocks) ← \(Hex.format(d))"
        case let .writeAFI(v): s += " 0x\(Hex.format([v]))"
        case let .writeDSFID(v): s += " 0x\(Hex.format([v]))"
        case let .extendedGetSystemInformation(p): s += " fields 0x\(Hex.format([p]))"
        case let .custom(code, m, p):
            s += " for manufacturer \(m)"
            if let laid = CustomCommands.parameters(code, m, p, flags: flags) {
                s += ", " + laid
            } else if !p.isEmpty {
                // A password in a command whose layout is not known is not printed either.
                s +=
                    CustomCommands.name(code, m)?.lowercased().contains("password") == true
                    ? ", parameters ** (\(p.count) bytes)" : ", parameters \(Hex.format(p))"
            }
        case let .proprietary(_, p), let .other(_, p): if !p.isEmpty { s += ", parameters \(Hex.format(p))" }
        default: break
        }
        if case .inventory = command {} else { s += ", \(addressing)" }
        return s + ", flags \(flags)"
    }
}

/// A cursor over a frame that reports truncation as a `FrameError` instead of trapping.
struct Reader {
    let frame: [UInt8]
    var index: Int
    init(_ frame: [UInt8], from index: Int) {
        self.frame = frame
        self.index = index
    }
    var remaining: Int { frame.count - index }
    mutating func byte(_ what: String) throws(FrameError) -> UInt8 {
        guard index < frame.count else {
            throw FrameError.truncated(what: "frame (\(what) missing)", needed: index + 1, got: frame.count)
        }
        defer { index += 1 }
        return frame[index]
    }
    mutating func le16(_ what: String) throws(FrameError) -> UInt16 {
        let lo = try byte(what)
        let hi = try byte(what)
        return UInt16(lo) | UInt16(hi) << 8
    }
    mutating func bytes(_ n: Int, _ what: String) throws(FrameError) -> [UInt8] {
        guard n >= 0, remaining >= n else {
            throw FrameError.truncated(what: "frame (\(what) missing)", needed: index + n, got: frame.count)
        }
        defer { index += n }
        return Array(frame[index..<(index + n)])
    }
    mutating func uid() throws(FrameError) -> UID { try UID(onAir: try bytes(8, "UID")) }
    mutating func rest() -> [UInt8] {
        defer { index = frame.count }
        return Array(frame[index...])
    }
    func end(_ what: String) throws(FrameError) {
        guard remaining == 0 else {
            throw FrameError.wrongLength(what: what, expected: "\(index)", got: frame.count)
        }
    }
}
