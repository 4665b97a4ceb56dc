import FieldState
import Foundation
import ISO15693
import OPCUA
import OPCUAServer
import VLoggerModel
import VLoggerOutbox

/// The rules' violations as OPC UA alarm conditions (OPC 10000-9): one condition per rule and tag, made when the
/// rule is first violated by the tag (`Alarms/<UID>/<rule>` in the gateway's namespace, the tag's node
/// `HasCondition` it). A range rule's condition is a LimitAlarmType with its HighLimit and LowLimit (§5.8.18), any
/// other rule's an AlarmConditionType (§5.8.2). ActiveState follows the violation; AckedState a client's
/// `Acknowledge` (§5.7.3), which the service records in the store as an `acknowledged` event with the client as
/// origin (the pages show it); Retain is true while the violation goes on or is not yet acknowledged, and a
/// condition neither active nor unacknowledged goes. Every change is an event of the condition's type from the
/// tag's node (and so from the Server object). `ConditionRefresh` (§5.5.7), called on ConditionType, sends a
/// subscription the retained conditions' current events between a RefreshStartEvent and a RefreshEndEvent.
final class AlarmConditions: @unchecked Sendable {
    struct Condition {
        var node: NodeId
        var type: NodeId
        var made: [String: NodeId]
        var rule: String
        var uid: UID
        var source: NodeId
        var sourceName: String
        var inputNode: NodeId?
        var low: Double?
        var high: Double?
        var severity: UInt16
        var message: String
        var time: Date
        var active = true
        var acked = false
        var comment = ""
        var user = ""
        var commentTime: Date?
        var ackTime: Date?
        var activeTime: Date
        /// The events it sent, most recent last (at most 8): a client acknowledges one of them.
        var eventIds: [[UInt8]] = []
        /// OPC 10000-9 §5.5.2: kept for clients while it needs their attention.
        var retain: Bool { active || !acked }
    }

    static let conditionType = NodeId(2782)
    static let alarmConditionType = NodeId(2915)
    static let limitAlarmType = NodeId(2955)
    static let conditionRefresh = NodeId(3875)
    static let hasCondition = NodeId(9006)
    /// ProcessConditionClassType (OPC 10000-9 §5.9.2): a process value out of its bounds.
    static let processConditionClass = NodeId(11164)

    let space: AddressSpace
    let methods: MethodTable
    let ns: UInt16
    let post: @Sendable (ServerEvent) -> Void
    let rules: [String: AlarmRule]
    let record: (@Sendable (AlarmAcknowledgement) -> Bool)?
    let id: @Sendable (String) -> NodeId
    private let lock = NSLock()
    private var conditions: [String: Condition] = [:]
    private var byNode: [NodeId: String] = [:]
    /// The conditions at most (past it a new violation has no condition; it is still an event and on the pages).
    static let limit = 10_000

