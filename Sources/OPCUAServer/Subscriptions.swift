import Foundation
import OPCUA

/// An event the server reports (BaseEventType's fields, OPC 10000-5 §6.4.2).
public struct ServerEvent: Sendable {
    public var eventType: NodeId
    public var sourceNode: NodeId
    public var sourceName: String
    public var time: Date
    public var message: String
    /// 1 (lowest) to 1000.
    public var severity: UInt16
    public var eventId: [UInt8] = ServerCore.random(16)
    /// The fields of the event's type beyond BaseEventType's, by their browse names' path joined with "/"
    /// (`DeviceName`, `ScanResult`: AutoID's RfidScanEventType).
    public var fields: [String: Variant]
    /// A condition's event (OPC 10000-9 §5.5): the condition's node, the ConditionId a client selects with
    /// ConditionType's NodeId attribute and an empty path (§5.5.2); nil for other events.
    public var conditionId: NodeId?

    public init(
        eventType: NodeId = NodeId(2041), sourceNode: NodeId = NodeId(2253), sourceName: String = "Server",
        time: Date, message: String, severity: UInt16, fields: [String: Variant] = [:]
    ) {
        self.fields = fields
        self.eventType = eventType
        self.sourceNode = sourceNode
        self.sourceName = sourceName
        self.time = time
        self.message = message
        self.severity = min(max(severity, 1), 1000)
    }

    /// The value of one select clause: a BaseEventType field named by its browse path.
    func field(_ operand: SimpleAttributeOperand, receivedAt now: Date) -> Variant {
        guard operand.attributeId == AttributeId.value.rawValue || operand.attributeId == 0 else {
            guard operand.attributeId == AttributeId.nodeId.rawValue, (operand.browsePath ?? []).isEmpty,
                let conditionId
            else { return .null }
            return .scalar(.nodeId(conditionId))
        }
        switch (operand.browsePath ?? []).map({ $0.name ?? "" }) {
        case ["EventId"]: return .scalar(.byteString(eventId))
        case ["EventType"]: return .scalar(.nodeId(eventType))
        case ["SourceNode"]: return .scalar(.nodeId(sourceNode))
        case ["SourceName"]: return .scalar(.string(sourceName))
        case ["Time"]: return .scalar(.dateTime(DateTime(time)))
        case ["ReceiveTime"]: return .scalar(.dateTime(DateTime(now)))
        case ["Message"]: return .scalar(.localizedText(LocalizedText(message)))
        case ["Severity"]: return .scalar(.uInt16(severity))
        case let path: return fields[path.joined(separator: "/")] ?? .null
        }
    }
}

/// One monitored item: a variable's value sampled (data change) or an object's events (an event filter).
final class MonitoredItem {
    let id: UInt32
    let node: NodeId
    let attribute: UInt32
    var clientHandle: UInt32
    var mode: MonitoringMode
    var samplingMs: Double
    var queueSize: Int
    var discardOldest: Bool
    var select: [SimpleAttributeOperand]?
    /// An event item's where clause (nil: every event).
    var whereClause: WhereClause?
    var last: DataValue?
    var nextSample = Date.distantPast
    /// When the oldest value in the queue was sampled (for the Publish latency the server measures).
    var oldestQueued: Date?
    var queue: [ExtensionObjectPart] = []
    /// Which timestamps its notifications carry (its CreateMonitoredItems request's).
    var timestamps = TimestampsToReturn.both
    /// Its DataChangeFilter: what counts as a change, and an absolute deadband (OPC 10000-4 §7.22.2).
    var trigger = DataChangeTrigger.statusValue
    var deadband: Double?

    /// Whether `new` is a change worth a notification after `old`.
    func changed(from old: DataValue?, to new: DataValue) -> Bool {
        guard let old else { return true }
        if old.status != new.status { return true }
        if trigger == .status { return false }
        if trigger == .statusValueTimestamp, old.sourceTimestamp != new.sourceTimestamp { return true }
        if let deadband, let a = Self.number(old.value), let b = Self.number(new.value) { return abs(a - b) > deadband }
        return old.value != new.value
    }

