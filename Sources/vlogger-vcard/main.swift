// vlogger-vcard: the test bench's virtual ISO 15693 reader-and-tag for vsmartcard's vpcd behind a real pcscd.
//
// It connects to vpcd (TCP; every message is a 2-byte big-endian length and the bytes; 1-byte control
// messages 00 power off, 01 power on, 02 reset, 04 get ATR; anything longer is a C-APDU) and answers as an
// ISO 15693-capable PC/SC reader would, with a simulated field (a folder of tag images) behind it:
// the PC/SC 2.02 Part 3 transparent exchange (FF C2), or with --envelope HID OMNIKEY's FF 68 0E 03 or Identiv's
// FF FD instead of it, and the storage-card commands (FF CA, FF B0, FF D6).
// Facts: docs/reference/reader-paths.md §2 (§2.6 the vendor envelopes) and §3. Not part of the gateway; a test tool.
#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ISO15693
import Readers
import DriverSim
import DriverPCSC
import TagSimulator

struct Options {
    var field = "Config/demo-field"
    var host = "127.0.0.1"
    var port: UInt16 = 35963
    var storageOnly = false
    /// How raw frames are carried: the transparent exchange, or a vendor envelope in its place.
    var envelope = PCSC.Codec.transparent
    /// Identiv: the tag's CRC stays after its answer.
    var identivCRC = false
    var log = false
    /// Custom commands (0xA0–0xDF) get no answer from the tag, as a reader replaying a chip that ignores them.
    var silentCustom = false
    /// Faults by the number of the transparent exchange (1-based) they hit.
    var timeoutAt: Set<Int> = []
    var crcAt: Set<Int> = []
    var removeAt: Set<Int> = []
    /// How long the card stays away after a removal (ms).
    var awayMs = 1500
}

func usage() -> Never {
    FileHandle.standardError.write(
        Data(
            """
            usage: vlogger-vcard [--field DIR] [--host 127.0.0.1] [--port 35963] [--storage-only] [--log] [--silent-custom]
                                 [--envelope transparent|omnikey|identiv] [--identiv-crc]
                                 [--timeout-at N]... [--crc-at N]... [--remove-at N]... [--away-ms 1500]
              Presents the tags of DIR to vpcd as one ISO 15693 card. --storage-only: no raw frames at all.
              --envelope omnikey: FF 68 0E 03 instead of FF C2 (HID OMNIKEY 5022); identiv: FF FD (uTrust 3720F
              Traverse), the tag's CRC left on with --identiv-crc. Silence and unclean answers in a vendor envelope are
              the bench's choice (docs/reference/reader-paths.md §2.6).
              --silent-custom: every custom command (0xA0–0xDF) gets no answer from the tag (64 01).
              Faults hit the Nth transparent exchange: --timeout-at answers C0 03 01 64 01 (no answer from the tag),
              --crc-at answers 96 02 01 00 (CRC error), --remove-at drops the card mid-exchange (back after --away-ms).

            """.utf8))
    exit(2)
}

func parseOptions() -> Options {
    var o = Options()
    var args = CommandLine.arguments.dropFirst().makeIterator()
    func value(_ name: String) -> String {
        guard let v = args.next() else { FileHandle.standardError.write(Data("\(name) needs a value\n".utf8)); usage() }
        return v
    }
    func number(_ name: String) -> Int {
        guard let n = Int(value(name)), n >= 0 else {
            FileHandle.standardError.write(Data("\(name) needs a number\n".utf8)); usage()
        }
        return n
    }
    while let a = args.next() {
        switch a {
        case "--field": o.field = value(a)
        case "--host": o.host = value(a)
        case "--port": o.port = UInt16(clamping: number(a))
        case "--storage-only": o.storageOnly = true
        case "--envelope":
            let v = value(a)
            guard let c = PCSC.Codec(rawValue: v), c != .storage else {
                FileHandle.standardError.write(Data("--envelope: transparent, omnikey or identiv, not \(v)\n".utf8))
                usage()
            }
            o.envelope = c
        case "--identiv-crc": o.identivCRC = true
        case "--log": o.log = true
        case "--silent-custom": o.silentCustom = true
        case "--timeout-at": o.timeoutAt.insert(number(a))
        case "--crc-at": o.crcAt.insert(number(a))
        case "--remove-at": o.removeAt.insert(number(a))
        case "--away-ms": o.awayMs = number(a)
        default: usage()
        }
    }
    return o
}

