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
        /// `pty`: the emulator on a pseudo-terminal (its path is the device) instead of a loopback TCP port.
        init(field: URL, faults: [String] = [], extra: [String] = [], pty: Bool = false) throws {
            let bin = try CLITests.binary().deletingLastPathComponent().appendingPathComponent("vlogger-feig-reader")
            process.executableURL = bin
            process.arguments =
                ["--field", field.path] + (pty ? ["--pty"] : ["--tcp", "0"]) + faults.flatMap { ["--fault", $0] }
                + extra
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
            guard address.hasPrefix("tcp://") || (pty && address.hasPrefix("/dev/")) else {
                kill(process.processIdentifier, SIGKILL)
                throw CLITests.CLIFailure("vlogger-feig-reader printed \(address)")
            }
        }
        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Scan and read through the driver: the demo field's tags are found by the reader's inventory and read,
    /// also past block 255 (the ST25DV64K's asset ID "AS-00042" at blocks 0x100–0x101, Config/demo-field: FEIG's
    /// extended form, MODE 0x21 (addressed, EXT_ADR) with BANK 03 and DB-ADR 01 00 in the host frame); the trace shows each ISO 15693
    /// frame with the host frame that carried it; `devices --reader feig --device …` names the reader and its firmware.
    @Test func scanReadTraceAndDevices() throws {
        let f = try CLITests.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let emu = try Emulator(field: f)
        defer { emu.stop() }
        let scan = try CLITests.run(["scan", "--reader", "feig", "--device", emu.address])
        #expect(scan.code == 0, "\(scan.err)")
        for uid in ["E008010000004212", "E007A20000001003"] { #expect(scan.out.contains(uid), "\(scan.out)") }
        let read = try CLITests.run([
            "read", "--reader", "feig", "--device", emu.address, "--uid", "E008010000004212", "--block", "0xF9",
            "--trace",
        ])
        #expect(read.code == 0, "\(read.err)")
        #expect(read.out.contains("FEIG > 02 00") && read.out.contains("FEIG < 02 00"), "\(read.out)")
        let wide = try CLITests.run([
            "read", "--reader", "feig", "--device", emu.address, "--uid", "E002260000C0FFEE", "--block", "0x100",
            "--count", "2", "--trace",
        ])
        #expect(wide.code == 0, "\(wide.err)")
        #expect(
            wide.out.contains("0x0100 41 53 2D 30  |AS-0|") && wide.out.contains("0x0101 30 30 34 32  |0042|"),
            "\(wide.out)")
        #expect(
            wide.out.contains("B0 23 21 E0 02 26 00 00 C0 FF EE 03 01 00 02"),
            "the extended form on the wire: \(wide.out)")
        let devices = try CLITests.run(["devices", "--reader", "feig", "--device", emu.address])
        #expect(
            devices.code == 0 && devices.out.contains("ID ISC.MR102 (type 77), firmware 03.05.00"),
            "\(devices.out)\(devices.err)")
        let gone = try CLITests.run(["devices", "--reader", "feig", "--device", "tcp://127.0.0.1:1"])
        #expect(
            gone.code != 0 && gone.out.contains("not answering") && gone.err.contains("1 reader did not answer"),
            "\(gone.out)\(gone.err)")
        // A device without the driver that knows it is an argument error.
        let bare = try CLITests.run(["devices", "--device", "tcp://127.0.0.1:1"])
        #expect(bare.code == 64 && bare.err.contains("--device needs --reader"), "\(bare.err)")
    }

    /// The tag commands through the driver, over a real pseudo-terminal (the serial path: 38400 baud, even
    /// parity set on the pty) and over loopback TCP: scan, info, read --count, write (verified by read-back),
    /// lock --yes (then a write is refused with the tag's error 0x12), each against the tag image the emulator
    /// serves (the MB89R118 of the demo field: 256 blocks of 8 bytes).
    @Test(arguments: ["pty", "tcp"]) func tagCommandsOverEachLink(_ link: String) throws {
        let f = try CLITests.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let emu = try Emulator(field: f, pty: link == "pty")
        defer { emu.stop() }
        let device = link == "pty" ? "\(emu.address),baud=38400,parity=even,timeout=1000" : emu.address
        let uid = "E008010000004212"
        func cli(_ args: [String]) throws -> (code: Int32, out: String, err: String) {
            try CLITests.run(args + ["--reader", "feig", "--device", device])
        }
        let scan = try cli(["scan"])
        #expect(scan.code == 0 && scan.out.contains(uid), "\(scan.out)\(scan.err)")
        let info = try cli(["info", "--uid", uid])
        #expect(info.code == 0 && info.out.contains("256") && info.out.contains("8"), "\(info.out)\(info.err)")
        let read = try cli(["read", "--uid", uid, "--block", "0xF8", "--count", "4"])
        #expect(read.code == 0 && read.out.split(separator: "\n").count >= 4, "\(read.out)\(read.err)")
        let write = try cli(["write", "--uid", uid, "--block", "0xF9", "--data", "0102030405060708"])
        #expect(write.code == 0, "\(write.out)\(write.err)")
        let back = try cli(["read", "--uid", uid, "--block", "0xF9", "--json"])
        #expect(back.out.contains("0102030405060708"), "\(back.out)\(back.err)")
        let lock = try cli(["lock", "--uid", uid, "--block", "0xFA", "--yes"])
        #expect(lock.code == 0, "\(lock.out)\(lock.err)")
        let locked = try cli(["read", "--uid", uid, "--block", "0xFA", "--security"])
        #expect(locked.code == 0 && locked.out.contains("  locked"), "\(locked.out)\(locked.err)")
        let refused = try cli(["write", "--uid", uid, "--block", "0xFA", "--data", "0102030405060708"])
        #expect(refused.code != 0 && refused.err.lowercased().contains("lock"), "\(refused.out)\(refused.err)")
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
            .replacingOccurrences(
                of: "field = \"demo-field\"         #", with: "device = \"\(emu.address),timeout=500\" #")
        try config.write(to: dir.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        let store = dir.appendingPathComponent("v.db").path
        let run = try CLITests.run([
            "run", "--config", dir.appendingPathComponent("vlogger.toml").path, "--store", store, "--cycles", "12",
            "--interval", "0s", "--listen", "",
        ])
        #expect(run.code == 0, "\(run.err)")
        let export = try CLITests.run(["export", "--store", store, "--since", "1h"])
        #expect(export.code == 0 && export.out.contains("E008010000004212"), "\(export.out)\(export.err)")

        try config.replacingOccurrences(of: emu.address, with: "tcp://h:99999").write(
            to: dir.appendingPathComponent("bad.toml"), atomically: true, encoding: .utf8)
        let bad = try CLITests.run(["config", "check", "--config", dir.appendingPathComponent("bad.toml").path])
        #expect(bad.code != 0 && bad.err.contains("port 99999 is outside 1…65535"), "\(bad.out)\(bad.err)")
    }

    /// Buffered read mode through the gateway: the emulator's buffer holds three rounds of its own reads of
    /// block 0xF8 from before the gateway started; `run` with read-mode = "buffer" stores each record once, a
    /// second run finds the buffer empty and stores nothing again. The plan's fields are decoded from the
    /// records (the MB89R118's block 0xF8 = 66 08 C2 01 42 37 00 01, Config/demo-field: temperature i16le
    /// 0x0866 × 0.01 = 21.5 °C, cage "B7") and the rules run on them: "cold room temperature" with its maximum
    /// lowered to 20.0 is violated (once: a violation is recorded when it starts), the lock rule on block 0xF8
    /// is not evaluated (a buffered record has no lock status).
    @Test func runDrainsTheReadersBufferOnce() throws {
        let f = try CLITests.field()
        defer { try? FileManager.default.removeItem(at: f) }
        let emu = try Emulator(field: f, faults: [], extra: ["--buffered", "3", "--buffer-blocks", "0xF8+1"])
        defer { emu.stop() }
        let dir = try CLITests.scratch("feig-brm", copying: ["rules.toml", "assets.csv"])
        defer { try? FileManager.default.removeItem(at: dir) }
        let rulesFile = dir.appendingPathComponent("rules.toml")
        let rules = try String(contentsOf: rulesFile, encoding: .utf8)
        #expect(rules.contains("min = 2.0\nmax = 24.0"))
        try rules.replacingOccurrences(of: "min = 2.0\nmax = 24.0", with: "min = 2.0\nmax = 20.0").write(
            to: rulesFile, atomically: true, encoding: .utf8)
        var config = try CLITests.oneReaderConfig()
        config = config.replacingOccurrences(
            of: "driver = \"sim\"               #",
            with: "driver = \"feig\"\nread-mode = \"buffer\"\nbuffer-block = \"0xF8\" #"
        )
        .replacingOccurrences(of: "field = \"demo-field\"         #", with: "device = \"\(emu.address),timeout=500\" #")
        try config.write(to: dir.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        let store = dir.appendingPathComponent("v.db").path
        let args = [
            "run", "--config", dir.appendingPathComponent("vlogger.toml").path, "--store", store, "--cycles", "2",
            "--interval", "0s", "--listen", "",
        ]
        for _ in 0..<2 {
            let run = try CLITests.run(args)
            #expect(run.code == 0, "\(run.err)")
        }
        let export = try CLITests.run(["export", "--store", store, "--since", "1h", "--uid", "E008010000004212"])
        let rows = export.out.split(whereSeparator: \.isNewline).dropFirst()
        #expect(export.code == 0 && rows.count == 3, "\(export.out)\(export.err)")
        #expect(rows.allSatisfy { $0.contains(",0xF8,") }, "block 0xF8: \(rows)")
        // Columns temperature, humidity, cage, record after the raw data and the empty security cell.
        let header = export.out.split(whereSeparator: \.isNewline).first ?? ""
        #expect(header.contains(",data,security,temperature,humidity,cage,record"), "\(header)")
        #expect(rows.allSatisfy { $0.contains(",\\x6608C20142370001,,21.5,45,B7,1") }, "\(rows)")
        let events = try CLITests.run(["export", "--store", store, "--since", "1h", "--table", "events"])
        let violations = events.out.split(whereSeparator: \.isNewline).filter { $0.contains(",violation,") }
        #expect(
            violations.count == 1 && violations[0].contains("cold room temperature")
                && violations[0].contains("E008010000004212")
                && violations[0].contains("is above 20"), "\(events.out)\(events.err)")
    }
}
