import Foundation
import ISO15693
import Readers
import TagImages
import TestDrivers
import Testing
import VLoggerModel
import VLoggerStore

@testable import TagSimulator
@testable import VLoggerCore
import DriverSim

/// The agent and NXP privacy mode (`[security] privacy-tags`; docs/reference/tag-passwords.md): a tag in privacy mode
/// answers nothing but GET RANDOM NUMBER and SET PASSWORD (NXP SLIX2 data sheet SL2S2602 §9.5.3.9), so the agent gives
/// the listed tags' privacy password before the inventory — without a UID by default (as Proxmark3, Flipper and the
/// PN5180 library do: one tag at a time), or addressed — and the tag is read like any other until it leaves.
@Suite(.serialized, .drivers) struct PrivacyAgentTests {
    static let first = "E004010812340001"
    static let second = "E004010812340002"
    static let password = "0F0F0F0F"

    struct Rig {
        let agent: Agent
        let store: Store
        let field: SimulatedField
        let tags: [SimulatedTag]
        let trace: () -> [String]
    }

    static func privacyTag(_ uid: String, password: String = password) throws -> SimulatedTag {
        var blocks = Array(repeating: [UInt8](repeating: 0, count: 4), count: 80)
        blocks[2] = [0x50, 0x41, 0x4C, 0x37]
        var image = try TagImage(
            uid: UID(parsing: uid), blockSize: 4, blocks: blocks, icReference: 0x01, profileID: "icode-slix2")
        image.nxpPasswords[NXPSecurity.privacyPassword] = try Hex.parse(password)
        image.privacy = true
        return SimulatedTag(image: image, profile: .icodeSLIX2)
    }

    /// The privacy tags `tags` in the field, the listed UIDs `listed` with `secrets` (TOML lines of `[[tag]]` tables).
    static func rig(tags: [SimulatedTag], listed: [String], secrets: String, unlock: String? = nil) throws -> Rig {
        let dir = URL(fileURLWithPath: scratchPath("privacy-agent"))
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let field = SimulatedField()
        for t in tags { field.add(t) }
        let file = try SecurityRig.secrets(secrets, at: dir.appendingPathComponent("secrets.toml").path)
        let text = """
            [gateway]
            id = "gw-test"
            [polling]
            interval = "1s"
            departure-cycles = 1
            [[plan]]
            name = "pallet"
            match.model = "ICODE SLIX2"
              [[plan.read]]
              first = 2
            [security]
            secrets-file = "\(file)"
            privacy-tags = [\(listed.map { "\"\($0)\"" }.joined(separator: ", "))]
            privacy-interval = "1s"
            \(unlock.map { "privacy-unlock = \"\($0)\"" } ?? "")
            """
        let r = try SecurityRig(config: text, dir: dir, field: field, store: "privacy.db")
        return Rig(agent: r.agent, store: r.store, field: field, tags: tags, trace: r.trace)
    }

