#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import FEIG
import ISO15693
import Readers

/// Where a FEIG reader is and how to talk to it: `/dev/ttyUSB0` (38400 baud, even parity: the readers' factory
/// setting) or `tcp://HOST[:PORT]` (port 10001 by default), then options after commas:
/// `baud=115200`, `parity=none|even|odd`, `address=0…255` (COM-ADR; 255, the default, reaches the one reader of
/// a point-to-point link), `timeout=MS` (the reader's answer; 3000), `char-timeout=MS` (between two bytes of
/// one answer; 25), `frames=advanced|standard`.
public struct FEIGDevice: Equatable, Sendable, CustomStringConvertible {
    public enum Port: Equatable, Sendable {
        case serial(path: String, baud: Int, parity: FDLink.Parity)
        case tcp(host: String, port: Int)
    }

    public var port: Port
    public var address: UInt8 = FEIGFrame.anyReader
    public var responseTimeoutMs = 3000
    public var interCharacterTimeoutMs = 25
    /// Advanced frames (0x02, two length bytes): the form every newer reader's manual shows (ID ISC.MR102
    /// shows no other) and the form of the real LR1002 traffic; `frames=standard` for old readers.
    public var advancedFrames = true

    /// The LAN readers' port (FEIG's SDK samples and FETCP's examples).
    public static let defaultTCPPort = 10001

    public init(port: Port) { self.port = port }

    public static func parse(_ text: String) throws(FEIGDeviceError) -> FEIGDevice {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard let first = parts.first, !first.isEmpty else {
            throw .invalid("no device: give a serial port (/dev/ttyUSB0) or tcp://HOST[:PORT]")
        }
        var device: FEIGDevice
        if first.hasPrefix("tcp://") {
            let rest = String(first.dropFirst("tcp://".count))
            var host = rest, port = defaultTCPPort
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else {
                    throw .invalid("\(first): an IPv6 address needs its closing ]")
                }
                host = String(rest[rest.index(after: rest.startIndex)..<close])
                let after = rest[rest.index(after: close)...]
                if !after.isEmpty {
                    guard after.first == ":", let p = Int(after.dropFirst()) else {
                        throw .invalid("\(first): the port after ] must be :NUMBER")
                    }
                    port = p
                }
            } else if let colon = rest.lastIndex(of: ":") {
                host = String(rest[..<colon])
                guard let p = Int(rest[rest.index(after: colon)...]) else {
                    throw .invalid("\(first): the port must be a number")
                }
                port = p
            }
            guard !host.isEmpty else { throw .invalid("\(first): no host") }
            guard (1...65535).contains(port) else { throw .invalid("\(first): port \(port) is outside 1…65535") }
            device = FEIGDevice(port: .tcp(host: host, port: port))
        } else if first.hasPrefix("/") {
            device = FEIGDevice(port: .serial(path: first, baud: 38400, parity: .even))
        } else {
            throw .invalid("\(first): a FEIG device is a serial port path (/dev/ttyUSB0) or tcp://HOST[:PORT]")
        }
        for option in parts.dropFirst() {
            guard let eq = option.firstIndex(of: "=") else { throw .invalid("option \"\(option)\" is not KEY=VALUE") }
            let key = String(option[..<eq]), value = String(option[option.index(after: eq)...])
            func number(_ range: ClosedRange<Int>) throws(FEIGDeviceError) -> Int {
                guard let n = Int(value), range.contains(n) else {
                    throw .invalid("\(key)=\(value): a number in \(range.lowerBound)…\(range.upperBound) is needed")
                }
                return n
            }
            switch key {
            case "baud", "parity":
                guard case let .serial(path, baud, parity) = device.port else {
                    throw .invalid("\(key) is a serial port's option; \(first) is a TCP address")
                }
                if key == "baud" {
                    guard let b = Int(value), FDLink.baudRates[b] != nil else {
                        throw .invalid(
                            "baud=\(value): one of \(FDLink.baudRates.keys.sorted().map(String.init).joined(separator: ", "))"
                        )
                    }
                    device.port = .serial(path: path, baud: b, parity: parity)
                } else {
                    guard let p = FDLink.Parity(rawValue: value) else {
                        throw .invalid("parity=\(value): none, even or odd")
                    }
                    device.port = .serial(path: path, baud: baud, parity: p)
                }
            case "address": device.address = UInt8(try number(0...255))
            case "timeout": device.responseTimeoutMs = try number(10...60_000)
            case "char-timeout": device.interCharacterTimeoutMs = try number(1...5_000)
            case "frames":
                switch value {
                case "advanced": device.advancedFrames = true
                case "standard": device.advancedFrames = false
                default: throw .invalid("frames=\(value): advanced or standard")
                }
            default:
                throw .invalid("unknown option \"\(key)\" (baud, parity, address, timeout, char-timeout, frames)")
            }
        }
        return device
    }

    public var description: String {
        var s: String
        switch port {
        case let .serial(path, baud, parity): s = "\(path) \(baud) baud \(parity.rawValue) parity"
        case let .tcp(host, port): s = host.contains(":") ? "tcp://[\(host)]:\(port)" : "tcp://\(host):\(port)"
        }
        if address != FEIGFrame.anyReader { s += " COM-ADR \(address)" }
        return s
    }

    public func openLink() throws(FEIGLinkError) -> FEIGLink {
        switch port {
        case let .serial(path, baud, parity): return try FDLink.serial(path: path, baud: baud, parity: parity)
        case let .tcp(host, port): return try FDLink.tcp(host: host, port: port, timeoutMs: responseTimeoutMs)
        }
    }
}