    static func number(_ v: Variant?) -> Double? {
        guard case .scalar(let s)? = v else { return nil }
        switch s {
        case .sByte(let x): return Double(x)
        case .byte(let x): return Double(x)
        case .int16(let x): return Double(x)
        case .uInt16(let x): return Double(x)
        case .int32(let x): return Double(x)
        case .uInt32(let x): return Double(x)
        case .int64(let x): return Double(x)
        case .uInt64(let x): return Double(x)
        case .float(let x): return Double(x)
        case .double(let x): return x
        default: return nil
        }
    }

    enum ExtensionObjectPart {
        case value(MonitoredItemNotification)
        case event(EventFieldList)
    }

    init(
        id: UInt32, node: NodeId, attribute: UInt32, parameters: MonitoringParameters, mode: MonitoringMode,
        samplingMs: Double, queueSize: Int, select: [SimpleAttributeOperand]?
    ) {
        self.id = id
        self.node = node
        self.attribute = attribute
        self.clientHandle = parameters.clientHandle
        self.mode = mode
        self.samplingMs = samplingMs
        self.queueSize = queueSize
        self.discardOldest = parameters.discardOldest
        self.select = select
    }

    /// `whole`: past the queue's size, not dropping (a ConditionRefresh's events, all or none).
    func enqueue(_ part: ExtensionObjectPart, whole: Bool = false) {
        guard mode != .disabled else { return }
        if queue.count >= queueSize, !whole {
            if discardOldest { queue.removeFirst() } else { queue.removeLast() }
        }
        queue.append(part)
    }
}

/// One subscription: its items, its publishing cycle (interval, keep-alive, lifetime counts), its sequence
/// numbers and the messages kept for Republish.
final class Subscription {
    let id: UInt32
    var intervalMs: Double
    var lifetimeCount: UInt32
    var keepAliveCount: UInt32
    var maxNotifications: UInt32
    var enabled: Bool
    var items: [UInt32: MonitoredItem] = [:] {
        didSet { nextSampleDue = .distantPast }
    }
    /// The earliest time one of its data items is to be sampled: the tick passes the subscription by until then
    /// (an item added or changed sets it back, so the next tick looks again).
    var nextSampleDue = Date.distantPast
    var nextPublish: Date
    var idleCycles: UInt32 = 0
    var starvedCycles: UInt32 = 0
    var sequence: UInt32 = 0
    var sentFirst = false
    /// Its interval came round with something to send (notifications, or a keep-alive due) and no Publish waiting:
    /// the next Publish to come is answered at once, not an interval later (the Late state, OPC 10000-4
    /// §5.13.1.2).
    var late = false
    var retained: [UInt32: NotificationMessage] = [:]

    init(id: UInt32, intervalMs: Double, lifetime: UInt32, keepAlive: UInt32, max: UInt32, enabled: Bool, now: Date) {
        self.id = id
        self.intervalMs = intervalMs
        self.lifetimeCount = lifetime
        self.keepAliveCount = keepAlive
        self.maxNotifications = max
        self.enabled = enabled
        self.nextPublish = now.addingTimeInterval(intervalMs / 1000)
    }

    var timestampsToReturn = TimestampsToReturn.both
}

/// A session's subscriptions and its queue of Publish requests (OPC 10000-4 §5.13–5.14), driven by the
/// server's tick: items sampled when due, a NotificationMessage or keep-alive sent when a subscription's interval
/// comes round and a Publish waits, a subscription without Publish requests for its lifetime deleted.
final class SubscriptionSet: @unchecked Sendable {
    private let lock = NSLock()
    unowned let server: ServerCore
    private var subscriptions: [UInt32: Subscription] = [:]
    /// Waiting Publish requests, each with its acknowledgements' results.
    private var publishQueue:
        [(requestId: UInt32, header: RequestHeader, channel: any ChannelContext, acks: [StatusCode])] = []
    private var nextItemId: UInt32 = 1
    /// Subscriptions whose lifetime ran out, each told to the next Publish that waits: a StatusChangeNotification
    /// of Bad_Timeout (OPC 10000-4 §5.13.1.1), at most 16 kept.
    private var timedOut: [(id: UInt32, sequence: UInt32)] = []

