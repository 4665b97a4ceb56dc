#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import FEIG
import ISO15693
import Readers
import DriverSim
import TagSimulator

/// A FEIG OBID ID ISC reader in front of a simulated field: it takes host frames, does what a reader does on
/// air (its own anti-collision inventory, reads and writes by address) through the simulator's reader, and
/// answers with host frames. A test tool (as `vlogger-vcard` is for PC/SC): the `feig` driver is tested against
/// it over a pseudo-terminal and over loopback TCP. What it answers follows the facts in
/// Tests/FEIGTests/FEIG-FACTS.md; where a real reader may differ (which STATUS a corner case gets, how many
/// records one Inventory reply holds) the choice is written next to the code.
///
/// Faults are queued: each applies to the next request.
public final class FEIGReaderEmulator: @unchecked Sendable {
    public enum Fault: Equatable, Sendable {
        /// No reply at all.
        case noAnswer
        /// The reply with its CRC's last byte flipped.
        case corruptCRC
        /// Noise instead of a reply: a length byte announcing more than comes.
        case garbled
        /// The first half of the reply only.
        case truncated
        /// This STATUS (and no data) instead of the real reply.
        case status(UInt8)
        /// The reader restarts: no reply, the link drops (TCP), its field goes off and on (tags forget Quiet).
        case restart
    }

    /// What the emulator sends back for one request.
    public enum Output: Equatable {
        case reply([UInt8])
        case silence
        case restart
    }

    public let field: SimulatedField
    private let air: SimulatorReader
    private let lock = NSLock()
    /// The bus address (COM-ADR) it answers to, besides 255.
    public var address: UInt8 = 0
    /// What [0x66] and [0x65] report: an ID ISC.MR102 (SW-TYPE 77), firmware 03.05.00.
    public var info = FEIGReaderInfo(
        softwareRevision: 0x0305, developmentRevision: 0x00, hardwareType: 0x00, readerType: 77,
        transponderTypes: 0x0008, receiveBuffer: 1024, transmitBuffer: 1024)
    /// How many records one Inventory reply holds before STATUS 0x94 (more data): a reader's buffer size
    /// decides it; small here so the MORE path is exercised.
    public var recordsPerInventoryReply = 8
    private var pendingInventory: [FEIGISO.InventoryRecord] = []
    /// The tag the last successful [0x25] Select selected (a reader's own bookkeeping for selected mode).
    private var selectedUID: UID?
    private var faults: [Fault] = []
    /// Every request frame that decoded, in order.
    public private(set) var requests: [FEIGFrame] = []

    // MARK: Buffered read mode

    /// In buffered read mode the reader reads tags by itself into its buffer, and [0xB0] is not available
    /// (STATUS 0x82; ID ISC.MR200 manual p. 87).
    public var bufferedReadMode = false
    /// TR-DATA1 of Read Buffer replies: UID, data blocks, time; MSB first (bit 3 clear).
    public var bufferTRData1: UInt8 = FEIGBuffer.iddBit | FEIGBuffer.dbBit | FEIGBuffer.timeBit
    /// The records the reader holds, oldest first: UID (MSB first), blocks (tag memory order), reader time.
    private var buffer: [(uid: [UInt8], blocks: [[UInt8]], time: [UInt8])] = []
    private var lastBufferRead = 0
    private var readsDone: UInt32 = 0
    /// What a buffered read holds (the LRU3000 manual: up to 10,000 records).
    public var bufferCapacity = 10_000

    public var bufferedRecords: Int { lock.withLock { buffer.count } }

    /// The reader's own round in buffered read mode: every tag in the field, `count` blocks from `first` each,
    /// into the buffer (what a FEIG reader does by itself between the host's Read Buffer requests).
    public func readIntoBuffer(first: BlockNumber, count: Int) {
        lock.lock()
        defer { lock.unlock() }
        let client = ISO15693Client(reader: air, retries: 1)
        guard let found = try? client.inventory() else { return }
        for tag in found {
            guard buffer.count < bufferCapacity else { return }
            let blocks = (try? client.readBlocks(tag.uid, first: first, count: count))?.map(\.data) ?? []
            readsDone &+= 1
            // A time stamp that differs from read to read (4 bytes; the real layout is not documented here).
            let t = readsDone
            buffer.append(
                (
                    FEIGISO.readerOrder(tag.uid.onAirBytes), blocks,
                    [UInt8(t >> 24), UInt8(t >> 16 & 0xFF), UInt8(t >> 8 & 0xFF), UInt8(t & 0xFF)]
                ))
        }
    }

