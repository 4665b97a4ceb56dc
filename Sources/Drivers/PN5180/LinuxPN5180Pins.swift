#if canImport(Glibc)
    import Glibc
#endif
import CHost
import Readers

/// A PN5180's pins on Linux: the SPI bus through spidev (`SPI_IOC_MESSAGE`, mode 0) and BUSY, RST and (optionally)
/// NSS through the GPIO character device's v2 uAPI (`GPIO_V2_GET_LINE_IOCTL`, kernel 5.10 and later), called directly
/// rather than through libgpiod: Debian 12 ships libgpiod 1.6, whose API 2.0 breaks, and the three ioctls the driver
/// needs are stable kernel ABI (docs/reference/pn5180.md §7, sizes and numbers from Debian 12's linux-libc-dev).
///
/// Not tested here: this machine has no SPI bus and no GPIO chip. The structures' sizes are checked by the tests.
public final class LinuxPN5180Pins: PN5180Pins {
    public let device: PN5180Device
    private var spi: Int32 = -1
    private var busyLine: Int32 = -1
    private var resetLine: Int32 = -1
    private var nssLine: Int32 = -1

    // ioctl numbers (Debian 12, linux/spi/spidev.h and linux/gpio.h).
    static let spiMessage1: UInt = 0x4020_6B00
    static let spiWriteMode: UInt = 0x4001_6B01
    static let spiWriteSpeed: UInt = 0x4004_6B04
    static let gpioGetLine: UInt = 0xC250_B407
    static let gpioSetValues: UInt = 0xC010_B40F
    static let gpioGetValues: UInt = 0xC010_B40E
    /// `struct spi_ioc_transfer` and `struct gpio_v2_line_request` sizes.
    public static let transferSize = 32, lineRequestSize = 592
    static let flagInput: UInt64 = 1 << 2, flagOutput: UInt64 = 1 << 3

    public init(_ device: PN5180Device) throws(ReaderError) {
        self.device = device
        do throws(ReaderError) {
            spi = try Self.open(device.spi)
            var mode: UInt8 = device.nss == nil ? 0 : 0x40  // SPI_MODE_0, with SPI_NO_CS when NSS is a GPIO
            guard vlogger_ioctl(spi, Self.spiWriteMode, &mode) == 0 else {
                throw ReaderError.device("\(device.spi): cannot set SPI mode 0: \(Self.errno())")
            }
            var speed = device.speedHz
            guard vlogger_ioctl(spi, Self.spiWriteSpeed, &speed) == 0 else {
                throw ReaderError.device("\(device.spi): cannot set \(speed) Hz: \(Self.errno())")
            }
            busyLine = try Self.line(device.busy, output: false, initial: false)
            resetLine = try Self.line(device.reset, output: true, initial: true)
            if let nss = device.nss { nssLine = try Self.line(nss, output: true, initial: true) }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    public func close() {
        for fd in [spi, busyLine, resetLine, nssLine] where fd >= 0 { _ = Glibc.close(fd) }
        spi = -1
        busyLine = -1
        resetLine = -1
        nssLine = -1
    }

    static func errno() -> String { String(cString: strerror(Glibc.errno)) }

    static func open(_ path: String) throws(ReaderError) -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            let e = Glibc.errno
            let hint =
                e == EACCES
                ? " (add the service's user to the group that owns it: `spi` or `gpio` on Raspberry Pi OS and Debian)"
                : e == ENOENT ? " (is the bus enabled? `dtparam=spi=on` in config.txt, or raspi-config)" : ""
            throw ReaderError.device("\(path): \(String(cString: strerror(e)))\(hint)")
        }
        return fd
    }

    /// One line of a GPIO chip requested as an input or an output; the line's file descriptor.
    static func line(_ l: PN5180Device.Line, output: Bool, initial: Bool) throws(ReaderError) -> Int32 {
        let chip = try open(l.chipPath)
        defer { _ = Glibc.close(chip) }
        var request = [UInt8](repeating: 0, count: lineRequestSize)
        put(l.offset, at: 0, in: &request)
        for (i, b) in "vlogger-pn5180".utf8.enumerated() { request[256 + i] = b }
        put(output ? flagOutput : flagInput, at: 288, in: &request)
        if output {
            // One attribute: the output's initial value (GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES = 2) for line 0.
            put(UInt32(1), at: 296, in: &request)
            put(UInt32(2), at: 320, in: &request)
            put(UInt64(initial ? 1 : 0), at: 328, in: &request)
            put(UInt64(1), at: 336, in: &request)
        }
        put(UInt32(1), at: 560, in: &request)
        let rc = request.withUnsafeMutableBytes { vlogger_ioctl(chip, gpioGetLine, $0.baseAddress) }
        guard rc == 0 else {
            throw ReaderError.device(
                "\(l.chipPath) line \(l.offset): cannot request it (\(errno())): is the line free and does the chip have it? (`gpioinfo`)"
            )
        }
        let fd = request[588..<592].withUnsafeBytes { Int32(littleEndian: $0.loadUnaligned(as: Int32.self)) }
        guard fd >= 0 else { throw ReaderError.device("\(l.chipPath) line \(l.offset): no line handle returned") }
        return fd
    }

    /// `v` little-endian at `offset` of a structure laid out by hand.
    static func put<T: FixedWidthInteger>(_ v: T, at offset: Int, in bytes: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
    }

