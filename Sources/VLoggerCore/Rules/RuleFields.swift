import ISO15693
import VLoggerConfig

extension ReadPlan {
    /// The decoded fields a tag read by this plan can have: the plan's own, NDEF's (`ndef = true`), and the sensor
    /// kinds' (current values, log records), as `AgentConfig.fieldInfos` lists them for the whole configuration.
    public var producedFields: [String] {
        var out = fields.map(\.name)
        if ndef { out += NDEFFields.all }
        if sensorValuesEveryMs != nil { out += SensorKinds.builtIn.flatMap { $0.valueFields.map(\.name) } }
        if sensorLog { out += SensorKinds.builtIn.flatMap { $0.fields.map(\.name) } + SensorLogCollector.fields }
        return out
    }
}

extension UIDPattern {
    /// Whether some UID matches both patterns.
    func overlaps(_ o: UIDPattern) -> Bool {
        switch (isPrefix, o.isPrefix) {
        case (false, false): return prefix == o.prefix
        case (true, false): return o.prefix.hasPrefix(prefix)
        case (false, true): return prefix.hasPrefix(o.prefix)
        case (true, true): return prefix.hasPrefix(o.prefix) || o.prefix.hasPrefix(prefix)
        }
    }
}

extension TagMatch {
    /// Whether some tag could satisfy both matches: false only when they exclude each other by manufacturer, IC
    /// model (each model has one maker: a rule on NXP tags never sees a plan's Fujitsu MB89R118) or UID pattern (an
    /// empty list takes any).
    public func mayOverlap(_ o: TagMatch) -> Bool {
        // The makers each side allows: its manufacturers, narrowed by its models' makers.
        func makers(_ m: TagMatch) -> [ManufacturerCode] {
            let byModel = Array(Set(m.models.map(\.manufacturer)))
            if m.manufacturers.isEmpty { return byModel }
            return byModel.isEmpty ? m.manufacturers : m.manufacturers.filter(byModel.contains)
        }
        let mine = makers(self), theirs = makers(o)
        if (!manufacturers.isEmpty || !models.isEmpty) && mine.isEmpty { return false }
        if (!o.manufacturers.isEmpty || !o.models.isEmpty) && theirs.isEmpty { return false }
        if !mine.isEmpty && !theirs.isEmpty && !mine.contains(where: theirs.contains) { return false }
        if !models.isEmpty && !o.models.isEmpty && !models.contains(where: o.models.contains) { return false }
        if !uids.isEmpty && !o.uids.isEmpty && !uids.contains(where: { a in o.uids.contains { a.overlaps($0) } }) {
            return false
        }
        func uidsAllow(_ patterns: [UIDPattern], _ makers: [ManufacturerCode]) -> Bool {
            patterns.isEmpty || makers.isEmpty
                || patterns.contains { p in makers.contains { p.mayMatchManufacturer($0) } }
        }
        return uidsAllow(o.uids, mine) && uidsAllow(uids, theirs)
    }
}

extension RuleSet {
    /// Rules that would never be judged: a rule watching a decoded field that no `[[plan]]` decodes (a typo, a
    /// plan removed), or one whose field only plans for other tags decode (their matches exclude the rule's).
    /// Such a rule used to pass `config check` and stay silent for ever (issue 47, item 1).
    public func check(plans: [ReadPlan], configFile: String) -> [ConfigIssue] {
        var out: [ConfigIssue] = []
        var all: [String] = []
        for p in plans { for f in p.producedFields where !all.contains(f) { all.append(f) } }
        for rule in rules {
            guard let field = rule.check.watchedField?.name else { continue }
            let decoding = plans.filter { $0.producedFields.contains(field) }
            if decoding.isEmpty {
                var message =
                    "rule '\(rule.name)' watches the field '\(field)', which no [[plan]] in \(configFile) decodes: it would never be judged"
                if let near = NearestName.nearest(field, in: all) {
                    message += " (did you mean '\(near)'?)"
                }
                message +=
                    all.isEmpty
                    ? "; the configuration has no plan that decodes fields"
                    : "; the plans decode: \(all.joined(separator: ", "))"
                out.append(ConfigIssue(file: file ?? "rules", line: rule.line, message: message))
            } else if !decoding.contains(where: { $0.match.mayOverlap(rule.match) }) {
                let where_ = decoding.map { "'\($0.name)' (\(configFile):\($0.line))" }.joined(separator: ", ")
                out.append(
                    ConfigIssue(
                        file: file ?? "rules", line: rule.line,
                        message:
                            "rule '\(rule.name)' watches '\(field)', but the plans that decode it, \(where_), read none of the tags its [rule.match] selects: it would never be judged"
                    ))
            }
        }
        return out
    }
}
