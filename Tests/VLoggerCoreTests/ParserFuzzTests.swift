import Foundation
import TestDrivers
import Testing
@testable import VLoggerCore
import ParserFuzzing

/// A few thousand mutated inputs per parser of outside input (the stand-alone `vlogger-fuzz` runs a
/// million per target). Reaching the end is the assertion: a trap ends the test process.
@Suite(.drivers) struct ParserFuzzTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func everyParserTakesMutatedInputWithoutTrapping() {
        let targets = ParserFuzzer.targets(config: Self.root.appendingPathComponent("Config"))
        #expect(
            Set(targets.map(\.name)) == [
                "toml", "config", "rules", "register", "scenario", "image-vlogger", "image-proxmark3",
                "image-flipper", "ndef", "ndef-memory", "write-request", "strict-json", "blocks-file", "feig-frame",
                "feig-reply", "feig-device", "decoded-json", "sparkplug-ncmd", "sparkplug-state", "mqtt-instance",
                "stream-query",
                "read-query", "originality",
                "values", "template", "sensor-answers", "secrets", "st-areas", "opcua-binary", "opcua-transport",
                "opcua-users", "opcua-server", "opcua-methods", "pcsc-answers", "pn5180-answers", "outbox-json-row",
                "mqtt-packets", "mqtt-broker-url",
            ])
        for target in targets {
            #expect(!target.seeds.isEmpty, "\(target.name) has no seeds")
            var fuzzer = ParserFuzzer(seed: 20261122)
            let t = fuzzer.run(target, 2000)
            // Mutations keep some inputs valid and break others: both verdicts must occur.
            #expect(t.inputs == 2000 && t.accepted > 0 && t.rejected > 0, "\(target.name): \(t)")
        }
    }
}
