// Stand-alone fuzzer for every parser of outside input above the air protocol (TOML, configuration, rules,
// register, scenario, tag images, NDEF, command-line values):
//   swift run -c release vlogger-fuzz [count per target] [seed] [target…]
// Run from the repository root (the seeds are the files in Config/). A trap ends the process (non-zero
// exit, the target's name is the last line on stderr); a clean run prints one tally per target (stderr, unbuffered).
import Foundation
import ParserFuzzing
import Readers
import VLoggerOutbox

let args = CommandLine.arguments
let count = args.count > 1 ? Int(args[1]) ?? 1_000_000 : 1_000_000
let seed = args.count > 2 ? UInt64(args[2]) ?? 15693 : 15693
let only = Set(args.dropFirst(3))
ReaderDrivers.bootstrap(ParserFuzzer.drivers)
OutputKinds.bootstrap(ParserFuzzer.outputs)
let config = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Config")
for target in ParserFuzzer.targets(config: config) where only.isEmpty || only.contains(target.name) {
    FileHandle.standardError.write(Data("\(target.name): running \(count) inputs …\n".utf8))
    var fuzzer = ParserFuzzer(seed: seed)
    let start = Date()
    let t = fuzzer.run(target, count)
    FileHandle.standardError.write(
        Data(
            "\(target.name): \(t.inputs) inputs, \(t.accepted) accepted, \(t.rejected) rejected, no trap, \(String(format: "%.0f", Date().timeIntervalSince(start))) s\n"
                .utf8))
}
