import TagImages
import Foundation
import ISO15693

/// A simulated field kept in a folder: one tag image per file (the project's JSON, Proxmark3 JSON and
/// Flipper `.nfc` side by side). Writes and locks made through the field are written back to the tag's own
/// file, in its own format, so the next process sees them.
public final class FieldFolder {
    public let url: URL
    public let field: SimulatedField
    /// Which file each tag came from.
    public private(set) var files: [UID: (url: URL, format: TagImageFormat)] = [:]
    /// Set when writing a changed tag back failed; the command that caused it reports it.
    public private(set) var persistError: TagImageError?
    /// The folder's `scenario.json` (any JSON file with a `vlogger-scenario` key), if it has one.
    public private(set) var scenario: Scenario?

    /// Loads every `*.json` and `*.nfc` file of `url`. A `.nfc` file that is not a tag image, a `.json` file
    /// that is not valid JSON, a damaged image or scenario, or two files with the same UID, is an error that
    /// names the file (valid JSON of another kind is left alone).
    public init(url: URL) throws(TagImageError) {
        self.url = url
        field = SimulatedField()
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir), isDir.boolValue else {
            throw TagImageError("field folder \(url.path) does not exist or is not a folder")
        }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: url.path).sorted() } catch {
            throw TagImageError("cannot list field folder \(url.path): \(error.localizedDescription)")
        }
        for name in names where name.hasSuffix(".json") || name.hasSuffix(".nfc") {
            let fileURL = url.appendingPathComponent(name)
            let image: TagImage
            let format: TagImageFormat
            do {
                let text = try Self.read(fileURL)
                if name.hasSuffix(".json") {
                    // A damaged file must not vanish from the field (or the scenario from the run) unsaid.
                    do { _ = try JSONSerialization.jsonObject(with: Data(text.utf8)) } catch {
                        throw TagImageError(
                            "not valid JSON (\((error as NSError).userInfo[NSDebugDescriptionErrorKey] ?? error.localizedDescription)); a tag image or scenario.json must be JSON"
                        )
                    }
                    if name == "scenario.json", !Scenario.isScenario(text) {
                        throw TagImageError(
                            "a scenario needs the key \"vlogger-scenario\" (see Config/demo-field/README.md)")
                    }
                }
                if name.hasSuffix(".json"), Scenario.isScenario(text) {
                    guard scenario == nil else {
                        throw TagImageError("a second scenario; a field folder has at most one")
                    }
                    scenario = try Scenario.decode(text)
                    continue
                }
                guard let f = TagImageFormat.detect(fileName: name, text: text) else {
                    if name.hasSuffix(".json") { continue }  // other valid JSON is not a tag
                    throw TagImageError("not a tag image (project JSON, Proxmark3 \"15693 v4\" JSON or Flipper .nfc)")
                }
                format = f
                image = try f.decode(text, fileName: name)
                if let id = image.profileID, id != "generic", ChipProfile.named(id) == nil {
                    throw TagImageError(
                        "unknown profile '\(id)'; known: \(ChipProfile.all.map(\.id).joined(separator: ", ")), generic")
                }
            } catch let e as TagImageError {
                throw e.in(fileURL.path)
            } catch {
                throw TagImageError("\(fileURL.path): \(error)")
            }
            if let other = files[image.uid] {
                throw TagImageError(
                    "\(fileURL.path): UID \(image.uid) is already in \(other.url.lastPathComponent); each tag needs its own UID"
                )
            }
            files[image.uid] = (fileURL, format)
            field.add(SimulatedTag(image: image))
        }
        field.onTagChanged = { [weak self] tag in self?.persist(tag) }
        if let scenario {
            let uids =
                scenario.signals.map(\.uid)
                + scenario.steps.compactMap { step -> UID? in
                    switch step.action {
                    case let .leave(u), let .arrive(u), let .leaveMidRead(u, _): return u
                    case let .noResponse(u, _), let .corruptCRC(u, _): return u
                    case .collision: return nil
                    }
                }
            if let missing = uids.first(where: { files[$0] == nil }) {
                throw TagImageError("\(url.path): the scenario names \(missing), which no tag file in the folder has")
            }
        }
    }

    static func read(_ url: URL) throws(TagImageError) -> String {
        do {
            let data = try Data(contentsOf: url)
            guard let text = String(data: data, encoding: .utf8) else { throw TagImageError("not UTF-8 text") }
            return text
        } catch let e as TagImageError { throw e } catch {
            throw TagImageError("cannot read: \(error.localizedDescription)")
        }
    }

    /// Writes a tag's image back to its file (atomically: a crash leaves the old or the new file).
    func persist(_ tag: SimulatedTag) {
        guard let entry = files[tag.uid] else { return }
        do {
            let original = try? Self.read(entry.url)
            let text = try entry.format.encode(tag.image, updating: original)
            try Data(text.utf8).write(to: entry.url, options: .atomic)
        } catch let e as TagImageError {
            persistError = e.in(entry.url.path)
        } catch {
            persistError = TagImageError("\(entry.url.path): cannot write: \(error.localizedDescription)")
        }
    }

    /// Adds a new tag image file to the folder and the field.
    public func addFile(_ image: TagImage, name: String, format: TagImageFormat) throws(TagImageError) {
        let fileURL = url.appendingPathComponent(name)
        guard files[image.uid] == nil else { throw TagImageError("UID \(image.uid) is already in the field") }
        do {
            try Data(try format.encode(image).utf8).write(to: fileURL, options: .atomic)
        } catch let e as TagImageError { throw e } catch {
            throw TagImageError("\(fileURL.path): cannot write: \(error.localizedDescription)")
        }
        files[image.uid] = (fileURL, format)
        field.add(SimulatedTag(image: image))
    }
}
