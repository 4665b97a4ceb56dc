import Foundation
import ISO15693
import Readers
import TagSecurity

/// The rules on one reader's tags: what each rule needs beyond blocks (custom commands' answers, the originality
/// verdict), the evaluation, and a violation as a state: an event when it starts, another when it ends (the rule
/// passes again, or the tag leaves), none in between.
final class RuleEvaluation {
    var rules: RuleSet
    var register: AssetRegister?
    private let client: ISO15693Client
    private let log: AgentLog
    /// Rules each tag is violating now.
    private var violating: [UID: Set<String>] = [:]
    /// Originality verdicts by UID (`originality(_:_:)`).
    private var verdicts: [UID: Originality.Verdict] = [:]

    init(rules: RuleSet, register: AssetRegister?, client: ISO15693Client, log: AgentLog) {
        self.rules = rules
        self.register = register
        self.client = client
        self.log = log
    }

    /// The rules that apply to a tag.
    func applicable(uid: UID, model: ICModel?) -> [Rule] {
        rules.rules.filter { $0.match.matches(uid: uid, model: model) }
    }

    /// The verdict on a tag's signature, when it was checked.
    func verdict(_ uid: UID) -> Originality.Verdict? { verdicts[uid] }

    /// What the rules need besides the blocks read (custom commands, the originality verdict), then the rules.
    func check(_ applicable: [Rule], _ facts: TagFacts, memory: TagMemory) {
        var facts = facts
        answerCommands(facts.uid, applicable, &facts)
        if applicable.contains(where: \.needsOriginality) { facts.originality = originality(facts.uid, memory) }
        evaluate(applicable, facts)
    }

    /// Sends the custom commands the tag's rules need (each once per cycle, only to tags of its manufacturer) and
    /// keeps their answers for the rules; a command that fails leaves its rules not evaluated this cycle.
    private func answerCommands(_ uid: UID, _ applicable: [Rule], _ facts: inout TagFacts) {
        var sent = Set<String>()
        for command in applicable.flatMap(\.neededCommands)
        where command.manufacturer == uid.manufacturer && sent.insert(command.name).inserted {
            if let answer = try? client.custom(
                uid, code: command.code, manufacturer: command.manufacturer, parameters: command.parameters)
            {
                facts.answers[command.name] = answer
            }
        }
    }

    /// The verdict on a tag's originality signature: checked once per UID while the agent runs (a signature does not
    /// change), again next cycle when the tag did not answer cleanly.
    private func originality(_ uid: UID, _ memory: TagMemory) -> Originality.Verdict? {
        if let known = verdicts[uid] { return known }
        guard let verdict = try? OriginalityCheck.check(client, uid, model: memory.model) else { return nil }
        if verdicts.count >= 100_000 { verdicts.removeAll() }  // bounded over months
        verdicts[uid] = verdict
        return verdict
    }

    /// Evaluates the rules on what is known of the tag; a violation's start and end are events.
    func evaluate(_ applicable: [Rule], _ facts: TagFacts) {
        var current = violating[facts.uid] ?? []
        for rule in applicable {
            switch rule.evaluate(facts, register: register) {
            case .pass:
                if current.remove(rule.name) != nil {
                    log.event(
                        .violationEnded, uid: facts.uid, name: rule.name, severity: .info,
                        detail: "\(facts.uid) passes '\(rule.name)' again")
                }
            case let .violation(why):
                if current.insert(rule.name).inserted {
                    log.counters.violations += 1
                    log.event(.violation, uid: facts.uid, name: rule.name, severity: rule.severity, detail: why)
                }
            case .notEvaluated:
                break
            }
        }
        violating[facts.uid] = current
    }

    /// A tag left the field: the violations it had end.
    func left(_ uid: UID) {
        for rule in (violating.removeValue(forKey: uid) ?? []).sorted() {
            log.event(
                .violationEnded, uid: uid, name: rule, severity: .info,
                detail: "\(uid) left the field while violating '\(rule)'")
        }
    }
}
