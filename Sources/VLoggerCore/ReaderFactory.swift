import Foundation
import ISO15693
import Readers
import TagSimulator

/// Which reader a command uses.
public enum ReaderKind: String, CaseIterable, Sendable {
    case sim, libnfc, pcsc
}

/// An error that ends a command: one line that says what happened and what to do.
public struct VLoggerError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A reader opened for a command, with the simulated field behind it when there is one.
public final class ReaderSession {
    public let reader: TagReader
    public let client: ISO15693Client
    public let folder: FieldFolder?

    init(reader: TagReader, folder: FieldFolder?) {
        self.reader = reader
        self.folder = folder
        client = ISO15693Client(reader: reader)
    }

    /// The default simulated field: `$VLOGGER_FIELD`, else `Config/demo-field` under the current folder.
    public static func defaultFieldPath() -> String {
        if let env = ProcessInfo.processInfo.environment["VLOGGER_FIELD"], !env.isEmpty { return env }
        return "Config/demo-field"
    }

    /// A session over an in-memory simulated field (tests, benchmarks), field switched on.
    public static func simulated(field: SimulatedField) throws -> ReaderSession {
        let reader = SimulatorReader(field: field, name: "simulator (in memory)")
        try reader.fieldOn()
        return ReaderSession(reader: reader, folder: nil)
    }

    /// Opens a reader and switches its field on.
    public static func open(kind: ReaderKind, field: String?, device: String?) throws -> ReaderSession {
        switch kind {
        case .sim:
            let path = field ?? defaultFieldPath()
            let folder: FieldFolder
            do { folder = try FieldFolder(url: URL(fileURLWithPath: path)) } catch {
                throw VLoggerError("simulated field: \(error)" + (field == nil ? " (run from the repository root, or pass --field DIR)" : ""))
            }
            let reader = SimulatorReader(field: folder.field, name: "simulator (\(path))")
            try reader.fieldOn()
            return ReaderSession(reader: reader, folder: folder)
        case .pcsc:
            // `device`: a PC/SC reader name, part of one, or its index; `storage:` first forces the
            // storage-card commands (for readers whose transparent exchange misbehaves).
            var want = device
            var storage = false
            if let d = want, d.hasPrefix("storage:") {
                storage = true
                want = String(d.dropFirst("storage:".count))
                if want?.isEmpty == true { want = nil }
            }
            let reader = PCSCReader(reader: want)
            reader.forceStorageMode = storage
            do { try reader.fieldOn() } catch { throw VLoggerError("PC/SC: \(error)") }
            return ReaderSession(reader: reader, folder: nil)
        case .libnfc:
            do {
                try LibNFC.openAsISO15693Reader(connstring: device)
            } catch {
                throw VLoggerError("\(error)")
            }
        }
    }

    private var player: ScenarioPlayer?

    /// Starts playing the field folder's scenario, if it has one (only `vlogger run` does). True if started.
    @discardableResult
    public func startScenario() -> Bool {
        guard player == nil, let folder, let scenario = folder.scenario else { return false }
        player = ScenarioPlayer(scenario: scenario, field: folder.field)
        return true
    }

    /// Moves the scenario to `ms` after the start of the run.
    public func advanceScenario(toMs ms: Int64) { player?.advance(toMs: ms) }

    /// Raises the error of a failed write-back to a field file, if any.
    public func checkPersisted() throws {
        if let e = folder?.persistError { throw VLoggerError("the tag changed but its file could not be written: \(e)") }
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
            throw VLoggerError("\(tags.count) tags in the field; choose one with --uid (\(tags.map(\.uid.description).joined(separator: ", ")))")
        }
    }
}

/// PC/SC reader listing for `vlogger devices`.
public enum PCSCDevices {
    public static func list() throws -> [(name: String, card: Bool)] {
        try PCSCReader.listReaders().map { name in
            let r = PCSCReader(reader: name)
            defer { try? r.fieldOff() }
            return (name, (try? r.cardPresent()) ?? false)
        }
    }
}

/// libnfc device listing for `vlogger devices` (the CLI does not import Readers' C module itself).
public enum LibNFCDevices {
    public static func list() throws -> [String] { try LibNFC.listDevices() }
    public static var version: String { LibNFC.version }
}