let options = parseOptions()
@MainActor func log(_ s: String) { if options.log { FileHandle.standardError.write(Data("vcard: \(s)\n".utf8)) } }

let folder: FieldFolder
do { folder = try FieldFolder(url: URL(fileURLWithPath: options.field)) } catch {
    FileHandle.standardError.write(Data("vlogger-vcard: \(error)\n".utf8))
    exit(1)
}
let sim = SimulatorReader(field: folder.field, name: "vcard")
try? sim.fieldOn()
let client = ISO15693Client(reader: sim, retries: 0)

/// The card the reader presents: the first tag of the field.
@MainActor func presented() -> UID? { folder.field.tags.first?.uid }

// MARK: Socket

final class Connection {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }

    func readExactly(_ n: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: n)
        var got = 0
        while got < n {
            let r = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, n - got) }
            if r <= 0 { if r < 0 && errno == EINTR { continue }; return nil }
            got += r
        }
        return out
    }

    func send(_ bytes: [UInt8]) -> Bool {
        let msg = [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
        var off = 0
        while off < msg.count {
            let r = msg.withUnsafeBytes { write(fd, $0.baseAddress! + off, msg.count - off) }
            if r <= 0 { if r < 0 && errno == EINTR { continue }; return false }
            off += r
        }
        return true
    }
}

@MainActor func connectToVPCD() -> Connection? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = options.port.bigEndian
    inet_pton(AF_INET, options.host, &addr.sin_addr)
    let rc = withUnsafePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard rc == 0 else { close(fd); return nil }
    return Connection(fd: fd)
}

// MARK: APDUs

let sw9000: [UInt8] = [0x90, 0x00]
var sessionOpen = false
var iso15693 = false
var exchangeCount = 0

enum Action { case answer([UInt8]), drop }

@MainActor func storage(_ apdu: [UInt8]) -> [UInt8] {
    guard let uid = presented() else { return [0x64, 0x01] }
    switch apdu[1] {
    case 0xCA:
        return uid.onAirBytes + sw9000
    case 0xB0:
        let b = BlockNumber(UInt16(apdu[2]) << 8 | UInt16(apdu[3]))
        do {
            return try client.readBlocks(uid, first: b, count: 1)[0].data + sw9000
        } catch {
            if case .tag(.blockNotAvailable, _) = error { return [0x6A, 0x82] }
            if case .invalid = error { return [0x6A, 0x82] }
            return [0x63, 0x00]
        }
    case 0xD6:
        guard apdu.count >= 5, apdu.count >= 5 + Int(apdu[4]) else { return [0x67, 0x00] }
        let b = BlockNumber(UInt16(apdu[2]) << 8 | UInt16(apdu[3]))
        let data = Array(apdu[5..<(5 + Int(apdu[4]))])
        do {
            try client.writeBlocks(uid, first: b, blocks: [data], verify: false)
            return sw9000
        } catch {
            if case .tag(.blockNotAvailable, _) = error { return [0x6A, 0x82] }
            if case .invalid = error { return [0x6A, 0x82] }
            return [0x63, 0x00]
        }
    default:
        return [0x6D, 0x00]
    }
}

