import Foundation
import OPCUA
import Testing

@testable import OPCUAServer

/// Data changes with a DataChangeFilter (OPC 10000-4 §7.22.2): with an absolute deadband a value is reported only
/// when it moved by more than the deadband from the last one reported; the subscriptions run on an injected
/// clock, stepped by the test.
@Suite(.serialized)
struct SubscriptionTests {
    @Test func anAbsoluteDeadbandHoldsBackSmallChanges() async throws {
        let clock = HostileInputTests.Clock()
        let s = try await TestServer(clock: { clock.now })
        defer { Task { await s.stop() } }
        let space = s.server.core.addressSpace
        let id = NodeId(namespace: 1, .string("temperature"))
        var node = Node(id: id, nodeClass: .variable, browseName: QualifiedName(namespace: 1, "temperature"))
        node.dataType = NodeId(11)
        node.valueRank = -1
        node.accessLevel = Node.readable
        node.references = [Reference(ReferenceTypeIds.hasComponent, NodeId(85), forward: false)]
        space.add(node)
        space.setValue(id, DataValue(value: .scalar(.double(10))))

        let c = try RawClient(port: s.port)
        _ = try c.hello()
        try c.open()
        #expect(try c.session() == .good)
        var (type, r) = try c.call(
            CreateSubscriptionRequest(
                requestHeader: c.header(), requestedPublishingInterval: 50, requestedLifetimeCount: 10_000,
                requestedMaxKeepAliveCount: 1000, publishingEnabled: true))
        #expect(type == CreateSubscriptionResponse.binaryEncodingId)
        let subscription = try CreateSubscriptionResponse(from: &r).subscriptionId
        let filter = DataChangeFilter(trigger: .statusValue, deadbandType: 1, deadbandValue: 1.0)
        (type, r) = try c.call(
            CreateMonitoredItemsRequest(
                requestHeader: c.header(), subscriptionId: subscription, timestampsToReturn: .neither,
                itemsToCreate: [
                    MonitoredItemCreateRequest(
                        itemToMonitor: ReadValueId(nodeId: id, attributeId: 13), monitoringMode: .reporting,
                        requestedParameters: MonitoringParameters(
                            clientHandle: 7, samplingInterval: 50, filter: filter.extensionObject, queueSize: 10))
                ]))
        #expect(try CreateMonitoredItemsResponse(from: &r).results?.first?.statusCode == .good)

        /// Steps the clock one interval and answers the values of the next Publish answer with data.
        func next() throws -> [Double] {
            clock.advance(0.06)
            var (type, r) = try c.call(PublishRequest(requestHeader: c.header()))
            #expect(type == PublishResponse.binaryEncodingId)
            let p = try PublishResponse(from: &r)
            return try (p.notificationMessage.notificationData ?? []).flatMap { e in
                try DataChangeNotification(e).monitoredItems ?? []
            }.compactMap { MonitoredItem.number($0.value.value) }
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
}
