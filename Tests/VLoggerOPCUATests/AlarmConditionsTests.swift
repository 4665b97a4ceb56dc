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
        let core = ServerCore(
            configuration: ServerConfiguration(
                host: "127.0.0.1", port: 0, applicationUri: "urn:vlogger:gw-7", applicationName: "t", identity: nil,
                security: [EndpointSecurity(.none, .none)]),
            addressSpace: space)
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
        let session = Session(
            id: NodeId(1), number: 1, authenticationToken: NodeId(2), name: "scada", timeoutMs: 60_000,
            clientCertificate: nil, serverNonce: [], channelId: 1, securityMode: .none, now: Date(),
            subscriptions: SubscriptionSet(server: core))
        session.clientApplicationUri = "urn:scada-1"
        session.user = "op"
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
}