public enum FEIGDeviceError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalid(String)
    public var description: String {
        switch self {
        case .invalid(let s): return "FEIG device: \(s)"
        }
    }
}

/// A FEIG OBID ID ISC reader as a `TagReader`. The reader speaks ISO 15693 to the tags itself; the host sends it
/// [0xB0] host commands (ISO 15693) and [0xB1] (manufacturer custom commands). This driver turns each ISO 15693
/// request frame the client builds into the host command that does the same, and the reader's reply back
/// into the answer the tag gave, so everything above the `TagReader` seam runs unchanged:
///
/// - Inventory: the reader resolves collisions itself (`readerInventory`); a one-slot Inventory frame is
///   answered from it too (silence, one tag, or a collision, the mask applied here); 16-slot rounds and
///   slot markers have no host-command form.
/// - addressing: the request's Address flag and UID, or its Select flag, become MODE's ADR bits; the Option
///   flag of a read becomes SEC (the blocks' security status). Data rate, subcarrier and the Option flag
///   of writes are the reader's configuration (CFG registers), not per request.
/// - the reader's STATUS becomes the project's errors: 0x01 → no answer (timeout), 0x0B/0x0C → collision,
///   0x02 and 0x83 → a damaged answer (retried), 0x95 → the tag's own ISO error code, RF and hardware warnings
///   → a device error, anything else → `readerStatus` with the reader's words.
///
/// Tested against the FEIG reader emulator (FEIGEmulator, over a pseudo-terminal and loopback TCP) and against
/// frames from real ID ISC.LR1002 traffic; not against a FEIG reader (none here).
public final class FEIGReader: TagReader {
    public let device: FEIGDevice
    public var name: String { "FEIG \(device)" }
    /// A [0xB0] request carries at most a standard frame's data. The answer side follows the reader's transmit
    /// buffer once [0x66] has reported it (`readLimit(transmitBuffer:)`); until then that of a 1024-byte buffer.
    public var limits = ReaderLimits(maxRequestBytes: 240, maxResponseBytes: FEIGReader.readLimit(transmitBuffer: 1024))

    /// The largest tag answer (ISO bytes, flags byte included) whose Read Multiple Blocks reply fits the reader's
    /// transmit buffer. FEIG's manuals give the largest DB-N as (TX-BUF − 12) / (DB-SIZE + 1) for advanced frames
    /// (ID ISC.MR/PR/PRH101 p. 63, ID ISC.MR200 p. 93: each block travels with its SEC-STATUS byte). The client
    /// plans reads as (limit − 1) / block size blocks; with this limit that stays within FEIG's figure for every
    /// block size from 4 bytes up (all the chips the model table has with Read Multiple Blocks).
    public static func readLimit(transmitBuffer: UInt16) -> Int {
        max(16, (Int(transmitBuffer) - 12) * 4 / 5 + 1)
    }
    public var trace: ((TraceEvent) -> Void)?
    public private(set) var airTime: AirTime = .zero
    public var supportsSlotMarkers: Bool { false }
    public var hasReaderInventory: Bool { true }
    /// Each block's bytes reversed between the reader's order and the tag's ([0x23], [0x24]; FEIG's SDK does so).
    public var reverseBlockBytes = true
    /// What the reader said about itself at open ([0x66] Get Reader Info).
    public private(set) var info: FEIGReaderInfo?

