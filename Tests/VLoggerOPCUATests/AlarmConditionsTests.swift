import FieldState
import Foundation
import ISO15693
import NIOConcurrencyHelpers
import OPCUA
import Testing
import VLoggerModel
import VLoggerOutbox

@testable import OPCUAServer
@testable import VLoggerOPCUA

/// The rules' violations as alarm conditions (OPC 10000-9; the facts in docs/reference/opcua.md, "Alarms and
/// conditions"): a range rule's condition is a LimitAlarmType with its limits, Acknowledge checks the EventId and the
/// acknowledged state, the acknowledgement is recorded with the client as its origin, and a condition that is
/// neither active nor unacknowledged goes.
struct AlarmConditionsTests {
    static let uid = try! UID(parsing: "E004015012345678")
    static let rule = "cold room temperature"
    static let t0: Millis = 1_800_000_000_000

    struct Rig {
        let space: AddressSpace
        let core: ServerCore
        let state: FieldState
        let namespace: GatewayNamespace
        let session: Session
        let events: NIOLockedValueBox<[ServerEvent]>
        let recorded: NIOLockedValueBox<[AlarmAcknowledgement]>

        func read(_ node: NodeId) -> Variant? {
            space.read(node, 13, now: DateTime(millisecondsSince1970: AlarmConditionsTests.t0)).value
        }
        func call(_ object: NodeId, _ method: NodeId, _ args: [Variant]) async -> CallMethodResult {
            await core.methods.call(
                CallMethodRequest(objectId: object, methodId: method, inputArguments: args), session: session,
                deadline: nil, space: space)
        }
        func event(_ kind: Event.Kind, _ time: Millis, detail: String = "") {
            state.eventRecorded(
                Event(
                    time: time, gateway: "gw-7", reader: "cold-1", uid: AlarmConditionsTests.uid, kind: kind,
                    name: AlarmConditionsTests.rule, severity: .critical, detail: detail), asset: "FRIDGE-7")
            namespace.settled()
        }
    }

    func rig() throws -> Rig {
        let space = try AddressSpace.standard(applicationUri: "urn:vlogger:gw-7")
        let core = testCore(space)
        let state = FieldState(readers: [FieldState.Reader(id: "cold-1", location: "Cold room", intervalMs: 1000)])
        let events = NIOLockedValueBox<[ServerEvent]>([])
        let recorded = NIOLockedValueBox<[AlarmAcknowledgement]>([])
        // As the service does: the acknowledgement is an event of the store, and the field state's alarm is marked.
        let namespace = GatewayNamespace(
            space: space, state: state, gateway: "gw-7", site: nil, methods: core.methods,
            rules: [AlarmRule(name: Self.rule, severity: .critical, field: "temperature", low: 2, high: 24)],
            acknowledge: { ack in
                recorded.withLockedValue { $0.append(ack) }
                state.eventRecorded(
                    Event(
                        time: ack.time, gateway: "gw-7", uid: ack.uid, kind: .acknowledged, name: ack.rule,
                        severity: .info, detail: ack.comment, origin: ack.origin), asset: nil)
                return true
            },
            post: { e in events.withLockedValue { $0.append(e) } })
        let session = testSession(core, name: "scada", uri: "urn:scada-1", user: "op")
        return Rig(
            space: space, core: core, state: state, namespace: namespace, session: session, events: events,
            recorded: recorded)
    }

