// Stand-alone fuzzer for every ISO 15693 decoder: `swift run -c release iso15693-fuzz [count] [seed]`.
// A trap ends the process (non-zero exit); a clean run prints the tally.
import ISO15693Fuzzing

let args = CommandLine.arguments
let count = args.count > 1 ? Int(args[1]) ?? 1_000_000 : 1_000_000
let seed = args.count > 2 ? UInt64(args[2]) ?? 15693 : 15693
var fuzzer = DecoderFuzzer(seed: seed)
let tally = fuzzer.run(count)
print(
    "iso15693-fuzz: \(tally.inputs) inputs (seed \(seed)), \(tally.accepted) accepted by some decoder, \(tally.rejected) rejected by all, no trap"
)