    @Test func aListedPrivacyTagIsMadeVisibleAndRead() throws {
        let tag = try Self.privacyTag(Self.first)
        let r = try Self.rig(
            tags: [tag], listed: [Self.first],
            secrets: "[[tag]]\nuid = \"\(Self.first)\"\nnxp-privacy = \"\(Self.password)\"\n")
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        // Found by the first cycle's inventory, read in each of the three; one SET PASSWORD (privacy, 0x04), without
        // a UID, and none while the tag stays in the field.
        #expect(try r.store.readings().count == 3)
        #expect(try r.store.events(kind: .arrival).map(\.uid) == [try UID(parsing: Self.first)])
        #expect(tag.passwordAttempts == 1)
        let set = r.trace().filter { $0.contains("NXP Set Password") }
        #expect(
            set.count == 1 && set[0].contains("password privacy (0x04)") && !set[0].contains("addressed to"), "\(set)")
        #expect(!r.trace().contains { $0.contains("0F 0F 0F 0F") })
        // It leaves (its power goes, privacy mode is back) and returns: opened again.
        r.field.remove(tag.uid)
        r.agent.run(cycles: 2, stop: StopSignal())
        r.field.add(tag)
        #expect(tag.hidden)
        r.agent.run(cycles: 2, stop: StopSignal())
        r.agent.writer.commitNow()
        #expect(tag.passwordAttempts == 2 && !tag.hidden)
        #expect(try r.store.events(kind: .arrival).count == 2)
    }

    @Test func severalPrivacyTagsWithoutAUIDCollideAndNothingIsSent() throws {
        let a = try Self.privacyTag(Self.first), b = try Self.privacyTag(Self.second)
        let r = try Self.rig(
            tags: [a, b], listed: [Self.first, Self.second],
            secrets: "[[tag]]\nuid = \"E0040108*\"\nnxp-privacy = \"\(Self.password)\"\n")
        r.agent.run(cycles: 3, stop: StopSignal())
        r.agent.writer.commitNow()
        #expect(a.passwordAttempts == 0 && b.passwordAttempts == 0)
        let events = try r.store.events(kind: .error).filter { $0.name == "privacy" }
        #expect(events.count == 1 && events[0].detail.contains("several tags answered"), "\(events.map(\.detail))")
        #expect(try r.store.readings().isEmpty)
    }

    @Test func addressedUnlockingOpensEachListedTag() throws {
        let a = try Self.privacyTag(Self.first), b = try Self.privacyTag(Self.second, password: "11223344")
        let r = try Self.rig(
            tags: [a, b], listed: [Self.first, Self.second],
            secrets: """
                [[tag]]
                uid = "\(Self.first)"
                nxp-privacy = "\(Self.password)"
                [[tag]]
                uid = "\(Self.second)"
                nxp-privacy = "11223344"
                """, unlock: "addressed")
        r.agent.run(cycles: 2, stop: StopSignal())
        r.agent.writer.commitNow()
        #expect(a.passwordAttempts == 1 && b.passwordAttempts == 1 && !a.hidden && !b.hidden)
        #expect(Set(try r.store.readings().map(\.uid)) == [Self.first, Self.second])
        #expect(r.trace().filter { $0.contains("NXP Set Password") }.allSatisfy { $0.contains("addressed to") })
    }

    @Test func aWrongPrivacyPasswordIsGivenOnce() throws {
        let tag = try Self.privacyTag(Self.first)
        let r = try Self.rig(
            tags: [tag], listed: [Self.first], secrets: "[[tag]]\nuid = \"\(Self.first)\"\nnxp-privacy = \"00000000\"\n"
        )
        r.agent.run(cycles: 4, stop: StopSignal())
        r.agent.writer.commitNow()
        #expect(tag.passwordAttempts == 1 && tag.hidden && tag.state != .muted)
        let rejected = try r.store.events(kind: .error).filter { $0.name == "password-rejected" }
        #expect(
            rejected.count == 1 && rejected[0].severity == .critical && rejected[0].detail.contains("field was reset"))
    }

    /// An ordinary ICODE tag answers GET RANDOM NUMBER too: it is made quiet before the non-addressed password, so
    /// only the tag in privacy mode gets it, and the ordinary tag is read as before.
    @Test func anOrdinaryTagInTheFieldIsNotGivenThePassword() throws {
        let hidden = try Self.privacyTag(Self.first)
        var plain = try Self.privacyTag("E004010812340009").image
        plain.privacy = false
        plain.nxpPasswords = [:]
        let ordinary = SimulatedTag(image: plain, profile: .icodeSLIX2)
        let r = try Self.rig(
            tags: [hidden, ordinary], listed: [Self.first],
            secrets: "[[tag]]\nuid = \"\(Self.first)\"\nnxp-privacy = \"\(Self.password)\"\n")
        r.agent.run(cycles: 2, stop: StopSignal())
        r.agent.writer.commitNow()
        #expect(hidden.passwordAttempts == 1 && !hidden.hidden && ordinary.passwordAttempts == 0)
        #expect(try r.store.events(kind: .error).isEmpty)
        #expect(Set(try r.store.readings().map(\.uid)) == [Self.first, "E004010812340009"])
        // The listed tag leaves: the ordinary one alone gets no password, and no rejection follows.
        r.field.remove(hidden.uid)
        r.agent.run(cycles: 3, stop: StopSignal())
        let errors = try r.store.events(kind: .error)
        #expect(ordinary.passwordAttempts == 0 && errors.isEmpty)
    }

    @Test func theSettingsAreChecked() throws {
        func issues(_ security: String) -> String {
            do {
                _ = try AgentConfig.parse("[gateway]\nid = \"g\"\n[security]\n\(security)\n", file: "/tmp/x.toml")
                return ""
            } catch { return "\(error)" }
        }
        #expect(issues("privacy-tags = [\"\(Self.first)\"]").contains("set security.secrets-file"))
        #expect(issues("secrets-file = \"s.toml\"\nprivacy-tags = [\"E002260012345678\"]").contains("not an NXP tag"))
        #expect(issues("secrets-file = \"s.toml\"\nprivacy-unlock = \"loud\"").contains("'loud' is not one of"))
        #expect(issues("secrets-file = \"s.toml\"\nprivacy-interval = \"100ms\"").contains("at least 1s"))
    }
}
