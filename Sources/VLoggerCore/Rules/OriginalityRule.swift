/// `kind = "originality"`, `expect = "genuine"`: the tag's originality signature must verify under its
/// manufacturer's published key (docs/reference/originality-signatures.md). A chip without a signature vlogger can
/// check, a missing or malformed signature, or one that does not verify (a clone) is a violation. The signature is
/// read and checked once per UID while the gateway runs (it does not change); the verdict is kept in the store's
/// tags table. Give it a `match` (a model, a manufacturer) so that it judges only chips that should be signed.
public struct OriginalityRule: RuleKind {
    public static let kind = "originality"
    public static let keys = ["expect"]

    public static func parse(_ s: RuleSection) -> OriginalityRule? {
        let expect = s.string("expect") ?? "genuine"
        guard expect == "genuine" else {
            s.issue("expect", "expect: \"genuine\" is the only value (the signature must verify)")
            return nil
        }
        return OriginalityRule()
    }

    public var needs: [RuleNeed] { [.originality] }

    public func evaluate(_ t: TagFacts, register: AssetRegister?) -> RuleOutcome {
        guard let verdict = t.originality else { return .notEvaluated("the signature was not read this cycle") }
        return verdict.isGenuine ? .pass : .violation("originality: \(verdict)")
    }
}
