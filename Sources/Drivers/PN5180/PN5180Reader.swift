import ISO15693
import Readers

/// An NXP PN5180 front end on a host's SPI bus as a `TagReader` (docs/reference/pn5180.md): the ISO 15693 RF
/// configuration loaded, each frame sent with SEND_DATA in Transceive mode and its answer read with READ_DATA; the
/// chip adds and checks the CRC. 16-slot inventories are the client's own: each further slot is opened by an EOF alone
/// (TX_CONFIG without TX_DATA_ENABLE and a SEND_DATA of no bytes), so the agent's adaptive anticollision and Stay Quiet
/// run as on the simulator. An answer that began (a start of frame) but did not end, or a collision bit in RX_STATUS,
/// is an unclean answer; no start of frame within the wait is no answer.
///
/// Tested only against the fake PN5180 of the tests (`PN5180Emulator`), which follows the public sequences of
/// docs/reference/pn5180.md §6 — no PN5180 has been used.
public final class PN5180Reader: TagReader {
    public let link: PN5180Link
    public let modulation: PN5180.Modulation
    /// "PN5180 (DEVICE)", and the chip's firmware once it has answered.
    public var name: String { firmware.map { "\(label), firmware \($0)" } ?? label }
    private let label: String
    /// SEND_DATA carries up to 260 bytes; READ_DATA up to 508. ISO 15693 requests stay far below.
    public var limits = ReaderLimits(maxRequestBytes: 255, maxResponseBytes: 508)
    public var trace: ((TraceEvent) -> Void)?
    public private(set) var airTime: AirTime = .zero
    /// The chip's firmware version, read when the field is switched on.
    public private(set) var firmware: String?
    private var on = false
    /// TX_CONFIG was set for EOF-only slot markers: restored (the RF configuration loaded again) before a frame.
    private var eofMode = false
    private var lastFlags = RequestFlags(rawValue: 0x02)

    public init(link: PN5180Link, modulation: PN5180.Modulation = .ask100, name: String) {
        self.link = link
        self.modulation = modulation
        self.label = name
    }

    /// Reset, the version read (a bus with no chip on it fails here, clearly), the ISO 15693 configuration loaded, the
    /// field on.
    public func fieldOn() throws(ReaderError) {
        on = false
        try link.reset()
        let fw = try link.eeprom(PN5180.firmwareVersion, count: 2)
        guard let v = PN5180.version(fw) else {
            throw ReaderError.device(
                "no PN5180 answers on this bus: its firmware version reads \(Hex.format(fw)) (check the SPI device, the wiring and the chip's power)"
            )
        }
        firmware = v
        try link.command(PN5180.loadRFConfig(modulation))
        try link.clearIRQ()
        try link.command(PN5180.rfOn)
        let deadline = link.pins.now() + 50_000
        while true {
            let irq = try link.irq()
            if irq.contains(.txRFOn) { break }
            if irq.contains(.rfActiveError) {
                throw ReaderError.device("the PN5180 could not switch its field on: another field is present")
            }
            guard link.pins.now() < deadline else {
                throw ReaderError.device("the PN5180 did not report its field on within 50 ms")
            }
            link.pins.sleep(microseconds: 500)
        }
        try link.clearIRQ(.txRFOn)
        eofMode = false
        on = true
    }

    public func fieldOff() throws(ReaderError) {
        on = false
        try link.command(PN5180.rfOff)
    }

    public var supportsSlotMarkers: Bool { true }

