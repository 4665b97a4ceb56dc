import CPCSCLite
import ISO15693
import Readers

/// The PC/SC driver (pcsc-lite through `CPCSCLite`): ISO 15693 frames through the PC/SC 2.02 Part 3
/// transparent exchange (`FF C2`), HID OMNIKEY's `FF 68 0E 03` or Identiv's `FF FD` (the codec found by probing
/// at each connection, the reader's name choosing which to try first), or, on readers with none of them, a translation
/// of the few commands the storage-card APDUs can carry (`FF CA`, `FF B0`, `FF D6`).
///
/// Tested only against the project's virtual card behind a real pcscd (vsmartcard vpcd), and the vendor envelopes
/// against the public exchanges of docs/reference/reader-paths.md; see the README.
public final class PCSCReader: TagReader {

    /// What the storage-card fallback cannot do, said once where it matters.
    public static let storageLimits =
        "in storage-card mode only Inventory (the UID of the one tag presented), Read Single/Multiple Blocks and Write Single/Multiple Blocks work (as FF CA, FF B0, FF D6); Get System Information, lock status, Lock Block, AFI/DSFID, Stay Quiet/Select and custom commands are unavailable, and the tag's own error codes are lost"

    public private(set) var name: String
    /// The PC/SC reader name this driver uses (nil until found).
    public private(set) var readerName: String?
    public let requestedReader: String?
    /// The reader's pseudo-APDU limits: 255-byte command data (a timer DO and the DO 95 header take 10),
    /// and a 256-byte answer that also carries C0, 92 and 96 (17 bytes).
    public var limits = ReaderLimits(maxRequestBytes: 240, maxResponseBytes: 236)
    public var trace: ((TraceEvent) -> Void)?
    public private(set) var airTime: AirTime = .zero
    /// How this connection carries ISO 15693 (found by `probe`); nil until connected.
    public private(set) var mode: PCSC.Codec?
    /// Microseconds given to a write-alike command in the timer DO (real ACR1552U: without it a write
    /// can fail with 64 01, docs/reference/reader-paths.md §2.3).
    public var writeTimerMicroseconds: UInt32 = 50_000
    /// Use this codec and no other (a device string's `omnikey:`, `identiv:`, `transparent:` or `storage:`); nil:
    /// probe.
    public var forcedCodec: PCSC.Codec?
    /// Whether an Identiv reader passes the tag's CRC on after its answer, learnt from the first clean Inventory
    /// answer of a connection (10 bytes, or 12 ending in their CRC); nil until then.
    public private(set) var identivCRC: Bool?
    /// Connect to the card exclusively (`vlogger devices`' probe): a reader another program uses (the service) is
    /// then refused, never disturbed.
    public var shareExclusive = false
    /// Vendor envelopes whose probe failed the transaction on this reader (not tried again while it is open).
    private var choked: Set<PCSC.Codec> = []

    private var context: SCARDCONTEXT?
    private var card: SCARDHANDLE?
    private var protocolPCI = SCARD_IO_REQUEST(
        dwProtocol: DWORD(SCARD_PROTOCOL_T1), cbPciLength: DWORD(MemoryLayout<SCARD_IO_REQUEST>.size))
    private var storageUID: UID?

    /// `reader`: a PC/SC reader name, a part of one, or its index in `listReaders()`; nil: the first reader.
    public init(reader: String? = nil) {
        requestedReader = reader
        name = "PC/SC"
    }

    deinit { release() }

    // MARK: PC/SC status codes (pcsclite.h; the macros are casts Swift does not import)

    static let noSmartcard = 0x8010000C, removedCard = 0x80100069, resetCard = 0x80100068, noService = 0x8010001D
    static let serviceStopped = 0x8010001E, noReaders = 0x8010002E, unknownReader = 0x80100009,
        readerUnavailable = 0x80100017
    static let unpoweredCard = 0x80100067, unresponsiveCard = 0x80100066, timeoutCode = 0x8010000A,
        commError = 0x80100013
    /// SCARD_E_NOT_TRANSACTED: vpcd's answer when the card is pulled in the middle of an APDU.
    static let notTransacted = 0x80100016
    /// SCARD_E_SHARING_VIOLATION: another program holds the card.
    static let sharingViolation = 0x8010000B