/// A vendor envelope's exchange (OMNIKEY FF 68 0E 03, Identiv FF FD), with the same injected faults as the
/// transparent exchange: the frame answered by the simulated field, silence and unclean answers in the envelope's form.
@MainActor func vendor(_ apdu: [UInt8]) -> Action {
    let codec = options.envelope
    let frame: [UInt8]?
    switch codec {
    case .omnikey: frame = apdu[1] == 0x68 ? PCSC.Omnikey.frame(in: apdu) : nil
    case .identiv: frame = apdu[1] == 0xFD ? PCSC.Identiv.frame(in: apdu)?.frame : nil
    default: frame = nil
    }
    // Not this reader's instruction: 6D 00 (ISO/IEC 7816-4, instruction not supported); of its form: 67 00.
    guard !options.storageOnly, codec != .transparent, apdu[1] == (codec == .omnikey ? 0x68 : 0xFD) else {
        return .answer([0x6D, 0x00])
    }
    guard let frame, !frame.isEmpty else { return .answer([0x67, 0x00]) }
    func respond(_ answer: [UInt8]?, unclean: Bool = false) -> Action {
        .answer(
            codec == .omnikey
                ? PCSC.Omnikey.response(answer, unclean: unclean)
                : PCSC.Identiv.response(answer, crcIncluded: options.identivCRC, unclean: unclean))
    }
    exchangeCount += 1
    let n = exchangeCount
    if options.removeAt.contains(n) { log("exchange \(n): removing the card mid-exchange"); return .drop }
    if options.timeoutAt.contains(n) { log("exchange \(n): injected no answer"); return respond(nil) }
    if options.silentCustom, frame.count > 1, (0xA0...0xDF).contains(frame[1]) { return respond(nil) }
    let flags = RequestFlags(rawValue: frame.first ?? 0)
    let writeAlike = frame.count > 1 && CommandCode(frame[1]).isWriteAlike
    let wait: ResponseWait = writeAlike ? .writeAlike(optionFlag: flags.contains(.option)) : .standard
    do {
        let answer = try sim.transceive(frame, wait: wait)
        if options.crcAt.contains(n) {
            log("exchange \(n): injected unclean answer"); return respond(nil, unclean: true)
        }
        return respond(answer)
    } catch .timeout {
        return respond(nil)
    } catch {
        return respond(nil, unclean: true)
    }
}

@MainActor func transparent(_ apdu: [UInt8]) -> Action {
    guard !options.storageOnly, options.envelope == .transparent else { return .answer([0x6A, 0x81]) }
    guard apdu.count >= 5 else { return .answer([0x67, 0x00]) }
    let lc = Int(apdu[4])
    guard apdu.count >= 5 + lc, let objects = try? PCSC.parse(apdu[5..<(5 + lc)]) else {
        return .answer(PCSC.status(0x6700, object: 1).encoded + sw9000)
    }
    let ok = PCSC.status(PCSC.ok).encoded
    switch apdu[3] {
    case PCSC.Function.manageSession.rawValue:
        for o in objects {
            if o.tag == PCSC.startSession { sessionOpen = true }
            if o.tag == PCSC.endSession { sessionOpen = false; iso15693 = false }
        }
        return .answer(ok + sw9000)
    case PCSC.Function.switchProtocol.rawValue:
        guard sessionOpen else { return .answer(PCSC.status(0x6A81, object: 1).encoded + sw9000) }
        guard let p = objects.first(where: { $0.tag == PCSC.switchProtocol }), p.value == [0x02, 0x03] else {
            return .answer(PCSC.status(0x6A80, object: 1).encoded + sw9000)
        }
        iso15693 = true
        return .answer(ok + PCSC.DataObject(PCSC.switchProtocol, [0x00]).encoded + sw9000)
    case PCSC.Function.transparentExchange.rawValue:
        guard sessionOpen, iso15693 else { return .answer(PCSC.status(0x6A81, object: 1).encoded + sw9000) }
        guard let frameDO = objects.first(where: { $0.tag == PCSC.transceive }),
            let index = objects.firstIndex(of: frameDO)
        else {
            return .answer(PCSC.status(0x6A81, object: 1).encoded + sw9000)
        }
        let timer = objects.first { $0.tag == PCSC.timer }.map { $0.value.reduce(0) { $0 << 8 | Int($1) } }
        exchangeCount += 1
        let n = exchangeCount
        let doNumber = UInt8(index + 1)
        if options.removeAt.contains(n) { log("exchange \(n): removing the card mid-exchange"); return .drop }
        if options.timeoutAt.contains(n) {
            log("exchange \(n): injected no answer (64 01)");
            return .answer(PCSC.status(PCSC.noResponseFromICC, object: doNumber).encoded + sw9000)
        }
        let frame = frameDO.value
        if options.silentCustom, frame.count > 1, (0xA0...0xDF).contains(frame[1]) {
            log("exchange \(n): custom command 0x\(Hex.format([frame[1]])): no answer (--silent-custom)")
            return .answer(PCSC.status(PCSC.noResponseFromICC, object: doNumber).encoded + sw9000)
        }
        let flags = RequestFlags(rawValue: frame.first ?? 0)
        let writeAlike = frame.count > 1 && CommandCode(frame[1]).isWriteAlike
        let wait: ResponseWait = writeAlike ? .writeAlike(optionFlag: flags.contains(.option)) : .standard
        var result: [UInt8]
        do {
            let answer = try sim.transceive(frame, wait: wait)
            if options.crcAt.contains(n) {
                log("exchange \(n): injected CRC error (96 02 01 00)")
                return .answer(
                    ok + PCSC.DataObject(PCSC.validBits, [0]).encoded
                        + PCSC.DataObject(PCSC.responseStatus, [PCSC.statusCRC, 0]).encoded + sw9000)
            }
            result =
                ok + PCSC.DataObject(PCSC.validBits, [0]).encoded
                + PCSC.DataObject(PCSC.responseStatus, [0, 0]).encoded
                + PCSC.DataObject(PCSC.iccResponse, answer).encoded
            // A write-alike command needs time: without a timer DO of at least 20 ms the reader gives up
            // before the tag answers, as a real ACR1552U does (docs/reference/reader-paths.md §2.3). The write itself happened.
            if writeAlike && (timer ?? 0) < 20_000 {
                result = PCSC.status(PCSC.noResponseFromICC, object: doNumber).encoded
            }
        } catch .timeout {
            result = PCSC.status(PCSC.noResponseFromICC, object: doNumber).encoded
        } catch .collision {
            result = ok + PCSC.DataObject(PCSC.responseStatus, [PCSC.statusCollision, 0]).encoded
        } catch .crcError {
            result = ok + PCSC.DataObject(PCSC.responseStatus, [PCSC.statusCRC, 0]).encoded
        } catch {
            result = PCSC.status(0x6F00, object: doNumber).encoded
        }
        return .answer(result + sw9000)
    default:
        return .answer(PCSC.status(0x6A81, object: 0).encoded + sw9000)
    }
}

