import Foundation
import NIOConcurrencyHelpers
import OPCUA
import Testing

@testable import OPCUAServer

/// Call (OPC 10000-4 §5.11.2; docs/reference/opcua.md, "Methods"): the arguments checked against the method's InputArguments before its handler runs,
/// and a method that waits (for a reader) answered later while the connection goes on.
///
/// The raw client blocks in `recv`: each test runs it on a thread of its own (`offThePool`), not on one of the
/// concurrency pool's few threads, which the server's method tasks need.
@Suite(.serialized)
struct MethodCallTests {
    /// `body` on a thread outside Swift concurrency's pool.
    func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            Thread.detachNewThread { c.resume(with: Result { try body() }) }
        }
    }

    func call(_ c: RawClient, _ object: NodeId, _ method: NodeId, _ args: [Variant]) throws -> CallMethodResult {
        var (type, r) = try c.call(
            CallRequest(
                requestHeader: c.header(),
                methodsToCall: [CallMethodRequest(objectId: object, methodId: method, inputArguments: args)]))
        #expect(type == CallResponse.binaryEncodingId)
        return try #require(try CallResponse(from: &r).results?.first)
    }

    /// GetMonitoredItems (OPC 10000-5 §9.1) declares one argument, SubscriptionId UInt32 (its InputArguments in the
    /// NodeSet). §5.11.2.2's status codes: too few Bad_ArgumentsMissing, too many Bad_TooManyArguments, a value of
    /// another type Bad_InvalidArgument with Bad_TypeMismatch in that argument's inputArgumentResults; a method that is
    /// not the object's Bad_MethodInvalid, an unknown object Bad_NodeIdUnknown.
    @Test func argumentsAreCheckedAgainstInputArguments() async throws {
        let s = try await TestServer()
        defer { Task { await s.stop() } }
        let port = s.port
        try await offThePool { try self.checks(port) }
    }

    func checks(_ port: Int) throws {
        let c = try RawClient.withSession(port: port)
        let server = NodeId(2253)
        let get = NodeId(11492)
        #expect(try call(c, server, get, []).statusCode == .badArgumentsMissing)
        #expect(
            try call(c, server, get, [.scalar(.uInt32(1)), .scalar(.uInt32(2))]).statusCode == .badTooManyArguments)
        let wrong = try call(c, server, get, [.scalar(.string("1"))])
        #expect(wrong.statusCode == .badInvalidArgument)
        #expect(wrong.inputArgumentResults == [.badTypeMismatch])
        let array = try call(c, server, get, [.array(.uInt32, [.uInt32(1)])])
        #expect(array.inputArgumentResults == [.badTypeMismatch])
        // The right type reaches the handler, which knows no subscription 99.
        #expect(try call(c, server, get, [.scalar(.uInt32(99))]).statusCode == .badSubscriptionIdInvalid)
        #expect(try call(c, NodeId(85), get, [.scalar(.uInt32(99))]).statusCode == .badMethodInvalid)
        #expect(try call(c, NodeId(999_999), get, [.scalar(.uInt32(99))]).statusCode == .badNodeIdUnknown)
    }

    /// A method that waits does not hold the connection: a Read sent after the Call is answered first, the Call
    /// when the method returns (responses are matched by request id, OPC 10000-6 §6.7.2).
    @Test func aWaitingMethodIsAnsweredLaterWhileOtherRequestsAreAnswered() async throws {
        let s = try await TestServer()
        defer { Task { await s.stop() } }
        let core = s.server.core
        let object = NodeId(namespace: 1, .string("Waiter"))
        let method = NodeId(namespace: 1, .string("Waiter/Wait"))
        var o = Node(id: object, nodeClass: .object, browseName: QualifiedName(namespace: 1, "Waiter"))
        o.references = [Reference(ReferenceTypeIds.organizes, NodeId(85), forward: false)]
        core.addressSpace.add(o)
        var m = Node(id: method, nodeClass: .method, browseName: QualifiedName(namespace: 1, "Wait"))
        m.executable = true
        m.references = [Reference(ReferenceTypeIds.hasComponent, object, forward: false)]
        core.addressSpace.add(m)
        let gate = AsyncStream<Void>.makeStream()
        core.methods.add(object: object, method: method) { _ in
            for await _ in gate.stream { break }
            return .success([.scalar(.string("done"))])
        }
        let port = s.port
        let result = try await offThePool { () throws -> CallMethodResult in
            let c = try RawClient.withSession(port: port)
            c.send(
                try c.chunk(
                    CallRequest(
                        requestHeader: c.header(),
                        methodsToCall: [CallMethodRequest(objectId: object, methodId: method, inputArguments: [])])))
            #expect(try c.readCurrentTime() == .good)
            gate.continuation.yield()
            var (type, r) = try c.receiveResponse()
            #expect(type == CallResponse.binaryEncodingId)
            return try #require(try CallResponse(from: &r).results?.first)
        }
        #expect(result.statusCode == .good)
        #expect(result.outputArguments == [.scalar(.string("done"))])
    }

    /// A call whose request's timeout hint passes before its method returns is answered Bad_Timeout (OPC 10000-4, the
    /// RequestHeader's timeoutHint: docs/reference/opcua.md, "A request's timeout hint"), and the method goes on to
    /// its end; one that returns first is answered with its outputs. The deadline is stepped by the test.
    @Test func aCallPastItsDeadlineIsBadTimeoutAndItsWorkGoesOn() async throws {
        let space = try AddressSpace.standard(applicationUri: "urn:test")
        let core = ServerCore(
            configuration: ServerConfiguration(
                host: "127.0.0.1", port: 0, applicationUri: "urn:test", applicationName: "t", identity: nil,
                security: [EndpointSecurity(.none, .none)]),
            addressSpace: space)
        let object = NodeId(namespace: 1, .string("Slow"))
        let method = NodeId(namespace: 1, .string("Slow/Work"))
        var o = Node(id: object, nodeClass: .object, browseName: QualifiedName(namespace: 1, "Slow"))
        o.references = [Reference(ReferenceTypeIds.organizes, NodeId(85), forward: false)]
        space.add(o)
        var m = Node(id: method, nodeClass: .method, browseName: QualifiedName(namespace: 1, "Work"))
        m.executable = true
        m.references = [Reference(ReferenceTypeIds.hasComponent, object, forward: false)]
        space.add(m)
        let work = AsyncStream<Void>.makeStream()
        let finished = AsyncStream<Void>.makeStream()
        let deadlines = AsyncStream<Void>.makeStream()
        core.methods.add(object: object, method: method) { _ in
            for await _ in work.stream { break }
            finished.continuation.yield()
            return .success([.scalar(.string("done"))])
        }
        core.methods.setWait { _ in
            for await _ in deadlines.stream { break }
        }
        let session = Session(
            id: NodeId(1), number: 1, authenticationToken: NodeId(2), name: "t", timeoutMs: 60_000,
            clientCertificate: nil, serverNonce: [], channelId: 1, securityMode: .none, now: Date(),
            subscriptions: SubscriptionSet(server: core))
        let request = CallMethodRequest(objectId: object, methodId: method, inputArguments: [])
        let late = Task.detached {
            await core.methods.call(request, session: session, deadline: Date().addingTimeInterval(5), space: space)
        }
        deadlines.continuation.yield()
        #expect(await late.value.statusCode == .badTimeout)
        // The method was not stopped: it ends when its work does.
        work.continuation.yield()
        for await _ in finished.stream { break }
        // A method that returns before its deadline: its outputs.
        let inTime = Task.detached {
            await core.methods.call(request, session: session, deadline: Date().addingTimeInterval(5), space: space)
        }
        work.continuation.yield()
        let answered = await inTime.value
        #expect(answered.statusCode == .good && answered.outputArguments == [.scalar(.string("done"))])
        deadlines.continuation.finish()
    }

    /// A method instantiated from a type (AutoID's Scan on a reader) is executable (OPC 10000-3 §5.7: Executable).
    @Test func anInstantiatedMethodIsExecutable() throws {
        let space = try AddressSpace.standard(applicationUri: "urn:test")
        let made = space.instantiate(
            type: NodeId(1003, namespace: 3), id: NodeId(namespace: 1, .string("R")),
            browseName: QualifiedName(namespace: 1, "R"), parent: NodeId(85), reference: ReferenceTypeIds.organizes,
            optional: ["ReadTag"], childId: { NodeId(namespace: 1, .string("R/\($0)")) })
        let readTag = try #require(made["ReadTag"])
        #expect(space.node(readTag)?.nodeClass == .method)
        #expect(
            space.read(readTag, AttributeId.executable.rawValue, now: DateTime(rawValue: 0)).value
                == .scalar(.boolean(true)))
        // Its InputArguments came with it: Identifier, CodeType, Region, Offset, Length, Password (OPC 30010 §6.3.3).
        let inputs = try #require(space.property(readTag, named: "InputArguments"))
        guard case .array(_, let items?, _) = space.node(inputs)?.value?.value else {
            Issue.record("no InputArguments value")
            return
        }
        let names = items.compactMap { item -> String? in
            guard case .extensionObject(let e) = item else { return nil }
            return (try? Argument(e))?.name
        }
        #expect(names == ["Identifier", "CodeType", "Region", "Offset", "Length", "Password"])
    }
}