    static let maxPublishRequests = 10
    static let minIntervalMs = 20.0
    static let maxQueueSize = 100
    static let retainedMessages = 10
    /// Notifications in one message at most (a client's own limit may be lower).
    static let maxNotificationsPerMessage = 10_000
    /// Monitored items across the server's sessions at most.
    static let maxItemsInServer = 50_000

    init(server: ServerCore) { self.server = server }

    /// The lock around a body that throws a typed error.
    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    var ids: [UInt32] { lock.withLock { Array(subscriptions.keys).sorted() } }
    /// Its subscriptions' monitored items.
    var itemCount: Int { lock.withLock { subscriptions.values.reduce(0) { $0 + $1.items.count } } }

    func removeAll() {
        lock.withLock {
            for id in subscriptions.keys { server.subscriptionIds.release(id) }
            subscriptions = [:]
            publishQueue = []
        }
    }

    /// The monitored items of a subscription: (server handles, client handles), for GetMonitoredItems.
    func handles(_ subscription: UInt32) -> ([UInt32], [UInt32])? {
        lock.withLock {
            guard let s = subscriptions[subscription] else { return nil }
            let items = s.items.values.sorted { $0.id < $1.id }
            return (items.map(\.id), items.map(\.clientHandle))
        }
    }

    // MARK: Services