    @Test func aViolationIsAConditionThatIsAcknowledgedAndGoesWhenItEnds() async throws {
        let r = try rig()
        r.event(.arrival, Self.t0)
        r.event(.violation, Self.t0 + 100, detail: "temperature 31.5 °C is above 24")
        let node = r.namespace.id("Alarms/\(Self.uid)/\(Self.rule)")
        let condition = try #require(r.space.node(node))
        // A range rule: LimitAlarmType (i=2955) with HighLimit and LowLimit.
        #expect(condition.typeDefinition == NodeId(2955))
        #expect(r.read(r.namespace.id("Alarms/\(Self.uid)/\(Self.rule)/HighLimit")) == .scalar(.double(24)))
        #expect(r.read(r.namespace.id("Alarms/\(Self.uid)/\(Self.rule)/LowLimit")) == .scalar(.double(2)))
        func state(_ path: String) -> Variant? { r.read(r.namespace.id("Alarms/\(Self.uid)/\(Self.rule)/\(path)")) }
        #expect(state("ActiveState/Id") == .scalar(.boolean(true)))
        #expect(state("AckedState/Id") == .scalar(.boolean(false)))
        #expect(state("Retain") == .scalar(.boolean(true)))
        #expect(state("ConditionName") == .scalar(.string(Self.rule)))
        // The tag's node has the condition (HasCondition, i=9006).
        let tag = try #require(r.space.node(r.namespace.id("Tags/\(Self.uid)")))
        #expect(tag.references.contains { $0.type == NodeId(9006) && $0.forward && $0.target == node })
        // Its event: the condition's type, its id, critical's severity 900.
        let raised = try #require(r.events.withLockedValue { $0 }.last { $0.conditionId == node })
        #expect(raised.eventType == NodeId(2955) && raised.severity == 900)
        #expect(raised.fields["ActiveState/Id"] == .scalar(.boolean(true)))
        #expect(raised.fields["AckedState/Id"] == .scalar(.boolean(false)))

        // Acknowledge (i=9111, the type's method called on the condition) with an EventId it never sent.
        let comment = Variant.scalar(.localizedText(LocalizedText("door closed, checking")))
        var result = await r.call(node, NodeId(9111), [.scalar(.byteString([1, 2, 3])), comment])
        #expect(result.statusCode == .badEventIdUnknown)
        #expect(r.recorded.withLockedValue { $0 }.isEmpty)
        result = await r.call(node, NodeId(9111), [.scalar(.byteString(raised.eventId)), comment])
        #expect(result.statusCode == .good)
        let ack = try #require(r.recorded.withLockedValue { $0 }.first)
        #expect(ack.rule == Self.rule && ack.uid == Self.uid && ack.comment == "door closed, checking")
        #expect(ack.origin == "opcua:urn:scada-1 (op)")
        r.namespace.settled()
        #expect(r.state.alarms.first?.acknowledged?.by == "opcua:urn:scada-1 (op)")
        #expect(state("AckedState/Id") == .scalar(.boolean(true)))
        #expect(state("Retain") == .scalar(.boolean(true)))
        #expect(state("ClientUserId") == .scalar(.string("opcua:urn:scada-1 (op)")))
        let acked = try #require(r.events.withLockedValue { $0 }.last { $0.conditionId == node })
        #expect(acked.fields["AckedState/Id"] == .scalar(.boolean(true)) && acked.eventId != raised.eventId)
        // Once acknowledged, again: Bad_ConditionBranchAlreadyAcked, through the condition's own method node too.
        let own = try #require(r.space.instanceMethod(of: node, declaredBy: NodeId(9111)))
        result = await r.call(node, own, [.scalar(.byteString(acked.eventId)), comment])
        #expect(result.statusCode == .badConditionBranchAlreadyAcked)
        #expect(r.recorded.withLockedValue { $0 }.count == 1)
        // A comment that is no text: Bad_InvalidArgument (Bad_TypeMismatch for that argument).
        result = await r.call(node, own, [.scalar(.byteString(acked.eventId)), .scalar(.int32(5))])
        #expect(result.statusCode == .badInvalidArgument)

        // The violation ends: inactive, acknowledged, so no longer retained, and the condition goes.
        r.event(.violationEnded, Self.t0 + 5_000)
        let ended = try #require(r.events.withLockedValue { $0 }.last { $0.conditionId == node })
        #expect(ended.fields["ActiveState/Id"] == .scalar(.boolean(false)))
        #expect(ended.fields["Retain"] == .scalar(.boolean(false)))
        #expect(r.space.node(node) == nil)
        #expect(r.space.node(r.namespace.id("Alarms/\(Self.uid)/\(Self.rule)/AckedState/Id")) == nil)
    }