    /// A power cut: the buffer is gone (ID ISC.LRU3000 manual p. 15).
    public func powerCycle() {
        lock.withLock {
            buffer = []
            lastBufferRead = 0
            field.powerOff()
            field.powerOn()
        }
    }

    private func bufferCommand(_ request: FEIGFrame) -> (FEIGStatus, [UInt8]) {
        switch request.command {
        case FEIGCommand.readBuffer:
            guard request.data.count == 2 else { return (.lengthError, []) }
            let n = Int(request.data[0]) << 8 | Int(request.data[1])
            guard !buffer.isEmpty else { return (.noValidData, []) }
            let k = min(max(n, 1), buffer.count)
            lastBufferRead = k
            let msbFirst = bufferTRData1 & FEIGBuffer.lsbFirstBit == 0
            let records = buffer.prefix(k).map { r in
                (
                    uid: r.uid, blocks: msbFirst ? r.blocks.map { Array($0.reversed()) } : r.blocks,
                    time: Optional(r.time)
                )
            }
            return (.ok, FEIGBuffer.encode(trData1: bufferTRData1, records: Array(records)))
        case FEIGCommand.clearBuffer:
            buffer.removeFirst(min(lastBufferRead, buffer.count))
            lastBufferRead = 0
            return (.ok, [])
        case FEIGCommand.initializeBuffer:
            buffer = []
            lastBufferRead = 0
            return (.ok, [])
        default:
            // [0x31] Read Data Buffer Info: TAB-SIZE, TAB-START, TAB-LEN.
            let size = UInt16(truncatingIfNeeded: bufferCapacity), len = UInt16(truncatingIfNeeded: buffer.count)
            return (.ok, [UInt8(size >> 8), UInt8(size & 0xFF), 0, 0, UInt8(len >> 8), UInt8(len & 0xFF)])
        }
    }

    public init(field: SimulatedField) {
        self.field = field
        // The air side is the reader's own business (it splits long reads or uses the chip's own long read, ID
        // ISC.MR200 manual p. 112); what bounds the host is its transmit buffer, which the driver reads from [0x66].
        air = SimulatorReader(
            field: field, name: "FEIG emulator's air",
            limits: ReaderLimits(maxRequestBytes: 256, maxResponseBytes: 8192))
        field.powerOn()
    }

    public func inject(_ fault: Fault) { lock.withLock { faults.append(fault) } }
    /// `fault` for the `n`th request (counting from 1) that reaches this reader.
    public func inject(_ fault: Fault, atRequest n: Int) { lock.withLock { scheduled[n] = fault } }
    private var scheduled: [Int: Fault] = [:]

    /// Runs `body` with the field while no request is being answered (tests move tags in and out).
    public func withField<T>(_ body: (SimulatedField) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(field)
    }

    public var requestCount: Int { lock.withLock { requests.count } }

    /// The answer to one request frame's bytes. Bytes that are not a frame for this reader get no answer
    /// (a reader on a bus stays silent on a damaged request rather than guessing who sent it).
    public func respond(to bytes: [UInt8]) -> Output {
        lock.lock()
        defer { lock.unlock() }
        guard let request = try? FEIGFrame.decode(bytes, direction: .request) else { return .silence }
        guard request.address == FEIGFrame.anyReader || request.address == address else { return .silence }
        requests.append(request)
        if let f = scheduled.removeValue(forKey: requests.count) { faults.insert(f, at: 0) }
        if !faults.isEmpty {
            let fault = faults.removeFirst()
            switch fault {
            case .noAnswer: return .silence
            case .restart:
                field.powerOff()
                field.powerOn()
                pendingInventory = []
                return .restart
            case .status(let s):
                return .reply(
                    FEIGFrame(reply: request.command, status: s, address: address, advanced: request.advanced).encoded()
                )
            case .garbled:
                return .reply([0x7E, 0x13, 0x37])
            case .corruptCRC, .truncated:
                var out = answer(request).encoded()
                if fault == .corruptCRC { out[out.count - 1] ^= 0xFF } else { out = Array(out.prefix(out.count / 2)) }
                return .reply(out)
            }
        }
        return .reply(answer(request).encoded())
    }