    private var host: FEIGHost?
    private let openLink: () throws(FEIGLinkError) -> FEIGLink

    /// A reader behind `link` (tests hand in a pseudo-terminal or a socket); `reopen` makes a new link after
    /// the old one failed (a TCP reader that restarted), nil: reopen the device.
    public init(device: FEIGDevice, link: FEIGLink? = nil) {
        self.device = device
        openLink = { () throws(FEIGLinkError) -> FEIGLink in try device.openLink() }
        if let link {
            host = FEIGHost(
                link: link, responseTimeoutMs: device.responseTimeoutMs,
                interCharacterTimeoutMs: device.interCharacterTimeoutMs)
        }
    }

    /// Opens the link and asks the reader who it is: a reader that does not answer is an error here, at
    /// open, not at the first poll.
    public static func open(_ device: FEIGDevice) throws(ReaderError) -> FEIGReader {
        let reader = FEIGReader(device: device)
        _ = try reader.identify()
        try reader.fieldOn()
        return reader
    }

    // MARK: The link

    private func connected() throws(ReaderError) -> FEIGHost {
        if let host { return host }
        do {
            let link = try openLink()
            let h = FEIGHost(
                link: link, responseTimeoutMs: device.responseTimeoutMs,
                interCharacterTimeoutMs: device.interCharacterTimeoutMs)
            host = h
            return h
        } catch {
            throw .device("FEIG reader \(device): \(error)")
        }
    }

    /// One host command and its reply. A broken link is dropped (the next command opens it again).
    public func command(_ control: UInt8, _ data: [UInt8]) throws(ReaderError) -> FEIGFrame {
        try transact(control, data).reply
    }

    /// One host command: the request frame sent and the reply.
    private func transact(_ control: UInt8, _ data: [UInt8]) throws(ReaderError) -> (
        request: FEIGFrame, reply: FEIGFrame
    ) {
        let h = try connected()
        let request = FEIGFrame(request: control, data: data, address: device.address, advanced: device.advancedFrames)
        do {
            return (request, try h.transact(request))
        } catch {
            switch error {
            case .frame, .incomplete, .unexpectedReply:
                // Noise on the line: the client retries like a garbled answer on air.
                throw .crcError(.invalidField("FEIG reader \(device): \(error)"))
            case .noAnswer:
                throw .device("FEIG reader \(device): \(error)")
            case .io, .open:
                h.link.close()
                host = nil
                throw .device("FEIG reader \(device): \(error); the link is opened again at the next command")
            }
        }
    }

    /// [0x66] Get Reader Info, MODE 0 (type and firmware).
    public func identify() throws(ReaderError) -> FEIGReaderInfo {
        let reply = try command(FEIGCommand.readerInfo, [0x00])
        guard reply.status == FEIGStatus.ok.rawValue else {
            throw Self.error(status: reply.status ?? 0, command: "Get Reader Info")
        }
        do {
            let i = try FEIGReaderInfo.decode(reply.data)
            info = i
            limits.maxResponseBytes = Self.readLimit(transmitBuffer: i.transmitBuffer)
            return i
        } catch {
            throw .device("FEIG reader \(device): \(error)")
        }
    }

    /// [0x6A] RF ON/OFF. A reader without the command (0x80, 0x82) keeps its field as its configuration says.
    private func rf(_ on: Bool) throws(ReaderError) {
        let reply = try command(FEIGCommand.rfOnOff, [on ? 0x01 : 0x00])
        switch reply.status {
        case FEIGStatus.ok.rawValue, FEIGStatus.unknownCommand.rawValue, FEIGStatus.commandNotAvailable.rawValue: return
        default: throw Self.error(status: reply.status ?? 0, command: "RF ON/OFF")
        }
    }

    public func fieldOn() throws(ReaderError) { try rf(true) }
    public func fieldOff() throws(ReaderError) { try rf(false) }

    public func close() {
        host?.link.close()
        host = nil
    }

    // MARK: Status → errors

