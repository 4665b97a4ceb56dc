import ISO15693
import Readers

/// What the PN5180 is wired to: an SPI bus (full duplex, mode 0), its BUSY output, and its NSS and RST inputs as
/// GPIO lines, with the time the driver waits by. Linux's spidev and GPIO character device in the gateway
/// (`LinuxPN5180Pins`); a fake chip on a simulated clock in the tests.
public protocol PN5180Pins: AnyObject {
    /// Clocks `tx` out and returns the bytes clocked in, NSS left as it is.
    func transfer(_ tx: [UInt8]) throws(ReaderError) -> [UInt8]
    /// BUSY's level now.
    func busy() throws(ReaderError) -> Bool
    /// Drives NSS (active low).
    func setNSS(_ high: Bool) throws(ReaderError)
    /// Whether NSS is the driver's to hold (a GPIO line) through the handshake; false: the SPI controller's chip
    /// select frames each transfer, and BUSY's rise may come after it (only its fall is waited for).
    var holdsNSS: Bool { get }
    /// Drives RST (active low).
    func setReset(_ high: Bool) throws(ReaderError)
    /// Microseconds on the clock the driver waits by.
    func now() -> UInt64
    func sleep(microseconds: UInt32)
    func close()
}

/// The PN5180's host commands over its pins, each frame with the BUSY handshake (docs/reference/pn5180.md §2):
/// BUSY low, NSS low, the frame, BUSY high, NSS high, BUSY low; an answer is a second frame of dummy bytes with the
/// same handshake. A chip that never raises or never drops BUSY is a device error after `busyTimeout`, never a hang.
public final class PN5180Link {
    public let pins: any PN5180Pins
    /// How long BUSY may keep a level (µs). The longest command (LOAD_RF_CONFIG, an EEPROM write) takes a few ms.
    public var busyTimeout: UInt64 = 100_000
    /// Frames sent, for the tests and the trace of the bus.
    public private(set) var frames = 0

    public init(pins: any PN5180Pins) { self.pins = pins }

    private func waitBusy(_ level: Bool, _ what: String) throws(ReaderError) {
        let deadline = pins.now() + busyTimeout
        while try pins.busy() != level {
            guard pins.now() < deadline else {
                throw ReaderError.device(
                    "the PN5180 kept BUSY \(level ? "low" : "high") for \(busyTimeout / 1000) ms \(what): \(level ? "is the chip powered and BUSY wired to the configured line?" : "the chip hangs; it is reset when the reader is opened again")"
                )
            }
            pins.sleep(microseconds: 10)
        }
    }

    /// One frame with the handshake; the bytes clocked in.
    @discardableResult
    public func frame(_ tx: [UInt8]) throws(ReaderError) -> [UInt8] {
        frames += 1
        try waitBusy(false, "before a frame")
        try pins.setNSS(false)
        let rx: [UInt8]
        do {
            rx = try pins.transfer(tx)
            if pins.holdsNSS {
                try waitBusy(true, "after a frame")
            } else {
                // The controller's chip select ended the frame: BUSY rises a little later; give it a moment (it may
                // have risen and fallen already), so the next frame does not meet a busy chip.
                let rise = pins.now() + 1_000
                while try !pins.busy(), pins.now() < rise { pins.sleep(microseconds: 10) }
            }
        } catch {
            try? pins.setNSS(true)
            throw error
        }
        try pins.setNSS(true)
        try waitBusy(false, "after a frame")
        return rx
    }

    /// A command without an answer.
    public func command(_ tx: [UInt8]) throws(ReaderError) { try frame(tx) }

    /// A command and its answer of `length` bytes (the host clocks out 0xFF).
    public func query(_ tx: [UInt8], length: Int) throws(ReaderError) -> [UInt8] {
        try frame(tx)
        let answer = try frame([UInt8](repeating: 0xFF, count: length))
        guard answer.count == length else {
            throw ReaderError.device("the SPI bus returned \(answer.count) bytes for \(length)")
        }
        return answer
    }

    public func read(_ r: PN5180.Register) throws(ReaderError) -> UInt32 {
        let a = try query(PN5180.readRegister(r), length: 4)
        do { return try PN5180.value(a) } catch { throw ReaderError.device("PN5180 register \(r): \(error)") }
    }

    public func write(_ r: PN5180.Register, _ v: UInt32) throws(ReaderError) { try command(PN5180.writeRegister(r, v)) }
    public func or(_ r: PN5180.Register, _ m: UInt32) throws(ReaderError) { try command(PN5180.orMask(r, m)) }
    public func and(_ r: PN5180.Register, _ m: UInt32) throws(ReaderError) { try command(PN5180.andMask(r, m)) }

    public func irq() throws(ReaderError) -> PN5180.IRQ { PN5180.IRQ(rawValue: try read(.irqStatus)) }
    public func clearIRQ(_ bits: PN5180.IRQ = .all) throws(ReaderError) { try write(.irqClear, bits.rawValue) }

    public func eeprom(_ address: UInt8, count: UInt8) throws(ReaderError) -> [UInt8] {
        try query(PN5180.readEEPROM(address, count: count), length: Int(count))
    }

    /// RST low for 100 µs, then until the chip says it is idle (it starts in about 2 ms); every IRQ cleared.
    public func reset() throws(ReaderError) {
        try pins.setNSS(true)
        try pins.setReset(false)
        pins.sleep(microseconds: 100)
        try pins.setReset(true)
        pins.sleep(microseconds: 2_000)
        let deadline = pins.now() + busyTimeout
        while !(try irq()).contains(.idle) {
            guard pins.now() < deadline else {
                throw ReaderError.device("the PN5180 did not come out of reset (IRQ_STATUS never said idle)")
            }
            pins.sleep(microseconds: 500)
        }
        try clearIRQ()
    }
}