    private func answer(_ request: FEIGFrame) -> FEIGFrame {
        func reply(_ status: FEIGStatus, _ data: [UInt8] = []) -> FEIGFrame {
            FEIGFrame(
                reply: request.command, status: status.rawValue, data: data, address: address,
                advanced: request.advanced)
        }
        switch request.command {
        case FEIGCommand.readerInfo:
            guard request.data == [0x00] else { return reply(.unsupportedCommandOption) }
            return reply(.ok, info.encoded)
        case FEIGCommand.softwareVersion:
            return reply(.ok, info.encoded)
        case FEIGCommand.baudRateDetection, FEIGCommand.cpuReset:
            return reply(.ok)
        case FEIGCommand.rfOnOff:
            guard let on = request.data.first, on <= 1 else { return reply(.parameterRangeError) }
            if on == 1 { field.powerOn() } else { field.powerOff() }
            return reply(.ok)
        case FEIGCommand.rfReset:
            field.powerOff()
            field.powerOn()
            return reply(.ok)
        case FEIGCommand.readBuffer, FEIGCommand.clearBuffer, FEIGCommand.initializeBuffer, FEIGCommand.readBufferInfo:
            let (status, data) = bufferCommand(request)
            return reply(status, data)
        case FEIGCommand.isoHost where bufferedReadMode, FEIGCommand.isoCustom where bufferedReadMode:
            return reply(.commandNotAvailable)
        case FEIGCommand.isoHost:
            let (status, data) = isoHost(request.data)
            return reply(status, data)
        case FEIGCommand.isoCustom:
            let (status, data) = isoCustom(request.data)
            return reply(status, data)
        default:
            return reply(.unknownCommand)
        }
    }

    // MARK: [0xB0]

    /// Parses `MODE [UID]` at `data[1...]`: the addressing and where the parameters start.
    private func addressing(_ data: [UInt8]) -> (Addressing, Int)? {
        guard data.count >= 2 else { return nil }
        switch data[1] & 0x07 {
        case 0: return (.nonAddressed, 2)
        case 1:
            guard data.count >= 10, let uid = try? UID(onAir: FEIGISO.readerOrder(Array(data[2..<10]))) else {
                return nil
            }
            return (.addressed(uid), 10)
        case 2: return (.selected, 2)
        default: return nil
        }
    }

    /// One ISO 15693 exchange on the simulated air: the tag's response, or the STATUS a reader reports.
    private func onAir(_ request: Request) -> Result<Response, FEIGStatusFailure> {
        guard field.isOn else { return .failure(FEIGStatusFailure(.noTransponder)) }
        let frame: [UInt8]
        do { frame = try request.encode() } catch { return .failure(FEIGStatusFailure(.lengthError)) }
        let wait: ResponseWait =
            request.command.code.isWriteAlike ? .writeAlike(optionFlag: request.flags.contains(.option)) : .standard
        do {
            let answer = try air.transceive(frame, wait: wait)
            let response = try Response.decode(answer, to: request)
            if case let .error(code) = response.body {
                return .failure(FEIGStatusFailure(.iso15693Error, [code.rawValue]))
            }
            return .success(response)
        } catch let e as ReaderError {
            switch e {
            case .timeout: return .failure(FEIGStatusFailure(.noTransponder))
            case .collision: return .failure(FEIGStatusFailure(.collision))
            case .crcError: return .failure(FEIGStatusFailure(.dataFalse))
            default: return .failure(FEIGStatusFailure(.rfCommunicationError))
            }
        } catch {
            return .failure(FEIGStatusFailure(.dataFalse))
        }
    }

