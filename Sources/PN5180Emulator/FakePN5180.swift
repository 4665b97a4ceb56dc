import DriverPN5180
import DriverSim
import ISO15693
import Readers
import TagSimulator

/// A PN5180 at the level of its pins, on a simulated clock, for the tests: it takes command frames over SPI (NSS low,
/// the bytes, NSS high), raises BUSY while it works, and implements the host commands, registers and IRQ bits the
/// driver uses (docs/reference/pn5180.md §2–§4). Behind its RF side is the project's simulated field
/// (`SimulatorReader`), so inventories meet real collisions and slot markers open real slots.
///
/// Its reset state, version numbers and IRQ values follow the public logs of docs/reference/pn5180.md §6 (ATrappmann/PN5180-Library #3,
/// playfultechnology PR #3, esphome_qalcosonicnfc #9, arduino-rfid-PN5180 #1), which the tests replay against it.
/// What no public source shows (the error bits of RX_STATUS, how long each command keeps BUSY high) is the fake's own
/// choice, and says so.
public final class FakePN5180: PN5180Pins {
    public enum Fault: Equatable, Sendable {
        /// BUSY stays high after the first frame (a hung chip).
        case stuckBusy
        /// No chip on the bus: BUSY never rises, MISO reads all ones.
        case absent
        /// Every answer frame is replaced by this byte (a chip answering garbage).
        case garbage(UInt8)
    }

    public let field: SimulatedField
    public let rf: SimulatorReader
    public var fault: Fault?
    /// Firmware, product and EEPROM versions as READ_EEPROM gives them (minor, major): the playfultechnology PR #3
    /// trace's (`00 04`, `00 04`, `00 99`).
    public var versions: [UInt8: [UInt8]] = [0x10: [0x00, 0x04], 0x12: [0x00, 0x04], 0x14: [0x00, 0x99]]
    /// Every command frame taken, in order (the tests compare them with the public sequences).
    public private(set) var commands: [[UInt8]] = []
    /// Told each ISO 15693 frame before the field answers it (a test takes a tag out of the field mid-read).
    public var beforeFrame: (([UInt8]) -> Void)?

    /// The clock (µs): advanced by the driver's sleeps and by the air time of each exchange.
    public private(set) var time: UInt64 = 0
    private var nssLow = false
    private var resetLow = false
    private var busyUntil: UInt64 = 0
    private var busyHigh = false
    private var frame: [UInt8] = []
    /// The answer the next frame clocks out (after READ_REGISTER, READ_EEPROM, READ_DATA).
    private var pending: [UInt8]?
    private var registers: [UInt8: UInt32] = [:]
    private var irq: UInt32 = 0
    private var rfOn = false
    private var rxBuffer: [UInt8] = []
    /// When the exchange under way sets its IRQ bits (the air time of the request and the answer).
    private var sofAt: UInt64?
    private var doneAt: UInt64?
    private var result: (irq: UInt32, rxStatus: UInt32, data: [UInt8])?
    /// A write-alike answer with the Option flag, held until the reader's lone EOF (ISO/IEC 15693-3).
    private var afterEOF: (answer: [UInt8]?, collided: Bool)?
    /// TX_CONFIG as LOAD_RF_CONFIG leaves it: TX_DATA_ENABLE set (the other bits are the fake's).
    static let txConfigLoaded: UInt32 = 0x0000_0780

    public init(field: SimulatedField) {
        self.field = field
        rf = SimulatorReader(field: field, name: "fake PN5180's field")
        // The chip's receive buffer: 508 bytes (READ_DATA).
        rf.limits.maxResponseBytes = 508
        powerUp()
    }

    private func powerUp() {
        registers = [PN5180.Register.txConfig.rawValue: Self.txConfigLoaded]
        irq = PN5180.IRQ.idle.rawValue
        rfOn = false
        rxBuffer = []
        result = nil
        pending = nil
        try? rf.fieldOff()
    }

    // MARK: Pins

    public var holdsNSS: Bool { true }
    public func now() -> UInt64 { time }
    public func sleep(microseconds: UInt32) { time += UInt64(microseconds) }
    public func close() {}