    func answer(_ request: any Structure, header: ResponseHeader, requestId: UInt32, channel: any ChannelContext)
        throws(ServiceError) -> (any Structure)?
    {
        let now = server.now()
        switch request {
        case let q as CreateSubscriptionRequest:
            return try locked { () throws(ServiceError) in
                guard subscriptions.count < server.configuration.maxSubscriptionsPerSession else {
                    throw ServiceError(.badTooManySubscriptions)
                }
                let interval = Self.revise(q.requestedPublishingInterval)
                let keepAlive = min(max(q.requestedMaxKeepAliveCount, 1), 10_000)
                let lifetime = min(max(q.requestedLifetimeCount, keepAlive * 3), 100_000)
                let s = Subscription(
                    id: server.subscriptionIds.take(), intervalMs: interval, lifetime: lifetime, keepAlive: keepAlive,
                    max: q.maxNotificationsPerPublish, enabled: q.publishingEnabled, now: now)
                subscriptions[s.id] = s
                return CreateSubscriptionResponse(
                    responseHeader: header, subscriptionId: s.id, revisedPublishingInterval: interval,
                    revisedLifetimeCount: lifetime, revisedMaxKeepAliveCount: keepAlive)
            }
        case let q as ModifySubscriptionRequest:
            return try locked { () throws(ServiceError) in
                guard let s = subscriptions[q.subscriptionId] else { throw ServiceError(.badSubscriptionIdInvalid) }
                s.intervalMs = Self.revise(q.requestedPublishingInterval)
                s.keepAliveCount = min(max(q.requestedMaxKeepAliveCount, 1), 10_000)
                s.lifetimeCount = min(max(q.requestedLifetimeCount, s.keepAliveCount * 3), 100_000)
                s.maxNotifications = q.maxNotificationsPerPublish
                return ModifySubscriptionResponse(
                    responseHeader: header, revisedPublishingInterval: s.intervalMs,
                    revisedLifetimeCount: s.lifetimeCount, revisedMaxKeepAliveCount: s.keepAliveCount)
            }
        case let q as SetPublishingModeRequest:
            let ids = try Self.some(q.subscriptionIds)
            return SetPublishingModeResponse(
                responseHeader: header,
                results: lock.withLock {
                    ids.map { id in
                        guard let s = subscriptions[id] else { return .badSubscriptionIdInvalid }
                        s.enabled = q.publishingEnabled
                        return .good
                    }
                })
        case let q as DeleteSubscriptionsRequest:
            let ids = try Self.some(q.subscriptionIds)
            return DeleteSubscriptionsResponse(
                responseHeader: header,
                results: lock.withLock {
                    ids.map { id in
                        guard subscriptions.removeValue(forKey: id) != nil else { return .badSubscriptionIdInvalid }
                        server.subscriptionIds.release(id)
                        return .good
                    }
                })
        case let q as CreateMonitoredItemsRequest:
            let items = try Self.some(q.itemsToCreate)
            // Counted before this set's lock: the count takes every session's.
            var room = Self.maxItemsInServer - server.monitoredItemCount()
            guard q.timestampsToReturn != .invalid else { throw ServiceError(.badTimestampsToReturnInvalid) }
            return try locked { () throws(ServiceError) in
                guard let s = subscriptions[q.subscriptionId] else { throw ServiceError(.badSubscriptionIdInvalid) }
                s.timestampsToReturn = q.timestampsToReturn
                return CreateMonitoredItemsResponse(
                    responseHeader: header,
                    results: items.map { r in
                        guard room > 0 else { return MonitoredItemCreateResult(statusCode: .badTooManyMonitoredItems) }
                        let result = create(r, in: s, now: now)
                        if result.statusCode.isGood { room -= 1 }
                        return result
                    })
            }
        case let q as ModifyMonitoredItemsRequest:
            let items = try Self.some(q.itemsToModify)
            return try locked { () throws(ServiceError) in
                guard let s = subscriptions[q.subscriptionId] else { throw ServiceError(.badSubscriptionIdInvalid) }
                return ModifyMonitoredItemsResponse(
                    responseHeader: header,
                    results: items.map { m in
                        guard let item = s.items[m.monitoredItemId] else {
                            return MonitoredItemModifyResult(statusCode: .badMonitoredItemIdInvalid)
                        }
                        item.clientHandle = m.requestedParameters.clientHandle
                        item.samplingMs = Self.revise(m.requestedParameters.samplingInterval, default: s.intervalMs)
                        item.nextSample = .distantPast
                        s.nextSampleDue = .distantPast
                        item.queueSize = Self.queue(m.requestedParameters.queueSize, events: item.select != nil)
                        item.discardOldest = m.requestedParameters.discardOldest
                        return MonitoredItemModifyResult(
                            statusCode: .good, revisedSamplingInterval: item.samplingMs,
                            revisedQueueSize: UInt32(item.queueSize))
                    })
            }
        case let q as SetMonitoringModeRequest:
            let ids = try Self.some(q.monitoredItemIds)
            return try locked { () throws(ServiceError) in
                guard let s = subscriptions[q.subscriptionId] else { throw ServiceError(.badSubscriptionIdInvalid) }
                return SetMonitoringModeResponse(
                    responseHeader: header,
                    results: ids.map { id in
                        guard let item = s.items[id] else { return .badMonitoredItemIdInvalid }
                        item.mode = q.monitoringMode
                        s.nextSampleDue = .distantPast
                        if q.monitoringMode == .disabled { item.queue = [] }
                        return .good
                    })
            }
        case let q as DeleteMonitoredItemsRequest:
            let ids = try Self.some(q.monitoredItemIds)
            return try locked { () throws(ServiceError) in
                guard let s = subscriptions[q.subscriptionId] else { throw ServiceError(.badSubscriptionIdInvalid) }
                return DeleteMonitoredItemsResponse(
                    responseHeader: header,
                    results: ids.map { s.items.removeValue(forKey: $0) == nil ? .badMonitoredItemIdInvalid : .good })
            }
        case let q as PublishRequest:
            var evicted: (UInt32, any ChannelContext, ResponseHeader)?
            defer {
                if let (id, channel, header) = evicted {
                    channel.respond(requestId: id, ServiceFault(responseHeader: header))
                }
            }
            return try locked { () throws(ServiceError) -> (any Structure)? in
                // Queued while a timed-out subscription waits to be told (the next tick answers it).
                guard !subscriptions.isEmpty || !timedOut.isEmpty else { throw ServiceError(.badNoSubscription) }
                let acks = (q.subscriptionAcknowledgements ?? []).map { a -> StatusCode in
                    guard let s = subscriptions[a.subscriptionId] else { return .badSubscriptionIdInvalid }
                    return s.retained.removeValue(forKey: a.sequenceNumber) == nil ? .badSequenceNumberUnknown : .good
                }
                if publishQueue.count >= Self.maxPublishRequests {
                    // The oldest waiting Publish is answered Bad_TooManyPublishRequests to make room (after the lock).
                    let old = publishQueue.removeFirst()
                    evicted = (
                        old.requestId, old.channel,
                        server.header(old.header, now: now, result: .badTooManyPublishRequests)
                    )
                }
                publishQueue.append((requestId, q.requestHeader, channel, acks))
                return nil
            }
        case let q as RepublishRequest:
            return try locked { () throws(ServiceError) in
                guard let s = subscriptions[q.subscriptionId] else { throw ServiceError(.badSubscriptionIdInvalid) }
                guard let m = s.retained[q.retransmitSequenceNumber] else {
                    throw ServiceError(.badMessageNotAvailable)
                }
                return RepublishResponse(responseHeader: header, notificationMessage: m)
            }
        default:
            throw ServiceError(.badServiceUnsupported)
        }
    }