    /// The project's error for a STATUS that is not OK (0x95 is handled where its data are).
    public static func error(status: UInt8, command: String) -> ReaderError {
        let text = FEIGStatus.describe(status)
        switch FEIGStatus(rawValue: status) {
        case .noTransponder?: return .timeout
        case .collision?, .weakCollision?: return .collision
        case .dataFalse?, .rfCommunicationError?:
            return .crcError(.invalidField("the FEIG reader received a damaged answer (\(text))"))
        case .rfWarning?, .hardwareWarning?, .initializationWarning?, .eepromFailure?, .synchronizationError?,
            .firmwareActivationRequired?, .wrongFirmware?, .loginRequest?, .loginError?:
            return .device("FEIG reader: \(command): status \(text); the reader needs attention")
        default:
            return .readerStatus(
                code: status,
                text: "\(FEIGStatus(rawValue: status)?.meaning ?? "not a status FEIG documents") (\(command))")
        }
    }

    // MARK: Inventory

    public func readerInventory(afi: UInt8?) throws(ReaderError) -> [InventoryEntry]? {
        guard afi == nil else {
            throw .notSupported(
                "an Inventory with an AFI: FEIG's [0xB0] Inventory has no AFI field (its MODE byte carries MORE only: ID ISC.MR101 manual p. 59, ID ISC.MR200 p. 88); set the AFI filter in the reader's configuration (Transponder.HF.ISO_15693.SelectionMask, AFI1…AFI4) instead"
            )
        }
        var found: [InventoryEntry] = []
        var more = false
        for _ in 0..<64 {
            let reply = try command(
                FEIGCommand.isoHost,
                FEIGISO.request(CommandCode.inventory.rawValue, .nonAddressed, modeExtra: more ? FEIGISO.moreBit : 0))
            let status = reply.status ?? 0
            if status == FEIGStatus.noTransponder.rawValue { break }
            guard status == FEIGStatus.ok.rawValue || status == FEIGStatus.moreData.rawValue else {
                throw Self.error(status: status, command: "Inventory")
            }
            let records: [FEIGISO.InventoryRecord]
            do { records = try FEIGISO.inventory(reply.data) } catch {
                throw .crcError(.invalidField("FEIG reader \(device): \(error)"))
            }
            for r in records where r.transponderType == FEIGISO.trTypeISO15693 {
                guard let uid = try? UID(onAir: FEIGISO.readerOrder(r.uid)) else {
                    throw .crcError(
                        .invalidField(
                            "FEIG reader \(device): Inventory record with UID \(Hex.format(r.uid)) (not an ISO 15693 UID)"
                        ))
                }
                if !found.contains(where: { $0.uid == uid }) { found.append(InventoryEntry(uid: uid, dsfid: r.dsfid)) }
            }
            airTime =
                airTime + AirTiming.readerFrame(bytes: 5, coding: .oneOfFour)
                + (AirTiming.t1 + AirTiming.tagFrame(bytes: 12, flags: [.highDataRate])) * max(1, records.count)
            guard status == FEIGStatus.moreData.rawValue else { break }
            more = true
        }
        trace?(
            TraceEvent(
                direction: .nothing, bytes: [], airTime: .zero,
                note: "FEIG reader inventory: "
                    + (found.isEmpty ? "no tag" : found.map { "\($0.uid)" }.joined(separator: ", "))))
        return found
    }

    // MARK: ISO 15693 frames through host commands

    /// A command answered through host commands: the reply becomes the `Response` directly.
    public func execute(_ request: Request, blockSize: Int?) throws(CommandFailure) -> Response {
        let frame: [UInt8]
        do { frame = try request.encode() } catch { throw .invalid("\(error)") }
        do { return try answer(request, frame: frame, blockSize: blockSize).response } catch { throw .reader(error) }
    }