    init(
        space: AddressSpace, methods: MethodTable, ns: UInt16, rules: [AlarmRule],
        record: (@Sendable (AlarmAcknowledgement) -> Bool)?, id: @escaping @Sendable (String) -> NodeId,
        post: @escaping @Sendable (ServerEvent) -> Void
    ) {
        self.space = space
        self.methods = methods
        self.ns = ns
        self.post = post
        self.rules = Dictionary(rules.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.record = record
        self.id = id
        methods.add(object: Self.conditionType, method: Self.conditionRefresh) { [weak self] call in
            guard case .scalar(.uInt32(let subscription)) = call.arguments.first else {
                return .failure(.argument(0, of: 1))
            }
            let events = self?.currentEvents() ?? []
            let status = call.session.refreshConditions(subscription: subscription, events)
            return status.isGood ? .success([]) : .failure(MethodTable.MethodFailure(status))
        }
    }

    static func key(_ rule: String, _ uid: UID) -> String { "\(rule)|\(uid)" }

    static func severity(_ s: Event.Severity) -> UInt16 { s == .critical ? 900 : s == .warning ? 600 : 300 }

    /// The retained conditions' current events (ConditionRefresh's).
    func currentEvents() -> [ServerEvent] {
        lock.withLock {
            conditions.values.filter(\.retain).sorted { $0.activeTime < $1.activeTime }.map {
                event($0, eventId: $0.eventIds.last ?? [])
            }
        }
    }

    /// Whether the condition of `rule` on `uid` is there, and its state (tests, the pages' cross-check).
    func state(_ rule: String, _ uid: UID) -> (active: Bool, acked: Bool, comment: String, user: String)? {
        lock.withLock { conditions[Self.key(rule, uid)].map { ($0.active, $0.acked, $0.comment, $0.user) } }
    }

    func node(_ rule: String, _ uid: UID) -> NodeId? { lock.withLock { conditions[Self.key(rule, uid)]?.node } }

    // MARK: Changes from the field state

    /// A violation began (or began again): its condition active and unacknowledged.
    func raised(_ a: FieldState.Alarm, source: NodeId) {
        let key = Self.key(a.rule, a.uid)
        let time = GatewayNamespace.date(a.since)
        let message = "alarm \(a.rule) on \(a.asset ?? a.uid.description): \(a.detail)"
        let rule = rules[a.rule]
        lock.lock()
        if var c = conditions[key] {
            c.active = true
            c.acked = false
            c.activeTime = time
            c.time = time
            c.message = message
            c.severity = Self.severity(a.severity)
            send(&c, key)
            lock.unlock()
            return
        }
        guard conditions.count < Self.limit else {
            lock.unlock()
            return
        }
        lock.unlock()
        let base = "Alarms/\(a.uid)/\(a.rule)"
        let limits = rule?.low != nil || rule?.high != nil
        let type = limits ? Self.limitAlarmType : Self.alarmConditionType
        let node = id(base)
        let made = space.instantiate(
            type: type, id: node, browseName: QualifiedName(namespace: ns, a.rule), parent: id("Alarms"),
            reference: ReferenceTypeIds.organizes,
            optional: Set((rule?.high != nil ? ["HighLimit"] : []) + (rule?.low != nil ? ["LowLimit"] : [])),
            childId: { [id] in id("\(base)/\($0)") })
        // The tag's node has the condition (OPC 10000-9 §7.3, HasCondition); written on the condition, its inverse
        // goes on the tag's node.
        if var n = space.node(node) {
            n.references.append(Reference(Self.hasCondition, source, forward: false))
            n.eventNotifier = 1
            space.add(n)
        }
        var c = Condition(
            node: node, type: type, made: made, rule: a.rule, uid: a.uid, source: source,
            sourceName: a.asset ?? a.uid.description,
            inputNode: rule?.field.map { id("Tags/\(a.uid)/\($0)") }, low: rule?.low, high: rule?.high,
            severity: Self.severity(a.severity), message: message, time: time, activeTime: time)
        for (path, child) in made where !path.isEmpty {
            if space.node(child)?.nodeClass == .variable, path != "Acknowledge/InputArguments",
                !path.hasSuffix("/InputArguments")
            {
                space.setSource(child) { [weak self] in
                    guard let me = self else { return DataValue(status: .badNoData) }
                    let v = me.lock.withLock { me.conditions[key].map { me.fields($0)[path] } }
                    return (v ?? nil).map { DataValue(value: $0) } ?? DataValue(value: .null)
                }
            }
        }
        if let m = made["Acknowledge"] {
            methods.add(object: node, method: m) { [weak self] call in
                await self?.acknowledge(call, key) ?? .failure(MethodTable.MethodFailure(.badNodeIdUnknown))
            }
        }
        if let m = made["AddComment"] {
            methods.add(object: node, method: m) { [weak self] call in
                await self?.addComment(call, key) ?? .failure(MethodTable.MethodFailure(.badNodeIdUnknown))
            }
        }
        // Enabled always: disabling an alarm is done in the rules file, where it shows.
        if let m = made["Enable"] {
            methods.add(object: node, method: m) { _ in .failure(MethodTable.MethodFailure(.badConditionAlreadyEnabled))
            }
        }
        if let m = made["Disable"] {
            methods.add(object: node, method: m) { _ in .failure(MethodTable.MethodFailure(.badNotSupported)) }
        }
        lock.withLock {
            if conditions[key] == nil {
                byNode[node] = key
                send(&c, key)
            }
        }
    }

    /// A violation ended: inactive (and gone, when it was acknowledged).
    func ended(rule: String, uid: UID, time: Millis) {
        let key = Self.key(rule, uid)
        let gone: Condition? = lock.withLock {
            guard var c = conditions[key], c.active else { return nil }
            c.active = false
            c.time = GatewayNamespace.date(time)
            c.message = "alarm \(rule) on \(c.sourceName) ended"
            c.severity = 300
            send(&c, key)
            return c.retain ? nil : c
        }
        if let gone { remove(gone) }
    }

    /// An acknowledgement recorded (by this server's Acknowledge, or another way): acked (and gone, when the
    /// violation already ended).
    func acknowledged(_ ack: FieldState.Acknowledgement) {
        let key = Self.key(ack.rule, ack.uid)
        let gone: Condition? = lock.withLock {
            guard var c = conditions[key], !c.acked else { return nil }
            c.acked = true
            c.comment = ack.comment
            c.user = ack.by
            c.ackTime = GatewayNamespace.date(ack.time)
            c.commentTime = c.ackTime
            c.time = c.ackTime ?? c.time
            c.message = "alarm \(ack.rule) on \(c.sourceName) acknowledged by \(ack.by)"
            send(&c, key)
            return c.retain ? nil : c
        }
        if let gone { remove(gone) }
    }

    // MARK: Methods

    /// Acknowledge(EventId, Comment) (OPC 10000-9 §5.7.3): the EventId must be one of the condition's events
    /// (Bad_EventIdUnknown), the condition not acknowledged yet (Bad_ConditionBranchAlreadyAcked).
    private func acknowledge(_ call: MethodTable.Call, _ key: String) async -> Result<
        [Variant], MethodTable.MethodFailure
    > {
        guard case .scalar(.byteString(let eventId)) = call.arguments.first else {
            return .failure(.argument(0, of: 2))
        }
        let comment = Self.text(call.arguments.count > 1 ? call.arguments[1] : .null)
        guard let comment else { return .failure(.argument(1, of: 2)) }
        let found = lock.withLock { () -> Result<Condition, MethodTable.MethodFailure> in
            guard let c = conditions[key] else { return .failure(MethodTable.MethodFailure(.badNodeIdUnknown)) }
            guard let eventId, c.eventIds.contains(eventId) else {
                return .failure(MethodTable.MethodFailure(.badEventIdUnknown))
            }
            guard !c.acked else { return .failure(MethodTable.MethodFailure(.badConditionBranchAlreadyAcked)) }
            return .success(c)
        }
        guard case .success(let c) = found else {
            if case .failure(let f) = found { return .failure(f) }
            return .failure(MethodTable.MethodFailure(.badInternalError))
        }
        let origin = ReaderMethods.origin(call.session)
        let now = Millis(Date().timeIntervalSince1970 * 1000)
        if let record,
            !record(AlarmAcknowledgement(rule: c.rule, uid: c.uid, comment: comment, origin: origin, time: now))
        {
            return .failure(MethodTable.MethodFailure(.badResourceUnavailable))
        }
        // Applied here at once as well (the field state's change comes on the namespace's queue, and finds it done):
        // a client that reads AckedState after its call sees it.
        acknowledged(FieldState.Acknowledgement(rule: c.rule, uid: c.uid, by: origin, comment: comment, time: now))
        return .success([])
    }

    /// AddComment(EventId, Comment) (§5.5.5): the comment kept and sent as an event; not recorded in the store.
    private func addComment(_ call: MethodTable.Call, _ key: String) async -> Result<
        [Variant], MethodTable.MethodFailure
    > {
        guard case .scalar(.byteString(let eventId)) = call.arguments.first else {
            return .failure(.argument(0, of: 2))
        }
        guard let comment = Self.text(call.arguments.count > 1 ? call.arguments[1] : .null) else {
            return .failure(.argument(1, of: 2))
        }
        let origin = ReaderMethods.origin(call.session)
        return lock.withLock {
            guard var c = conditions[key] else { return .failure(MethodTable.MethodFailure(.badNodeIdUnknown)) }
            guard let eventId, c.eventIds.contains(eventId) else {
                return .failure(MethodTable.MethodFailure(.badEventIdUnknown))
            }
            c.comment = comment
            c.user = origin
            c.commentTime = Date()
            send(&c, key)
            return .success([])
        }
    }

    /// A comment's text (at most 1,000 characters kept); nil for a value that is no text.
    static func text(_ v: Variant) -> String? {
        switch v {
        case .null: return ""
        case .scalar(.localizedText(let t)): return String((t.text ?? "").prefix(1000))
        case .scalar(.string(let s)): return String((s ?? "").prefix(1000))
        default: return nil
        }
    }

    // MARK: State as fields

    /// With the lock held: a new event for the condition's state now, kept as its latest.
    private func send(_ c: inout Condition, _ key: String) {
        let eventId = ServerCore.random(16)
        c.eventIds.append(eventId)
        if c.eventIds.count > 8 { c.eventIds.removeFirst() }
        conditions[key] = c
        post(event(c, eventId: eventId))
    }

    private func event(_ c: Condition, eventId: [UInt8]) -> ServerEvent {
        var e = ServerEvent(
            eventType: c.type, sourceNode: c.source, sourceName: c.sourceName, time: c.time, message: c.message,
            severity: c.severity, fields: fields(c))
        e.eventId = eventId
        e.conditionId = c.node
        return e
    }

    /// The condition's variables by their browse paths (its event's fields, and its nodes' values).
    func fields(_ c: Condition) -> [String: Variant] {
        func two(_ name: String, _ on: Bool, _ yes: String, _ no: String, time: Date?) -> [String: Variant] {
            var f: [String: Variant] = [
                name: .scalar(.localizedText(LocalizedText(on ? yes : no))), "\(name)/Id": .scalar(.boolean(on)),
            ]
            if let time { f["\(name)/TransitionTime"] = .scalar(.dateTime(DateTime(time))) }
            return f
        }
        var f: [String: Variant] = [
            "EventId": .scalar(.byteString(c.eventIds.last ?? [])),
            "EventType": .scalar(.nodeId(c.type)),
            "SourceNode": .scalar(.nodeId(c.source)),
            "SourceName": .scalar(.string(c.sourceName)),
            "Time": .scalar(.dateTime(DateTime(c.time))),
            "ReceiveTime": .scalar(.dateTime(DateTime(c.time))),
            "Message": .scalar(.localizedText(LocalizedText(c.message))),
            "Severity": .scalar(.uInt16(c.severity)),
            "ConditionClassId": .scalar(.nodeId(Self.processConditionClass)),
            "ConditionClassName": .scalar(.localizedText(LocalizedText("ProcessConditionClassType"))),
            "ConditionName": .scalar(.string(c.rule)),
            "BranchId": .scalar(.nodeId(NodeId(0))),
            "Retain": .scalar(.boolean(c.retain)),
            "Quality": .scalar(.statusCode(.good)),
            "LastSeverity": .scalar(.uInt16(c.severity)),
            "Comment": .scalar(.localizedText(LocalizedText(c.comment))),
            "ClientUserId": .scalar(.string(c.user)),
            "InputNode": .scalar(.nodeId(c.inputNode ?? NodeId(0))),
            "SuppressedOrShelved": .scalar(.boolean(false)),
        ]
        if let t = c.commentTime { f["Comment/SourceTimestamp"] = .scalar(.dateTime(DateTime(t))) }
        f.merge(two("EnabledState", true, "Enabled", "Disabled", time: nil)) { a, _ in a }
        f.merge(two("AckedState", c.acked, "Acknowledged", "Unacknowledged", time: c.ackTime)) { a, _ in a }
        f.merge(two("ActiveState", c.active, "Active", "Inactive", time: c.activeTime)) { a, _ in a }
        if let high = c.high { f["HighLimit"] = .scalar(.double(high)) }
        if let low = c.low { f["LowLimit"] = .scalar(.double(low)) }
        return f
    }

    private func remove(_ c: Condition) {
        lock.withLock {
            conditions[Self.key(c.rule, c.uid)] = nil
            byNode[c.node] = nil
        }
        methods.remove(object: c.node)
        for (path, node) in c.made where !path.isEmpty { space.remove(node) }
        space.remove(c.node)
    }
}
