// The OPC UA server's benchmark (issue 49), driven by bench/opcua/bench.sh: the gateway's namespace over a field
// state whose 100 tags each get a new value every 100 ms (the value is the time it was taken, in ms since 1970,
// so a subscriber measures its own latency), served on loopback. Prints the server's CPU share and its Publish
// latency (from a value's sampling to the Publish answer that carries it) over the window. Not part of
// `swift test`.
import FieldState
import Foundation
import ISO15693
import Logging
import OPCUA
import OPCUAServer
import VLoggerModel
import VLoggerOPCUA

#if canImport(Glibc)
    import Glibc
#endif

let args = CommandLine.arguments
let seconds = args.count > 1 ? Double(args[1]) ?? 40 : 40
let tags = 100
let uids = try (0..<tags).map { i throws(FrameError) in try UID(UInt64(0xE004_0100_0000_0000) | UInt64(i)) }
let state = FieldState(readers: [FieldState.Reader(id: "bench", location: "bench", intervalMs: 100)])
var logger = Logger(label: "opcua-bench")
logger.logLevel = .warning
let config = ServerConfiguration(
    host: "127.0.0.1", port: 0, applicationUri: "urn:vlogger:bench", applicationName: "bench", identity: nil,
    security: [EndpointSecurity(.none, .none)])
let space = try AddressSpace.standard(applicationUri: "urn:vlogger:bench")
let core = ServerCore(configuration: config, addressSpace: space, logger: logger)
let namespace = GatewayNamespace(space: space, state: state, gateway: "bench", site: nil, post: { core.post($0) })

func feed() {
    let now = Millis(Date().timeIntervalSince1970 * 1000)
    for uid in uids {
        state.readingTaken(
            Reading(
                time: now, gateway: "bench", reader: "bench", location: "bench", uid: uid, first: BlockNumber(0),
                count: 1, data: [0, 0, 0, 0], decoded: [("value", .number(Double(now)))]),
            asset: nil)
    }
}
feed()
let server = OPCUAServer(core: core)
let port = try await server.start()
FileHandle.standardOutput.write(
    Data(
        ("port \(port)\nnodes " + uids.map { namespace.id("Tags/\($0)/value").description }.joined(separator: ",")
            + "\n")
            .utf8))

func cpuSeconds() -> Double {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) / 1e6 + Double(u.ru_stime.tv_sec)
        + Double(u.ru_stime.tv_usec) / 1e6
}

// The subscriber connects during the first 10 s; the window is measured after that.
let start = Date()
var windowStart: (wall: Date, cpu: Double)?
while Date().timeIntervalSince(start) < seconds {
    try await Task.sleep(for: .milliseconds(100))
    feed()
    if windowStart == nil, Date().timeIntervalSince(start) >= 10 {
        windowStart = (Date(), cpuSeconds())
        _ = core.publishLatency.drain()
    }
}
let end = (Date(), cpuSeconds())
let latencies = core.publishLatency.drain().sorted()
func pct(_ p: Double) -> Double {
    latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] * 1000
}
if let w = windowStart {
    let share = (end.1 - w.cpu) / end.0.timeIntervalSince(w.wall)
    print(
        String(
            format:
                "server: CPU %.1f %% of one core over %.0f s; Publish latency (sampled → answered) p50 %.1f ms, p99 %.1f ms (%d Publish answers)",
            share * 100, end.0.timeIntervalSince(w.wall), pct(0.5), pct(0.99), latencies.count))
}
await server.stop()