    public func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        guard on else { throw ReaderError.fieldOff }
        guard frame.count <= limits.maxRequestBytes else {
            throw ReaderError.frameTooLong(bytes: frame.count, limit: limits.maxRequestBytes)
        }
        if eofMode {
            try link.command(PN5180.loadRFConfig(modulation))
            eofMode = false
        }
        lastFlags = RequestFlags(rawValue: frame.first ?? 0x02)
        let onAir = CRC16.appending(to: frame)
        let sent = AirTiming.readerFrame(bytes: onAir.count, coding: .oneOfFour)
        trace?(TraceEvent(direction: .readerToTag, bytes: onAir, airTime: sent))
        airTime = airTime + sent
        try start(frame)
        if case .writeAlike(optionFlag: true) = wait {
            // With the Option flag the tag answers only after an EOF alone, sent once it has had time to program
            // (ISO/IEC 15693-3; the reader's EOF delay).
            let delay = UInt64(max(0, limits.optionEOFDelay.microseconds.rounded(.up)))
            let deadline = link.pins.now() + sent.microsecondsWhole + delay
            while link.pins.now() < deadline { link.pins.sleep(microseconds: 500) }
            return try eofAlone()
        }
        return try receive(wait, sending: sent)
    }

    public func nextSlot() throws(ReaderError) -> [UInt8] {
        guard on else { throw ReaderError.fieldOff }
        return try eofAlone()
    }

    /// An EOF alone (a slot marker, or the EOF a write with the Option flag waits for) and its answer: TX_CONFIG
    /// without TX_DATA_ENABLE, then a SEND_DATA of no bytes.
    private func eofAlone() throws(ReaderError) -> [UInt8] {
        if !eofMode {
            // Marked first: if the command fails after the chip applied it, the next frame still reloads the
            // configuration.
            eofMode = true
            try link.and(.txConfig, PN5180.eofOnly)
        }
        trace?(TraceEvent(direction: .slotMarker, bytes: [], airTime: AirTiming.readerEOF))
        airTime = airTime + AirTiming.readerEOF
        try start([])
        return try receive(.standard, sending: AirTiming.readerEOF)
    }

    /// IRQs cleared, the transceiver to Idle then Transceive, SEND_DATA.
    private func start(_ frame: [UInt8]) throws(ReaderError) {
        try link.clearIRQ()
        try link.and(.systemConfig, PN5180.commandMask)
        try link.or(.systemConfig, PN5180.transceive)
        try link.command(PN5180.sendData(frame))
    }

    /// Waits for a start of frame (the request's own time on the air, then t1 and a margin; a write-alike command's
    /// programming time; a slow chip's window), then for the end of the reception, and reads it.
    private func receive(_ wait: ResponseWait, sending: AirTime) throws(ReaderError) -> [UInt8] {
        var sofWait: UInt64 = sending.microsecondsWhole
        switch wait {
        case .standard, .writeAlike(optionFlag: true): sofWait += 2_000
        case .writeAlike(optionFlag: false): sofWait += 25_000
        case .window(let w): sofWait += UInt64(max(0, w.microseconds.rounded(.up))) + 2_000
        }
        let started = link.pins.now()
        var irq = try link.irq()
        while !irq.contains(.rx), !irq.contains(.rxSOF), link.pins.now() < started + sofWait {
            link.pins.sleep(microseconds: 100)
            irq = try link.irq()
        }
        // A frame of 508 bytes at 26 kbit/s lasts about 155 ms.
        let end = link.pins.now() + 200_000
        while irq.contains(.rxSOF), !irq.contains(.rx), link.pins.now() < end {
            link.pins.sleep(microseconds: 200)
            irq = try link.irq()
        }
        if irq.contains(.generalError) {
            throw ReaderError.device("the PN5180 reported a general error (a command's parameters were refused)")
        }
        guard irq.contains(.rx) else {
            if irq.contains(.rxSOF) { return try unclean("an answer began and never ended") }
            trace?(TraceEvent(direction: .nothing, bytes: [], airTime: AirTiming.t1Max, note: "\(ReaderError.timeout)"))
            airTime = airTime + AirTiming.t1Max
            throw ReaderError.timeout
        }
        let status = PN5180.RXStatus(try link.read(.rxStatus))
        if status.collision {
            trace?(TraceEvent(direction: .nothing, bytes: [], airTime: AirTiming.t1, note: "collision"))
            airTime = airTime + AirTiming.t1
            throw ReaderError.collision
        }
        guard status.length > 0 else { return try unclean("a reception of no bytes") }
        guard status.length <= limits.maxResponseBytes else {
            throw ReaderError.frameTooLong(bytes: status.length, limit: limits.maxResponseBytes)
        }
        let answer = try link.query(PN5180.readData, length: status.length)
        let t = AirTiming.t1 + AirTiming.tagFrame(bytes: answer.count + 2, flags: lastFlags)
        airTime = airTime + t
        trace?(TraceEvent(direction: .tagToReader, bytes: CRC16.appending(to: answer), airTime: t))
        return answer
    }

    private func unclean(_ what: String) throws(ReaderError) -> [UInt8] {
        trace?(TraceEvent(direction: .nothing, bytes: [], airTime: AirTiming.t1, note: what))
        airTime = airTime + AirTiming.t1
        throw ReaderError.crcError(.invalidField("the PN5180 heard \(what)"))
    }
}

extension AirTime {
    /// Whole microseconds, rounded up (never negative).
    var microsecondsWhole: UInt64 { UInt64(max(0, microseconds.rounded(.up))) }
}
