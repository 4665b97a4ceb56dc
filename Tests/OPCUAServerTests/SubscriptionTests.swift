import Foundation
import OPCUA
import Testing

@testable import OPCUAServer

/// Data changes with a DataChangeFilter (OPC 10000-4 §7.22.2): with an absolute deadband a value is reported only
/// when it moved by more than the deadband from the last one reported; the subscriptions run on an injected
/// clock, stepped by the test.
@Suite(.serialized)
struct SubscriptionTests {
    /// A raw client with an activated session and one subscription (publishing every 50 ms, keep-alives rare).
    static func subscribed(_ s: TestServer, maxNotifications: UInt32 = 0) throws -> (RawClient, UInt32) {
        let c = try RawClient.withSession(port: s.port)
        var (type, r) = try c.call(
            CreateSubscriptionRequest(
                requestHeader: c.header(), requestedPublishingInterval: 50, requestedLifetimeCount: 10_000,
                requestedMaxKeepAliveCount: 1000, maxNotificationsPerPublish: maxNotifications, publishingEnabled: true)
        )
        #expect(type == CreateSubscriptionResponse.binaryEncodingId)
        return (c, try CreateSubscriptionResponse(from: &r).subscriptionId)
    }

    /// A Double variable under Objects, holding `value`.
    static func addDouble(_ space: AddressSpace, _ id: NodeId, _ value: Double) {
        var node = Node(id: id, nodeClass: .variable, browseName: QualifiedName(namespace: 1, "v"))
        node.dataType = NodeId(11)
        node.valueRank = -1
        node.accessLevel = Node.readable
        node.references = [Reference(ReferenceTypeIds.hasComponent, NodeId(85), forward: false)]
        space.add(node)
        space.setValue(id, DataValue(value: .scalar(.double(value))))
    }

    /// A data-change item on `node`'s value: its status.
    static func monitor(
        _ c: RawClient, _ subscription: UInt32, _ node: NodeId, filter: DataChangeFilter? = nil, queueSize: UInt32 = 10
    ) throws -> StatusCode? {
        var (_, r) = try c.call(
            CreateMonitoredItemsRequest(
                requestHeader: c.header(), subscriptionId: subscription, timestampsToReturn: .neither,
                itemsToCreate: [
                    MonitoredItemCreateRequest(
                        itemToMonitor: ReadValueId(nodeId: node, attributeId: 13), monitoringMode: .reporting,
                        requestedParameters: MonitoringParameters(
                            clientHandle: 7, samplingInterval: 50, filter: filter?.extensionObject ?? .null,
                            queueSize: queueSize))
                ]))
        return try CreateMonitoredItemsResponse(from: &r).results?.first?.statusCode
    }

    /// The numbers of the next Publish answer's data changes.
    static func published(_ c: RawClient) throws -> [Double] {
        var (type, r) = try c.call(PublishRequest(requestHeader: c.header()))
        #expect(type == PublishResponse.binaryEncodingId)
        let p = try PublishResponse(from: &r)
        return try (p.notificationMessage.notificationData ?? []).flatMap { e in
            try DataChangeNotification(e).monitoredItems ?? []
        }.compactMap { MonitoredItem.number($0.value.value) }
    }

    @Test func anAbsoluteDeadbandHoldsBackSmallChanges() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let space = s.server.core.addressSpace
        let id = NodeId(namespace: 1, .string("temperature"))
        Self.addDouble(space, id, 10)

        let (c, subscription) = try Self.subscribed(s)
        let filter = DataChangeFilter(trigger: .statusValue, deadbandType: 1, deadbandValue: 1.0)
        #expect(try Self.monitor(c, subscription, id, filter: filter) == .good)