    private func isoHost(_ data: [UInt8]) -> (FEIGStatus, [UInt8]) {
        guard let sub = data.first, data.count >= 2 else { return (.lengthError, []) }
        let mode = data[1]
        if sub == 0x01 { return inventory(more: mode & FEIGISO.moreBit != 0) }
        guard let parsed = addressing(data) else { return (.lengthError, []) }
        let (adr, start) = parsed
        let p = Array(data[start...])
        var flags: RequestFlags = [.highDataRate]
        func run(_ command: Command, option: Bool = false, protocolExtension: Bool = false) -> Result<
            Response, FEIGStatusFailure
        > {
            if option { flags.insert(.option) }
            if protocolExtension { flags.insert(.protocolExtension) }
            return onAir(Request(command, flags: flags, addressing: adr))
        }
        func done(_ r: Result<Response, FEIGStatusFailure>) -> (FEIGStatus, [UInt8]) {
            switch r {
            case .success: return (.ok, [])
            case .failure(let f): return (f.status, f.data)
            }
        }
        // The extended form (MODE EXT_ADR): BANK and a two-byte DB-ADR. On air a reader uses ST's protocol
        // extension for the chips that need it and ISO's extended commands for the others (its transponder table).
        let ext = mode & FEIGISO.extAdrBit != 0
        // The tag's UID: given (addressed) or the one a Select made the selected tag.
        var target: UID?
        switch adr {
        case let .addressed(uid): target = uid
        case .selected: target = selectedUID
        case .nonAddressed: target = nil
        }
        let stExtension = ext && target.flatMap { ICModel.identify(uid: $0)?.needsProtocolExtension } == true
        func block(_ n: Int) -> BlockNumber { BlockNumber(UInt16(truncatingIfNeeded: n)) }
        /// DB-ADR (and BANK) at the start of the parameters, then DB-N: the first block, the count and what
        /// follows; or the STATUS a reader gives: a length error for a request too short, a parameter range
        /// error for a bank other than the user memory or a range past the last block number the form can name.
        func address() -> Result<(first: Int, n: Int, rest: [UInt8]), FEIGStatusFailure> {
            guard let a = FEIGISO.parseBlockAddress(p, extended: ext), let count = a.rest.first, count >= 1 else {
                return .failure(FEIGStatusFailure(.lengthError))
            }
            if let bank = a.bank, bank != FEIGISO.bankUserMemory {
                return .failure(FEIGStatusFailure(.parameterRangeError))
            }
            guard a.block + Int(count) - 1 <= (ext ? 0xFFFF : 0xFF) else {
                return .failure(FEIGStatusFailure(.parameterRangeError))
            }
            return .success((a.block, Int(count), Array(a.rest.dropFirst())))
        }
        // The block commands' DB-ADR and DB-N, checked once for all of them.
        var (first, n, rest) = (0, 0, [UInt8]())
        if [0x22, 0x23, 0x24, 0x2C].contains(sub) {
            switch address() {
            case .success(let a): (first, n, rest) = a
            case .failure(let f): return (f.status, f.data)
            }
        }
        // ISO's extended commands on air (the extended form, on a chip without ST's protocol extension).
        let isoExtended = ext && !stExtension
        /// DB-ADR-E as a reply carries it: one byte, or two in the extended form.
        func errorAddress(_ n: Int) -> [UInt8] {
            ext ? [UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)] : [UInt8(truncatingIfNeeded: n)]
        }
        switch sub {
        case 0x02:
            guard case .addressed = adr, p.isEmpty else { return (.lengthError, []) }
            // The tag never answers Stay Quiet: silence is success.
            switch run(.stayQuiet) {
            case .failure(let f) where f.status == .noTransponder: return (.ok, [])
            case .failure(let f): return (f.status, f.data)
            case .success: return (.ok, [])
            }
        case 0x23:
            guard rest.isEmpty else { return (.lengthError, []) }
            let sec = mode & FEIGISO.secBit != 0
            // One block goes as Read Single Block (mandatory-ish on every chip; some have no Read Multiple).
            let command: Command
            if isoExtended {
                command =
                    n == 1
                    ? .extendedReadSingleBlock(block(first))
                    : .extendedReadMultipleBlocks(first: block(first), count: n)
            } else {
                command = n == 1 ? .readSingleBlock(block(first)) : .readMultipleBlocks(first: block(first), count: n)
            }
            let r = run(command, option: sec, protocolExtension: stExtension)
            guard case let .success(resp) = r, case let .blocks(blocks) = resp.body, let size = blocks.first?.data.count
            else { return done(r) }
            var out: [UInt8] = [UInt8(blocks.count), UInt8(size)]
            for b in blocks { out += [b.security?.rawValue ?? 0] + b.data.reversed() }
            return (.ok, out)
        case 0x24:
            // DB-SIZE, then DB-N blocks of it.
            guard let sizeByte = rest.first, sizeByte >= 1, rest.count == 1 + n * Int(sizeByte) else {
                return (.lengthError, [])
            }
            let size = Int(sizeByte)
            let option: Bool
            if case let .addressed(uid) = adr { option = uid.manufacturer == .texasInstruments } else { option = false }
            // Block by block (Write Single Block is mandatory-ish on every chip; Write Multiple is not).
            for i in 0..<n {
                let blockData = Array(rest[(1 + i * size)..<(1 + (i + 1) * size)].reversed())
                let b = block(first + i)
                let command: Command =
                    isoExtended ? .extendedWriteSingleBlock(b, data: blockData) : .writeSingleBlock(b, data: blockData)
                if case let .failure(f) = run(command, option: option, protocolExtension: stExtension) {
                    return (
                        f.status,
                        f.status == .iso15693Error ? f.data + errorAddress(first + i) : errorAddress(first + i)
                    )
                }
            }
            return (.ok, [])
        case 0x22:
            guard rest.isEmpty else { return (.lengthError, []) }
            for i in 0..<n {
                let command: Command = isoExtended ? .extendedLockBlock(block(first + i)) : .lockBlock(block(first + i))
                if case let .failure(f) = run(command, protocolExtension: stExtension) {
                    return (f.status, f.status == .iso15693Error ? f.data + errorAddress(first + i) : [])
                }
            }
            return (.ok, [])
        case 0x25:
            guard case let .addressed(uid) = adr, p.isEmpty else { return (.lengthError, []) }
            let r = run(.select)
            if case .success = r { selectedUID = uid }
            return done(r)
        case 0x26:
            guard p.isEmpty else { return (.lengthError, []) }
            let r = run(.resetToReady)
            if case .success = r, target == selectedUID { selectedUID = nil }
            return done(r)
        case 0x27: return p.count == 1 ? done(run(.writeAFI(p[0]))) : (.lengthError, [])
        case 0x28: return p.isEmpty ? done(run(.lockAFI)) : (.lengthError, [])
        case 0x29: return p.count == 1 ? done(run(.writeDSFID(p[0]))) : (.lengthError, [])
        case 0x2A: return p.isEmpty ? done(run(.lockDSFID)) : (.lengthError, [])
        case 0x2B:
            // EXT-ADR here would ask for the MR102's extended layout, which this emulator does not give.
            guard !ext else { return (.parameterRangeError, []) }
            guard p.isEmpty else { return (.lengthError, []) }
            // ST's chips that need the protocol extension answer only with it; a reader's table knows them.
            let needsExtension = target.flatMap { ICModel.identify(uid: $0)?.needsProtocolExtension } == true
            var r = run(.getSystemInformation, protocolExtension: needsExtension)
            if case let .success(resp) = r, case let .systemInformation(i) = resp.body,
                i.blockCount == 256 || i.blockCount == nil
            {
                // Possibly capped at 256 blocks: ask with ISO's extended command, as the client would.
                flags = [.highDataRate]
                let e = run(.extendedGetSystemInformation(parameters: 0x3F))
                if case let .success(er) = e, case let .systemInformation(ei) = er.body, ei.blockCount != nil {
                    r = .success(er)
                }
            }
            guard case let .success(resp) = r, case let .systemInformation(i) = resp.body else { return done(r) }
            let info = FEIGISO.SystemInfo(
                dsfid: i.dsfid ?? 0, uid: FEIGISO.readerOrder(i.uid.onAirBytes), afi: i.afi ?? 0,
                blockSizeByte: UInt8(truncatingIfNeeded: (i.blockSize ?? 1) - 1),
                blockCountField: UInt16(truncatingIfNeeded: max(0, (i.blockCount ?? 1) - 1)),
                icReference: i.icReference ?? 0)
            return (.ok, info.encoded)
        case 0x2C:
            guard rest.isEmpty else { return (.lengthError, []) }
            let command: Command =
                isoExtended
                ? .extendedGetMultipleBlockSecurityStatus(first: block(first), count: n)
                : .getMultipleBlockSecurityStatus(first: block(first), count: n)
            let r = run(command, protocolExtension: stExtension)
            guard case let .success(resp) = r, case let .securityStatus(s) = resp.body else { return done(r) }
            return (.ok, [UInt8(s.count)] + s.map(\.rawValue))
        default:
            return (.unknownCommand, [])
        }
    }

    /// The reader's own inventory: the full anti-collision search on the simulated air (ISO15693Client over the
    /// simulator), records handed out `recordsPerInventoryReply` at a time (STATUS 0x94 while more wait).
    private func inventory(more: Bool) -> (FEIGStatus, [UInt8]) {
        if !more {
            guard field.isOn else { return (.noTransponder, []) }
            let client = ISO15693Client(reader: air, retries: 1)
            guard let found = try? client.inventory() else { return (.rfCommunicationError, []) }
            pendingInventory = found.map {
                FEIGISO.InventoryRecord(
                    transponderType: FEIGISO.trTypeISO15693, dsfid: $0.dsfid,
                    uid: FEIGISO.readerOrder($0.uid.onAirBytes))
            }
            if pendingInventory.isEmpty { return (.noTransponder, []) }
        }
        guard !pendingInventory.isEmpty else { return (.noTransponder, []) }
        let now = Array(pendingInventory.prefix(recordsPerInventoryReply))
        pendingInventory.removeFirst(now.count)
        return (pendingInventory.isEmpty ? .ok : .moreData, [UInt8(now.count)] + now.flatMap(\.encoded))
    }

    // MARK: [0xB1]

    private func isoCustom(_ data: [UInt8]) -> (FEIGStatus, [UInt8]) {
        guard data.count >= 3, let parsed = addressing(Array(data.dropFirst())) else { return (.lengthError, []) }
        let (adr, start) = parsed
        let command = Command.custom(
            code: data[1], manufacturer: ManufacturerCode(data[0]), parameters: Array(data[(start + 1)...]))
        switch onAir(Request(command, flags: [.highDataRate], addressing: adr)) {
        case .success(let r):
            if case let .data(d) = r.body { return (.ok, d) }
            return (.ok, [])
        case .failure(let f): return (f.status, f.data)
        }
    }
}

