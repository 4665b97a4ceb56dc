import Foundation
import ISO15693
import Readers
import VLoggerModel

/// A reader opened for a command or a polling job, through its driver in the registry.
public final class ReaderSession {
    public let reader: TagReader
    public let client: ISO15693Client
    private let opened: OpenedReader

    init(_ opened: OpenedReader) {
        self.opened = opened
        reader = opened.reader
        client = ISO15693Client(reader: opened.reader)
    }

    /// A session over a reader made elsewhere (tests), field already on.
    public convenience init(reader: TagReader) { self.init(OpenedReader(reader: reader)) }

    /// Switches the field off and on: the tags lose their power and state, and an NXP chip a wrong password muted
    /// answers again.
    public func resetField() {
        try? reader.fieldOff()
        try? reader.fieldOn()
    }

    /// Opens a configured reader (`[[reader]]`), with a simulated reader's frame limit when it gives one.
    public static func open(_ rc: ReaderConfig) throws -> ReaderSession {
        try open(kind: rc.driver, field: rc.field, device: rc.device, options: rc.options)
    }

    /// Opens a configured reader for the service: a hardware reader that cannot be opened now (pcscd not up
    /// yet, the reader unplugged) gives a session whose reader is opened again at each exchange until it
    /// works (`ReopeningReader`), with the reason it failed; a simulated field that cannot be opened is a
    /// configuration error and throws.
    public static func openOrRetry(_ rc: ReaderConfig) throws -> (ReaderSession, notYet: String?) {
        do { return (try open(rc), nil) } catch  where !rc.driver.driver.capabilities.contains(.simulatedField) {
            let kind = rc.driver, field = rc.field, device = rc.device, options = rc.options
            let reader = ReopeningReader(
                name: "\(kind.rawValue)\(device.map { " " + $0 } ?? "") (not opened yet)", error: "\(error)"
            ) { try kind.driver.open(field: field, device: device, options: options) }
            let opened = OpenedReader(
                reader: reader, runTime: { [weak reader] ms in reader?.opened?.runTime?(ms) },
                deferredError: { [weak reader] in reader?.opened?.deferredError?() })
            return (ReaderSession(opened), "\(error)")
        }
    }

    /// Opens a reader of the driver `kind` and switches its field on.
    public static func open(kind: ReaderKind, field: String?, device: String?, options: DriverOptions = DriverOptions())
        throws -> ReaderSession
    {
        do { return ReaderSession(try kind.driver.open(field: field, device: device, options: options)) } catch let e
            as ReaderError
        {
            throw VLoggerError("\(e)")
        }
    }

    /// Tells the driver the run's time (ms since the agent started), before each poll cycle.
    public func runTime(_ ms: Int64) { opened.runTime?(ms) }

    /// Raises an error the driver noticed after the fact (a simulated tag's file that could not be written).
    public func checkPersisted() throws {
        if let e = opened.deferredError?() {
            throw VLoggerError("the tag changed but its file could not be written: \(e)")
        }
    }

    /// The tag a command works on: `uid` when given, else the only tag in the field.
    public func target(_ uid: String?) throws -> UID {
        if let uid {
            do { return try UID(parsing: uid) } catch { throw VLoggerError("--uid: \(error)") }
        }
        let tags = try client.inventory()
        switch tags.count {
        case 0: throw VLoggerError("no tag in the field")
        case 1: return tags[0].uid
        default:
            throw VLoggerError(
                "\(tags.count) tags in the field; choose one with --uid (\(tags.map(\.uid.description).joined(separator: ", ")))"
            )
        }
    }
}