    /// A raw frame (`vlogger raw`, the client's slotted rounds): decoded into the command it carries.
    public func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        guard frame.count <= limits.maxRequestBytes else {
            throw .frameTooLong(bytes: frame.count, limit: limits.maxRequestBytes)
        }
        let request: Request
        do { request = try Request.decode(frame) } catch {
            throw .notSupported(
                "FEIG readers take ISO 15693 commands as host commands; this frame does not decode as one (\(error))")
        }
        return try answer(request, frame: frame, blockSize: nil).bytes
    }

    /// `request` (whose frame is `frame`) through host commands, with its air time and trace; `bytes` is the
    /// answer as the tag's frame (what the trace shows and the air time counts). `blockSize`: the size the client
    /// expects of each block read (a reply of another size is a malformed answer).
    private func answer(_ request: Request, frame: [UInt8], blockSize: Int?) throws(ReaderError) -> (
        response: Response, bytes: [UInt8]
    ) {
        guard frame.count <= limits.maxRequestBytes else {
            throw .frameTooLong(bytes: frame.count, limit: limits.maxRequestBytes)
        }
        let onAir = CRC16.appending(to: frame)
        let out = AirTiming.readerFrame(bytes: onAir.count, coding: .oneOfFour)
        airTime = airTime + out
        do throws(ReaderError) {
            let (response, hostFrames) = try exchange(request, blockSize: blockSize)
            let answer: [UInt8]
            switch request.command {
            // Answered in 0x3B's layout for 0x3B, in 0x2B's (with the Protocol Extension flag's count) for 0x2B.
            case .extendedGetSystemInformation: answer = response.encode(extendedSystemInformation: true)
            default: answer = response.encode(protocolExtension: request.flags.contains(.protocolExtension))
            }
            trace?(TraceEvent(direction: .readerToTag, bytes: onAir, airTime: out, note: hostFrames.request))
            let shown = CRC16.appending(to: answer)
            let t = AirTiming.t1 + AirTiming.tagFrame(bytes: shown.count, flags: request.flags) + AirTiming.t2
            airTime = airTime + t
            trace?(TraceEvent(direction: .tagToReader, bytes: shown, airTime: t, note: hostFrames.reply))
            return (response, answer)
        } catch {
            trace?(TraceEvent(direction: .readerToTag, bytes: onAir, airTime: out))
            trace?(TraceEvent(direction: .nothing, bytes: [], airTime: AirTiming.t1Max, note: "\(error)"))
            airTime = airTime + AirTiming.t1Max
            throw error
        }
    }

    public func nextSlot() throws(ReaderError) -> [UInt8] {
        throw .notSupported(
            "FEIG readers resolve collisions themselves; 16-slot inventory EOFs have no host command (the client uses the reader's inventory)"
        )
    }

    private func addressing(_ request: Request) -> FEIGISO.Addressing {
        switch request.addressing {
        case let .addressed(uid): return .addressed(FEIGISO.readerOrder(uid.onAirBytes))
        case .selected: return .selected
        case .nonAddressed: return .nonAddressed
        }
    }

    /// The answer the tag gave, and the host frames (for the trace).
    private func exchange(_ request: Request, blockSize: Int?) throws(ReaderError) -> (
        Response, (request: String, reply: String)
    ) {
        let adr = addressing(request)
        let sec = request.flags.contains(.option) ? FEIGISO.secBit : 0
        // FEIG's extended form (MODE EXT_ADR, BANK, two-byte DB-ADR) for whatever needs a block number past 255:
        // ISO's extended commands, ST's protocol-extension flag, or a range that runs past block 255.
        func wide(_ first: Int, _ n: Int) -> Bool {
            request.flags.contains(.protocolExtension) || request.command.code.isExtended || first + n - 1 > 255
        }
        /// [0xB0] `sub` on blocks `first ..< first + n`: DB-ADR in the form the range needs, then `tail`.
        func blocks(_ sub: UInt8, _ first: BlockNumber, _ n: Int, mode: UInt8 = 0, _ tail: [UInt8]) throws(ReaderError)
            -> [UInt8]
        {
            guard n <= 255 else { throw .frameTooLong(bytes: n, limit: 255) }
            let ext = wide(first.int, n)
            return FEIGISO.request(
                sub, adr, modeExtra: mode | (ext ? FEIGISO.extAdrBit : 0),
                FEIGISO.blockAddress(first.int, extended: ext) + tail)
        }
        /// Block data in the reader's order.
        func ordered(_ d: [UInt8], _ size: Int) -> [UInt8] {
            reverseBlockBytes ? FEIGISO.reversedBlocks(d, blockSize: size) : d
        }
        var control = FEIGCommand.isoHost
        let data: [UInt8]
        switch request.command {
        case let .inventory(afi, mask):
            guard request.inventorySlots == 1 else {
                throw .notSupported(
                    "a 16-slot Inventory round has no FEIG host command; the reader's own inventory finds the tags")
            }
            let found = try readerInventory(afi: afi) ?? []
            let matching = found.filter { mask.matches($0.uid) }
            guard let lone = matching.first else { throw .timeout }
            guard matching.count == 1 else { throw .collision }
            return (Response(body: .inventory(dsfid: lone.dsfid, uid: lone.uid)), ("via the reader's inventory", ""))
        case .stayQuiet: data = FEIGISO.request(0x02, adr)
        case let .readSingleBlock(b), let .extendedReadSingleBlock(b): data = try blocks(0x23, b, 1, mode: sec, [1])
        case let .readMultipleBlocks(first, n), let .extendedReadMultipleBlocks(first, n):
            data = try blocks(0x23, first, n, mode: sec, [UInt8(truncatingIfNeeded: n)])
        case let .writeSingleBlock(b, d), let .extendedWriteSingleBlock(b, d):
            data = try blocks(0x24, b, 1, [1, UInt8(d.count)] + ordered(d, d.count))
        case let .writeMultipleBlocks(first, n, d), let .extendedWriteMultipleBlocks(first, n, d):
            let size = d.count / max(1, n)
            data = try blocks(0x24, first, n, [UInt8(truncatingIfNeeded: n), UInt8(size)] + ordered(d, size))
        case let .lockBlock(b), let .extendedLockBlock(b): data = try blocks(0x22, b, 1, [1])
        case .select: data = FEIGISO.request(0x25, adr)
        case .resetToReady: data = FEIGISO.request(0x26, adr)
        case let .writeAFI(v): data = FEIGISO.request(0x27, adr, [v])
        case .lockAFI: data = FEIGISO.request(0x28, adr)
        case let .writeDSFID(v): data = FEIGISO.request(0x29, adr, [v])
        case .lockDSFID: data = FEIGISO.request(0x2A, adr)
        case .getSystemInformation, .extendedGetSystemInformation:
            // One host command for both: the reader picks the air command from its transponder table and gives
            // a two-byte block count for a tag past 256 blocks (the 14-byte reply).
            data = FEIGISO.request(0x2B, adr)
        case let .getMultipleBlockSecurityStatus(first, n), let .extendedGetMultipleBlockSecurityStatus(first, n):
            data = try blocks(0x2C, first, n, [UInt8(truncatingIfNeeded: n)])
        case let .custom(code, manufacturer, parameters):
            control = FEIGCommand.isoCustom
            data = FEIGISO.customRequest(manufacturer: manufacturer.rawValue, code, adr, parameters)
        case .proprietary, .other:
            throw .notSupported(
                "\(request.command.code.name) has no FEIG host command ([0xB0] carries ISO 15693's commands, [0xB1] the manufacturers' custom ones)"
            )
        }
        let (sent, reply) = try transact(control, data)
        // The host frames for the trace, formatted only when a trace listens.
        let frames =
            trace == nil ? ("", "") : ("FEIG > " + Hex.format(sent.encoded()), "FEIG < " + Hex.format(reply.encoded()))
        let status = reply.status ?? 0
        if status == FEIGStatus.iso15693Error.rawValue {
            guard let code = reply.data.first else {
                throw .crcError(.invalidField("FEIG reader \(device): STATUS 0x95 without the tag's error code"))
            }
            return (Response(body: .error(ISOErrorCode(code))), frames)
        }
        guard status == FEIGStatus.ok.rawValue else {
            throw Self.error(status: status, command: request.command.code.name)
        }
        func malformed(_ e: FEIGReplyError) -> ReaderError { .crcError(.invalidField("FEIG reader \(device): \(e)")) }
        let body: ResponseBody
        switch request.command {
        case .stayQuiet:
            // A tag never answers Stay Quiet: on air that is silence.
            throw .timeout
        case let .readSingleBlock(b), let .readMultipleBlocks(b, _), let .extendedReadSingleBlock(b),
            let .extendedReadMultipleBlocks(b, _):
            let n: Int
            switch request.command {
            case let .readMultipleBlocks(_, count), let .extendedReadMultipleBlocks(_, count): n = count
            default: n = 1
            }
            let read: (size: Int, blocks: [FEIGISO.Block])
            do { read = try FEIGISO.blocks(reply.data, expected: n) } catch { throw malformed(error) }
            if let blockSize, read.size != blockSize {
                throw malformed(.malformed("blocks of \(read.size) bytes where the tag's are \(blockSize)"))
            }
            body = .blocks(
                read.blocks.enumerated().map { i, blk in
                    BlockRead(
                        number: BlockNumber(UInt16(truncatingIfNeeded: Int(b.value) + i)),
                        data: reverseBlockBytes ? blk.data.reversed() : blk.data,
                        security: sec != 0 ? BlockSecurityStatus(rawValue: blk.security) : nil)
                })
        case .getSystemInformation, .extendedGetSystemInformation:
            let i: FEIGISO.SystemInfo
            do { i = try FEIGISO.systemInfo(reply.data) } catch { throw malformed(error) }
            guard let uid = try? UID(onAir: FEIGISO.readerOrder(i.uid)) else {
                throw malformed(.malformed("Get System Information reply with UID \(Hex.format(i.uid))"))
            }
            guard (1...32).contains(i.blockSize), i.blockCount >= 1 else {
                throw malformed(
                    .malformed("Get System Information reply with \(i.blockCount) blocks of \(i.blockSize) bytes"))
            }
            var info = SystemInformation(
                uid: uid, dsfid: i.dsfid, afi: i.afi, blockCount: i.blockCount, blockSize: i.blockSize,
                icReference: i.icReference)
            // What the air command's answer could carry: 0x2B without the Protocol Extension flag counts up to 256
            // blocks (one byte), so the client goes on to ask 0x3B for a larger tag; 0x3B says whether the tag
            // takes two-byte block numbers.
            switch request.command {
            case .extendedGetSystemInformation: info.twoByteAddressing = false
            default:
                if !request.flags.contains(.protocolExtension) { info.blockCount = min(i.blockCount, 256) }
            }
            body = .systemInformation(info)
        case let .getMultipleBlockSecurityStatus(_, n), let .extendedGetMultipleBlockSecurityStatus(_, n):
            do {
                body = .securityStatus(
                    try FEIGISO.securityStatus(reply.data, expected: n).map { BlockSecurityStatus(rawValue: $0) })
            } catch { throw malformed(error) }
        case .custom:
            body = .data(reply.data)
        default:
            body = .done
        }
        return (Response(body: body), frames)
    }
}