    private static func some<T>(_ list: [T]?) throws(ServiceError) -> [T] {
        guard let list, !list.isEmpty else { throw ServiceError(.badNothingToDo) }
        guard list.count <= ServerCore.maxOperations else { throw ServiceError(.badTooManyOperations) }
        return list
    }

    private static func revise(_ ms: Double, default fallback: Double = 1000) -> Double {
        guard ms.isFinite else { return fallback }
        if ms < 0 { return fallback }
        return min(max(ms, minIntervalMs), 3_600_000)
    }

    private static func queue(_ requested: UInt32, events: Bool) -> Int {
        if events { return maxQueueSize }
        return Int(min(max(requested, 1), UInt32(maxQueueSize)))
    }

    private func create(_ r: MonitoredItemCreateRequest, in s: Subscription, now: Date) -> MonitoredItemCreateResult {
        guard s.items.count < server.configuration.maxMonitoredItemsPerSubscription else {
            return MonitoredItemCreateResult(statusCode: .badTooManyMonitoredItems)
        }
        let target = r.itemToMonitor
        guard let node = server.addressSpace.node(target.nodeId) else {
            return MonitoredItemCreateResult(statusCode: .badNodeIdUnknown)
        }
        var select: [SimpleAttributeOperand]?
        var filterResult = ExtensionObject.null
        var dataChange: (DataChangeTrigger, Double?) = (.statusValue, nil)
        var whereClause: WhereClause?
        if target.attributeId == AttributeId.eventNotifier.rawValue {
            guard (node.eventNotifier ?? 0) & 1 != 0 else {
                return MonitoredItemCreateResult(statusCode: .badAttributeIdInvalid)
            }
            guard let f = try? EventFilter(r.requestedParameters.filter, limits: server.decodingLimits) else {
                return MonitoredItemCreateResult(statusCode: .badEventFilterInvalid)
            }
            select = f.selectClauses ?? []
            switch WhereClause.make(f.whereClause, limits: server.decodingLimits) {
            case .success(let clause): whereClause = clause
            case .failure(let refusal):
                return MonitoredItemCreateResult(
                    statusCode: .badEventFilterInvalid,
                    filterResult: EventFilterResult(
                        selectClauseResults: select!.map { _ in .good }, whereClauseResult: refusal.result
                    ).extensionObject)
            }
            filterResult = EventFilterResult(selectClauseResults: select!.map { _ in .good }).extensionObject
        } else {
            // Whether the node has the attribute (a value's source is not asked here, under the lock).
            if target.attributeId == AttributeId.value.rawValue {
                guard node.nodeClass == .variable || node.nodeClass == .variableType else {
                    return MonitoredItemCreateResult(statusCode: .badAttributeIdInvalid)
                }
            } else {
                let probe = server.addressSpace.read(target.nodeId, target.attributeId, now: DateTime(now))
                if probe.status == .badAttributeIdInvalid {
                    return MonitoredItemCreateResult(statusCode: .badAttributeIdInvalid)
                }
            }
            let filter = r.requestedParameters.filter
            if filter != .null {
                guard let f = try? DataChangeFilter(filter, limits: server.decodingLimits) else {
                    return MonitoredItemCreateResult(statusCode: .badMonitoredItemFilterUnsupported)
                }
                // None 0, Absolute 1, Percent 2: a percentage (0 to 100) of the variable's EURange, as an absolute
                // deadband of that share of High − Low (OPC 10000-8 §7.2); without an EURange, or past 100 %,
                // Bad_DeadbandFilterInvalid.
                guard f.deadbandType <= 2, f.deadbandValue.isFinite, f.deadbandValue >= 0 else {
                    return MonitoredItemCreateResult(statusCode: .badDeadbandFilterInvalid)
                }
                var deadband: Double? = f.deadbandType == 1 ? f.deadbandValue : nil
                if f.deadbandType == 2 {
                    guard f.deadbandValue <= 100, let range = euRange(target.nodeId) else {
                        return MonitoredItemCreateResult(statusCode: .badDeadbandFilterInvalid)
                    }
                    deadband = f.deadbandValue / 100 * (range.high - range.low)
                }
                dataChange = (f.trigger, deadband)
            }
        }
        let sampling = select == nil ? Self.revise(r.requestedParameters.samplingInterval, default: s.intervalMs) : 0
        let item = MonitoredItem(
            id: nextItemId, node: target.nodeId, attribute: target.attributeId, parameters: r.requestedParameters,
            mode: r.monitoringMode, samplingMs: sampling,
            queueSize: Self.queue(r.requestedParameters.queueSize, events: select != nil), select: select)
        nextItemId &+= 1
        item.timestamps = s.timestampsToReturn
        (item.trigger, item.deadband) = dataChange
        item.whereClause = whereClause
        s.items[item.id] = item
        return MonitoredItemCreateResult(
            statusCode: .good, monitoredItemId: item.id, revisedSamplingInterval: sampling,
            revisedQueueSize: UInt32(item.queueSize), filterResult: filterResult)
    }