/// A STATUS other than OK, and the data that goes with it (the tag's ISO error code for 0x95).
struct FEIGStatusFailure: Error {
    let status: FEIGStatus
    let data: [UInt8]
    init(_ status: FEIGStatus, _ data: [UInt8] = []) {
        self.status = status
        self.data = data
    }
}

// MARK: Serving over a file descriptor

extension FEIGReaderEmulator {
    /// Reads request frames from `fd` and writes the answers until `fd` closes or `shouldStop` says so; returns
    /// true when a `.restart` fault ended it (the caller drops the link). Bytes that stop for more than
    /// `gapMs` in the middle of a frame are dropped (a reader's inter-character timeout).
    public func serve(fd: Int32, gapMs: Int32 = 100, shouldStop: () -> Bool = { false }) -> Bool {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !shouldStop() {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, pending.isEmpty ? 50 : gapMs)
            if ready < 0 { if errno == EINTR { continue }; return false }
            if ready == 0 {
                pending.removeAll()
                continue
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN || errno == EIO { if errno == EIO { usleep(10_000) }; continue };
                return false
            }
            if n == 0 { return false }
            pending += buffer[0..<n]
            while let need = FEIGFrame.expectedLength(pending[...]), pending.count >= need {
                let frame = Array(pending.prefix(max(need, 1)))
                pending.removeFirst(max(need, 1))
                switch respond(to: frame) {
                case .silence: break
                case .restart: return true
                case .reply(let out):
                    var off = 0
                    while off < out.count {
                        let w = out[off...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                        if w <= 0 { if errno == EINTR || errno == EAGAIN { continue }; return false }
                        off += w
                    }
                }
            }
        }
        return false
    }
}

