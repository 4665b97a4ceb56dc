import ISO15693
import Readers
import TagSimulator

/// The reader driver for a simulated field: frames go through the same CRC, timing and error paths a
/// hardware reader has, so everything above the `TagReader` seam runs unchanged.
public final class SimulatorReader: TagReader {
    public let field: SimulatedField
    public let name: String
    public var limits: ReaderLimits
    public var trace: ((TraceEvent) -> Void)?
    public private(set) var airTime: AirTime = .zero
    /// How long the reader listens for a read-alike answer (t1max plus a tag SOF, as NFC Forum FDT).
    public var readTimeout = AirTiming.t1Max + AirTime(ticks: 2048)

    public init(field: SimulatedField, name: String = "simulator", limits: ReaderLimits = ReaderLimits()) {
        self.field = field
        self.name = name
        self.limits = limits
    }

    /// A reader over `field` with the field switched on (tests, benchmarks: a field made in memory).
    public static func switchedOn(_ field: SimulatedField, name: String = "simulator (in memory)") -> SimulatorReader {
        let reader = SimulatorReader(field: field, name: name)
        field.powerOn()
        return reader
    }

    /// The simulated receiver hears double-rate answers (the field charges them at that rate).
    public var receivesFastResponses: Bool { true }

    public func fieldOn() throws(ReaderError) { field.powerOn() }
    public func fieldOff() throws(ReaderError) { field.powerOff() }

    public func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        guard field.isOn else { throw ReaderError.fieldOff }
        guard frame.count <= limits.maxRequestBytes else {
            throw ReaderError.frameTooLong(bytes: frame.count, limit: limits.maxRequestBytes)
        }
        let onAir = CRC16.appending(to: frame)
        let exchange: AirExchange
        switch wait {
        case .standard: exchange = field.transmit(onAir, listenTimeout: readTimeout, eofAfter: nil)
        case .writeAlike(optionFlag: false):
            exchange = field.transmit(onAir, listenTimeout: limits.writeTimeout, eofAfter: nil)
        case .writeAlike(optionFlag: true):
            exchange = field.transmit(onAir, listenTimeout: readTimeout, eofAfter: limits.optionEOFDelay)
        case .window(let w):
            exchange = field.transmit(onAir, listenTimeout: max(readTimeout, w), eofAfter: nil)
        }
        trace?(TraceEvent(direction: .readerToTag, bytes: onAir, airTime: exchange.readerTime))
        return try receive(exchange)
    }

    public func nextSlot() throws(ReaderError) -> [UInt8] {
        guard field.isOn else { throw ReaderError.fieldOff }
        let exchange = field.nextSlot()
        trace?(TraceEvent(direction: .slotMarker, bytes: [], airTime: exchange.readerTime))
        return try receive(exchange)
    }

    private func receive(_ exchange: AirExchange) throws(ReaderError) -> [UInt8] {
        airTime = airTime + exchange.total
        let listen = exchange.total - exchange.readerTime
        switch exchange.outcome {
        case .silence:
            trace?(TraceEvent(direction: .nothing, bytes: [], airTime: listen, note: "no answer"))
            throw ReaderError.timeout
        case .collision:
            trace?(TraceEvent(direction: .nothing, bytes: [], airTime: listen, note: "collision"))
            throw ReaderError.collision
        case let .response(bytes):
            trace?(TraceEvent(direction: .tagToReader, bytes: bytes, airTime: listen))
            do {
                let body = try CRC16.strip(bytes)
                guard body.count <= limits.maxResponseBytes else {
                    throw ReaderError.frameTooLong(bytes: body.count, limit: limits.maxResponseBytes)
                }
                return body
            } catch let e as FrameError {
                throw ReaderError.crcError(e)
            } catch let e as ReaderError {
                throw e
            } catch {
                throw ReaderError.device("\(error)")
            }
        }
    }
}