    public func busy() throws(ReaderError) -> Bool {
        switch fault {
        case .absent?: return false
        case .stuckBusy? where !commands.isEmpty: return true
        default: return busyHigh || time < busyUntil
        }
    }

    public func setReset(_ high: Bool) throws(ReaderError) {
        if !high {
            resetLow = true
        } else if resetLow {
            resetLow = false
            powerUp()
            busyUntil = time + 2_000
        }
    }

    public func setNSS(_ high: Bool) throws(ReaderError) {
        if !high {
            nssLow = true
            frame = []
            return
        }
        guard nssLow else { return }
        nssLow = false
        busyHigh = false
        // A frame ends: the command it carries runs (an answer frame only clocked the pending answer out).
        if !frame.isEmpty, !resetLow, fault != .absent { run(frame) }
        busyUntil = max(busyUntil, time + 20)
    }

    public func transfer(_ tx: [UInt8]) throws(ReaderError) -> [UInt8] {
        guard nssLow else { return [UInt8](repeating: 0xFF, count: tx.count) }
        if fault == .absent { return [UInt8](repeating: 0xFF, count: tx.count) }
        time += UInt64(tx.count)  // about a microsecond a byte at 7 MHz
        if let answer = pending {
            pending = nil
            busyHigh = true
            if case .garbage(let b) = fault { return [UInt8](repeating: b, count: tx.count) }
            return (0..<tx.count).map { $0 < answer.count ? answer[$0] : 0xFF }
        }
        frame += tx
        busyHigh = true
        return [UInt8](repeating: 0xFF, count: tx.count)
    }

    // MARK: Commands

    private func generalError() { irq |= PN5180.IRQ.generalError.rawValue }

    private func run(_ f: [UInt8]) {
        commands.append(f)
        guard let code = PN5180.Command(rawValue: f[0]) else { return generalError() }
        let args = f.dropFirst()
        switch code {
        case .writeRegister, .writeRegisterOrMask, .writeRegisterAndMask:
            guard args.count == 5, let v = try? PN5180.value(Array(args.dropFirst())) else { return generalError() }
            let r = args[args.startIndex]
            if r == PN5180.Register.irqClear.rawValue {
                irq &= ~v
                return
            }
            let old = registers[r] ?? 0
            registers[r] = code == .writeRegister ? v : code == .writeRegisterOrMask ? old | v : old & v
            if r == PN5180.Register.systemConfig.rawValue, (registers[r] ?? 0) & 0x7 == 0 {
                // Idle: an exchange under way is dropped.
                result = nil
                sofAt = nil
                doneAt = nil
            }
        case .readRegister:
            guard args.count == 1 else { return generalError() }
            pending = PN5180.bytes(read(args[args.startIndex]))
        case .readEEPROM:
            guard args.count == 2 else { return generalError() }
            let (address, n) = (args[args.startIndex], Int(args[args.startIndex + 1]))
            var out: [UInt8] = []
            for i in 0..<n {
                let a = UInt8(truncatingIfNeeded: Int(address) + i)
                if let v = versions[a & 0xFE] { out.append(v[Int(a & 1)]) } else { out.append(0) }
            }
            pending = out
        case .readData:
            guard args.count == 1 else { return generalError() }
            pending = rxBuffer
        case .loadRFConfig:
            guard args.count == 2, [0x0D, 0x0E].contains(args[args.startIndex]), args[args.startIndex + 1] == 0x8D
            else { return generalError() }
            registers[PN5180.Register.txConfig.rawValue] = Self.txConfigLoaded
            busyUntil = time + 1_000
        case .rfOn:
            rfOn = true
            try? rf.fieldOn()
            irq |= PN5180.IRQ.txRFOn.rawValue
        case .rfOff:
            rfOn = false
            try? rf.fieldOff()
            irq |= PN5180.IRQ.txRFOff.rawValue
        case .sendData:
            send(Array(args.dropFirst()))
        default:
            generalError()
        }
    }

