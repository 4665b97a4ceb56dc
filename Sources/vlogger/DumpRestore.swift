import VLoggerModel
import ArgumentParser
import Foundation
import Readers
import TagImages
import TagSecurity
import VLoggerCLI
import VLoggerCore

extension TagImageFormat: ExpressibleByArgument {}

struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read a whole tag (blocks, lock status, DSFID/AFI) into a dump file.")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Option(name: .shortAndLong, help: "Output file (default: stdout).")
    var output: String?

    @Option(help: "vlogger (project JSON), proxmark3 (\"15693 v4\" JSON) or flipper (.nfc).")
    var format: TagImageFormat = .vlogger

    @Option(
        help:
            "Convert this dump file (project JSON, Proxmark3 JSON or Flipper .nfc) to --format instead of reading a tag: what the other format has no key for is left out (a Proxmark3 dump keeps the privacy password, not the signature or the other passwords).",
        completion: .file())
    var from: String?

    func run() throws {
        if let from {
            guard options.reader == nil, options.field == nil, options.device == nil, options.uid == nil else {
                throw ValidationError("--from converts a file: give it without --reader, --field, --device or --uid")
            }
            let image = try Restore.load(from)
            let text: String
            do { text = try format.encode(image) } catch { throw VLoggerError("\(from): \(error)") }
            if let output {
                do { try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic) } catch {
                    throw VLoggerError("cannot write \(output): \(error.localizedDescription)")
                }
            } else {
                print(text, terminator: "")
            }
            return
        }
        let session = try options.open()
        let uid = try options.target(session)
        var image = try TagDump.dump(session.client, uid: uid)
        image.profileID = nil
        let text = try format.encode(image)
        // The originality signature the dump holds, judged: a chip type without one, a chip that answered none, one
        // that does not verify (docs/reference/flipper-slix.md).
        let model = (try? session.client.memory(of: uid))?.model
        if let scheme = Originality.scheme(for: uid, model: model), scheme == .nxpReadSignature {
            let verdict =
                image.signature.map { Originality.verify(uid, signature: $0, scheme: scheme) }
                ?? .missing(
                    "none in the dump: GET NXP SYSTEM INFO said there is none, or READ SIGNATURE was not answered or gave 32 zero bytes"
                )
            FileHandle.standardError.write(Data("originality: \(verdict)\n".utf8))
        }
        if let output {
            do { try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic) } catch {
                throw VLoggerError("cannot write \(output): \(error.localizedDescription)")
            }
            FileHandle.standardError.write(
                Data(
                    "dumped \(image.blockCount) × \(image.blockSize)-byte blocks of \(uid) to \(output); \(airLine(session))\n"
                        .utf8))
            // No ISO/IEC 15693 command reports whether the DSFID or AFI is locked (NXP's custom Get NXP System
            // Information does, for ICODE chips; not used here).
            FileHandle.standardError.write(
                Data(
                    "note: the ISO commands do not report whether the DSFID and AFI are locked; the dump says unlocked\n"
                        .utf8))
        } else {
            print(text, terminator: "")
        }
    }
}

struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Write a dump file (project JSON, Proxmark3 JSON or Flipper .nfc) back to a tag; only changed blocks are written."
    )

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Argument(help: "The dump file.")
    var file: String

    /// A dump file of any of the three formats, told from its content.
    static func load(_ file: String) throws -> TagImage {
        let text: String
        do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
            throw VLoggerError("cannot read \(file): \(error.localizedDescription)")
        }
        guard let format = TagImageFormat.detect(fileName: file, text: text) else {
            throw VLoggerError("\(file) is not a project, Proxmark3 (ISO 15693 JSON) or Flipper (.nfc) dump")
        }
        do { return try format.decode(text, fileName: file) } catch { throw VLoggerError("\(file): \(error)") }
    }

    func run() throws {
        let image = try Self.load(file)
        let session = try options.open()
        let uid = try options.target(session)
        let report = try TagDump.restore(session.client, uid: uid, image: image)
        try session.checkPersisted()
        print(
            "restored \(file) to \(uid): \(report.written) block(s) written, \(report.unchanged) unchanged"
                + (report.lockedSkipped.isEmpty
                    ? ""
                    : ", locked and different (not written): \(report.lockedSkipped.map(\.description).joined(separator: " "))")
                + (report.notApplied.isEmpty
                    ? ""
                    : "; not applied (irreversible, or its own command): \(report.notApplied.joined(separator: ", "))")
                + "; \(airLine(session))")
        if !report.lockedSkipped.isEmpty { throw ExitCode(2) }
    }
}

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "List reader devices of every driver: the simulated field, PC/SC readers (with card presence), libnfc devices, and the network or serial readers a configuration names (a FEIG reader is asked for its type and firmware).",
        discussion: ReaderDrivers.all.map { d in
            "\(d.name): \(d.summary)" + (d.deviceHelp.map { ". --device: \($0)" } ?? "")
        }.joined(separator: "\n"))

    @Option(help: "Folder of tag images for the simulator.")
    var field: String?

    @Option(
        help:
            "Configuration whose [[reader]] devices are asked (readers that announce themselves nowhere, such as FEIG's)."
    )
    var config: String?

    @Option(
        name: [.customLong("driver"), .customLong("reader")],
        help:
            "Only this driver's devices: \(ReaderDrivers.all.map(\.name).joined(separator: ", ")) (--reader: its older name)."
    )
    var reader: ReaderKind?

    @Option(
        help:
            "A device to ask, as --reader's driver names devices (with --reader feig: /dev/ttyUSB0[,baud=…] or tcp://HOST[:PORT]). Repeatable."
    )
    var device: [String] = []

    @Flag(help: "JSON: {\"items\":[{\"driver\",\"name\",\"detail\"}]}.")
    var json = false

    func validate() throws {
        if !device.isEmpty, reader == nil {
            throw ValidationError("--device needs --reader: the driver that knows the device (--reader feig)")
        }
    }

    func run() throws {
        var configured: [String: [String]] = [:]
        if let reader { configured[reader.rawValue, default: []] += device }
        if let config {
            let c: AgentConfig
            do { c = try AgentConfig.load(config) } catch { throw VLoggerError("\(error)") }
            for r in c.readers { if let d = r.device { configured[r.driver.rawValue, default: []].append(d) } }
        }
        var unanswered = 0
        var found: [DeviceJSON] = []
        for driver in ReaderDrivers.all where reader == nil || reader?.rawValue == driver.name {
            do {
                for d in try driver.devices(field: field, configured: configured[driver.name] ?? []) {
                    if d.unanswered { unanswered += 1 }
                    found.append(DeviceJSON(driver: driver.name, name: d.name, detail: d.detail))
                }
            } catch {
                found.append(DeviceJSON(driver: driver.name, name: "-", detail: "\(error)"))
            }
        }
        if json {
            printLine(WireJSON.encode(DevicesJSON(items: found)))
        } else {
            for d in found {
                say("\(d.driver.padding(toLength: 8, withPad: " ", startingAt: 0)) \(d.name)  \(d.detail)")
            }
        }
        if unanswered > 0 {
            throw VLoggerError("\(unanswered) reader\(unanswered == 1 ? "" : "s") did not answer")
        }
    }
}