@MainActor func handle(_ msg: [UInt8]) -> Action? {
    if msg.count == 1 {
        switch msg[0] {
        case 0x04:
            guard let uid = presented() else { return .drop }
            return .answer(PCSC.atr(cardName: PCSC.cardName(for: uid.manufacturer)))
        case 0x00, 0x01, 0x02:
            // vpcd's power off / on / reset: a contactless reader switches its RF field, and the tags on it
            // lose their state (Quiet, Selected) and power up in Ready.
            sessionOpen = false
            iso15693 = false
            try? sim.fieldOff()
            if msg[0] != 0x00 { try? sim.fieldOn() }
            return nil
        default:
            return nil
        }
    }
    guard msg.count >= 4, msg[0] == 0xFF else { return .answer([0x6E, 0x00]) }
    if msg[1] == 0xC2 { return transparent(msg) }
    if msg[1] == 0x68 || msg[1] == 0xFD { return vendor(msg) }
    return .answer(storage(msg))
}

// A launcher may hand down a blocked signal mask (Foundation's Process from a test runner does): unblock,
// so SIGTERM ends the card (= the card is removed).
var none = sigset_t()
sigemptyset(&none)
sigprocmask(SIG_SETMASK, &none, nil)
signal(SIGPIPE, SIG_IGN)
log("field \(options.field): \(folder.field.tags.count) tag(s); vpcd at \(options.host):\(options.port)")
while true {
    guard presented() != nil else { usleep(200_000); continue }
    guard let conn = connectToVPCD() else { usleep(200_000); continue }
    log("card inserted")
    sessionOpen = false
    iso15693 = false
    var dropped = false
    while let head = conn.readExactly(2) {
        let n = Int(head[0]) << 8 | Int(head[1])
        guard let msg = conn.readExactly(n) else { break }
        if options.log && msg.count > 1 { log("> \(Hex.format(msg))") }
        switch handle(msg) {
        case let .answer(bytes)?:
            if options.log && msg.count > 1 { log("< \(Hex.format(bytes))") }
            if !conn.send(bytes) { break }
        case .drop?:
            dropped = true
        case nil:
            break
        }
        if dropped { break }
    }
    log("card removed")
    // Off the reader, the tags have no power: back on it, they start in Ready.
    try? sim.fieldOff()
    defer { try? sim.fieldOn() }
    if dropped { usleep(useconds_t(options.awayMs) * 1000) } else { usleep(200_000) }
}
