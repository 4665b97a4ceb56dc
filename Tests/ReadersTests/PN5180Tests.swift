import CHost
import ISO15693
import ISO15693Fuzzing
import PN5180Emulator
import TagImages
import TagSimulator
import TestDrivers
import Testing

@testable import DriverPN5180
@testable import Readers

/// The PN5180 driver (docs/reference/pn5180.md) against the fake chip of `PN5180Emulator`. The fake is first checked
/// against the public logs of real PN5180s (§6), then the driver runs the client's inventory, reads and writes
/// through it; the kernel structures the Linux pins lay out by hand are checked against this machine's kernel
/// headers.
@Suite(.drivers) struct PN5180Tests {
    static func tag(_ uid: UID, blocks: Int = 64) throws -> SimulatedTag {
        SimulatedTag(
            image: try TagImage(
                uid: uid, blockSize: 4, blocks: (0..<blocks).map { [UInt8($0), 0x15, 0x69, 0x3A] }),
            profile: .icodeSLIX2)
    }

    static func reader(_ fake: FakePN5180) -> PN5180Reader {
        PN5180Reader(link: PN5180Link(pins: fake), name: "PN5180 (fake)")
    }

    /// The public logs, replayed on the fake through the handshake:
    /// - playfultechnology/PN5180-Library PR #3 (egnor, 2024-07-19): after reset IRQ_STATUS is 0x00000004 (idle);
    ///   LOAD_RF_CONFIG `11 0D 8D`, RF_ON `16 00`, then IRQ_STATUS `04 02 00 00` (0x204, TX_RFON and idle).
    /// - ATrappmann/PN5180-Library #3 (2019): `04 02` → `04 00 00 00` right after reset.
    /// - playfultechnology/arduino-rfid-PN5180 #1 (2022): after a one-slot Inventory (`09 00 26 01 00`) IRQ_STATUS
    ///   `07 40 00 00` (RX, TX, idle, RX_SOF_DET), RX_STATUS `0A 00 00 00` (10 bytes) and READ_DATA `00 00 C4 14 94
    ///   B5 50 01 04 E0` (flags, DSFID, the UID E0 04 01 50 B5 94 14 C4 least significant byte first).
    @Test func theFakeAnswersAsThePublicLogs() throws {
        let fake = FakePN5180(field: SimulatedField(tags: [try Self.tag(UID(parsing: "E0040150B59414C4"))]))
        let link = PN5180Link(pins: fake)
        try fake.setReset(false)
        fake.sleep(microseconds: 100)
        try fake.setReset(true)
        fake.sleep(microseconds: 3_000)
        #expect(try link.query([0x04, 0x02], length: 4) == [0x04, 0x00, 0x00, 0x00])
        try link.command([0x11, 0x0D, 0x8D])
        try link.command([0x16, 0x00])
        #expect(try link.query([0x04, 0x02], length: 4) == [0x04, 0x02, 0x00, 0x00])
        // esphome_qalcosonicnfc #9: clear TX_RFON, SYSTEM_CONFIG to Idle then Transceive.
        try link.command([0x00, 0x03, 0x00, 0x02, 0x00, 0x00])
        try link.command([0x00, 0x03, 0xFF, 0xFF, 0xFF, 0xFF])
        try link.command([0x02, 0x00, 0xF8, 0xFF, 0xFF, 0xFF])
        try link.command([0x01, 0x00, 0x03, 0x00, 0x00, 0x00])
        try link.command([0x09, 0x00, 0x26, 0x01, 0x00])
        fake.sleep(microseconds: 10_000)
        #expect(try link.query([0x04, 0x02], length: 4) == [0x07, 0x40, 0x00, 0x00])
        #expect(try link.query([0x04, 0x13], length: 4) == [0x0A, 0x00, 0x00, 0x00])
        #expect(
            try link.query([0x0A, 0x00], length: 10) == [0x00, 0x00, 0xC4, 0x14, 0x94, 0xB5, 0x50, 0x01, 0x04, 0xE0])
        // The driver sends the same frames for the same steps.
        #expect(PN5180.loadRFConfig(.ask100) == [0x11, 0x0D, 0x8D] && PN5180.rfOn == [0x16, 0x00])
        #expect(PN5180.writeRegister(.irqClear, PN5180.IRQ.txRFOn.rawValue) == [0x00, 0x03, 0x00, 0x02, 0x00, 0x00])
        #expect(PN5180.andMask(.systemConfig, PN5180.commandMask) == [0x02, 0x00, 0xF8, 0xFF, 0xFF, 0xFF])
        #expect(PN5180.orMask(.systemConfig, PN5180.transceive) == [0x01, 0x00, 0x03, 0x00, 0x00, 0x00])
        #expect(PN5180.sendData([0x26, 0x01, 0x00]) == [0x09, 0x00, 0x26, 0x01, 0x00])
        #expect(PN5180.version([0x05, 0x03]) == "3.5" && PN5180.version([0xFF, 0xFF]) == nil)
    }

    /// Twenty tags with random UIDs: the client's 16-slot inventory (EOF slot markers through TX_CONFIG) finds every
    /// one; each is then read whole and one of two is written, the other left byte-identical; a tag that left is no
    /// answer. The air time is the ISO 15693 model's for the exchanges made.
    @Test func twentyTagsThroughTheFake() throws {
        var rng = DecoderFuzzer.Random(seed: 5180)
        var uids: [UID] = []
        while uids.count < 20 {
            let u = UID(manufacturer: .nxp, serial: rng.next() & 0xFFFF_FFFF_FFFF)
            if !uids.contains(u) { uids.append(u) }
        }
        let field = SimulatedField(tags: try uids.map { try Self.tag($0) })
        let fake = FakePN5180(field: field)
        let reader = Self.reader(fake)
        try reader.fieldOn()
        #expect(reader.firmware == "4.0")
        let client = ISO15693Client(reader: reader)
        let found = try client.inventory()
        #expect(Set(found.map(\.uid)) == Set(uids), "\(found.count) of 20")
        #expect(fake.commands.contains(PN5180.andMask(.txConfig, PN5180.eofOnly)), "slot markers as EOF alone")
        for u in uids {
            let blocks = try client.readBlocks(u, first: 0, count: 64)
            #expect(blocks.count == 64 && blocks[7].data == [7, 0x15, 0x69, 0x3A])
        }
        let (a, b) = (uids[3], uids[11])
        let before = try #require(field.tag(b)).image.blocks
        let report = try client.writeBlocks(a, first: 0x20, blocks: [[0xCA, 0xFE, 0xF0, 0x0D]], verify: true)
        #expect(report.verified && field.tag(a)?.image.blocks[0x20] == [0xCA, 0xFE, 0xF0, 0x0D])
        #expect(field.tag(b)?.image.blocks == before)
        _ = field.remove(b)
        #expect(throws: ClientError.self) { try client.readBlocks(b, first: 0, count: 1) }
        try reader.fieldOff()
        #expect(throws: ReaderError.fieldOff) { try reader.transceive([0x26, 0x01, 0x00], wait: .standard) }
    }

    /// A chip that never drops BUSY, no chip on the bus, a chip that answers garbage: each is a device error or a
    /// typed error on the simulated clock, never a hang.
    @Test func faultsAreErrorsNotHangs() throws {
        let field = SimulatedField(tags: [try Self.tag(UID(parsing: "E004015012345678"))])
        let stuck = FakePN5180(field: field)
        stuck.fault = .stuckBusy
        let hung = #expect(throws: ReaderError.self) { try Self.reader(stuck).fieldOn() }
        #expect(hung.map { "\($0)" }?.contains("BUSY high") == true, "\(String(describing: hung))")
        let absent = FakePN5180(field: field)
        absent.fault = .absent
        let none = #expect(throws: ReaderError.self) { try Self.reader(absent).fieldOn() }
        #expect(none.map { "\($0)" }?.contains("BUSY low") == true, "\(String(describing: none))")
        for byte: UInt8 in [0xFF, 0x00] {
            let blank = FakePN5180(field: field)
            blank.fault = .garbage(byte)
            let e = #expect(throws: ReaderError.self) { try Self.reader(blank).fieldOn() }
            #expect(
                e.map { "\($0)" }.map { $0.contains("no PN5180 answers") || $0.contains("reset") } == true,
                "\(String(describing: e))")
        }
        let noisy = FakePN5180(field: field)
        noisy.fault = .garbage(0x5A)
        let r = Self.reader(noisy)
        #expect(throws: ReaderError.self) {
            try r.fieldOn()
            _ = try r.transceive([0x26, 0x01, 0x00], wait: .standard)
        }
        #expect(noisy.now() < 10_000_000, "the simulated clock ran \(noisy.now()) µs")
    }

    /// A write with the Option flag (a TI Tag-it HF-I Plus requires it): the tag answers only after the reader's
    /// lone EOF (ISO/IEC 15693-3), which the driver sends after its EOF delay; the fake holds the answer until then.
    @Test func aWriteWithTheOptionFlagGetsItsEOF() throws {
        let uid = try UID(parsing: "E007000012345678")
        let tag = SimulatedTag(
            image: try TagImage(uid: uid, blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 64)),
            profile: .tagitHFIPlus)
        let fake = FakePN5180(field: SimulatedField(tags: [tag]))
        let reader = Self.reader(fake)
        try reader.fieldOn()
        let client = ISO15693Client(reader: reader)
        let report = try client.writeBlocks(uid, first: 5, blocks: [[9, 8, 7, 6]], verify: true, option: true)
        #expect(report.verified && tag.image.blocks[5] == [9, 8, 7, 6])
        // The EOF alone: TX_CONFIG without TX_DATA_ENABLE, then a SEND_DATA of no bytes.
        #expect(fake.commands.contains(PN5180.sendData([])))
    }

    @Test func deviceStrings() throws {
        let d = try PN5180Device.parse("spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:7")
        #expect(
            d.spi == "/dev/spidev0.0" && d.busy.offset == 25 && d.reset.chipPath == "/dev/gpiochip0" && d.nss == nil)
        #expect(d.speedHz == 7_000_000 && d.modulation == .ask100)
        let e = try PN5180Device.parse(
            "spi:/dev/spidev1.1,busy=gpiochip4:5,reset=/dev/gpiochip4:6,nss=gpiochip4:8,speed=2000000,ask=10")
        #expect(e.nss?.offset == 8 && e.reset.chipPath == "/dev/gpiochip4" && e.speedHz == 2_000_000)
        #expect(e.modulation == .ask10 && PN5180.loadRFConfig(e.modulation) == [0x11, 0x0E, 0x8D])
        for bad in [
            "", "/dev/spidev0.0", "spi:", "spi:/dev/spidev0.0", "spi:/dev/spidev0.0,busy=gpiochip0:25",
            "spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:25", "spi:/dev/spidev0.0,busy=gpiochip0,reset=x:1",
            "spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:7,speed=10000000",
            "spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:7,ask=50",
            "spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:7,colour=red",
            "spi:/dev/spidev0.0,busy=gpiochip0:-1,reset=gpiochip0:7",
            "spi:spidev0.0,busy=gpiochip0:1,reset=gpiochip0:2",
        ] {
            #expect(throws: ReaderError.self, "\(bad)") { try PN5180Device.parse(bad) }
        }
        // The driver: config check names the problem; opening a bus that is not there says so.
        let driver = PN5180Driver()
        #expect(driver.checkDevice("spi:/dev/spidev0.0,busy=gpiochip0:25")?.contains("reset") == true)
        #expect(driver.checkDevice("spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:7") == nil)
        // The SPI bus is named first: it is what a user enables first.
        #expect(
            driver.preflight(field: nil, device: "spi:/dev/spidev9.9,busy=gpiochip9:1,reset=gpiochip9:2")?
                .hasPrefix("/dev/spidev9.9 does not exist") == true)
        #expect(throws: ReaderError.self) {
            _ = try LinuxPN5180Pins(PN5180Device.parse("spi:/dev/spidev9.9,busy=gpiochip9:1,reset=gpiochip9:2"))
        }
    }

    /// The structures and request numbers LinuxPN5180Pins writes by hand, against this machine's kernel headers
    /// (linux/spi/spidev.h, linux/gpio.h, through CHost).
    @Test func theKernelABIAsTheHeadersDefineIt() {
        var v = [UInt](repeating: 0, count: 20)
        vlogger_kernel_abi(&v, 20)
        #expect(v[0] == UInt(LinuxPN5180Pins.transferSize) && v[1] == LinuxPN5180Pins.spiMessage1)
        #expect(v[2] == LinuxPN5180Pins.spiWriteMode && v[3] == LinuxPN5180Pins.spiWriteSpeed)
        #expect(v[4] == 20 && v[5] == 26, "speed_hz and bits_per_word offsets")
        #expect(v[6] == UInt(LinuxPN5180Pins.lineRequestSize) && v[7] == LinuxPN5180Pins.gpioGetLine)
        #expect(v[8] == LinuxPN5180Pins.gpioSetValues && v[9] == LinuxPN5180Pins.gpioGetValues)
        #expect(v[10] == 256 && v[11] == 288 && v[12] == 296 && v[13] == 320 && v[14] == 560 && v[15] == 588)
        // The output's initial value: attribute id 2, its value at 328 and mask at 336; SPI_NO_CS 0x40.
        #expect(v[16] == 328 && v[17] == 336 && v[18] == 2 && v[19] == 0x40)
    }
}
