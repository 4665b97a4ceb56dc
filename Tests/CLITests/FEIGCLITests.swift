import Foundation
import Testing

/// The feig driver end to end: the built `vlogger` against the built FEIG reader emulator (`vlogger-feig-reader`,
/// a loopback TCP port, a copy of the demo field behind it). No FEIG hardware is here; this is what the driver
/// was tested against, with the frames of real LR1002 traffic in FEIGTests.
@Suite(.serialized) struct FEIGCLITests {
    /// The emulator process and the address it listens on.
    final class Emulator {
        let process = Process()
        let address: String
        init(field: URL, faults: [String] = []) throws {
            let bin = try CLITests.binary().deletingLastPathComponent().appendingPathComponent("vlogger-feig-reader")
            process.executableURL = bin
            process.arguments = ["--field", field.path, "--tcp", "0"] + faults.flatMap { ["--fault", $0] }
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            let deadline = Date().addingTimeInterval(10)
            while !line.contains(0x0A), Date() < deadline {
                let d = out.fileHandleForReading.availableData
                if d.isEmpty { break }
                line += d
            }
            address = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard address.hasPrefix("tcp://") else {
                kill(process.processIdentifier, SIGKILL)
                throw CLITests.CLIFailure("vlogger-feig-reader printed \(address)")
            }
        }
        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Scan and read through the driver: the demo field's tags (those of at most 256 blocks: extended
    /// addressing is not sent yet) are found by the reader's inventory and read; the trace shows each ISO
    /// 15693 frame with the host frame that carried it; `devices --feig` names the reader and its firmware.
    @Test func scanReadTraceAndDevices() throws {
        let f = try CLITests.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let emu = try Emulator(field: f)
        defer { emu.stop() }
        let scan = try CLITests.run(["scan", "--reader", "feig", "--device", emu.address])
        #expect(scan.code == 0, "\(scan.err)")
        for uid in ["E008010000004212", "E007A20000001003"] { #expect(scan.out.contains(uid), "\(scan.out)") }
        let read = try CLITests.run(["read", "--reader", "feig", "--device", emu.address, "--uid", "E008010000004212", "--block", "0xF9", "--trace"])
        #expect(read.code == 0, "\(read.err)")
        #expect(read.out.contains("FEIG > 02 00") && read.out.contains("FEIG < 02 00"), "\(read.out)")
        let devices = try CLITests.run(["devices", "--feig", emu.address])
        #expect(devices.code == 0 && devices.out.contains("ID ISC.MR102 (type 77), firmware 03.05.00"), "\(devices.out)\(devices.err)")
        let gone = try CLITests.run(["devices", "--feig", "tcp://127.0.0.1:1"])
        #expect(gone.code != 0 && gone.out.contains("not answering"), "\(gone.out)")
    }

    /// The gateway polls a FEIG reader: readings land in the store and export; a reader that restarts mid-run
    /// costs a cycle, not the run. A wrong device string is a configuration error with its line.
    @Test func runPollsAFEIGReaderThroughARestart() throws {
        let f = try CLITests.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let emu = try Emulator(field: f, faults: ["restart@40"])
        defer { emu.stop() }
        let dir = try CLITests.scratch("feig-run", copying: ["rules.toml", "assets.csv"])
        defer { try? FileManager.default.removeItem(at: dir) }
        var config = try CLITests.oneReaderConfig()
        config = config.replacingOccurrences(of: "driver = \"sim\"               #", with: "driver = \"feig\" #")
            .replacingOccurrences(of: "field = \"demo-field\"         #", with: "device = \"\(emu.address),timeout=500\" #")
        try config.write(to: dir.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        let store = dir.appendingPathComponent("v.db").path
        let run = try CLITests.run(["run", "--config", dir.appendingPathComponent("vlogger.toml").path, "--store", store, "--cycles", "12",
                                    "--interval", "0s", "--listen", ""])
        #expect(run.code == 0, "\(run.err)")
        let export = try CLITests.run(["export", "--store", store, "--since", "1h"])
        #expect(export.code == 0 && export.out.contains("E008010000004212"), "\(export.out)\(export.err)")

        try config.replacingOccurrences(of: emu.address, with: "tcp://h:99999").write(to: dir.appendingPathComponent("bad.toml"), atomically: true, encoding: .utf8)
        let bad = try CLITests.run(["config", "check", "--config", dir.appendingPathComponent("bad.toml").path])
        #expect(bad.code != 0 && bad.err.contains("port 99999 is outside 1…65535"), "\(bad.out)\(bad.err)")
    }
}
