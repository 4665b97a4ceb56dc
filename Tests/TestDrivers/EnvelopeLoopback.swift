import DriverPCSC
import DriverSim
import ISO15693
import Readers

/// A reader whose frames go through a PC/SC codec and back, APDU by APDU: wrapped as `PCSCReader` wraps them,
/// unwrapped and answered as the test bench (`vlogger-vcard`) answers them, read with `PCSCReader.answer`.
public final class EnvelopeLoopback: TagReader {
    public let codec: PCSC.Codec
    public let inner: SimulatorReader
    public let crc: Bool
    public private(set) var apdus = 0
    /// Told each ISO 15693 frame before the field answers it (a test takes a tag out of the field mid-read).
    public var beforeFrame: (([UInt8]) -> Void)?
    public init(_ codec: PCSC.Codec, _ inner: SimulatorReader, crc: Bool) {
        self.codec = codec
        self.inner = inner
        self.crc = crc
    }
    public var name: String { "loopback \(codec.rawValue)" }
    public var limits: ReaderLimits { ReaderLimits(maxRequestBytes: 240, maxResponseBytes: 236) }
    public var airTime: AirTime { inner.airTime }
    public var trace: ((TraceEvent) -> Void)? {
        get { inner.trace }
        set { inner.trace = newValue }
    }
    public func fieldOn() throws(ReaderError) { try inner.fieldOn() }
    public func fieldOff() throws(ReaderError) { try inner.fieldOff() }
    public func nextSlot() throws(ReaderError) -> [UInt8] { throw .notSupported("no slot markers") }
    public var supportsSlotMarkers: Bool { false }

    public func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        apdus += 1
        beforeFrame?(frame)
        let timer: UInt32 = wait == .standard ? 0 : 50_000
        let response: [UInt8]
        switch codec {
        case .omnikey:
            let inside = PCSC.Omnikey.frame(in: PCSC.Omnikey.apdu(frame, timeoutMicroseconds: timer)) ?? []
            response = answer(inside, wait) { PCSC.Omnikey.response($0, unclean: $1) }
        case .identiv:
            let inside = PCSC.Identiv.frame(in: PCSC.Identiv.apdu(frame, waitMicroseconds: timer))?.frame ?? []
            response = answer(inside, wait) { PCSC.Identiv.response($0, crcIncluded: crc, unclean: $1) }
        default:
            let apdu = PCSC.exchangeAPDU(frame, timeoutMicroseconds: timer == 0 ? nil : timer)
            let objects = (try? PCSC.parse(apdu[5..<(apdu.count - 1)])) ?? []
            let inside = objects.first { $0.tag == PCSC.transceive }?.value ?? []
            response = answer(inside, wait) { answer, unclean in
                let ok = PCSC.status(PCSC.ok).encoded
                if unclean {
                    return ok + PCSC.DataObject(PCSC.responseStatus, [PCSC.statusCollision, 0]).encoded + [0x90, 0x00]
                }
                guard let answer else { return PCSC.status(PCSC.noResponseFromICC, object: 1).encoded + [0x90, 0x00] }
                return ok + PCSC.DataObject(PCSC.iccResponse, answer).encoded + [0x90, 0x00]
            }
        }
        return try PCSCReader.answer(response, codec: codec, identivCRC: crc, limit: limits.maxResponseBytes)
    }

    /// The simulated field's answer to `frame` as the codec's response: silent, unclean (a collision or damage) or
    /// the tag's bytes.
    private func answer(_ frame: [UInt8], _ wait: ResponseWait, _ respond: ([UInt8]?, Bool) -> [UInt8]) -> [UInt8] {
        do { return respond(try inner.transceive(frame, wait: wait), false) } catch .timeout {
            return respond(nil, false)
        } catch {
            return respond(nil, true)
        }
    }
}
