import Foundation
import TestDrivers
import Testing
#if canImport(Glibc)
    import Glibc
#endif
@testable import VLoggerCLI
import VLoggerCore

/// `vlogger doctor`: each check passes on a good gateway and fails, with advice, on the fault it is for.
@Suite(.drivers) struct DoctorTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A configuration in a scratch folder over the demo field, with a store path and a listen address.
    func setup(listen: String? = nil, store: String? = nil, extra: String = "") throws -> (dir: URL, config: String) {
        let dir = URL(fileURLWithPath: scratchPath("x")).deletingLastPathComponent()
        let field = Self.root.appendingPathComponent("Config/demo-field").path
        var text = """
            [gateway]
            id = "gw-doctor"
            [[reader]]
            id = "bench"
            driver = "sim"
            field = "\(field)"
            [store]
            path = "\(store ?? dir.appendingPathComponent("vlogger.db").path)"

            """
        if let listen { text += "[service]\nlisten = \"\(listen)\"\n" }
        text += extra
        let path = dir.appendingPathComponent("vlogger.toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (dir, path)
    }

    func status(_ checks: [Doctor.Check], _ name: String) -> Doctor.Check.Status? {
        checks.first { $0.name == name }?.status
    }

    @Test func aGoodGatewayPassesEveryCheck() throws {
        let (_, config) = try setup()
        var d = Doctor(configPath: config)
        d.clockState = { .synchronized }
        let checks = d.run()
        #expect(checks.allSatisfy { $0.status == .pass }, "\(checks)")
        #expect(checks.map(\.name) == ["config", "reader bench", "store folder", "store", "disk", "secrets", "clock"])
        #expect(checks[1].detail.contains("8 tags in the field"))
    }

    @Test func eachFaultFailsItsCheckWithAdvice() throws {
        // An unsynchronised clock.
        let (dir, config) = try setup()
        var d = Doctor(configPath: config)
        d.clockState = { .unsynchronized }
        let clock = try #require(d.run().first { $0.name == "clock" })
        #expect(clock.status == .fail && clock.advice.contains("timedatectl set-ntp true"))
        // A configuration that does not load: one failing check naming the line, then only the clock.
        try "[polling]\ninterval = \"soon\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let bad = d.run()
        #expect(
            bad.map(\.name) == ["config", "clock"] && bad[0].status == .fail && bad[0].detail.contains(":2"), "\(bad)")
        // A store folder that does not exist; a damaged store file.
        let (_, c2) = try setup(store: dir.appendingPathComponent("missing/vlogger.db").path)
        #expect(status(Doctor(configPath: c2).run(), "store folder") == .fail)
        let damaged = dir.appendingPathComponent("damaged.db").path
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: damaged))
        let (_, c3) = try setup(store: damaged)
        let store = try #require(Doctor(configPath: c3).run().first { $0.name == "store" })
        #expect(store.status == .fail && !store.advice.isEmpty, "\(store)")
        // Too little free disk (a threshold above what any test machine has).
        var tight = Doctor(configPath: c3)
        tight.minimumFreeBytes = Int64.max / 2
        #expect(status(tight.run(), "disk") == .fail)
        // A pcsc reader that is not there (with or without a pcscd on this machine), and the pcscd check pointed
        // at a socket path where nothing listens.
        let (_, c4) = try setup(
            extra: "[[reader]]\nid = \"desk\"\ndriver = \"pcsc\"\ndevice = \"no such reader 4711\"\n")
        var pcsc = Doctor(configPath: c4)
        pcsc.environment["PCSCLITE_CSOCK_NAME"] = dir.appendingPathComponent("no-pcscd.comm").path
        let checks = pcsc.run()
        #expect(
            status(checks, "pcscd") == .fail && status(checks, "reader desk") == .fail
                && status(checks, "reader bench") == .pass)
    }

    @Test func theListenAddressIsFreeOrHeldByAnotherProgram() throws {
        // Hold a loopback port with a plain socket (not a vlogger service): the check fails and says who to ask.
        // Close-on-exec: a child another test starts meanwhile (a postmaster lives on) must not inherit the port.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        // Closed once only: a second close would close whatever another test opened meanwhile under the same
        // number (a store's SQLite file: its next read or lock failed with a disk I/O error, 266 and 2314).
        var fdOpen = true
        defer { if fdOpen { close(fd) } }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        // A port below Linux's ephemeral range (32768–60999 by default): once this test closes it, no outgoing
        // connection of another test can take it before the "free" check.
        var bound: Int32 = -1
        for _ in 0..<200 where bound != 0 {
            addr.sin_port = UInt16(UInt16.random(in: 20_000...29_999)).bigEndian
            bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        #expect(bound == 0)
        #expect(listen(fd, 1) == 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        let port = UInt16(bigEndian: addr.sin_port)
        let (_, held) = try setup(listen: "127.0.0.1:\(port)")
        let check = try #require(Doctor(configPath: held).run().first { $0.name == "listener" })
        #expect(check.status == .fail && check.detail.contains("in use"), "\(check)")
        close(fd)
        fdOpen = false
        let (_, free) = try setup(listen: "127.0.0.1:\(port)")
        #expect(status(Doctor(configPath: free).run(), "listener") == .pass)
        let (_, nonsense) = try setup(listen: "203.0.113.7:8080")  // TEST-NET-3: not an address of this machine
        #expect(status(Doctor(configPath: nonsense).run(), "listener") == .fail)
    }
}
