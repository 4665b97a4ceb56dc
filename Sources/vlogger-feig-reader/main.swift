// vlogger-feig-reader: a FEIG OBID ID ISC reader emulated in front of a simulated field, for the feig driver's
// tests and demos without hardware. It answers FEIG host frames (Tests/FEIGTests/FEIG-FACTS.md) on a loopback
// TCP port (a LAN reader) or on a pseudo-terminal (a serial reader), with faults injected at chosen requests.
// Not part of the gateway; a test tool.
#if canImport(Glibc)
    import Glibc
#endif
import CHost
import FEIG
import FEIGEmulator
import ISO15693
import Foundation
import TagSimulator

func usage() -> Never {
    FileHandle.standardError.write(
        Data(
            """
            usage: vlogger-feig-reader [--field DIR] (--tcp PORT | --pty) [--address N] [--fault KIND@N]... [--buffered N [--buffer-blocks F+C]]
              Emulates a FEIG ID ISC reader (reports an ID ISC.MR102) with the tags of DIR (default Config/demo-field)
              in its field. --tcp PORT listens on 127.0.0.1:PORT (0: a free port); --pty opens a pseudo-terminal.
              The first line printed says where: "tcp://127.0.0.1:PORT" or the pty's path (use it as the device).
              --address N: the bus address (COM-ADR, 0…254) it answers besides 255.
              --fault KIND@N: the Nth request gets KIND: no-answer, corrupt-crc, garbled, truncated, restart, or
              status=0xNN (that STATUS instead of the answer). Repeatable.
              --buffered N: buffered read mode, the buffer holding N rounds of the reader's own reads of every tag
              (readings from before the gateway started); --buffer-blocks FIRST+COUNT which blocks (default 0+1).

            """.utf8))
    exit(2)
}

struct Options {
    var fieldPath = "Config/demo-field"
    var tcpPort: Int?
    var pty = false
    var address: UInt8 = 0
    var faults: [(FEIGReaderEmulator.Fault, Int)] = []
    /// Buffered read mode with this many of the reader's own rounds in the buffer at start.
    var bufferedRounds: Int?
    var bufferBlock: UInt16 = 0
    var bufferBlocks = 1
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("vlogger-feig-reader: \(message)\n".utf8))
    exit(2)
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func parseArguments(_ arguments: [String]) -> Options {
    var o = Options()
    var args = arguments[...]
    func value(_ name: String) -> String {
        guard let v = args.popFirst() else { fail("\(name) needs a value") }
        return v
    }
    while let a = args.popFirst() {
        switch a {
        case "--field": o.fieldPath = value(a)
        case "--tcp":
            guard let p = Int(value(a)), (0...65535).contains(p) else { fail("--tcp needs a port number 0…65535") }
            o.tcpPort = p
        case "--pty": o.pty = true
        case "--address":
            guard let n = UInt8(value(a)), n < 255 else { fail("--address needs 0…254") }
            o.address = n
        case "--fault":
            let spec = value(a)
            guard let at = spec.lastIndex(of: "@"), let n = Int(spec[spec.index(after: at)...]), n >= 1 else {
                fail("--fault \(spec): KIND@N with N ≥ 1")
            }
            let kind = String(spec[..<at])
            let fault: FEIGReaderEmulator.Fault
            switch kind {
            case "no-answer": fault = .noAnswer
            case "corrupt-crc": fault = .corruptCRC
            case "garbled": fault = .garbled
            case "truncated": fault = .truncated
            case "restart": fault = .restart
            default:
                guard kind.hasPrefix("status=0x"), let s = UInt8(kind.dropFirst("status=0x".count), radix: 16) else {
                    fail("--fault \(spec): KIND is no-answer, corrupt-crc, garbled, truncated, restart or status=0xNN")
                }
                fault = .status(s)
            }
            o.faults.append((fault, n))
        case "--buffered":
            guard let n = Int(value(a)), (0...1000).contains(n) else {
                fail("--buffered needs a number of rounds 0…1000")
            }
            o.bufferedRounds = n
        case "--buffer-blocks":
            let spec = value(a)
            let parts = spec.split(separator: "+")
            guard parts.count == 2,
                let first = UInt16(
                    parts[0].hasPrefix("0x") ? String(parts[0].dropFirst(2)) : String(parts[0]),
                    radix: parts[0].hasPrefix("0x") ? 16 : 10),
                let count = Int(parts[1]), (1...32).contains(count)
            else { fail("--buffer-blocks FIRST+COUNT, e.g. 0xF8+1") }
            o.bufferBlock = first
            o.bufferBlocks = count
        case "-h", "--help": usage()
        default: fail("unknown argument \(a)")
        }
    }
    return o
}

// A parent may have started this with signals blocked (a test runner's thread): SIGTERM must end it.
var unblocked = sigset_t()
sigemptyset(&unblocked)
sigprocmask(SIG_SETMASK, &unblocked, nil)

let options = parseArguments(Array(CommandLine.arguments.dropFirst()))
let (fieldPath, tcpPort, pty, address, faults) = (
    options.fieldPath, options.tcpPort, options.pty, options.address, options.faults
)
guard (tcpPort != nil) != pty else { fail("give one of --tcp PORT or --pty") }

let folder: FieldFolder
do { folder = try FieldFolder(url: URL(fileURLWithPath: fieldPath)) } catch { fail("\(fieldPath): \(error)") }
let emulator = FEIGReaderEmulator(field: folder.field)
emulator.address = address
for (f, n) in faults { emulator.inject(f, atRequest: n) }
if let rounds = options.bufferedRounds {
    for _ in 0..<rounds {
        emulator.readIntoBuffer(first: BlockNumber(options.bufferBlock), count: options.bufferBlocks)
    }
    emulator.bufferedReadMode = true
}

if let tcpPort {
    let server: FEIGTCPServer
    do { server = try FEIGTCPServer(emulator: emulator, port: tcpPort) } catch { fail("\(error)") }
    say("tcp://127.0.0.1:\(server.port)")
    server.start()
    while true { sleep(3600) }
} else {
    var name = [CChar](repeating: 0, count: 128)
    let master = vlogger_open_pty(&name, name.count)
    guard master >= 0 else { fail("no pseudo-terminal: \(String(cString: strerror(errno)))") }
    say(String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    while true {
        usleep(emulator.serve(fd: master) ? 300_000 : 10_000)
    }
}