    static func text(_ rv: Int) -> String {
        let s = pcsc_stringify_error(LONG(rv)).map { String(cString: $0) } ?? "error"
        return "\(s) (0x\(String(UInt32(truncatingIfNeeded: rv), radix: 16, uppercase: true)))"
    }

    // MARK: Readers

    /// The PC/SC readers pcscd knows.
    public static func listReaders() throws(ReaderError) -> [String] {
        var ctx: SCARDCONTEXT = 0
        var rv = Int(SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &ctx))
        guard rv == 0 else { throw unreachable(rv) }
        defer { SCardReleaseContext(ctx) }
        return try names(ctx, &rv)
    }

    private static func unreachable(_ rv: Int) -> ReaderError {
        .device(
            "cannot reach pcscd: \(text(rv)); is pcscd running (systemctl status pcscd.socket) and is the user allowed to use it?"
        )
    }

    private static func names(_ ctx: SCARDCONTEXT, _ rv: inout Int) throws(ReaderError) -> [String] {
        var length: DWORD = 0
        rv = Int(SCardListReaders(ctx, nil, nil, &length))
        if rv == noReaders { return [] }
        guard rv == 0 else { throw ReaderError.device("listing PC/SC readers failed: \(text(rv))") }
        var buffer = [CChar](repeating: 0, count: Int(length))
        rv = Int(SCardListReaders(ctx, nil, &buffer, &length))
        if rv == noReaders { return [] }
        guard rv == 0 else { throw ReaderError.device("listing PC/SC readers failed: \(text(rv))") }
        // A multi-string: names separated by NUL, ended by an empty one.
        return buffer.split(separator: 0).map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    }

    // MARK: TagReader

    public func fieldOn() throws(ReaderError) {
        try ensureContext()
    }

    public func fieldOff() throws(ReaderError) {
        release()
    }

    /// Whether a card (a tag) is presented by the reader now.
    public func cardPresent() throws(ReaderError) -> Bool {
        try ensureContext()
        guard let context, let readerName else { return false }
        var state = SCARD_READERSTATE()
        state.dwCurrentState = DWORD(SCARD_STATE_UNAWARE)
        let rv: Int = readerName.withCString { n in
            state.szReader = n
            return Int(SCardGetStatusChange(context, 0, &state, 1))
        }
        guard rv == 0 else {
            if rv == Self.noService || rv == Self.serviceStopped || rv == Self.unknownReader
                || rv == Self.readerUnavailable
            {
                release()
            }
            throw ReaderError.device(
                "\(readerName): status failed: \(Self.text(rv)); will reconnect on the next command")
        }
        return state.dwEventState & DWORD(SCARD_STATE_PRESENT) != 0
    }

    public func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        try exchange(frame) { () throws(ReaderError) -> ([UInt8], [UInt8]) in
            if mode == .storage {
                // A raw frame (`vlogger raw`, the client's inventory rounds): the command it carries, translated.
                let request: Request
                do { request = try Request.decode(frame) } catch {
                    throw ReaderError.notSupported("cannot translate this frame for storage-card mode: \(error)")
                }
                let bytes = try storageAnswer(request).encode()
                return (bytes, bytes)
            }
            let bytes = try rawExchange(frame, wait: wait)
            return (bytes, bytes)
        }
    }

    /// In storage-card mode the command is translated as it is; in transparent mode it goes as its frame.
    public func execute(_ request: Request, blockSize: Int?) throws(CommandFailure) -> Response {
        // Not connected yet: the frame path connects (traced) and learns the mode; the first command of a
        // storage-mode connection is translated from its frame there.
        guard card != nil, mode == .storage else { return try encodeAndTransceive(request, blockSize: blockSize) }
        let frame: [UInt8]
        do { frame = try request.encode() } catch { throw .invalid("\(error)") }
        do {
            return try exchange(frame) { () throws(ReaderError) -> (Response, [UInt8]) in
                let r = try storageAnswer(request)
                return (r, r.encode())
            }
        } catch { throw .reader(error) }
    }

    /// One exchange with its trace and air time: `body` gives the result and the answer's bytes as on air.
    private func exchange<T>(_ frame: [UInt8], _ body: () throws(ReaderError) -> (T, [UInt8])) throws(ReaderError) -> T
    {
        guard frame.count <= limits.maxRequestBytes else {
            throw ReaderError.frameTooLong(bytes: frame.count, limit: limits.maxRequestBytes)
        }
        let onAir = CRC16.appending(to: frame)
        trace?(
            TraceEvent(
                direction: .readerToTag, bytes: onAir,
                airTime: AirTiming.readerFrame(bytes: onAir.count, coding: .oneOfFour)))
        airTime = airTime + AirTiming.readerFrame(bytes: onAir.count, coding: .oneOfFour)
        do throws(ReaderError) {
            guard try connect() else { throw ReaderError.timeout }
            let (result, answer) = try body()
            let shown = CRC16.appending(to: answer)
            let t =
                AirTiming.t1 + AirTiming.tagFrame(bytes: shown.count, flags: RequestFlags(rawValue: frame.first ?? 0))
                + AirTiming.t2
            airTime = airTime + t
            trace?(TraceEvent(direction: .tagToReader, bytes: shown, airTime: t))
            return result
        } catch {
            trace?(TraceEvent(direction: .nothing, bytes: [], airTime: AirTiming.t1Max, note: "\(error)"))
            airTime = airTime + AirTiming.t1Max
            throw error
        }
    }

    /// The codec this reader carries ISO 15693 with, found by connecting to the card now (nil: no card presented).
    public func codec() throws(ReaderError) -> PCSC.Codec? {
        guard try connect() else { return nil }
        return mode
    }

    public func nextSlot() throws(ReaderError) -> [UInt8] {
        throw ReaderError.notSupported(
            "PC/SC readers send whole frames; 16-slot inventory EOFs are not available (the client uses one-slot inventories)"
        )
    }

    public var supportsSlotMarkers: Bool { false }

    // MARK: Connection

    private func ensureContext() throws(ReaderError) {
        if context == nil {
            var ctx: SCARDCONTEXT = 0
            let rv = Int(SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &ctx))
            guard rv == 0 else { throw Self.unreachable(rv) }
            context = ctx
        }
        guard let context else { return }
        if readerName == nil {
            var rv = 0
            let all: [String]
            do { all = try Self.names(context, &rv) } catch {
                if rv == Self.noService || rv == Self.serviceStopped { release() }
                throw error
            }
            guard !all.isEmpty else { throw ReaderError.device("no PC/SC reader is connected (pcscd lists none)") }
            if let want = requestedReader {
                if let i = Int(want), all.indices.contains(i) {
                    readerName = all[i]
                } else {
                    readerName = all.first { $0 == want } ?? all.first { $0.localizedStandardContains(want) }
                }
                guard readerName != nil else {
                    throw ReaderError.device(
                        "no PC/SC reader matches '\(want)'; readers: \(all.joined(separator: ", "))")
                }
            } else {
                readerName = all[0]
            }
            name = "PC/SC (\(readerName ?? "?"))"
        }
    }

    /// Connects to the presented card; false when no card (no tag) is there. Probes the transparent
    /// exchange once per connection.
    private func connect() throws(ReaderError) -> Bool {
        if card != nil { return true }
        guard try cardPresent(), let context, let readerName else { return false }
        var handle: SCARDHANDLE = 0
        var proto: DWORD = 0
        let rv = Int(
            SCardConnect(
                context, readerName, DWORD(shareExclusive ? SCARD_SHARE_EXCLUSIVE : SCARD_SHARE_SHARED),
                DWORD(SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1), &handle, &proto))
        if rv == Self.noSmartcard || rv == Self.removedCard || rv == Self.unpoweredCard || rv == Self.unresponsiveCard {
            return false
        }
        guard rv == 0 else {
            if rv == Self.noService || rv == Self.serviceStopped || rv == Self.unknownReader
                || rv == Self.readerUnavailable
            {
                release()
            }
            if rv == Self.sharingViolation {
                throw ReaderError.device("\(readerName) is in use by another program (the vlogger service?)")
            }
            throw ReaderError.device("\(readerName): connecting failed: \(Self.text(rv))")
        }
        card = handle
        protocolPCI = SCARD_IO_REQUEST(dwProtocol: proto, cbPciLength: DWORD(MemoryLayout<SCARD_IO_REQUEST>.size))
        mode = nil
        storageUID = nil
        identivCRC = nil
        let order = forcedCodec.map { [$0] } ?? PCSC.Codec.probeOrder(readerName: readerName)
        for codec in order where !choked.contains(codec) {
            let works: Bool
            do { works = try probe(codec) } catch {
                // No answer at all (the card went away mid-command, the transaction failed) says nothing about the
                // reader's envelopes: probe again at the next connection rather than settle on storage mode. A vendor
                // envelope the transaction failed on is not probed again on this reader: a reader that chokes on it
                // must still reach the next codec.
                if codec == .omnikey || codec == .identiv, forcedCodec == nil { choked.insert(codec) }
                dropCard()
                throw error
            }
            if works {
                mode = codec
                break
            }
        }
        if mode == nil { mode = .storage }
        return true
    }

    /// The frame each vendor envelope is probed with: a one-slot Inventory (`26 01 00`), which every ISO 15693 tag in
    /// the field answers (or several at once: a collision, which also says the envelope works).
    static let probeFrame: [UInt8] = [0x26, 0x01, 0x00]

    /// Whether the reader carries frames with `codec`: the transparent session opened and switched to ISO 15693
    /// layer 3; a vendor envelope answered in its own form (a refused instruction, or an answer not in its form, is
    /// no). A forced codec that does not work is an error.
    private func probe(_ codec: PCSC.Codec) throws(ReaderError) -> Bool {
        let name = readerName ?? "PC/SC reader"
        func refused(_ why: String) throws(ReaderError) -> Bool {
            if forcedCodec == codec {
                throw ReaderError.device("\(name): \(codec.label) was asked for (device string) but \(why)")
            }
            return false
        }
        switch codec {
        case .storage:
            return true
        case .transparent:
            let r = try transmit(PCSC.startSessionAPDU)
            guard sessionOK(r) else { return try refused("the reader refused the session (\(Hex.format(r)))") }
            let s = try transmit(PCSC.iso15693APDU)
            guard sessionOK(s) else {
                _ = try? transmit(PCSC.endSessionAPDU)
                return try refused("the reader refused to switch to ISO 15693 layer 3 (\(Hex.format(s)))")
            }
            return true
        case .omnikey, .identiv:
            let apdu =
                codec == .omnikey
                ? PCSC.Omnikey.apdu(Self.probeFrame) : PCSC.Identiv.apdu(Self.probeFrame, waitMicroseconds: 5_000)
            let r = try transmit(apdu)
            let outcome: PCSC.Outcome
            do { outcome = try PCSC.outcome(codec, of: r) } catch {
                return try refused("its answer is not in that envelope's form (\(error)): \(Hex.format(r))")
            }
            switch outcome {
            case .answer(let bytes):
                guard let flags = bytes.first, flags & 0xF6 == 0 else {
                    return try refused("its answer to an Inventory has no ISO 15693 flags byte: \(Hex.format(r))")
                }
                if codec == .identiv { identivCRC = PCSC.Identiv.crcIncluded(inventoryAnswer: bytes) }
                return true
            case .noAnswer, .rfError:
                // Silence or two tags at once in the envelope's form. Identiv's forms are ordinary status words
                // (64 01, 6F 00) that another reader may give to an instruction it does not know: taken as Identiv's
                // only where the reader's name says Identiv (or the device string forces it); otherwise only a tag's
                // answer proves the envelope, and the probe goes on.
                if codec == .identiv, forcedCodec != .identiv,
                    PCSC.Codec.probeOrder(readerName: readerName ?? "").first != .identiv
                {
                    // Two tags at once: a one-slot Inventory with a 4-bit mask for each value finds one alone,
                    // which a reader that does not know the envelope never answers.
                    guard case .rfError = outcome else { return false }
                    for v in UInt8(0)...15 {
                        let r = try transmit(PCSC.Identiv.apdu([0x26, 0x01, 0x04, v], waitMicroseconds: 5_000))
                        if case .answer(let bytes)? = try? PCSC.outcome(codec, of: r), let f = bytes.first,
                            f & 0xF6 == 0
                        {
                            identivCRC = PCSC.Identiv.crcIncluded(inventoryAnswer: bytes)
                            return true
                        }
                    }
                    return false
                }
                return true
            case .readerError(let sw, _):
                return try refused("the reader answered \(hex4(sw))")
            }
        }
    }

    /// `C0 03 00 90 00 … 90 00`: the reader took the session command.
    private func sessionOK(_ r: [UInt8]) -> Bool {
        guard r.count >= 2, r[r.count - 2] == 0x90, r[r.count - 1] == 0x00,
            let objects = try? PCSC.parse(r[0..<(r.count - 2)]),
            let c0 = objects.first(where: { $0.tag == PCSC.genericStatus })
        else { return false }
        return c0.value.count == 3 && c0.value[1] == 0x90 && c0.value[2] == 0x00
    }

    /// Drops the card connection (the tag left, or the reader went away).
    private func dropCard() {
        if let card { SCardDisconnect(card, DWORD(SCARD_LEAVE_CARD)) }
        card = nil
        mode = nil
        storageUID = nil
    }

    private func release() {
        choked = []
        // The session end is best effort and goes straight to SCardTransmit: transmitRaw's error paths
        // release the connection themselves, and must not come back here.
        if let card, mode == .transparent {
            let apdu = PCSC.endSessionAPDU
            var out = [UInt8](repeating: 0, count: 64)
            var length = DWORD(out.count)
            var pci = protocolPCI
            _ = SCardTransmit(card, &pci, apdu, DWORD(apdu.count), nil, &out, &length)
        }
        dropCard()
        if let context { SCardReleaseContext(context) }
        context = nil
        readerName = nil
        name = "PC/SC"
    }

    private func transmit(_ apdu: [UInt8]) throws(ReaderError) -> [UInt8] {
        guard let card else { throw ReaderError.timeout }
        return try transmitRaw(card, apdu)
    }

    private func transmitRaw(_ handle: SCARDHANDLE, _ apdu: [UInt8]) throws(ReaderError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 512)
        var length = DWORD(out.count)
        var pci = protocolPCI
        let rv = Int(SCardTransmit(handle, &pci, apdu, DWORD(apdu.count), nil, &out, &length))
        guard rv == 0 else {
            if rv == Self.removedCard || rv == Self.noSmartcard || rv == Self.resetCard || rv == Self.unpoweredCard
                || rv == Self.unresponsiveCard
                || rv == Self.notTransacted
            {
                // The tag left the field (the reader removed the card): no answer; reconnect when one is back.
                dropCard()
                throw ReaderError.timeout
            }
            if rv == Self.noService || rv == Self.serviceStopped || rv == Self.unknownReader
                || rv == Self.readerUnavailable || rv == Self.commError
            {
                release()
                throw ReaderError.device(
                    "\(readerName ?? "PC/SC reader") went away: \(Self.text(rv)); will reconnect on the next command")
            }
            throw ReaderError.device("SCardTransmit failed: \(Self.text(rv))")
        }
        guard length >= 2 else {
            // vpcd answers an empty APDU when the card went away mid-exchange; a real reader says removed.
            dropCard()
            throw ReaderError.timeout
        }
        return Array(out[0..<Int(length)])
    }

    // MARK: Raw exchanges (transparent, OMNIKEY, Identiv)

    /// One frame through the connection's codec, its answer read as the codec says and mapped to the typed errors.
    private func rawExchange(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        let timer: UInt32? =
            switch wait {
            case .writeAlike: writeTimerMicroseconds
            case .window(let w): max(writeTimerMicroseconds, UInt32(clamping: Int64(w.microseconds.rounded(.up))))
            case .standard: nil
            }
        let codec = mode ?? .transparent
        let apdu: [UInt8]
        switch codec {
        case .omnikey: apdu = PCSC.Omnikey.apdu(frame, timeoutMicroseconds: timer ?? 0)
        // A standard answer of 32 blocks takes some 40 ms on the air: 50 ms unless a write needs more.
        case .identiv: apdu = PCSC.Identiv.apdu(frame, waitMicroseconds: max(timer ?? 0, 50_000))
        default: apdu = PCSC.exchangeAPDU(frame, timeoutMicroseconds: timer)
        }
        let response = try transmit(apdu)
        if codec == .identiv, identivCRC == nil {
            // Not learnt yet (the probe met two tags at once): an Inventory answer's length tells; any other answer
            // ending in the CRC of its bytes says the CRC is kept (a removed one leaves bytes that look so by chance
            // once in 65,536 connections: every answer then fails its CRC check, a typed error, until the reader is
            // opened again).
            let raw = try Self.answer(response, codec: codec, identivCRC: false, limit: limits.maxResponseBytes + 2)
            let inventory = frame.count > 1 && frame[1] == 0x01
            if inventory, raw.count == 12, !CRC16.isValid(raw) {
                // Twelve bytes that are not ten and their CRC: damaged; nothing learnt from it.
                throw ReaderError.crcError(
                    .invalidField("an Inventory answer of 12 bytes whose last two are not its CRC"))
            }
            let learnt = inventory ? PCSC.Identiv.crcIncluded(inventoryAnswer: raw) : nil
            identivCRC = learnt ?? (raw.count >= 3 && CRC16.isValid(raw))
            return identivCRC == true ? Array(raw.dropLast(2)) : raw
        }
        return try Self.answer(response, codec: codec, identivCRC: identivCRC ?? false, limit: limits.maxResponseBytes)
    }

    /// A codec's response APDU as the tag's answer, or the typed error it says (no answer: `timeout`; an unclean
    /// answer: `collision` or `crcError`; a refusal or a malformed answer: the reader's `device` error).
    public static func answer(_ response: [UInt8], codec: PCSC.Codec, identivCRC: Bool, limit: Int) throws(ReaderError)
        -> [UInt8]
    {
        let outcome: PCSC.Outcome
        do { outcome = try PCSC.outcome(codec, of: response, identivCRC: identivCRC) } catch {
            throw ReaderError.device(
                "the reader's answer through \(codec.label) is malformed (\(error)): \(Hex.format(response))")
        }
        switch outcome {
        case let .answer(bytes):
            guard bytes.count <= limit else { throw ReaderError.frameTooLong(bytes: bytes.count, limit: limit) }
            return bytes
        case .noAnswer:
            throw ReaderError.timeout
        case let .rfError(status):
            if codec == .omnikey {
                // OMNIKEY's status values are not published: bytes heard with a non-zero status are an unclean
                // answer (two tags at once, or damage), which the client treats alike (a mask bit more, or a retry).
                throw ReaderError.crcError(
                    .invalidField("the reader reported status 0x\(Hex.format([status])) with a partial answer"))
            }
            if status & PCSC.statusCollision != 0 { throw ReaderError.collision }
            let what =
                status & PCSC.statusCRC != 0
                ? "the reader reported a CRC error"
                : (status & PCSC.statusParity != 0
                    ? "the reader reported a parity error" : "the reader reported a framing error")
            throw ReaderError.crcError(
                .invalidField(
                    "\(what) (\(codec == .transparent ? "PC/SC response" : "reader") status 0x\(Hex.format([status])))")
            )
        case let .readerError(sw, object):
            throw ReaderError.device(
                codec == .transparent
                    ? "the reader refused the transparent exchange: status \(hex4(sw)) on data object \(object)"
                    : "the reader refused \(codec.label): status \(hex4(sw))")
        }
    }

    // MARK: Storage-card fallback

    /// Answers the few ISO 15693 commands the storage-card APDUs carry; every other command is refused with
    /// `storageLimits`.
    private func storageAnswer(_ request: Request) throws(ReaderError) -> Response {
        let uid = try storageCardUID()
        if case let .addressed(target) = request.addressing, target != uid { throw ReaderError.timeout }
        if request.flags.contains(.option), request.command.code.rawValue != 0x01 {
            throw ReaderError.notSupported(
                "the Option flag (lock status, Special Frame) is not available: \(Self.storageLimits)")
        }
        switch request.command {
        case let .inventory(_, mask):
            guard mask.matches(uid) else { throw ReaderError.timeout }
            return Response(body: .inventory(dsfid: 0, uid: uid))
        case let .readSingleBlock(b):
            return try storageRead([b])
        case let .readMultipleBlocks(first, count):
            return try storageRead((first.int..<(first.int + count)).compactMap { BlockNumber(exactly: $0) })
        case let .writeSingleBlock(b, data):
            return try storageWrite(b, data) ?? Response(body: .done)
        case let .writeMultipleBlocks(first, count, data):
            let size = data.count / max(1, count)
            for i in 0..<count {
                if let failed = try storageWrite(
                    BlockNumber(exactly: first.int + i) ?? first, Array(data[(i * size)..<((i + 1) * size)]))
                {
                    return failed
                }
            }
            return Response(body: .done)
        default:
            throw ReaderError.notSupported("\(request.command.code.name): \(Self.storageLimits)")
        }
    }

    private func storageCardUID() throws(ReaderError) -> UID {
        if let storageUID { return storageUID }
        let r = try transmit([0xFF, 0xCA, 0x00, 0x00, 0x00])
        guard r.count == 10, r[8] == 0x90, r[9] == 0x00, let uid = try? UID(onAir: r[0..<8]) else {
            throw ReaderError.device("the reader's UID answer (FF CA) is not an ISO 15693 UID: \(Hex.format(r))")
        }
        storageUID = uid
        return uid
    }

    /// A storage-card error as the ISO 15693 error answer the client understands (the tag's own code is lost).
    private func storageError(_ sw: UInt16) -> Response {
        switch sw {
        case 0x6A82, 0x6B00: return Response(body: .error(ISOErrorCode(0x10)))  // block not available
        case 0x6A81: return Response(body: .error(ISOErrorCode(0x01)))  // not supported
        default: return Response(body: .error(ISOErrorCode(0x0F)))  // unknown error
        }
    }

    /// Reads blocks with FF B0; an error status becomes the ISO 15693 error answer.
    private func storageRead(_ blocks: [BlockNumber]) throws(ReaderError) -> Response {
        var out: [BlockRead] = []
        for b in blocks {
            let r = try transmit([0xFF, 0xB0, UInt8(b.value >> 8), UInt8(b.value & 0xFF), 0x00])
            guard r.count >= 2 else { throw ReaderError.device("empty answer to FF B0") }
            let sw = UInt16(r[r.count - 2]) << 8 | UInt16(r[r.count - 1])
            guard sw == 0x9000 else { return storageError(sw) }
            let data = Array(r[0..<(r.count - 2)])
            // A block is 1 to 32 bytes (ISO/IEC 15693-3's block size field) and every block of a tag has one size.
            guard (1...32).contains(data.count), out.first.map({ $0.data.count == data.count }) ?? true else {
                throw ReaderError.crcError(
                    .invalidField(
                        "FF B0 answered \(data.count) bytes for block \(b) (a block is 1 to 32 bytes, all alike)"))
            }
            out.append(BlockRead(number: b, data: data, security: nil))
        }
        return Response(body: .blocks(out))
    }

    /// Writes one block with FF D6; nil when it worked, else the ISO 15693 error answer.
    private func storageWrite(_ b: BlockNumber, _ data: [UInt8]) throws(ReaderError) -> Response? {
        let r = try transmit([0xFF, 0xD6, UInt8(b.value >> 8), UInt8(b.value & 0xFF), UInt8(data.count)] + data)
        guard r.count >= 2 else { throw ReaderError.device("empty answer to FF D6") }
        let sw = UInt16(r[r.count - 2]) << 8 | UInt16(r[r.count - 1])
        return sw == 0x9000 ? nil : storageError(sw)
    }
}

/// A status word as four hex digits (6401).
func hex4(_ sw: UInt16) -> String { Hex.format([UInt8(sw >> 8), UInt8(sw & 0xFF)], separator: "") }
