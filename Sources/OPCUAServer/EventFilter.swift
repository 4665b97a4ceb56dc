import OPCUA

/// An EventFilter's where clause (OPC 10000-4 §7.7: ContentFilter), checked once when the item is made and then
/// applied to each event: the operators Equals, IsNull, GreaterThan, LessThan, GreaterThanOrEqual,
/// LessThanOrEqual, Not, Between, InList, And, Or and OfType, over literal operands, an event's fields (simple
/// attribute operands) and other elements (an element operand names a later element, so nothing loops).
struct WhereClause: Sendable {
    enum Operand: Sendable {
        case literal(Variant)
        case field(SimpleAttributeOperand)
        case element(Int)
    }

    struct Element: Sendable {
        let op: FilterOperator
        let operands: [Operand]
    }

    let elements: [Element]

    /// Why a clause is refused: each element's and operand's status.
    struct Refusal: Error {
        let result: ContentFilterResult
    }

    static let supported: Set<FilterOperator> = [
        .equals, .isNull, .greaterThan, .lessThan, .greaterThanOrEqual, .lessThanOrEqual, .not, .between, .inList,
        .and, .or, .ofType,
    ]

    /// The operand counts each operator takes (§7.7.3, Table 119): nil for "two or more".
    static func arity(_ op: FilterOperator) -> Int? {
        switch op {
        case .isNull, .not, .ofType: return 1
        case .between: return 3
        case .inList: return nil
        default: return 2
        }
    }

    /// The clause, or its result saying which element or operand is wrong (Bad_FilterOperatorUnsupported,
    /// Bad_FilterOperandCountMismatch, Bad_FilterOperandInvalid, Bad_FilterElementInvalid).
    static func make(_ filter: ContentFilter, limits: DecodingLimits) -> Result<WhereClause, Refusal> {
        let raw = filter.elements ?? []
        var out: [Element] = []
        var results: [ContentFilterElementResult] = []
        var bad = false
        for (i, e) in raw.enumerated() {
            let operandsIn = e.filterOperands ?? []
            var statuses: [StatusCode] = []
            var operands: [Operand] = []
            for o in operandsIn {
                if let l = try? LiteralOperand(o, limits: limits) {
                    operands.append(.literal(l.value))
                    statuses.append(.good)
                } else if let a = try? SimpleAttributeOperand(o, limits: limits) {
                    operands.append(.field(a))
                    statuses.append(.good)
                } else if let x = try? ElementOperand(o, limits: limits), Int(x.index) > i, Int(x.index) < raw.count {
                    operands.append(.element(Int(x.index)))
                    statuses.append(.good)
                } else {
                    statuses.append(.badFilterOperandInvalid)
                }
            }
            var status = StatusCode.good
            if !supported.contains(e.filterOperator) {
                status = .badFilterOperatorUnsupported
            } else if !(arity(e.filterOperator).map { operandsIn.count == $0 } ?? (operandsIn.count >= 2)) {
                status = .badFilterOperandCountMismatch
            }
            if statuses.contains(where: \.isBad) { status = .badFilterOperandInvalid }
            if status.isBad { bad = true }
            results.append(ContentFilterElementResult(statusCode: status, operandStatusCodes: statuses))
            out.append(Element(op: e.filterOperator, operands: operands))
        }
        return bad
            ? .failure(Refusal(result: ContentFilterResult(elementResults: results)))
            : .success(WhereClause(elements: out))
    }

    /// Whether `event` passes (no elements: every event does).
    func admits(_ event: ServerEvent, isSubtype: (NodeId, NodeId) -> Bool) -> Bool {
        guard !elements.isEmpty else { return true }
        return evaluate(0, event, isSubtype, depth: 0) == .scalar(.boolean(true))
    }

    private func evaluate(_ i: Int, _ event: ServerEvent, _ isSubtype: (NodeId, NodeId) -> Bool, depth: Int)
        -> Variant
    {
        guard i < elements.count, depth < 64 else { return .null }
        let e = elements[i]
        func value(_ o: Operand) -> Variant {
            switch o {
            case .literal(let v): return v
            case .field(let a): return event.field(a, receivedAt: event.time)
            case .element(let j): return evaluate(j, event, isSubtype, depth: depth + 1)
            }
        }
        func truth(_ o: Operand) -> Bool? {
            if case .scalar(.boolean(let b)) = value(o) { return b }
            return nil
        }
        let v = e.operands.map(value)
        func bool(_ b: Bool?) -> Variant { b.map { .scalar(.boolean($0)) } ?? .null }
        switch e.op {
        case .equals: return bool(Self.compare(v[0], v[1]).map { $0 == 0 })
        case .isNull: return bool(v[0] == .null)
        case .greaterThan: return bool(Self.compare(v[0], v[1]).map { $0 > 0 })
        case .lessThan: return bool(Self.compare(v[0], v[1]).map { $0 < 0 })
        case .greaterThanOrEqual: return bool(Self.compare(v[0], v[1]).map { $0 >= 0 })
        case .lessThanOrEqual: return bool(Self.compare(v[0], v[1]).map { $0 <= 0 })
        case .not: return bool(truth(e.operands[0]).map { !$0 })
        case .between:
            guard let low = Self.compare(v[0], v[1]), let high = Self.compare(v[0], v[2]) else { return bool(nil) }
            return bool(low >= 0 && high <= 0)
        case .inList: return bool(v.dropFirst().contains { Self.compare(v[0], $0) == 0 })
        case .and:
            // Three-valued (§7.7.3): false wins over null.
            let a = truth(e.operands[0])
            let b = truth(e.operands[1])
            if a == false || b == false { return bool(false) }
            return bool(a == true && b == true ? true : nil)
        case .or:
            let a = truth(e.operands[0])
            let b = truth(e.operands[1])
            if a == true || b == true { return bool(true) }
            return bool(a == false && b == false ? false : nil)
        case .ofType:
            guard case .scalar(.nodeId(let type)) = v[0] else { return bool(nil) }
            return bool(isSubtype(event.eventType, type))
        default: return .null
        }
    }

    /// Numbers compare by value whatever their types, strings and other values only when equal.
    static func compare(_ a: Variant, _ b: Variant) -> Int? {
        if let x = MonitoredItem.number(a), let y = MonitoredItem.number(b) { return x < y ? -1 : x > y ? 1 : 0 }
        if case .scalar(.string(let x)) = a, case .scalar(.string(let y)) = b {
            guard let x, let y else { return x == y ? 0 : nil }
            return x < y ? -1 : x > y ? 1 : 0
        }
        if case .scalar(.localizedText(let x)) = a, case .scalar(.string(let y)) = b { return x.text == y ? 0 : nil }
        return a == b ? 0 : nil
    }
}