    /// A violation that ends before anyone acknowledged it stays (Retain, inactive) until acknowledged; ConditionRefresh
    /// for a subscription the session does not have is Bad_SubscriptionIdInvalid.
    @Test func anEndedViolationStaysUntilAcknowledged() async throws {
        let r = try rig()
        r.event(.arrival, Self.t0)
        r.event(.violation, Self.t0 + 100, detail: "temperature 1.0 °C is below 2")
        r.event(.violationEnded, Self.t0 + 900)
        let node = r.namespace.id("Alarms/\(Self.uid)/\(Self.rule)")
        #expect(r.space.node(node) != nil)
        let last = try #require(r.events.withLockedValue { $0 }.last { $0.conditionId == node })
        #expect(
            last.fields["Retain"] == .scalar(.boolean(true))
                && last.fields["ActiveState/Id"] == .scalar(.boolean(false)))
        // The ended violation is off the field state's alarms, so the service records the acknowledgement with the
        // tag only; the condition goes once acknowledged.
        let result = await r.call(
            node, NodeId(9111), [.scalar(.byteString(last.eventId)), .scalar(.localizedText(LocalizedText("seen")))])
        #expect(result.statusCode == .good)
        r.namespace.settled()
        #expect(r.space.node(node) == nil)
        let refresh = await r.call(NodeId(2782), NodeId(3875), [.scalar(.uInt32(77))])
        #expect(refresh.statusCode == .badSubscriptionIdInvalid)
        let wrong = await r.call(NodeId(2782), NodeId(3875), [.scalar(.int32(77))])
        #expect(wrong.statusCode == .badInvalidArgument)
    }

    /// A channel that keeps what it is sent (Publish answers).
    final class Channel: ChannelContext, @unchecked Sendable {
        let channelId: UInt32 = 1
        let security = EndpointSecurity(.none, .none)
        let clientCertificate: ApplicationCertificate? = nil
        let endpointUrl: String? = nil
        let isOpen = true
        let sent = NIOLockedValueBox<[any Structure]>([])
        func respond(requestId: UInt32, _ response: any Structure) { sent.withLockedValue { $0.append(response) } }
    }

    /// A violation that begins again is a new activation: an EventId of the earlier one acknowledges nothing
    /// (Bad_EventIdUnknown), and its state is unacknowledged again.
    @Test func anEventOfAnEarlierViolationAcknowledgesNothing() async throws {
        let r = try rig()
        r.event(.arrival, Self.t0)
        r.event(.violation, Self.t0 + 100, detail: "first")
        let node = r.namespace.id("Alarms/\(Self.uid)/\(Self.rule)")
        let first = try #require(r.events.withLockedValue { $0 }.last { $0.conditionId == node })
        r.event(.violationEnded, Self.t0 + 200)
        r.event(.violation, Self.t0 + 300, detail: "second")
        let second = try #require(r.events.withLockedValue { $0 }.last { $0.conditionId == node })
        #expect(
            second.fields["ActiveState/Id"] == .scalar(.boolean(true))
                && second.fields["Retain"] == .scalar(.boolean(true)))
        let comment = Variant.scalar(.localizedText(LocalizedText("")))
        var result = await r.call(node, NodeId(9111), [.scalar(.byteString(first.eventId)), comment])
        #expect(result.statusCode == .badEventIdUnknown)
        result = await r.call(node, NodeId(9111), [.scalar(.byteString(second.eventId)), comment])
        #expect(result.statusCode == .good)
        // The acknowledgement names the violation it acknowledged (the second, begun at t0 + 300).
        #expect(r.recorded.withLockedValue { $0 }.map(\.since) == [Self.t0 + 300])
    }

    /// Two Acknowledge calls at once: one is recorded, the other Bad_ConditionBranchAlreadyAcked (the first holds
    /// the condition while the store takes it).
    @Test func twoAcknowledgementsAtOnceAreRecordedOnce() async throws {
        let space = try AddressSpace.standard(applicationUri: "urn:vlogger:gw-7")
        let core = testCore(space)
        let state = FieldState(readers: [FieldState.Reader(id: "cold-1", location: nil, intervalMs: 1000)])
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let records = NIOLockedValueBox(0)
        let events = NIOLockedValueBox<[ServerEvent]>([])
        let namespace = GatewayNamespace(
            space: space, state: state, gateway: "gw-7", site: nil, methods: core.methods,
            acknowledge: { _ in
                records.withLockedValue { $0 += 1 }
                entered.signal()
                release.wait()
                return true
            }, post: { e in events.withLockedValue { $0.append(e) } })
        state.eventRecorded(
            Event(
                time: Self.t0, gateway: "gw-7", reader: "cold-1", uid: Self.uid, kind: .violation, name: "door open",
                severity: .warning, detail: ""), asset: nil)
        namespace.settled()
        let node = namespace.id("Alarms/\(Self.uid)/door open")
        let raised = try #require(events.withLockedValue { $0 }.last { $0.conditionId == node })
        #expect(raised.eventType == NodeId(2915))
        let session = testSession(core, name: "scada")
        let request = CallMethodRequest(
            objectId: node, methodId: NodeId(9111),
            inputArguments: [.scalar(.byteString(raised.eventId)), .scalar(.localizedText(LocalizedText("a")))])
        // The first call waits inside the store's recording, on the server's method executor (not Swift's pool).
        let first = Task.detached(executorPreference: ServerCore.methodExecutor) {
            await core.methods.call(request, session: session, deadline: nil, space: space)
        }
        await withCheckedContinuation { c in
            DispatchQueue.global().async {
                entered.wait()
                c.resume()
            }
        }
        let second = await core.methods.call(request, session: session, deadline: nil, space: space)
        #expect(second.statusCode == .badConditionBranchAlreadyAcked)
        release.signal()
        #expect(await first.value.statusCode == .good)
        #expect(records.withLockedValue { $0 } == 1)
    }

    /// ConditionRefresh (OPC 10000-9 §5.5.7) for a subscription with an event item: RefreshStartEvent (i=2787), each
    /// retained condition, RefreshEndEvent (i=2788), in that order and whatever the item's where clause (here:
    /// Severity ≥ 700, which the warning condition does not pass and the refresh events do); another refresh while
    /// the first is still queued past the item's size is Bad_RefreshInProgress; one without an event item
    /// Bad_NothingToDo.
    @Test func aRefreshSendsTheRetainedConditionsBetweenItsTwoEvents() async throws {
        let r = try rig()
        r.event(.arrival, Self.t0)
        r.event(.violation, Self.t0 + 100, detail: "too warm")
        r.state.eventRecorded(
            Event(
                time: Self.t0 + 200, gateway: "gw-7", reader: "cold-1", uid: Self.uid, kind: .violation,
                name: "door open", severity: .warning, detail: ""), asset: nil)
        r.namespace.settled()
        let channel = Channel()
        let header = ResponseHeader()
        var answer = try r.session.subscriptions.answer(
            CreateSubscriptionRequest(
                requestHeader: RequestHeader(), requestedPublishingInterval: 100, requestedLifetimeCount: 1000,
                requestedMaxKeepAliveCount: 10, maxNotificationsPerPublish: 0, publishingEnabled: true),
            header: header, requestId: 1, channel: channel)
        let subscription = try #require(answer as? CreateSubscriptionResponse).subscriptionId
        let refresh = await r.call(NodeId(2782), NodeId(3875), [.scalar(.uInt32(subscription))])
        #expect(refresh.statusCode == .badNothingToDo)
        let select = [["EventType"], ["ConditionName"], ["Severity"]].map {
            SimpleAttributeOperand(
                typeDefinitionId: NodeId(2041), browsePath: $0.map { QualifiedName(namespace: 0, $0) }, attributeId: 13,
                indexRange: nil)
        }
        let severity = SimpleAttributeOperand(
            typeDefinitionId: NodeId(2041), browsePath: [QualifiedName(namespace: 0, "Severity")], attributeId: 13,
            indexRange: nil)
        let clause = ContentFilter(elements: [
            ContentFilterElement(
                filterOperator: .greaterThanOrEqual,
                filterOperands: [
                    severity.extensionObject, LiteralOperand(value: .scalar(.uInt16(700))).extensionObject,
                ])
        ])
        answer = try r.session.subscriptions.answer(
            CreateMonitoredItemsRequest(
                requestHeader: RequestHeader(), subscriptionId: subscription, timestampsToReturn: .neither,
                itemsToCreate: [
                    MonitoredItemCreateRequest(
                        itemToMonitor: ReadValueId(nodeId: NodeId(2253), attributeId: 12), monitoringMode: .reporting,
                        requestedParameters: MonitoringParameters(
                            clientHandle: 5, samplingInterval: 0,
                            filter: EventFilter(selectClauses: select, whereClause: clause).extensionObject,
                            queueSize: 2))
                ]), header: header, requestId: 2, channel: channel)
        let items = try #require(answer as? CreateMonitoredItemsResponse)
        let created = try #require(items.results?.first)
        #expect(created.statusCode == .good)
        // Each refresh queues three (start, the critical condition, end: the warning one filtered out); once the
        // queue is past its size, the next is Bad_RefreshInProgress, and the queue never grows past its size and
        // one refresh.
        var statuses: [StatusCode] = []
        for _ in 0..<(Int(created.revisedQueueSize) / 3 + 3) {
            statuses.append(await r.call(NodeId(2782), NodeId(3875), [.scalar(.uInt32(subscription))]).statusCode)
        }
        #expect(statuses.first == .good && statuses.last == .badRefreshInProgress, "\(statuses)")
        #expect(statuses.filter { $0 == .good }.count == Int(created.revisedQueueSize) / 3 + 1, "\(statuses)")
        _ = try r.session.subscriptions.answer(
            PublishRequest(requestHeader: RequestHeader()), header: header, requestId: 3, channel: channel)
        r.session.subscriptions.tick(now: Date().addingTimeInterval(1))
        let published = try #require(channel.sent.withLockedValue { $0 }.last as? PublishResponse)
        let fields = try (published.notificationMessage.notificationData ?? []).flatMap {
            try EventNotificationList($0).events ?? []
        }.map { $0.eventFields ?? [] }
        #expect(
            fields.prefix(3).map { $0.first } == [
                .scalar(.nodeId(NodeId(2787))), .scalar(.nodeId(NodeId(2955))), .scalar(.nodeId(NodeId(2788))),
            ], "\(fields)")
        #expect(fields[1].dropFirst().first == .scalar(.string(Self.rule)))
    }
}