    /// A register's value now: IRQ_STATUS with the bits of the exchange under way that are due.
    private func read(_ r: UInt8) -> UInt32 {
        settle()
        switch r {
        case PN5180.Register.irqStatus.rawValue: return irq
        default: return registers[r] ?? 0
        }
    }

    /// The exchange's IRQ bits and RX_STATUS once the clock has reached them.
    private func settle() {
        if let s = sofAt, time >= s {
            irq |= PN5180.IRQ.rxSOF.rawValue
            sofAt = nil
        }
        if let d = doneAt, time >= d, let r = result {
            irq |= r.irq
            registers[PN5180.Register.rxStatus.rawValue] = r.rxStatus
            rxBuffer = r.data
            doneAt = nil
            result = nil
        }
    }

    /// SEND_DATA: the frame (or, with TX_DATA_ENABLE cleared and no bytes, an EOF alone) to the simulated field; the
    /// answer, silence or collision becomes IRQ bits and RX_STATUS when its air time has passed.
    private func send(_ data: [UInt8]) {
        let config = registers[PN5180.Register.systemConfig.rawValue] ?? 0
        guard rfOn, config & 0x7 == PN5180.transceive else { return generalError() }
        let eofOnly = (registers[PN5180.Register.txConfig.rawValue] ?? 0) & PN5180.txDataEnable == 0
        guard eofOnly == data.isEmpty else { return generalError() }
        registers[PN5180.Register.rxStatus.rawValue] = 0
        if !data.isEmpty { beforeFrame?(data) }
        let before = rf.airTime
        var answer: [UInt8]?
        var collided = false
        var requestAir = AirTiming.readerEOF
        if eofOnly, let held = afterEOF {
            // The EOF a write with the Option flag waits for: its answer now.
            afterEOF = nil
            (answer, collided) = held
            deliver(
                answer, collided, requestAir: requestAir,
                air: AirTiming.t1
                    + AirTiming.tagFrame(bytes: (answer?.count ?? 0) + 2, flags: RequestFlags(rawValue: 0x02)))
            return
        }
        do {
            if eofOnly {
                answer = try rf.nextSlot()
            } else {
                requestAir = AirTiming.readerFrame(bytes: data.count + 2, coding: .oneOfFour)
                let writeAlike = data.count > 1 && CommandCode(data[1]).isWriteAlike
                let flags = RequestFlags(rawValue: data[0])
                let option = writeAlike && flags.contains(.option)
                answer = try rf.transceive(data, wait: writeAlike ? .writeAlike(optionFlag: option) : .standard)
                if option {
                    // Programmed; the answer waits for the reader's EOF.
                    afterEOF = (answer, false)
                    sofAt = nil
                    doneAt = time + 1
                    result = (PN5180.IRQ.tx.rawValue | PN5180.IRQ.idle.rawValue, 0, [])
                    return
                }
            }
        } catch .collision {
            collided = true
        } catch .crcError {
            collided = true
        } catch {
            answer = nil
        }
        deliver(answer, collided, requestAir: requestAir, air: rf.airTime - before)
    }

    /// The IRQ bits and RX_STATUS of an exchange, due when the request has been sent (the start of frame, t1 later)
    /// and when its air time has passed (the end of the reception).
    private func deliver(_ answer: [UInt8]?, _ collided: Bool, requestAir: AirTime, air: AirTime) {
        let total = UInt64(max(1, air.microseconds.rounded(.up)))
        let sof = UInt64(max(0, (requestAir + AirTiming.t1).microseconds.rounded(.up)))
        let sent = PN5180.IRQ.tx.rawValue | PN5180.IRQ.idle.rawValue
        if collided {
            sofAt = time + sof
            doneAt = time + max(total, sof + 1)
            result = (sent | PN5180.IRQ.rx.rawValue, 1 << 18 | 2, [0xFF, 0xFF])
        } else if let answer {
            sofAt = time + sof
            doneAt = time + max(total, sof + 1)
            result = (sent | PN5180.IRQ.rx.rawValue, UInt32(answer.count), answer)
        } else {
            sofAt = nil
            doneAt = time + total
            result = (sent, 0, [])
        }
    }
}