// MARK: Buffered read mode

extension FEIGReader: BufferedReader {
    public var buffer: (any BufferedReader)? { self }

    /// [0x22] Read Buffer: up to `maxRecords` of the oldest records (the same ones again until `clearBuffer`);
    /// none when the buffer is empty (STATUS 0x92).
    public func readBuffer(maxRecords: Int) throws(ReaderError) -> [BufferedRecord] {
        let reply = try command(FEIGCommand.readBuffer, FEIGBuffer.request(count: maxRecords))
        let status = reply.status ?? 0
        if status == FEIGStatus.noValidData.rawValue { return [] }
        // 0x84 (RF warning) and 0x93 (the buffer overflowed) still carry the records.
        guard [FEIGStatus.ok, .rfWarning, .bufferOverflow, .moreData].map(\.rawValue).contains(status) else {
            throw Self.error(status: status, command: "Read Buffer")
        }
        let parsed: FEIGBuffer.Reply
        do { parsed = try FEIGBuffer.parse(reply.data) } catch {
            throw .crcError(.invalidField("FEIG reader \(device): \(error)"))
        }
        return parsed.records.map { r in
            let uid = r.uid.flatMap {
                r.transponderType == FEIGISO.trTypeISO15693 ? try? UID(onAir: FEIGISO.readerOrder($0)) : nil
            }
            // MSB first (TR-DATA1 bit 3 clear) is the [0xB0] reads' order: each block reversed against memory.
            let blocks = parsed.lsbFirst ? r.blocks : r.blocks.map { Array($0.reversed()) }
            return BufferedRecord(raw: r.raw, uid: uid, blocks: blocks, readerTime: r.time)
        }
    }

    /// [0x32] Clear Data Buffer: deletes the records the last Read Buffer returned.
    public func clearBuffer() throws(ReaderError) {
        let reply = try command(FEIGCommand.clearBuffer, [])
        guard reply.status == FEIGStatus.ok.rawValue else {
            throw Self.error(status: reply.status ?? 0, command: "Clear Data Buffer")
        }
    }
}
