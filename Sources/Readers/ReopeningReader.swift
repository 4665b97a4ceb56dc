import ISO15693

/// A reader that was not there when the service started (pcscd not up yet, the USB reader not plugged in):
/// every exchange first tries to open it again, and until that works fails with a `.device` error, which the
/// polling agent treats as a failed reader (reader down in /healthz and the metrics, polling backs off).
/// Once opened, it passes everything to the real reader. A gateway that boots before its reader is ready
/// therefore starts, and polls as soon as the reader appears, instead of exiting into systemd's start limit.
public final class ReopeningReader: TagReader {
    private let open: () throws -> OpenedReader
    private let configuredName: String
    public private(set) var opened: OpenedReader?
    /// Why the last attempt to open failed.
    public private(set) var lastError: String
    private var pendingTrace: ((TraceEvent) -> Void)?

    public init(name: String, error: String, open: @escaping () throws -> OpenedReader) {
        configuredName = name
        lastError = error
        self.open = open
    }

    public var name: String { opened?.reader.name ?? configuredName }
    public var limits: ReaderLimits { opened?.reader.limits ?? ReaderLimits() }
    public var airTime: AirTime { opened?.reader.airTime ?? .zero }
    public var trace: ((TraceEvent) -> Void)? {
        get { opened?.reader.trace ?? pendingTrace }
        set {
            pendingTrace = newValue
            opened?.reader.trace = newValue
        }
    }
    public var supportsSlotMarkers: Bool { opened?.reader.supportsSlotMarkers ?? false }
    public var receivesFastResponses: Bool { opened?.reader.receivesFastResponses ?? false }
    public var hasReaderInventory: Bool { opened?.reader.hasReaderInventory ?? false }
    public func readerInventory(afi: UInt8?) throws(ReaderError) -> [InventoryEntry]? {
        try real().readerInventory(afi: afi)
    }

    /// The real reader, opened now if it was not yet.
    private func real() throws(ReaderError) -> TagReader {
        if let r = opened?.reader { return r }
        do {
            let o = try open()
            o.reader.trace = pendingTrace
            opened = o
            return o.reader
        } catch {
            lastError = "\(error)"
            throw ReaderError.device("reader not available: \(lastError); trying again")
        }
    }

    public func fieldOn() throws(ReaderError) { try real().fieldOn() }
    public func fieldOff() throws(ReaderError) { if let r = opened?.reader { try r.fieldOff() } }
    public func transceive(_ frame: [UInt8], wait: ResponseWait) throws(ReaderError) -> [UInt8] {
        try real().transceive(frame, wait: wait)
    }
    public func nextSlot() throws(ReaderError) -> [UInt8] { try real().nextSlot() }
    public func execute(_ request: Request, blockSize: Int?) throws(CommandFailure) -> Response {
        let r: TagReader
        do { r = try real() } catch { throw .reader(error) }
        return try r.execute(request, blockSize: blockSize)
    }
    public var buffer: (any BufferedReader)? { opened?.reader.buffer }
}
