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
        var lastSeverity: UInt16
        var message: String
        var time: Date
        /// When the violation began (the field state's `since`): an acknowledgement names the violation by it.
        var since: Millis
        var active = true
        var acked = false
        /// An Acknowledge is being recorded: a second one at the same time is refused, not recorded twice.
        var acking = false
        var comment = ""
        var user = ""
        var commentTime: Date?
        var ackTime: Date?
        /// The events it sent since it last became active, most recent last (at most 32): a client acknowledges one
        /// of them; an event of an earlier violation acknowledges nothing now.
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
    /// Held across each change, its nodes and its event (the order: this lock, then the address space's, the method
    /// table's and the subscriptions'; none of those calls back here with its own held): a condition's nodes are
    /// never removed while the same condition is made again, and a refresh never sends a state older than one
    /// already sent.
    private let lock = NSLock()
    private var conditions: [String: Condition] = [:]
    /// The conditions at most. Past it the oldest inactive unacknowledged condition goes (its last event says so);
    /// where there is none, a new violation is a plain event (it is still on the pages).
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
            guard let me = self else { return .failure(MethodTable.MethodFailure(.badNothingToDo)) }
            let status = me.lock.withLock {
                call.session.refreshConditions(subscription: subscription, me.currentEventsLocked())
            }
            return status.isGood ? .success([]) : .failure(MethodTable.MethodFailure(status))
        }
    }

    static func key(_ rule: String, _ uid: UID) -> String { "\(rule)|\(uid)" }

    static func severity(_ s: Event.Severity) -> UInt16 { s == .critical ? 900 : s == .warning ? 600 : 300 }

    /// With the lock held: the retained conditions' current events (ConditionRefresh's), oldest violation first.
    private func currentEventsLocked() -> [ServerEvent] {
        conditions.values.filter(\.retain).sorted { $0.since < $1.since }.map {
            event($0, eventId: $0.eventIds.last ?? [])
        }
    }

    // MARK: Changes from the field state

    /// A violation began (or began again): its condition active and unacknowledged (acknowledged already where the
    /// field state says so: a server started while an acknowledged violation goes on).
    func raised(_ a: FieldState.Alarm, source: NodeId) {
        lock.withLock { raiseLocked(a, source: source) }
    }

    private func raiseLocked(_ a: FieldState.Alarm, source: NodeId) {
        let key = Self.key(a.rule, a.uid)
        let time = GatewayNamespace.date(a.since)
        let message = "alarm \(a.rule) on \(a.asset ?? a.uid.description): \(a.detail)"
        let severity = Self.severity(a.severity)
        let rule = rules[a.rule]
        if var c = conditions[key] {
            // A new violation: a new activation, whose events alone acknowledge it.
            c.active = true
            c.acked = a.acknowledged != nil
            c.acking = false
            c.ackTime = nil
            c.comment = a.acknowledged?.comment ?? ""
            c.user = a.acknowledged?.by ?? ""
            c.commentTime = nil
            c.since = a.since
            c.time = time
            c.message = message
            c.lastSeverity = c.severity
            c.severity = severity
            c.eventIds = []
            send(&c, key)
            return
        }
        if conditions.count >= Self.limit {
            guard let oldest = conditions.values.filter({ !$0.active && !$0.acked }).min(by: { $0.since < $1.since })
            else {
                post(
                    ServerEvent(
                        sourceNode: source, sourceName: a.asset ?? a.uid.description, time: time,
                        message: message + " (more than \(Self.limit) alarm conditions: no condition)",
                        severity: severity))
                return
            }
            var gone = oldest
            gone.acked = true
            gone.message = "alarm \(gone.rule) on \(gone.sourceName) dropped: more than \(Self.limit) alarm conditions"
            send(&gone, Self.key(gone.rule, gone.uid))
            removeLocked(gone)
        }
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
        // goes on the tag's node (and again when the tag comes back: `attach`).
        if var n = space.node(node) {
            n.references.append(Reference(Self.hasCondition, source, forward: false))
            space.add(n)
        }
        var c = Condition(
            node: node, type: type, made: made, rule: a.rule, uid: a.uid, source: source,
            sourceName: a.asset ?? a.uid.description,
            inputNode: rule?.field.map { id("Tags/\(a.uid)/\($0)") }, low: rule?.low, high: rule?.high,
            severity: severity, lastSeverity: severity, message: message, time: time, since: a.since)
        if let ack = a.acknowledged {
            c.acked = true
            c.comment = ack.comment
            c.user = ack.by
        }
        for (path, child) in made where !path.isEmpty && !path.hasSuffix("InputArguments") {
            guard space.node(child)?.nodeClass == .variable else { continue }
            space.setSource(child) { [weak self] in
                guard let me = self else { return DataValue(status: .badNodeIdUnknown) }
                let v = me.lock.withLock { me.conditions[key].map { me.fields($0)[path] } }
                // A condition that went: its nodes go with it; one read in between is told so.
                guard let v else { return DataValue(status: .badNodeIdUnknown) }
                return DataValue(value: v ?? .null)
            }
        }
        if let m = made["Acknowledge"] {
            methods.add(object: node, method: m) { [weak self] call in
                await self?.acknowledge(call, key) ?? .failure(MethodTable.MethodFailure(.badNodeIdUnknown))
            }
        }
        if let m = made["AddComment"] {
            methods.add(object: node, method: m) { [weak self] call in
                self?.addComment(call, key) ?? .failure(MethodTable.MethodFailure(.badNodeIdUnknown))
            }
        }
        // Enabled always: an alarm is disabled in the rules file, where it shows.
        if let m = made["Enable"] {
            methods.add(object: node, method: m) { _ in .failure(MethodTable.MethodFailure(.badConditionAlreadyEnabled))
            }
        }
        if let m = made["Disable"] {
            methods.add(object: node, method: m) { _ in .failure(MethodTable.MethodFailure(.badNotSupported)) }
        }
        send(&c, key)
    }

    /// The tag's node made again (it came back): its conditions' HasCondition references again.
    func attach(_ uid: UID, source: NodeId) {
        lock.withLock {
            for c in conditions.values where c.uid == uid {
                if var n = space.node(c.node) {
                    n.references.removeAll { $0.type == Self.hasCondition }
                    n.references.append(Reference(Self.hasCondition, source, forward: false))
                    space.add(n)
                }
            }
        }
    }

    /// A violation ended: inactive (and gone, when it was acknowledged). Its severity stays the rule's: a client
    /// that filters by severity hears the end of what it heard begin.
    func ended(rule: String, uid: UID, time: Millis) {
        let key = Self.key(rule, uid)
        lock.withLock {
            guard var c = conditions[key], c.active else { return }
            c.active = false
            c.time = GatewayNamespace.date(time)
            c.message = "alarm \(rule) on \(c.sourceName) ended"
            send(&c, key)
            if !c.retain { removeLocked(c) }
        }
    }

    /// An acknowledgement recorded (by this server's Acknowledge, or another way) of the violation that began at
    /// `since` (nil: the one now): acked, and gone when the violation already ended.
    func acknowledged(_ ack: FieldState.Acknowledgement) {
        let key = Self.key(ack.rule, ack.uid)
        lock.withLock {
            guard var c = conditions[key], !c.acked, ack.since == nil || ack.since == c.since else { return }
            c.acked = true
            c.acking = false
            c.comment = ack.comment
            c.user = ack.by
            c.ackTime = GatewayNamespace.date(ack.time)
            c.commentTime = c.ackTime
            c.time = c.ackTime ?? c.time
            c.message = "alarm \(ack.rule) on \(c.sourceName) acknowledged by \(ack.by)"
            send(&c, key)
            if !c.retain { removeLocked(c) }
        }
    }

    // MARK: Methods

    /// Acknowledge(EventId, Comment) (OPC 10000-9 §5.7.3): the EventId must be one of the condition's events since
    /// it last became active (Bad_EventIdUnknown), the condition not acknowledged yet nor being acknowledged by
    /// another call (Bad_ConditionBranchAlreadyAcked).
    private func acknowledge(_ call: MethodTable.Call, _ key: String) async -> Result<
        [Variant], MethodTable.MethodFailure
    > {
        guard case .scalar(.byteString(let eventId)) = call.arguments.first else {
            return .failure(.argument(0, of: 2))
        }
        guard let comment = Self.text(call.arguments.count > 1 ? call.arguments[1] : .null) else {
            return .failure(.argument(1, of: 2))
        }
        let taken = lock.withLock { () -> Result<Condition, MethodTable.MethodFailure> in
            guard var c = conditions[key] else { return .failure(MethodTable.MethodFailure(.badNodeIdUnknown)) }
            guard let eventId, c.eventIds.contains(eventId) else {
                return .failure(MethodTable.MethodFailure(.badEventIdUnknown))
            }
            guard !c.acked, !c.acking else {
                return .failure(MethodTable.MethodFailure(.badConditionBranchAlreadyAcked))
            }
            c.acking = true
            conditions[key] = c
            return .success(c)
        }
        let c: Condition
        switch taken {
        case .success(let found): c = found
        case .failure(let f): return .failure(f)
        }
        let origin = ReaderMethods.origin(call.session)
        let now = Millis(Date().timeIntervalSince1970 * 1000)
        if let record,
            !record(
                AlarmAcknowledgement(
                    rule: c.rule, uid: c.uid, comment: comment, origin: origin, time: now, since: c.since))
        {
            lock.withLock {
                if conditions[key]?.since == c.since { conditions[key]?.acking = false }
            }
            return .failure(MethodTable.MethodFailure(.badResourceUnavailable))
        }
        // Applied here at once (the field state's change, when it comes on the namespace's queue, finds it done): a
        // client that reads AckedState after its call sees it.
        acknowledged(
            FieldState.Acknowledgement(
                rule: c.rule, uid: c.uid, by: origin, comment: comment, time: now, since: c.since))
        return .success([])
    }

    /// AddComment(EventId, Comment) (§5.5.5): the comment kept and sent as an event; not recorded in the store.
    private func addComment(_ call: MethodTable.Call, _ key: String) -> Result<[Variant], MethodTable.MethodFailure> {
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
        if c.eventIds.count > 32 { c.eventIds.removeFirst() }
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
            "LastSeverity": .scalar(.uInt16(c.lastSeverity)),
            "Comment": .scalar(.localizedText(LocalizedText(c.comment))),
            "ClientUserId": .scalar(.string(c.user)),
            "InputNode": .scalar(.nodeId(c.inputNode ?? NodeId(0))),
            "SuppressedOrShelved": .scalar(.boolean(false)),
        ]
        if let t = c.commentTime { f["Comment/SourceTimestamp"] = .scalar(.dateTime(DateTime(t))) }
        f.merge(two("EnabledState", true, "Enabled", "Disabled", time: nil)) { a, _ in a }
        f.merge(two("AckedState", c.acked, "Acknowledged", "Unacknowledged", time: c.ackTime)) { a, _ in a }
        f.merge(
            two("ActiveState", c.active, "Active", "Inactive", time: GatewayNamespace.date(c.since))
        ) { a, _ in a }
        if let high = c.high { f["HighLimit"] = .scalar(.double(high)) }
        if let low = c.low { f["LowLimit"] = .scalar(.double(low)) }
        return f
    }

    /// With the lock held: the condition, its methods and its nodes go.
    private func removeLocked(_ c: Condition) {
        conditions[Self.key(c.rule, c.uid)] = nil
        methods.remove(object: c.node)
        for (path, node) in c.made where !path.isEmpty { space.remove(node) }
        space.remove(c.node)
    }
}