    public func transfer(_ tx: [UInt8]) throws(ReaderError) -> [UInt8] {
        guard spi >= 0 else { throw ReaderError.device("\(device.spi) is closed") }
        var rx = [UInt8](repeating: 0, count: tx.count)
        var transfer = [UInt8](repeating: 0, count: Self.transferSize)
        let rc: Int32 = tx.withUnsafeBufferPointer { t in
            rx.withUnsafeMutableBufferPointer { r in
                Self.put(UInt64(UInt(bitPattern: t.baseAddress)), at: 0, in: &transfer)
                Self.put(UInt64(UInt(bitPattern: r.baseAddress)), at: 8, in: &transfer)
                Self.put(UInt32(tx.count), at: 16, in: &transfer)
                Self.put(device.speedHz, at: 20, in: &transfer)
                transfer[26] = 8
                return transfer.withUnsafeMutableBytes { vlogger_ioctl(spi, Self.spiMessage1, $0.baseAddress) }
            }
        }
        guard rc >= 0 else { throw ReaderError.device("\(device.spi): SPI transfer failed: \(Self.errno())") }
        return rx
    }

    private func set(_ fd: Int32, _ high: Bool) throws(ReaderError) {
        var values: [UInt64] = [high ? 1 : 0, 1]
        guard values.withUnsafeMutableBytes({ vlogger_ioctl(fd, Self.gpioSetValues, $0.baseAddress) }) == 0 else {
            throw ReaderError.device("setting a GPIO line failed: \(Self.errno())")
        }
    }

    public func busy() throws(ReaderError) -> Bool {
        var values: [UInt64] = [0, 1]
        guard values.withUnsafeMutableBytes({ vlogger_ioctl(busyLine, Self.gpioGetValues, $0.baseAddress) }) == 0 else {
            throw ReaderError.device("reading BUSY failed: \(Self.errno())")
        }
        return values[0] & 1 == 1
    }

    public var holdsNSS: Bool { nssLine >= 0 }

    public func setNSS(_ high: Bool) throws(ReaderError) {
        if nssLine >= 0 { try set(nssLine, high) }
    }

    public func setReset(_ high: Bool) throws(ReaderError) { try set(resetLine, high) }

    public func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec / 1000)
    }

    public func sleep(microseconds: UInt32) { usleep(microseconds) }
}

/// A PN5180 device string: `spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:24[,nss=gpiochip0:23][,speed=7000000]
/// [,ask=100|10]`.
public struct PN5180Device: Equatable, Sendable {
    public struct Line: Equatable, Sendable {
        public var chip: String
        public var offset: UInt32
        public var chipPath: String { chip.hasPrefix("/") ? chip : "/dev/\(chip)" }
    }
    public var spi: String
    public var busy: Line
    public var reset: Line
    /// NSS on a GPIO line (the driver holds it low through the BUSY handshake); nil: spidev's own chip select.
    public var nss: Line?
    public var speedHz: UInt32 = 7_000_000
    public var modulation: PN5180.Modulation = .ask100

    public static let form =
        "spi:/dev/spidevB.C,busy=gpiochipN:LINE,reset=gpiochipN:LINE[,nss=gpiochipN:LINE][,speed=HZ][,ask=100|10]"

    /// Parses a device string; the error names what is wrong and the form.
    public static func parse(_ text: String) throws(ReaderError) -> PN5180Device {
        func bad(_ why: String) -> ReaderError { .device("PN5180 device '\(text)': \(why); the form is \(form)") }
        guard text.hasPrefix("spi:") else { throw bad("it must start with spi:") }
        var parts = text.dropFirst(4).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard let spi = parts.first, spi.hasPrefix("/dev/"), spi.count > 5 else {
            throw bad("the SPI device must be a path under /dev (e.g. /dev/spidev0.0)")
        }
        parts.removeFirst()
        var lines: [String: Line] = [:]
        var speed: UInt32 = 7_000_000
        var modulation = PN5180.Modulation.ask100
        for p in parts {
            let kv = p.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2, !kv[1].isEmpty else { throw bad("'\(p)' is not key=value") }
            switch kv[0] {
            case "busy", "reset", "nss":
                guard lines[kv[0]] == nil else { throw bad("\(kv[0]) is given twice") }
                let cl = kv[1].split(separator: ":").map(String.init)
                guard cl.count == 2, !cl[0].isEmpty, !cl[0].contains("/") || cl[0].hasPrefix("/dev/"),
                    let off = UInt32(cl[1]), off < 1024
                else { throw bad("\(kv[0])=\(kv[1]) is not CHIP:LINE (e.g. gpiochip0:25)") }
                lines[kv[0]] = Line(chip: cl[0], offset: off)
            case "speed":
                guard let s = UInt32(kv[1]), (100_000...7_000_000).contains(s) else {
                    throw bad("speed must be 100000 to 7000000 Hz (the PN5180 takes at most 7 MHz)")
                }
                speed = s
            case "ask":
                guard let m = PN5180.Modulation(rawValue: kv[1]) else { throw bad("ask must be 100 or 10") }
                modulation = m
            default:
                throw bad("unknown key '\(kv[0])'")
            }
        }
        guard let busy = lines["busy"] else { throw bad("busy=CHIP:LINE is missing") }
        guard let reset = lines["reset"] else { throw bad("reset=CHIP:LINE is missing") }
        let all = [busy, reset] + (lines["nss"].map { [$0] } ?? [])
        guard Set(all.map { "\($0.chipPath):\($0.offset)" }).count == all.count else {
            throw bad("busy, reset and nss must be different lines")
        }
        return PN5180Device(
            spi: spi, busy: busy, reset: reset, nss: lines["nss"], speedHz: speed, modulation: modulation)
    }
}