        /// Steps the clock one interval and answers the values of the next Publish answer with data.
        func next() throws -> [Double] {
            clock.advance(0.06)
            return try Self.published(c)
        }
        #expect(try next() == [10])
        space.setValue(id, DataValue(value: .scalar(.double(10.5))))
        clock.advance(0.06)
        space.setValue(id, DataValue(value: .scalar(.double(11.2))))
        // 10.5 and then 11.2 are within 1.0 of 10 (the last reported): nothing; 12.5 is not.
        clock.advance(0.06)
        space.setValue(id, DataValue(value: .scalar(.double(12.5))))
        #expect(try next() == [12.5])
    }

    /// A percent deadband (OPC 10000-8 §7.2): a share of the variable's EURange (High − Low), here 1 % of 0…200 = 2.0:
    /// 11.5 stays within 2.0 of the 10 last reported, 12.5 does not. Without an EURange, or past 100 %,
    /// Bad_DeadbandFilterInvalid.
    @Test func aPercentDeadbandIsAShareOfTheEURange() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let space = s.server.core.addressSpace
        let id = NodeId(namespace: 1, .string("level"))
        let bare = NodeId(namespace: 1, .string("bare"))
        let rangeId = NodeId(namespace: 1, .string("level/EURange"))
        for n in [id, bare] { Self.addDouble(space, n, 10) }
        var p = Node(id: rangeId, nodeClass: .variable, browseName: QualifiedName(namespace: 0, "EURange"))
        p.dataType = NodeId(884)
        p.valueRank = -1
        p.value = DataValue(value: .scalar(.extensionObject(OPCUA.Range(low: 0, high: 200).extensionObject)))
        p.references = [Reference(ReferenceTypeIds.hasProperty, id, forward: false)]
        space.add(p)

        let (c, subscription) = try Self.subscribed(s)
        func create(_ node: NodeId, _ percent: Double) throws -> StatusCode? {
            try Self.monitor(
                c, subscription, node,
                filter: DataChangeFilter(trigger: .statusValue, deadbandType: 2, deadbandValue: percent))
        }
        #expect(try create(bare, 1) == .badDeadbandFilterInvalid)
        #expect(try create(id, 150) == .badDeadbandFilterInvalid)
        #expect(try create(id, 1) == .good)
        func next() throws -> [Double] {
            clock.advance(0.06)
            return try Self.published(c)
        }
        #expect(try next() == [10])
        space.setValue(id, DataValue(value: .scalar(.double(11.5))))
        clock.advance(0.06)
        space.setValue(id, DataValue(value: .scalar(.double(12.5))))
        #expect(try next() == [12.5])
    }

    /// A subscription whose interval comes round with a notification to send and no Publish waiting is Late: the
    /// next Publish is answered at once, not an interval later (OPC 10000-4 §5.13.1.2, the state table's Late
    /// row). On the stepped clock, which does not move after the tick, the old behaviour left the Publish
    /// unanswered (the client's 10 s receive timeout; a flake of the unit lane under load, where the server's own
    /// tick came between the step and the Publish).
    @Test func aLateSubscriptionAnswersTheNextPublishAtOnce() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let space = s.server.core.addressSpace
        let id = NodeId(namespace: 1, .string("level"))
        Self.addDouble(space, id, 3)
        let (c, subscription) = try Self.subscribed(s)
        #expect(try Self.monitor(c, subscription, id, queueSize: 1) == .good)
        clock.advance(0.06)
        // The interval comes round (sampled, due) with no Publish waiting.
        s.server.core.tick()
        #expect(try Self.published(c) == [3])
    }

    /// An EventFilter's where clause (OPC 10000-4 §7.7): And(GreaterThanOrEqual(Severity, 600), OfType
    /// BaseEventType) lets through the events of severity 600 and more; an operator the server lacks (Like) is
    /// refused with Bad_EventFilterInvalid and the element's Bad_FilterOperatorUnsupported.
    @Test func aWhereClauseChoosesTheEvents() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let (c, subscription) = try Self.subscribed(s)
        func field(_ name: String) -> ExtensionObject {
            SimpleAttributeOperand(
                typeDefinitionId: NodeId(2041), browsePath: [QualifiedName(name)], attributeId: 13
            ).extensionObject
        }
        func literal(_ v: Variant) -> ExtensionObject { LiteralOperand(value: v).extensionObject }
        let clause = ContentFilter(elements: [
            ContentFilterElement(
                filterOperator: .and,
                filterOperands: [ElementOperand(index: 1).extensionObject, ElementOperand(index: 2).extensionObject]),
            ContentFilterElement(
                filterOperator: .greaterThanOrEqual,
                filterOperands: [field("Severity"), literal(.scalar(.uInt16(600)))]
            ),
            ContentFilterElement(filterOperator: .ofType, filterOperands: [literal(.scalar(.nodeId(NodeId(2041))))]),
        ])
        func item(_ filter: ContentFilter, handle: UInt32) throws -> MonitoredItemCreateResult {
            var (_, r) = try c.call(
                CreateMonitoredItemsRequest(
                    requestHeader: c.header(), subscriptionId: subscription,
                    itemsToCreate: [
                        MonitoredItemCreateRequest(
                            itemToMonitor: ReadValueId(nodeId: NodeId(2253), attributeId: 12),
                            monitoringMode: .reporting,
                            requestedParameters: MonitoringParameters(
                                clientHandle: handle,
                                filter: EventFilter(
                                    selectClauses: [
                                        SimpleAttributeOperand(
                                            typeDefinitionId: NodeId(2041), browsePath: [QualifiedName("Severity")],
                                            attributeId: 13)
                                    ], whereClause: filter
                                ).extensionObject, queueSize: 100))
                    ]))
            return try #require(try CreateMonitoredItemsResponse(from: &r).results?.first)
        }
        #expect(try item(clause, handle: 1).statusCode == .good)
        let like = try item(
            ContentFilter(elements: [
                ContentFilterElement(
                    filterOperator: .like, filterOperands: [field("Message"), literal(.scalar(.string("%")))])
            ]), handle: 2)
        #expect(like.statusCode == .badEventFilterInvalid)
        let result = try EventFilterResult(like.filterResult)
        #expect(result.whereClauseResult.elementResults?.first?.statusCode == .badFilterOperatorUnsupported)

        for severity: UInt16 in [100, 900, 600, 300] {
            s.server.core.post(ServerEvent(time: clock.now, message: "severity \(severity)", severity: severity))
        }
        clock.advance(0.06)
        var got: [UInt16] = []
        while got.count < 2 {
            clock.advance(0.06)
            var (type, r) = try c.call(PublishRequest(requestHeader: c.header()))
            #expect(type == PublishResponse.binaryEncodingId)
            let p = try PublishResponse(from: &r)
            for e in p.notificationMessage.notificationData ?? [] {
                for list in (try? EventNotificationList(e))?.events ?? [] {
                    for case .scalar(.uInt16(let v)) in list.eventFields ?? [] { got.append(v) }
                }
            }
            if p.notificationMessage.notificationData == nil && got.isEmpty { continue }
        }
        #expect(got == [900, 600])
    }

    /// A client's maxNotificationsPerPublish (OPC 10000-4 §5.13.2): three items' first values in two messages of at
    /// most two, the first saying moreNotifications; nothing is lost.
    @Test func notificationsPastTheClientsLimitGoInTheNextMessage() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let (c, subscription) = try Self.subscribed(s, maxNotifications: 2)
        var (_, r) = try c.call(
            CreateMonitoredItemsRequest(
                requestHeader: c.header(), subscriptionId: subscription,
                itemsToCreate: (1...3).map { handle in
                    MonitoredItemCreateRequest(
                        itemToMonitor: ReadValueId(nodeId: NodeId(2257), attributeId: 13), monitoringMode: .reporting,
                        requestedParameters: MonitoringParameters(
                            clientHandle: UInt32(handle), samplingInterval: 50, queueSize: 1))
                }))
        #expect(try CreateMonitoredItemsResponse(from: &r).results?.map(\.statusCode) == [.good, .good, .good])
        func publish() throws -> (handles: [UInt32], more: Bool) {
            clock.advance(0.06)
            var (_, r) = try c.call(PublishRequest(requestHeader: c.header()))
            let p = try PublishResponse(from: &r)
            let handles = try (p.notificationMessage.notificationData ?? []).flatMap {
                try DataChangeNotification($0).monitoredItems ?? []
            }.map(\.clientHandle)
            return (handles, p.moreNotifications)
        }
        let first = try publish()
        #expect(first.handles == [1, 2] && first.more)
        let second = try publish()
        #expect(second.handles == [3] && !second.more)
    }

    /// A subscription without Publish requests for its lifetime count of intervals is deleted, and the next Publish
    /// is told so: a NotificationMessage for that subscription holding a StatusChangeNotification of Bad_Timeout
    /// (OPC 10000-4 §5.13.1.1); the Publish after it finds no subscription (Bad_NoSubscription, §5.13.5).
    @Test func aSubscriptionWhoseLifetimeEndsIsToldToTheNextPublish() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let c = try RawClient.withSession(port: s.port)
        var (type, r) = try c.call(
            CreateSubscriptionRequest(
                requestHeader: c.header(), requestedPublishingInterval: 50, requestedLifetimeCount: 10,
                requestedMaxKeepAliveCount: 3, publishingEnabled: true))
        #expect(type == CreateSubscriptionResponse.binaryEncodingId)
        let created = try CreateSubscriptionResponse(from: &r)
        #expect(created.revisedLifetimeCount == 10)
        // Ten intervals and more without a Publish request: the subscription goes.
        for _ in 0..<12 {
            clock.advance(0.06)
            s.server.core.tick()
        }
        clock.advance(0.06)
        (type, r) = try c.call(PublishRequest(requestHeader: c.header()))
        #expect(type == PublishResponse.binaryEncodingId)
        let told = try PublishResponse(from: &r)
        #expect(told.subscriptionId == created.subscriptionId)
        let data = told.notificationMessage.notificationData ?? []
        #expect(data.count == 1 && data.first?.typeId == StatusChangeNotification.binaryEncodingId)
        #expect(try data.first.map { try StatusChangeNotification($0).status } == .badTimeout)
        clock.advance(0.06)
        (type, r) = try c.call(PublishRequest(requestHeader: c.header()))
        #expect(type == ServiceFault.binaryEncodingId)
        #expect(try ServiceFault(from: &r).responseHeader.serviceResult == .badNoSubscription)
    }
}