/// The emulator behind a loopback TCP port (a LAN reader): one connection at a time; a restart fault drops it
/// and keeps the port closed to new connections for `restartMs`.
public final class FEIGTCPServer: @unchecked Sendable {
    public let emulator: FEIGReaderEmulator
    public let port: Int
    private let listener: Int32
    private let stopLock = NSLock()
    private var stopped = false
    public var restartMs: UInt32 = 300
    private let done = DispatchSemaphore(value: 0)

    /// Listens on 127.0.0.1:`port` (0: a free port, see `port`).
    public init(emulator: FEIGReaderEmulator, port: Int = 0) throws {
        self.emulator = emulator
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FEIGLinkError.open("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw FEIGLinkError.open("127.0.0.1:\(port): \(reason)")
        }
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        listener = fd
        self.port = Int(UInt16(bigEndian: addr.sin_port))
    }

    private var isStopped: Bool { stopLock.withLock { stopped } }

    /// Serves on a thread of its own until `stop()`.
    public func start() {
        let thread = Thread { [self] in
            while !isStopped {
                var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 50) == 1 else { continue }
                let conn = accept(listener, nil, nil)
                guard conn >= 0 else { continue }
                _ = fcntl(conn, F_SETFD, FD_CLOEXEC)
                let restarted = emulator.serve(fd: conn, shouldStop: { self.isStopped })
                close(conn)
                if restarted { usleep(restartMs * 1000) }
            }
            done.signal()
        }
        thread.start()
    }

    public func stop() {
        stopLock.withLock { stopped = true }
        done.wait()
        close(listener)
    }
}