    /// A variable's EURange property (OPC 10000-8 §5.6.2), where it has one with finite limits, low ≤ high.
    private func euRange(_ node: NodeId) -> (low: Double, high: Double)? {
        let space = server.addressSpace
        guard let p = space.property(node, named: "EURange"),
            case .scalar(.extensionObject(let e))? = space.node(p)?.value?.value,
            let r = try? Range(e), r.low.isFinite, r.high.isFinite, r.low <= r.high
        else { return nil }
        return (r.low, r.high)
    }

    // MARK: The cycle

    /// An event for every event item on the Server object (or on the event's source).
    func post(_ event: ServerEvent, now: Date) {
        lock.withLock {
            for s in subscriptions.values {
                for item in s.items.values where item.select != nil {
                    guard item.node == NodeId(2253) || item.node == event.sourceNode else { continue }
                    if let clause = item.whereClause,
                        !clause.admits(event, isSubtype: { server.addressSpace.isSubtype($0, of: $1) })
                    {
                        continue
                    }
                    let fields = (item.select ?? []).map { event.field($0, receivedAt: now) }
                    item.enqueue(.event(EventFieldList(clientHandle: item.clientHandle, eventFields: fields)))
                }
            }
        }
    }

    /// ConditionRefresh (OPC 10000-9 §5.5.7) for one of the session's subscriptions: to each of its event items a
    /// RefreshStartEvent, then each condition's current event that its filter lets through, then a RefreshEndEvent
    /// (the two refresh events whatever the filter, each item's copy with the same EventId). Bad_SubscriptionIdInvalid
    /// for a subscription not of this session, Bad_NothingToDo where it has no event item. A refresh goes whole into
    /// the queues, past their size (none of its conditions dropped); while a queue is still past its size, the last
    /// refresh not yet sent, another is Bad_RefreshInProgress: a flood of refreshes never grows a queue past its
    /// size and one refresh.
    func refresh(subscription id: UInt32, conditions: [ServerEvent], now: Date) -> StatusCode {
        let start = ServerEvent(
            eventType: NodeId(2787), time: now, message: "ConditionRefresh: the conditions follow", severity: 1)
        let end = ServerEvent(
            eventType: NodeId(2788), time: now, message: "ConditionRefresh: the conditions were sent", severity: 1)
        return lock.withLock {
            guard let s = subscriptions[id] else { return .badSubscriptionIdInvalid }
            let items = s.items.values.filter { $0.select != nil }.sorted { $0.id < $1.id }
            guard !items.isEmpty else { return .badNothingToDo }
            guard items.allSatisfy({ $0.queue.count <= $0.queueSize }) else { return .badRefreshInProgress }
            for item in items {
                func add(_ event: ServerEvent) {
                    let fields = (item.select ?? []).map { event.field($0, receivedAt: now) }
                    item.enqueue(
                        .event(EventFieldList(clientHandle: item.clientHandle, eventFields: fields)), whole: true)
                }
                add(start)
                for c in conditions where item.node == NodeId(2253) || item.node == c.sourceNode {
                    if let clause = item.whereClause,
                        !clause.admits(c, isSubtype: { server.addressSpace.isSubtype($0, of: $1) })
                    {
                        continue
                    }
                    add(c)
                }
                add(end)
            }
            return .good
        }
    }

