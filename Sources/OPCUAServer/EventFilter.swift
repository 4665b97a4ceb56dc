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
    /// Elements and operands an element may have: a clause is checked for each event.
    static let maxElements = 64

    static func make(_ filter: ContentFilter, limits: DecodingLimits) -> Result<WhereClause, Refusal> {
        let raw = filter.elements ?? []
        if raw.count > maxElements || raw.contains(where: { ($0.filterOperands?.count ?? 0) > maxElements }) {
            return .failure(
                Refusal(
                    result: ContentFilterResult(
                        elementResults: raw.map { _ in ContentFilterElementResult(statusCode: .badFilterElementInvalid)
                        })))
        }
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

    /// Whether `event` passes (no elements: every event does). Each element is worked out once, the last first
    /// (an element operand names a later element), so a clause costs its size, whatever its shape.
    func admits(_ event: ServerEvent, isSubtype: (NodeId, NodeId) -> Bool) -> Bool {
        guard !elements.isEmpty else { return true }
        var results = [Variant](repeating: .null, count: elements.count)
        for i in elements.indices.reversed() {
            results[i] = evaluate(elements[i], event, isSubtype, results)
        }
        return results[0] == .scalar(.boolean(true))
    }

    private func evaluate(
        _ e: Element, _ event: ServerEvent, _ isSubtype: (NodeId, NodeId) -> Bool, _ done: [Variant]
    ) -> Variant {
        let v: [Variant] = e.operands.map {
            switch $0 {
            case .literal(let v): return v
            case .field(let a): return event.field(a, receivedAt: event.time)
            case .element(let j): return done[j]
            }
        }
        func truth(_ x: Variant) -> Bool? {
            if case .scalar(.boolean(let b)) = x { return b }
            return nil
        }
        func bool(_ b: Bool?) -> Variant { b.map { .scalar(.boolean($0)) } ?? .null }
        switch e.op {
        case .equals: return bool(Self.compare(v[0], v[1]).map { $0 == 0 })
        case .isNull: return bool(v[0] == .null)
        case .greaterThan: return bool(Self.compare(v[0], v[1]).map { $0 > 0 })
        case .lessThan: return bool(Self.compare(v[0], v[1]).map { $0 < 0 })
        case .greaterThanOrEqual: return bool(Self.compare(v[0], v[1]).map { $0 >= 0 })
        case .lessThanOrEqual: return bool(Self.compare(v[0], v[1]).map { $0 <= 0 })
        case .not: return bool(truth(v[0]).map { !$0 })
        case .between:
            guard let low = Self.compare(v[0], v[1]), let high = Self.compare(v[0], v[2]) else { return bool(nil) }
            return bool(low >= 0 && high <= 0)
        case .inList: return bool(v.dropFirst().contains { Self.compare(v[0], $0) == 0 })
        case .and:
            // Three-valued (§7.7.3): false wins over null.
            let (a, b) = (truth(v[0]), truth(v[1]))
            if a == false || b == false { return bool(false) }
            return bool(a == true && b == true ? true : nil)
        case .or:
            let (a, b) = (truth(v[0]), truth(v[1]))
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
