import Foundation
import Readers
import TagSimulator

/// The simulator: a folder of tag images (and its scenario) as the field.
public struct SimulatorDriver: ReaderDriver {
    public init() {}
    public var name: String { "sim" }
    public var summary: String {
        "simulated field: a folder of tag images (project JSON, Proxmark3 JSON, Flipper .nfc) and its scenario.json"
    }
    public var capabilities: DriverCapabilities {
        [.iso15693, .slotMarkers, .simulatedField, .fastResponses, .drivenClock]
    }

    /// The default simulated field: `$VLOGGER_FIELD`, else `Config/demo-field` under the current folder.
    public static func defaultFieldPath() -> String {
        if let env = ProcessInfo.processInfo.environment["VLOGGER_FIELD"], !env.isEmpty { return env }
        return "Config/demo-field"
    }

    public func open(field: String?, device: String?, options: DriverOptions) throws -> OpenedReader {
        let path = field ?? Self.defaultFieldPath()
        let folder: FieldFolder
        do { folder = try FieldFolder(url: URL(fileURLWithPath: path)) } catch {
            throw ReaderError.device(
                "simulated field: \(error)"
                    + (field == nil ? " (run from the repository root, or pass --field DIR)" : ""))
        }
        let reader = SimulatorReader(field: folder.field, name: "simulator (\(path))")
        if let n = options.maxResponseBytes { reader.limits.maxResponseBytes = n }
        try reader.fieldOn()
        // The scenario plays only where the run's time is given (the polling agent), from its first cycle.
        var player: ScenarioPlayer?
        let runTime: (Int64) -> Void = { ms in
            if player == nil, let scenario = folder.scenario {
                player = ScenarioPlayer(scenario: scenario, field: folder.field)
            }
            player?.advance(toMs: ms)
        }
        return OpenedReader(reader: reader, runTime: runTime, deferredError: { folder.persistError.map { "\($0)" } })
    }

    public func devices(field: String?, configured: [String]) throws -> [DeviceListing] {
        let path = field ?? Self.defaultFieldPath()
        guard let folder = try? FieldFolder(url: URL(fileURLWithPath: path)) else {
            return [DeviceListing(name: path, detail: "not a field folder")]
        }
        return [DeviceListing(name: path, detail: "\(folder.field.tags.count) simulated tag(s)  ISO 15693: yes")]
    }

    public func preflight(field: String?, device: String?) -> String? {
        guard let field else { return nil }
        var isDir: ObjCBool = false
        if !FileManager.default.fileExists(atPath: field, isDirectory: &isDir) || !isDir.boolValue {
            return "field: \(field) is not a folder"
        }
        return nil
    }

    /// The sample names a field folder that exists, so that the sample passes `config check` as it is: the
    /// default field (`$VLOGGER_FIELD`, else Config/demo-field) as an absolute path when it is there, else the
    /// demo field the Debian package installs; a placeholder only where neither is.
    public var sampleReader: String? {
        var isDir: ObjCBool = false
        let here = URL(fileURLWithPath: Self.defaultFieldPath()).standardizedFileURL.path
        let field: String
        if FileManager.default.fileExists(atPath: here, isDirectory: &isDir), isDir.boolValue {
            field = here
        } else if FileManager.default.fileExists(atPath: "/usr/share/vlogger/demo-field") {
            field = "/usr/share/vlogger/demo-field"
        } else {
            field = "demo-field"
        }
        return """
            driver = "sim"
            field = "\(field)"    # EDIT: a folder of tag images (Config/demo-field in the repository)
            """
    }
}
