import Foundation
import ISO15693
import Readers
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import VLoggerCore
import VLoggerConfig

/// A rule kind written here, outside the module: one type and one registration (issue "Drivers as plug-ins,
/// services that own their parts, rule kinds as types", item 3). It checks one byte of a block for evenness.
struct EvenByteRule: RuleKind {
    static let kind = "test-even-byte"
    static let keys = ["block", "index"]
    var block: BlockNumber
    var index: Int

    static func parse(_ s: RuleSection) -> EvenByteRule? {
        guard let b = s.require("block", s.block), let i = s.require("index", { s.integer($0, in: 0...31) }) else {
            return nil
        }
        return EvenByteRule(block: b, index: Int(i))
    }

    var needs: [RuleNeed] { [.blocks(PlanRead(first: block, count: 1))] }

    func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        guard let data = t.blocks[block.int], index < data.count else { return .notEvaluated("block not read") }
        return data[index] % 2 == 0 ? .pass : .violation("byte \(index) of block \(block) is odd")
    }
}

/// A kind that needs a custom command's answer: NXP's READ SIGNATURE (command code 0xBD, manufacturer code 0x04;
/// NXP ICODE SLIX2 data sheet, "READ SIGNATURE"), its answer kept under "signature".
struct SignaturePresentRule: RuleKind {
    static let kind = "test-signature-present"
    static let keys: [String] = []
    static func parse(_ s: RuleSection) -> SignaturePresentRule? { SignaturePresentRule() }
    var needs: [RuleNeed] { [.command(TagCommand(name: "signature", code: 0xBD, manufacturer: .nxp))] }
    func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        guard let s = t.answers["signature"] else { return .notEvaluated("no signature answered") }
        return s.count == 32 ? .pass : .violation("a signature of \(s.count) bytes")
    }
}

/// A kind that would send NXP's WRITE PASSWORD (0xB4): rules only read, so a rules file that uses it is refused.
struct WritesPasswordRule: RuleKind {
    static let kind = "test-writes-password"
    static let keys: [String] = []
    static func parse(_ s: RuleSection) -> WritesPasswordRule? { WritesPasswordRule() }
    var needs: [RuleNeed] {
        [.command(TagCommand(name: "pw", code: 0xB4, manufacturer: .nxp, parameters: [2, 0, 0, 0, 0]))]
    }
    func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome { .pass }
}

@Suite(.drivers) struct RuleKindTests {
    /// Security commands that change a tag (WRITE PASSWORD here) are never sent by the agent: a rule kind that
    /// asks for one is refused when the rules are read, with the rule's line.
    @Test func aKindThatWouldWriteIsRefused() {
        RuleKinds.register(WritesPasswordRule.self)
        #expect {
            try RuleSet.parse("[[rule]]\nname = \"pw\"\nkind = \"test-writes-password\"\n", file: "r.toml")
        } throws: {
            "\($0)".contains("r.toml:1") && "\($0)".contains("NXP Write Password")
                && "\($0)".contains("rules only read")
        }
    }

    /// Registered once, parsed from a rules file like a built-in kind (its keys checked, a key of another kind
    /// refused with its line), planned into the tag's reads and evaluated by the agent on the demo field: the
    /// cage tag's block 0xF8 is 66 08 C2 01 42 37 00 01 (Config/demo-field), so byte 1 (0x08) is even and byte 3
    /// (0x01) odd.
    @Test func aKindDefinedOutsideIsParsedPlannedAndEvaluated() throws {
        RuleKinds.register(EvenByteRule.self)
        #expect(RuleSet.kinds.contains("test-even-byte") && RuleSet.kinds.contains("range"))
        let rules = """
            [[rule]]
            name = "byte 1 even"
            kind = "test-even-byte"
            block = 0xF8
            index = 1
            match.model = "MB89R118"
            [[rule]]
            name = "byte 3 even"
            kind = "test-even-byte"
            block = 0xF8
            index = 3
            match.model = "MB89R118"
            """
        let set = try RuleSet.parse(rules, file: "rules.toml")
        #expect(set.rules.count == 2 && set.rules[0].neededReads == [PlanRead(first: 0xF8, count: 1)])
        #expect(throws: ConfigError.self) {
            try RuleSet.parse(rules + "\nfield = \"x\"\n", file: "rules.toml")
        }
        #expect {
            try RuleSet.parse(
                "[[rule]]\nname = \"x\"\nkind = \"test-even-byte\"\nblock = 0xF8\nindex = 1\nmin = 2\n", file: "r.toml")
        } throws: {
            "\($0)".contains(
                "r.toml:6: rule[1]: 'min' does not apply to a test-even-byte rule (it takes: block, index)")
        }
        let r = try AgentTests().rig(rules: rules) { $0.uid.description == "E008010000004212" }
        r.agent.run(cycles: 1, stop: StopSignal())
        r.agent.writer.commitNow()
        let violations = try r.store.events(kind: .violation)
        #expect(violations.map(\.name) == ["byte 3 even"], "\(violations)")
        #expect(violations.first?.detail == "byte 3 of block 0xF8 is odd")
    }

    /// A kind that needs a command: the agent sends it to tags of its manufacturer only (the NXP SLIX2s of the
    /// demo field, not the Fujitsu cage tag) as an addressed custom command (flags, 0xBD, 0x04, the UID), once per
    /// tag and cycle; the simulator does not implement it, so the rule is not evaluated (no violation).
    @Test func aKindThatNeedsACommandGetsItSent() throws {
        RuleKinds.register(SignaturePresentRule.self)
        let rules = "[[rule]]\nname = \"signed\"\nkind = \"test-signature-present\"\n"
        let r = try AgentTests().rig(rules: rules)
        var frames: [[UInt8]] = []
        r.agent.session.reader.trace = { e in if e.direction == .readerToTag { frames.append(e.bytes) } }
        r.agent.run(cycles: 1, stop: StopSignal())
        r.agent.writer.commitNow()
        let signatureRequests = frames.filter { $0.count >= 3 && $0[1] == 0xBD && $0[2] == 0x04 }
        let nxp = r.field.tags.filter { $0.uid.manufacturer == .nxp }.count
        #expect(nxp > 0 && signatureRequests.count == nxp, "\(signatureRequests.count) requests, \(nxp) NXP tags")
        #expect(try r.store.events(kind: .violation).isEmpty)
    }
}
