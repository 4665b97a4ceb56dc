#if canImport(Glibc)
    import Glibc
#endif
import CHost
import FEIG
import FEIGEmulator
import Foundation
import ISO15693
import Readers
import TagImages
import TagSimulator
import TestDrivers
import Testing
import DriverFEIG

/// A link that records what the host sends and hands back canned replies (bytes of real traffic).
final class ScriptedLink: FEIGLink {
    var sent: [[UInt8]] = []
    var replies: [[UInt8]]
    private var pending: [UInt8] = []
    init(replies: [[UInt8]]) { self.replies = replies }
    func send(_ bytes: [UInt8]) throws(FEIGLinkError) {
        sent.append(bytes)
        if !replies.isEmpty { pending += replies.removeFirst() }
    }
    func receive(max: Int, timeoutMs: Int) throws(FEIGLinkError) -> [UInt8] {
        let n = min(max, pending.count)
        defer { pending.removeFirst(n) }
        return Array(pending.prefix(n))
    }
    func discardInput() {}
    func close() {}
}

@Suite(.drivers) struct DriverTests {
    static func hex(_ s: String) -> [UInt8] { (try? Hex.parse(s)) ?? [] }

    /// The driver's host frames are byte for byte those of real ID ISC.LR1002 traffic (ST community forum,
    /// "Error 0x12 when writing multiple blocks on ST25DV16KC", Tests/FEIGTests/FEIG-FACTS.md §1.8), and it reads
    /// that traffic's replies right: the Inventory's two UIDs (MSB first in the host protocol), and STATUS 0x95
    /// with ISO error 0x12 (block locked, ISO/IEC 15693-3 Table 7) as the tag's own error.
    @Test func framesOfRealLR1002Traffic() throws {
        let link = ScriptedLink(replies: [
            Self.hex("02 00 1D 00 B0 00 02 03 00 E0 02 51 00 02 56 4A A4 03 00 E0 02 23 00 18 89 2B 09 E3 00"),
            Self.hex("02 00 0A 00 B0 95 12 00 94 29"),
        ])
        let reader = FEIGReader(device: FEIGDevice(port: .tcp(host: "192.0.2.1", port: 10001)), link: link)
        let client = ISO15693Client(reader: reader, retries: 0)
        let found = try client.inventory()
        #expect(link.sent[0] == Self.hex("02 00 09 FF B0 01 00 18 43"))
        #expect(found.map(\.uid.description) == ["E002510002564AA4", "E002230018892B09"])
        #expect(found.map(\.uid.manufacturer) == [.stMicroelectronics, .stMicroelectronics])

        // The forum's data, in the tag's memory order (the frame carries each 4-byte block reversed).
        let memory = Self.hex(
            "01 02 03 04 05 00 60 70 80 90 A0 0B 0C 0D 0E 0F 10 11 12 13 14 15 16 00 00 00 00 00 00 00 00 00")
        let write = Request(
            .writeMultipleBlocks(first: 0, count: 8, data: memory), flags: [.highDataRate],
            addressing: .addressed(found[0].uid))
        #expect(throws: ClientError.tag(.blockLocked, command: CommandCode.writeMultipleBlocks.name)) {
            try client.send(write)
        }
        #expect(
            link.sent[1]
                == Self.hex(
                    "02 00 34 FF B0 24 01 E0 02 51 00 02 56 4A A4 00 08 04 04 03 02 01 70 60 00 05 0B A0 90 80 0F 0E 0D 0C 13 12 11 10 00 16 15 14 00 00 00 00 00 00 00 00 18 18"
                ))
    }

    /// Every STATUS becomes a typed error: 0x01 silence, 0x0B collision, 0x02/0x83 a damaged answer (which the
    /// client retries), RF warning a device error, the rest the reader's own words (FEIG-FACTS.md §3).
    @Test func statusesAreTypedErrors() {
        #expect(FEIGReader.error(status: 0x01, command: "x") == .timeout)
        #expect(FEIGReader.error(status: 0x0B, command: "x") == .collision)
        #expect(FEIGReader.error(status: 0x0C, command: "x") == .collision)
        if case .crcError = FEIGReader.error(status: 0x02, command: "x") {} else { Issue.record("0x02") }
        if case .crcError = FEIGReader.error(status: 0x83, command: "x") {} else { Issue.record("0x83") }
        if case .device(let m) = FEIGReader.error(status: 0x84, command: "Inventory") {
            #expect(m.contains("RF warning"))
        } else {
            Issue.record("0x84")
        }
        if case .readerStatus(0x04, let t) = FEIGReader.error(status: 0x04, command: "Read Multiple Blocks") {
            #expect(t.contains("address error"))
        } else {
            Issue.record("0x04")
        }
        for s in FEIGStatus.allCases where s != .ok {
            #expect(!FEIGReader.error(status: s.rawValue, command: "x").description.isEmpty)
        }
    }

    @Test func deviceStrings() throws {
        #expect(try FEIGDevice.parse("/dev/ttyUSB0").port == .serial(path: "/dev/ttyUSB0", baud: 38400, parity: .even))
        let d = try FEIGDevice.parse(
            "/dev/ttyS1,baud=115200,parity=none,address=3,timeout=500,char-timeout=12,frames=standard")
        #expect(d.port == .serial(path: "/dev/ttyS1", baud: 115200, parity: .none))
        #expect(d.address == 3 && d.responseTimeoutMs == 500 && d.interCharacterTimeoutMs == 12 && !d.advancedFrames)
        #expect(try FEIGDevice.parse("tcp://10.0.0.5").port == .tcp(host: "10.0.0.5", port: 10001))
        #expect(try FEIGDevice.parse("tcp://[::1]:4001").port == .tcp(host: "::1", port: 4001))
        for bad in [
            "", "ttyUSB0", "tcp://", "tcp://h:0", "tcp://h:99999", "tcp://h:x", "tcp://[::1", "/dev/x,baud=1234",
            "/dev/x,parity=mark",
            "/dev/x,address=256", "/dev/x,timeout=0", "/dev/x,speed=1", "/dev/x,baud", "tcp://h,baud=9600",
            "/dev/x,frames=big",
        ] {
            #expect(throws: FEIGDeviceError.self, "\(bad)") { try FEIGDevice.parse(bad) }
        }
    }

    // MARK: Against the emulator

    /// Three small tags of every chip profile the simulator has with at most 256 blocks (the larger ones are in
    /// `tagsPastBlock255UseTheExtendedForm`), more than one Inventory reply of the emulator holds.
    static func field() -> (SimulatedField, [TagImage]) {
        let small = ChipProfile.all.filter { $0.blockCount <= 256 }
        let profiles = small + small + small
        let images = profiles.enumerated().map { i, p in
            var image = TagImage.blank(profile: p, uid: p.makeUID(serial: 0x1000 + UInt64(i) * 0x1111))
            for b in 0..<image.blocks.count {
                image.blocks[b] = (0..<p.blockSize).map { UInt8(truncatingIfNeeded: b * 7 + $0 + i) }
            }
            return image
        }
        return (SimulatedField(tags: zip(images, profiles).map { SimulatedTag(image: $0, profile: $1) }), images)
    }

    /// The emulator on a pseudo-terminal, served on a thread; the driver on the pty's serial side.
    final class PTYBench: @unchecked Sendable {
        let emulator: FEIGReaderEmulator
        let master: Int32
        let path: String
        private let lock = NSLock()
        private var stop = false
        private let done = DispatchSemaphore(value: 0)
        init(_ emulator: FEIGReaderEmulator) throws {
            self.emulator = emulator
            var name = [CChar](repeating: 0, count: 128)
            master = vlogger_open_pty(&name, name.count)
            guard master >= 0 else { throw FEIGLinkError.open("no pty") }
            path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            Thread { [self] in
                while !(lock.withLock { stop }) {
                    _ = emulator.serve(fd: master, shouldStop: { self.lock.withLock { self.stop } })
                }
                done.signal()
            }.start()
        }
        func close() {
            lock.withLock { stop = true }
            done.wait()
            Glibc.close(master)
        }
    }

    /// Over a pseudo-terminal: the reader's inventory finds every tag, reads give each tag's memory (with
    /// lock status), Get System Information its size, writes land in the tag, a lock shows, and an ISO error
    /// comes back as the tag's error code.
    @Test func wholeClientOverAPseudoTerminal() throws {
        let (field, images) = Self.field()
        let bench = try PTYBench(FEIGReaderEmulator(field: field))
        defer { bench.close() }
        let reader = try FEIGReader.open(try FEIGDevice.parse("\(bench.path),baud=38400,parity=even,timeout=1000"))
        defer { reader.close() }
        #expect(reader.info?.summary.hasPrefix("ID ISC.MR102 (type 77)") == true)
        let client = ISO15693Client(reader: reader)
        let found = try client.inventory()
        #expect(Set(found.map(\.uid)) == Set(images.map(\.uid)))
        #expect(images.count > bench.emulator.recordsPerInventoryReply, "the MORE path (STATUS 0x94) is exercised")

        for image in images {
            let m = try client.memory(of: image.uid)
            #expect(m.blockCount == image.blocks.count && m.blockSize == image.blocks[0].count, "\(image.uid)")
            // The client's read planner: Read Multiple Blocks where the chip has it, else single reads.
            let blocks = try client.readBlocks(image.uid, first: 2, count: 3, security: true)
            #expect(
                blocks.map(\.data) == Array(image.blocks[2..<5]),
                "\(image.uid): memory order after the per-block reversal")
            #expect(blocks.allSatisfy { $0.security?.isLocked == false })
        }
        // A write with the client's verified write (through [0xB0][0x24] and a read back through [0x23]).
        let tag = images[0]
        let data = (0..<tag.blocks[0].count).map { UInt8(0xA0 + $0) }
        let report = try client.writeBlocks(tag.uid, first: 1, blocks: [data])
        #expect(report.verified)
        #expect(bench.emulator.withField { $0.tag(tag.uid)?.image.blocks[1] } == data)
        _ = try client.send(Request(.lockBlock(1), flags: [.highDataRate], addressing: .addressed(tag.uid)))
        let sec = try client.send(
            Request(.readSingleBlock(1), flags: [.highDataRate, .option], addressing: .addressed(tag.uid)))
        if case let .blocks(b) = sec.body {
            #expect(b.first?.security?.isLocked == true && b.first?.data == data)
        } else {
            Issue.record("read")
        }
        #expect(throws: ClientError.self) {
            try client.send(
                Request(.writeSingleBlock(1, data: data), flags: [.highDataRate], addressing: .addressed(tag.uid)))
        }
        // A tag that left the field: silence, as on air.
        _ = bench.emulator.withField { $0.remove(tag.uid) }
        #expect(throws: ClientError.reader(.timeout, command: CommandCode.readSingleBlock.name)) {
            try client.send(
                Request(.readSingleBlock(0), flags: [.highDataRate], addressing: .addressed(tag.uid)), retries: 0)
        }
    }

    /// Over loopback TCP, with every fault the emulator has: each gives its typed error, and the next command
    /// works (after a restart, over a new connection).
    @Test func faultsOverLoopbackTCP() throws {
        let (field, images) = Self.field()
        let emulator = FEIGReaderEmulator(field: field)
        let server = try FEIGTCPServer(emulator: emulator)
        server.restartMs = 100
        server.start()
        defer { server.stop() }
        let reader = try FEIGReader.open(try FEIGDevice.parse("tcp://127.0.0.1:\(server.port),timeout=400"))
        defer { reader.close() }
        let client = ISO15693Client(reader: reader, retries: 0)
        let uid = images[0].uid
        let read = Request(.readSingleBlock(0), flags: [.highDataRate], addressing: .addressed(uid))
        func outcome() -> ClientError? {
            do { _ = try client.send(read); return nil } catch { return error }
        }
        #expect(outcome() == nil)
        emulator.inject(.noAnswer)
        if case .reader(.device(let m), _)? = outcome() {
            #expect(m.contains("did not answer"))
        } else {
            Issue.record("no answer")
        }
        for fault in [FEIGReaderEmulator.Fault.corruptCRC, .garbled, .truncated] {
            emulator.inject(fault)
            if case .reader(.crcError, _)? = outcome() {} else { Issue.record("\(fault)") }
            #expect(outcome() == nil, "after \(fault)")
        }
        emulator.inject(.status(0x84))
        if case .reader(.device(let m), _)? = outcome() {
            #expect(m.contains("RF warning"))
        } else {
            Issue.record("0x84")
        }
        emulator.inject(.status(0x0B))
        #expect(outcome() == .reader(.collision, command: CommandCode.readSingleBlock.name))
        emulator.inject(.restart)
        if case .reader(.device, _)? = outcome() {} else { Issue.record("restart") }
        // The reader is back (a new connection); its field was reset, the tags are there.
        var back = false
        for _ in 0..<20 where !back {
            back = outcome() == nil
            if !back { usleep(50_000) }
        }
        #expect(back)
        #expect(Set(try client.inventory().map(\.uid)) == Set(images.map(\.uid)))
    }

    /// Tags past block 255, 2048 blocks of 4 bytes each: the ST25DV64K (ISO's extended commands on air) and the
    /// M24LR64 (ST's protocol extension). The driver sends FEIG's extended form: MODE bit 5 EXT_ADR, BANK 0x03 (the
    /// user memory) and a two-byte DB-ADR, high byte first (ID ISC.MR102 manual pp. 92 and 105; FEIG SDK
    /// `FedmIscTagHandler_ISO15693_STM_M24LR64R.cpp` and `FEDM_ISCReaderID.h`, Tests/FEIGTests/FEIG-FACTS.md §2a).
    /// Get System Information's 14-byte reply (two-byte block count, FEIG SDK `Set_0xB0_0x2B_IsoTableData`)
    /// gives the 2048 blocks; reads at 0x7F0, across block 255, a verified write at 0x700 and a lock land where
    /// they should in the simulated tag.
    @Test func tagsPastBlock255UseTheExtendedForm() throws {
        let big = ChipProfile.all.filter { $0.blockCount > 256 }
        #expect(big.contains { $0.requiresProtocolExtension } && big.contains { $0.supportsExtendedCommands })
        let images = big.enumerated().map { i, p in
            var image = TagImage.blank(profile: p, uid: p.makeUID(serial: 0x7700 + UInt64(i)))
            for b in 0..<image.blocks.count {
                image.blocks[b] = (0..<p.blockSize).map { UInt8(truncatingIfNeeded: b * 3 + $0 * 17 + i) }
            }
            return image
        }
        let emulator = FEIGReaderEmulator(
            field: SimulatedField(tags: zip(images, big).map { SimulatedTag(image: $0, profile: $1) }))
        let server = try FEIGTCPServer(emulator: emulator)
        server.start()
        defer { server.stop() }
        let reader = try FEIGReader.open(try FEIGDevice.parse("tcp://127.0.0.1:\(server.port),timeout=1000"))
        defer { reader.close() }
        var sent: [String] = []
        reader.trace = { e in if let n = e.note, n.hasPrefix("FEIG > ") { sent.append(String(n.dropFirst(7))) } }
        let client = ISO15693Client(reader: reader)
        #expect(Set(try client.inventory().map(\.uid)) == Set(images.map(\.uid)))
        for (image, profile) in zip(images, big) {
            let m = try client.memory(of: image.uid)
            #expect(m.blockCount == 2048 && m.blockSize == 4, "\(profile.id)")
            sent.removeAll()
            let high = try client.readBlocks(image.uid, first: 0x7F0, count: 4, security: true)
            #expect(high.map(\.data) == Array(image.blocks[0x7F0..<0x7F4]), "\(profile.id)")
            #expect(high.map(\.number.int) == Array(0x7F0..<0x7F4))
            // The request: B0 23, MODE 0x29 (addressed | SEC | EXT_ADR), the UID MSB first, BANK 03, DB-ADR 07 F0, DB-N 4.
            let uidMSB = Array(image.uid.onAirBytes.reversed())
            let expected = FEIGFrame(
                request: 0xB0, data: [0x23, 0x29] + uidMSB + [0x03, 0x07, 0xF0, 0x04], advanced: true
            ).encoded()
            #expect(sent == [Hex.format(expected)], "\(profile.id)")
            let across = try client.readBlocks(image.uid, first: 0xFE, count: 4)
            #expect(across.map(\.data) == Array(image.blocks[0xFE..<0x102]), "\(profile.id): across block 255")

            let data: [UInt8] = [0xC0, 0xFF, 0xEE, UInt8(truncatingIfNeeded: profile.blockCount)]
            #expect(try client.writeBlocks(image.uid, first: 0x700, blocks: [data]).verified)
            #expect(emulator.withField { $0.tag(image.uid)?.image.blocks[0x700] } == data)
            #expect(
                emulator.withField { $0.tag(image.uid)?.image.blocks[0x6FF] } == image.blocks[0x6FF],
                "nothing else written")
            try client.lockBlock(image.uid, block: 0x701)
            #expect(emulator.withField { $0.tag(image.uid)?.image.locked[0x701] } == true, "\(profile.id)")
            let status = try client.readBlocks(image.uid, first: 0x701, count: 1, security: true)
            #expect(status.first?.security?.isLocked == true)
            #expect(throws: ClientError.self) { try client.writeBlocks(image.uid, first: 0x701, blocks: [data]) }
        }
    }

    /// The emulator checks the extended form as a reader does: a request too short for BANK and a two-byte
    /// DB-ADR is a length error (STATUS 0x81), a bank other than the user memory and a range past the last
    /// block number the form can name are parameter range errors (0x11), before anything is written. In
    /// selected mode it knows the selected tag (from the Select) and so reaches the M24LR64 with ST's
    /// protocol extension.
    @Test func emulatorChecksTheExtendedForm() throws {
        let m24 = ChipProfile.m24lr64
        var image = TagImage.blank(profile: m24, uid: m24.makeUID(serial: 0x4242))
        image.blocks[0x700] = [1, 2, 3, 4]
        let slix2 = ChipProfile.icodeSLIX2
        let small = TagImage.blank(profile: slix2, uid: slix2.makeUID(serial: 0x77))
        let e = FEIGReaderEmulator(
            field: SimulatedField(tags: [
                SimulatedTag(image: image, profile: m24), SimulatedTag(image: small, profile: slix2),
            ]))
        func status(_ data: [UInt8]) -> UInt8? {
            guard case let .reply(r) = e.respond(to: FEIGFrame(request: 0xB0, data: data, advanced: true).encoded())
            else { return nil }
            return (try? FEIGFrame.decode(r, direction: .reply))?.status
        }
        let uid = Array(image.uid.onAirBytes.reversed()), smallUID = Array(small.uid.onAirBytes.reversed())
        #expect(
            status([0x23, 0x21] + uid + [0x03, 0x07]) == FEIGStatus.lengthError.rawValue, "BANK and one byte of DB-ADR")
        #expect(
            status([0x23, 0x21] + uid + [0x00, 0x07, 0x00, 0x01]) == FEIGStatus.parameterRangeError.rawValue, "bank 0")
        #expect(status([0x23, 0x21] + uid + [0x03, 0x07, 0x00, 0x01]) == FEIGStatus.ok.rawValue)
        // One-byte form: blocks 0xFA + 10 would run past 0xFF: refused before a block is written.
        let before = e.withField { $0.tag(small.uid)?.image.blocks }
        #expect(
            status([0x24, 0x01] + smallUID + [0xFA, 0x0A, 0x04] + [UInt8](repeating: 0xEE, count: 40))
                == FEIGStatus.parameterRangeError.rawValue)
        #expect(e.withField { $0.tag(small.uid)?.image.blocks } == before, "nothing written")
        // Selected mode, extended form, on the M24LR64: the reader uses the protocol extension.
        #expect(status([0x25, 0x01] + uid) == FEIGStatus.ok.rawValue)
        guard
            case let .reply(r) = e.respond(
                to: FEIGFrame(request: 0xB0, data: [0x23, 0x22, 0x03, 0x07, 0x00, 0x01], advanced: true).encoded()),
            let f = try? FEIGFrame.decode(r, direction: .reply)
        else { Issue.record("no reply"); return }
        #expect(
            f.status == FEIGStatus.ok.rawValue && f.data == [0x01, 0x04, 0x00, 4, 3, 2, 1], "\(Hex.format(f.data))")
    }

    /// Long reads stay within the reader's transmit buffer: FEIG's manuals give the largest DB-N of a Read
    /// Multiple Blocks as (TX-BUF − 12) / (DB-SIZE + 1) (ID ISC.MR/PR/PRH101 p. 63, ID ISC.MR200 p. 93). The driver
    /// takes TX-BUF from [0x66] Get Reader Info; with 1024 bytes a 300-block read of 4-byte blocks goes in
    /// requests of at most 202 blocks, 8-byte blocks at most 112; with 256 bytes at most 48 and 27. The data are
    /// the tags' memory either way.
    @Test(arguments: [UInt16(1024), 256])
    func longReadsFitTheTransmitBuffer(_ txBuf: UInt16) throws {
        let profiles = [ChipProfile.st25dv64k, .mb89r118]
        let images = profiles.enumerated().map { i, p in
            var image = TagImage.blank(profile: p, uid: p.makeUID(serial: 0x5100 + UInt64(i)))
            for b in 0..<image.blocks.count {
                image.blocks[b] = (0..<p.blockSize).map { UInt8(truncatingIfNeeded: b * 5 + $0 + i) }
            }
            return image
        }
        let emulator = FEIGReaderEmulator(
            field: SimulatedField(tags: zip(images, profiles).map { SimulatedTag(image: $0, profile: $1) }))
        emulator.info.transmitBuffer = txBuf
        let server = try FEIGTCPServer(emulator: emulator)
        server.start()
        defer { server.stop() }
        let reader = try FEIGReader.open(try FEIGDevice.parse("tcp://127.0.0.1:\(server.port),timeout=1000"))
        defer { reader.close() }
        let client = ISO15693Client(reader: reader)
        for (image, profile) in zip(images, profiles) {
            let count = min(300, image.blocks.count - 0x10)
            let before = emulator.requests.count
            let got = try client.readBlocks(image.uid, first: 0x10, count: count)
            #expect(got.map(\.data) == Array(image.blocks[0x10..<(0x10 + count)]), "\(profile.id)")
            let limit = (Int(txBuf) - 12) / (profile.blockSize + 1)
            let reads = emulator.requests.dropFirst(before).filter { $0.command == 0xB0 && $0.data.first == 0x23 }
                .compactMap { $0.data.last.map(Int.init) }
            #expect(
                !reads.isEmpty && reads.allSatisfy { $0 <= limit }, "\(profile.id): DB-N \(reads), at most \(limit)")
        }
    }

    /// Get System Information's reply in both of FEIG's forms: 13 bytes with a one-byte block count, 14 with a
    /// two-byte one (high byte first), block-size byte first in both (FEIG SDK `Set_0xB0_0x2B_IsoTableData`:
    /// "contains block size", "block length (single or high byte)", "block length (low byte)").
    @Test func systemInformationInBothForms() throws {
        let uid = Self.hex("E0 02 26 00 00 C0 FF EE")
        let short = try FEIGISO.systemInfo([0x00] + uid + [0x00, 0x03, 0x3F, 0x26])
        #expect(short.blockCount == 64 && short.blockSize == 4 && short.icReference == 0x26 && !short.wideMemorySize)
        let wide = try FEIGISO.systemInfo([0x00] + uid + [0x00, 0x03, 0x07, 0xFF, 0x26])
        #expect(wide.blockCount == 2048 && wide.blockSize == 4 && wide.icReference == 0x26 && wide.wideMemorySize)
        #expect(wide.encoded == [0x00] + uid + [0x00, 0x03, 0x07, 0xFF, 0x26])
        for n in [0, 12, 15, 30] {
            #expect(throws: FEIGReplyError.self) { try FEIGISO.systemInfo([UInt8](repeating: 0, count: n)) }
        }
        #expect(FEIGISO.blockAddress(0x7F0, extended: true) == [0x03, 0x07, 0xF0])
        #expect(FEIGISO.blockAddress(0xF8, extended: false) == [0xF8])
        #expect(FEIGISO.parseBlockAddress([0x03, 0x01, 0x00, 0x04], extended: true)! == (0x03, 0x100, [0x04]))
        #expect(FEIGISO.parseBlockAddress([0x03, 0x01], extended: true) == nil)
    }

    /// The emulator refuses what a reader refuses: an unknown command, a frame for another bus address, a
    /// damaged request.
    @Test func emulatorAnswersLikeAReader() {
        let (field, _) = Self.field()
        let e = FEIGReaderEmulator(field: field)
        e.address = 3
        guard case let .reply(r) = e.respond(to: FEIGFrame(request: 0x7E, address: 3).encoded()),
            let f = try? FEIGFrame.decode(r, direction: .reply)
        else { Issue.record("no reply"); return }
        #expect(f.status == FEIGStatus.unknownCommand.rawValue && f.address == 3 && !f.advanced)
        #expect(e.respond(to: FEIGFrame(request: 0x66, data: [0], address: 4).encoded()) == .silence)
        var bad = FEIGFrame(request: 0x66, data: [0]).encoded()
        bad[bad.count - 1] ^= 1
        #expect(e.respond(to: bad) == .silence)
        // Inventory with an empty field: STATUS 0x01.
        let empty = FEIGReaderEmulator(field: SimulatedField())
        if case let .reply(r) = empty.respond(
            to: FEIGFrame(request: 0xB0, data: [0x01, 0x00], advanced: true).encoded())
        {
            #expect((try? FEIGFrame.decode(r, direction: .reply))?.status == FEIGStatus.noTransponder.rawValue)
        } else {
            Issue.record("inventory")
        }
    }
}