    /// Samples what is due and answers a waiting Publish for each subscription whose interval came round. The
    /// values are read outside the lock: a value's source may take locks of its own (the field state's).
    func tick(now: Date) {
        let stamp = DateTime(now)
        let due: [(MonitoredItem, NodeId, UInt32)] = lock.withLock {
            subscriptions.values.flatMap { s -> [(MonitoredItem, NodeId, UInt32)] in
                // Most ticks (every 5 ms) find nothing due: a subscription's items are looked at only when the
                // earliest of them is.
                guard s.nextSampleDue <= now else { return [] }
                var taken: [(MonitoredItem, NodeId, UInt32)] = []
                var next = Date.distantFuture
                for item in s.items.values where item.select == nil && item.mode != .disabled {
                    if item.nextSample <= now {
                        item.nextSample = now.addingTimeInterval(item.samplingMs / 1000)
                        taken.append((item, item.node, item.attribute))
                    }
                    next = min(next, item.nextSample)
                }
                s.nextSampleDue = next
                return taken
            }
        }
        let sampled = due.map { ($0.0, server.addressSpace.read($0.1, $0.2, now: stamp)) }
        var answers: [(Int, any ChannelContext, PublishResponse)] = []
        var faults: [(UInt32, any ChannelContext, ResponseHeader)] = []
        lock.withLock {
            for (item, value) in sampled {
                guard item.changed(from: item.last, to: value) else { continue }
                item.last = value
                let v = value.stamped(item.timestamps, attribute: item.attribute, serverTime: stamp)
                item.enqueue(.value(MonitoredItemNotification(clientHandle: item.clientHandle, value: v)))
                if item.oldestQueued == nil { item.oldestQueued = now }
            }
            // Publish requests of a channel that closed are answered nowhere: dropped (OPC 10000-4 §5.13.5).
            publishQueue.removeAll { !$0.channel.isOpen }
            // A subscription that timed out is told first, each to a Publish of its own.
            while !timedOut.isEmpty, !publishQueue.isEmpty {
                let (id, sequence) = timedOut.removeFirst()
                let waiting = publishQueue.removeFirst()
                let message = NotificationMessage(
                    sequenceNumber: sequence, publishTime: stamp,
                    notificationData: [StatusChangeNotification(status: .badTimeout).extensionObject])
                answers.append(
                    (
                        Int(waiting.requestId), waiting.channel,
                        PublishResponse(
                            responseHeader: server.header(waiting.header, now: now), subscriptionId: id,
                            availableSequenceNumbers: [], moreNotifications: false, notificationMessage: message,
                            results: waiting.acks)
                    ))
            }
            if subscriptions.isEmpty {
                // The last subscription went: the waiting Publishes are answered Bad_NoSubscription (§5.13.5).
                for w in publishQueue {
                    faults.append(
                        (w.requestId, w.channel, server.header(w.header, now: now, result: .badNoSubscription)))
                }
                publishQueue = []
            }
            for s in subscriptions.values.sorted(by: { $0.id < $1.id }) {
                let due = s.nextPublish <= now
                guard due || (s.late && !publishQueue.isEmpty) else { continue }
                if due { s.nextPublish = now.addingTimeInterval(s.intervalMs / 1000) }
                let ready = s.enabled ? s.items.values.filter { $0.mode == .reporting && !$0.queue.isEmpty } : []
                guard let waiting = publishQueue.first else {
                    s.starvedCycles += 1
                    if !ready.isEmpty || !s.sentFirst || s.idleCycles + 1 >= s.keepAliveCount { s.late = true }
                    if s.starvedCycles >= s.lifetimeCount {
                        subscriptions[s.id] = nil
                        server.subscriptionIds.release(s.id)
                        timedOut.append((s.id, s.sequence == UInt32.max ? 1 : s.sequence + 1))
                        if timedOut.count > 16 { timedOut.removeFirst() }
                    }
                    continue
                }
                s.starvedCycles = 0
                if ready.isEmpty, !s.late {
                    s.idleCycles += 1
                    guard s.idleCycles >= s.keepAliveCount || !s.sentFirst else { continue }
                }
                s.late = false
                publishQueue.removeFirst()
                s.idleCycles = 0
                s.sentFirst = true
                // A keep-alive carries the number the next message will have (1 after the top).
                var more = false
                var message = NotificationMessage(
                    sequenceNumber: s.sequence == UInt32.max ? 1 : s.sequence + 1, publishTime: stamp)
                if !ready.isEmpty {
                    s.sequence &+= 1
                    if s.sequence == 0 { s.sequence = 1 }
                    message.sequenceNumber = s.sequence
                    var values: [MonitoredItemNotification] = []
                    var events: [EventFieldList] = []
                    if let oldest = ready.compactMap(\.oldestQueued).min() {
                        server.publishLatency.record(now.timeIntervalSince(oldest))
                    }
                    // At most the client's maxNotificationsPerPublish (0: no limit) and the server's own limit; the
                    // rest stays queued for the next Publish, which `moreNotifications` says is due at once.
                    var budget = Int(
                        s.maxNotifications == 0
                            ? UInt32(Self.maxNotificationsPerMessage)
                            : min(s.maxNotifications, UInt32(Self.maxNotificationsPerMessage)))
                    for item in ready.sorted(by: { $0.id < $1.id }) where budget > 0 {
                        let taken = min(budget, item.queue.count)
                        for part in item.queue.prefix(taken) {
                            switch part {
                            case .value(let n): values.append(n)
                            case .event(let e): events.append(e)
                            }
                        }
                        item.queue.removeFirst(taken)
                        budget -= taken
                        if item.queue.isEmpty { item.oldestQueued = nil }
                    }
                    more = s.items.values.contains { $0.mode == .reporting && !$0.queue.isEmpty }
                    // The rest goes with the next Publish that waits, without waiting for the next interval.
                    if more { s.nextPublish = now }
                    var data: [ExtensionObject] = []
                    if !values.isEmpty { data.append(DataChangeNotification(monitoredItems: values).extensionObject) }
                    if !events.isEmpty { data.append(EventNotificationList(events: events).extensionObject) }
                    message.notificationData = data
                    s.retained[s.sequence] = message
                    if s.retained.count > Self.retainedMessages, let oldest = s.retained.keys.min() {
                        s.retained[oldest] = nil
                    }
                }
                let response = PublishResponse(
                    responseHeader: server.header(waiting.header, now: now), subscriptionId: s.id,
                    availableSequenceNumbers: s.retained.keys.sorted(), moreNotifications: more,
                    notificationMessage: message, results: waiting.acks)
                answers.append((Int(waiting.requestId), waiting.channel, response))
            }
        }
        for (id, channel, response) in answers { channel.respond(requestId: UInt32(id), response) }
        for (id, channel, header) in faults { channel.respond(requestId: id, ServiceFault(responseHeader: header)) }
    }
}

/// Subscription ids unique in the server (a client may move a subscription between its sessions).
final class SubscriptionIds: @unchecked Sendable {
    private let lock = NSLock()
    private var next: UInt32 = 1
    private var live = Set<UInt32>()

    func take() -> UInt32 {
        lock.withLock {
            while live.contains(next) || next == 0 { next &+= 1 }
            live.insert(next)
            defer { next &+= 1 }
            return next
        }
    }

    func release(_ id: UInt32) { _ = lock.withLock { live.remove(id) } }
    var count: Int { lock.withLock { live.count } }
}
