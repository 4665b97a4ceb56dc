import Foundation
import ISO15693
import Logging
import Readers
import VLoggerModel
import VLoggerStore

/// Where the parts of one reader's agent put what they notice: events (to the store writer, the log and
/// `onEvent`), errors as named events, and the run's counters.
final class AgentLog {
    var gatewayID: String
    /// The reader's id and location, in every event (a reload may move the reader).
    var readerConfig: ReaderConfig
    let writer: StoreWriter
    let clock: AgentClock
    var logger: Logger
    var counters = AgentCounters()
    var onEvent: ((Event) -> Void)?

    init(gatewayID: String, readerConfig: ReaderConfig, writer: StoreWriter, clock: AgentClock, logger: Logger) {
        self.gatewayID = gatewayID
        self.readerConfig = readerConfig
        self.writer = writer
        self.clock = clock
        self.logger = logger
    }

    /// A failed exchange as an event named by where it happened (`kind`) and how it failed.
    func error(uid: UID?, kind: String, _ error: ClientError, detail: String? = nil) {
        let name: String
        switch error {
        case .reader(.timeout, _): name = "\(kind)-timeout"
        case .reader(.crcError, _): name = "\(kind)-crc"
        case .reader(.collision, _): name = "\(kind)-collision"
        case .reader: name = "\(kind)-reader"
        case .tag: name = "\(kind)-tag-error"
        case .malformed: name = "\(kind)-malformed"
        case .invalid, .verifyFailed: name = "\(kind)-failed"
        }
        counters.errors[name, default: 0] += 1
        event(.error, uid: uid, name: name, severity: .warning, detail: "\(error)" + (detail.map { "; \($0)" } ?? ""))
    }

    func event(_ kind: Event.Kind, uid: UID?, name: String, severity: Event.Severity, detail: String) {
        let e = Event(
            time: clock.now(), gateway: gatewayID, reader: readerConfig.id, location: readerConfig.location, uid: uid,
            kind: kind, name: name, severity: severity, detail: detail)
        writer.add(e)
        announce(e)
    }

    /// An event already on its way to the store (committed with the rows it is about): to `onEvent`, the log and the
    /// counters.
    func announce(_ e: Event) {
        onEvent?(e)
        let (kind, uid, name, severity, detail) = (e.kind, e.uid, e.name, e.severity, e.detail)
        switch kind {
        case .violation:
            logger.log(
                level: severity == .critical ? .error : .warning,
                "rule '\(name)' violated by \(uid?.description ?? "-"): \(detail)",
                metadata: ["uid": "\(uid?.description ?? "-")", "rule": "\(name)"])
        case .error:
            logger.warning("\(uid?.description ?? "reader"): \(detail)", metadata: uid.map { ["uid": "\($0)"] })
        case .readerDown: logger.error("\(detail)")
        case .readerUp: logger.notice("\(detail)")
        case .arrival, .departure, .violationEnded:
            logger.info("\(detail)", metadata: uid.map { ["uid": "\($0)"] })
        case .start, .stop, .writeDone, .writeFailed, .writeExpired, .auditFinished, .access, .acknowledged:
            logger.info("\(kind.rawValue): \(detail)")
        }
    }
}
