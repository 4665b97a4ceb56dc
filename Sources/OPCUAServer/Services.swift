import Foundation
import OPCUA

/// The services (OPC 10000-4 §5): each request decoded by its encoding's NodeId, checked against its session,
/// answered with its response or a ServiceFault. Discovery and session services need no session; every other
/// one an activated session on the same channel.
final class Services: @unchecked Sendable {
    unowned let server: ServerCore

    init(server: ServerCore) { self.server = server }

    /// One request's body (its encoding NodeId, then the structure).
    func handle(_ body: [UInt8], requestId: UInt32, on channel: any ChannelContext) {
        var r = BinaryReader(body, limits: server.decodingLimits)
        let request: any Structure
        do throws(DecodingError) {
            let type = try NodeId(from: &r)
            guard let t = structuresByEncoding[type] else {
                return fault(body, requestId, channel, .badServiceUnsupported)
            }
            request = try t.init(from: &r)
        } catch {
            return fault(body, requestId, channel, error.statusCode)
        }
        let now = server.now()
        do throws(ServiceError) {
            if let response = try answer(request, channel: channel, requestId: requestId, now: now) {
                channel.respond(requestId: requestId, response)
            }
        } catch {
            fault(body, requestId, channel, error.status)
        }
    }

    private func fault(_ body: [UInt8], _ requestId: UInt32, _ channel: any ChannelContext, _ status: StatusCode) {
        // Every request starts with its RequestHeader: its handle is echoed where it can be read.
        var r = BinaryReader(body, limits: server.decodingLimits)
        let header = (try? NodeId(from: &r)).flatMap { _ in try? RequestHeader(from: &r) } ?? RequestHeader()
        channel.respond(
            requestId: requestId,
            ServiceFault(responseHeader: server.header(header, now: server.now(), result: status)))
    }

    /// The response, or nil when it is sent later (Publish).
    private func answer(_ request: any Structure, channel: any ChannelContext, requestId: UInt32, now: Date)
        throws(ServiceError) -> (any Structure)?
    {
        switch request {
        case let q as GetEndpointsRequest:
            return GetEndpointsResponse(
                responseHeader: server.header(q.requestHeader, now: now),
                endpoints: server.configuration.endpoints(url: Self.url(q.endpointUrl, channel), port: server.port))
        case let q as FindServersRequest:
            return FindServersResponse(
                responseHeader: server.header(q.requestHeader, now: now),
                servers: [server.configuration.applicationDescription(port: server.port)])
        case let q as CreateSessionRequest: return try createSession(q, channel: channel, now: now)
        case let q as ActivateSessionRequest:
            do { return try activateSession(q, channel: channel, now: now) } catch {
                server.activationFailed()
                throw error
            }
        case let q as CloseSessionRequest:
            let s = try session(q.requestHeader, channel, now: now, activated: false)
            server.sessions.remove(s)
            return CloseSessionResponse(responseHeader: server.header(q.requestHeader, now: now))
        default: break
        }
        guard let q = request as? any ServiceRequest else { throw ServiceError(.badServiceUnsupported) }
        let session = try session(q.requestHeader, channel, now: now, activated: true)
        let header = server.header(q.requestHeader, now: now)
        switch request {
        case let q as ReadRequest: return try read(q, header, now: now)
        case let q as WriteRequest:
            let items = try operations(q.nodesToWrite)
            return WriteResponse(responseHeader: header, results: items.map { server.addressSpace.write($0) })
        case let q as BrowseRequest: return try browse(q, header, session)
        case let q as BrowseNextRequest: return try browseNext(q, header, session)
        case let q as TranslateBrowsePathsToNodeIdsRequest:
            let paths = try operations(q.browsePaths)
            return TranslateBrowsePathsToNodeIdsResponse(
                responseHeader: header, results: paths.map { server.addressSpace.translate($0) })
        case let q as RegisterNodesRequest:
            // Registered nodes keep their ids: registering only says the client will use them often.
            return RegisterNodesResponse(responseHeader: header, registeredNodeIds: try operations(q.nodesToRegister))
        case let q as UnregisterNodesRequest:
            _ = try operations(q.nodesToUnregister)
            return UnregisterNodesResponse(responseHeader: header)
        case let q as CallRequest:
            // Answered when every method has returned (a method may wait for a reader); meanwhile the connection
            // goes on with other requests, whose answers may come first (OPC 10000-6 §6.7.2: by request id).
            let calls = try operations(q.methodsToCall)
            guard server.methods.begin() else { throw ServiceError(.badTooManyOperations) }
            let hint = q.requestHeader.timeoutHint
            let deadline = hint > 0 ? now.addingTimeInterval(Double(hint) / 1000) : nil
            let server = self.server
            let requestHeader = q.requestHeader
            // On the server's own executor: a call never waits for Swift's shared pool, whose few threads blocking
            // work elsewhere in the process may hold.
            Task(executorPreference: MethodExecutor.shared) {
                var results: [CallMethodResult] = []
                for c in calls {
                    results.append(
                        await server.methods.call(c, session: session, deadline: deadline, space: server.addressSpace))
                }
                server.methods.end()
                channel.respond(
                    requestId: requestId,
                    CallResponse(responseHeader: server.header(requestHeader, now: server.now()), results: results))
            }
            return nil
        default:
            return try session.subscriptions.answer(request, header: header, requestId: requestId, channel: channel)
        }
    }

    /// The URL a client names (in its request, else in its Hello), empty taken as none.
    static func url(_ requested: String?, _ channel: any ChannelContext) -> String? {
        [requested, channel.endpointUrl].compactMap { $0 }.first { !$0.isEmpty }
    }

    /// The operations of a request: Bad_NothingToDo for none, Bad_TooManyOperations past the limit.
    private func operations<T>(_ list: [T]?) throws(ServiceError) -> [T] {
        guard let list, !list.isEmpty else { throw ServiceError(.badNothingToDo) }
        guard list.count <= ServerCore.maxOperations else { throw ServiceError(.badTooManyOperations) }
        return list
    }

    // MARK: Sessions

    private func session(_ header: RequestHeader, _ channel: any ChannelContext, now: Date, activated: Bool)
        throws(ServiceError) -> Session
    {
        guard let s = server.sessions.find(header.authenticationToken, now: now) else {
            throw ServiceError(.badSessionIdInvalid)
        }
        if activated {
            guard s.activated else { throw ServiceError(.badSessionNotActivated) }
            guard s.channelId == channel.channelId else { throw ServiceError(.badSecureChannelIdInvalid) }
        }
        s.lastUsed = now
        return s
    }

    private func createSession(_ q: CreateSessionRequest, channel: any ChannelContext, now: Date)
        throws(ServiceError) -> CreateSessionResponse
    {
        let security = channel.security
        var signature = SignatureData()
        if security.mode != .none {
            // The client's certificate in the request is the channel's (OPC 10000-4 §5.6.2).
            guard let own = channel.clientCertificate, q.clientCertificate == own.der else {
                server.certificateRefused()
                throw ServiceError(.badCertificateInvalid)
            }
            // The ApplicationUri the client claims is its certificate's (OPC 10000-4 §5.6.2).
            if let claimed = q.clientDescription.applicationUri, !claimed.isEmpty, own.applicationUri != claimed {
                server.logger.warning(
                    "opcua: CreateSession refused: the client says \(claimed), its certificate \(own.applicationUri ?? "nothing")"
                )
                server.certificateRefused()
                throw ServiceError(.badCertificateUriInvalid)
            }
            let nonce = q.clientNonce ?? []
            guard nonce.count >= 32 else { throw ServiceError(.badNonceInvalid) }
            guard let identity = server.configuration.identity,
                let signed = try? AsymmetricCrypto.sign(own.der + nonce, with: identity.key)
            else { throw ServiceError(.badInternalError) }
            signature = SignatureData(algorithm: ServerConfiguration.rsaSha256, signature: signed)
        }
        let timeout = min(max(q.requestedSessionTimeout, 10_000), 3_600_000)
        guard
            let s = server.sessions.create(
                name: q.sessionName ?? "", timeoutMs: timeout, clientCertificate: channel.clientCertificate,
                channelId: channel.channelId, securityMode: security.mode, now: now,
                nonceLength: security.policy.nonceLength,
                subscriptions: SubscriptionSet(server: server))
        else { throw ServiceError(.badTooManySessions) }
        s.clientApplicationUri = q.clientDescription.applicationUri
        server.log("session \(s.number) '\(s.name)' created on channel \(channel.channelId) (\(security))")
        return CreateSessionResponse(
            responseHeader: server.header(q.requestHeader, now: now), sessionId: s.id,
            authenticationToken: s.authenticationToken, revisedSessionTimeout: timeout, serverNonce: s.serverNonce,
            serverCertificate: server.configuration.identity?.certificate.der,
            serverEndpoints: server.configuration.endpoints(url: Self.url(q.endpointUrl, channel), port: server.port),
            serverSignature: signature, maxRequestMessageSize: server.configuration.limits.maxMessageSize)
    }

    private func activateSession(_ q: ActivateSessionRequest, channel: any ChannelContext, now: Date)
        throws(ServiceError) -> ActivateSessionResponse
    {
        let s = try session(q.requestHeader, channel, now: now, activated: false)
        let security = channel.security
        // A session moves to another channel only with the client certificate it was made with (none for none)
        // and never to a channel of a lower security mode; its first activation is on the channel that made it
        // (OPC 10000-4 §5.6.3).
        guard s.clientCertificate?.der == channel.clientCertificate?.der else {
            throw ServiceError(.badSecurityChecksFailed)
        }
        if !s.activated, s.channelId != channel.channelId { throw ServiceError(.badSecurityChecksFailed) }
        if security.mode.rawValue < s.securityMode.rawValue { throw ServiceError(.badSecurityModeInsufficient) }
        if security.mode != .none {
            // The client signs the server's certificate and the session's last nonce.
            guard let identity = server.configuration.identity, let client = channel.clientCertificate,
                let key = client.publicKey, q.clientSignature.algorithm == ServerConfiguration.rsaSha256,
                let signature = q.clientSignature.signature,
                AsymmetricCrypto.verify(identity.certificate.der + s.serverNonce, signature: signature, key: key)
            else { throw ServiceError(.badApplicationSignatureInvalid) }
        }
        let user = try identify(q.userIdentityToken, session: s, security: security)
        s.user = user
        s.activated = true
        s.channelId = channel.channelId
        s.serverNonce = ServerCore.random(32)
        server.log("session \(s.number) activated as \(user ?? "anonymous")")
        return ActivateSessionResponse(
            responseHeader: server.header(q.requestHeader, now: now), serverNonce: s.serverNonce, results: [])
    }

    /// The user an identity token names (nil: anonymous), or Bad_IdentityTokenInvalid/Rejected,
    /// Bad_UserAccessDenied for a wrong password (the same answer for an unknown name).
    private func identify(_ token: ExtensionObject, session: Session, security: EndpointSecurity)
        throws(ServiceError) -> String?
    {
        if token == .null || token.typeId == AnonymousIdentityToken.binaryEncodingId {
            guard server.configuration.allowAnonymous else { throw ServiceError(.badIdentityTokenRejected) }
            return nil
        }
        guard token.typeId == UserNameIdentityToken.binaryEncodingId,
            let t = try? UserNameIdentityToken(token, limits: server.decodingLimits)
        else { throw ServiceError(.badIdentityTokenInvalid) }
        guard let identity = server.configuration.identity, let users = server.configuration.users(),
            let name = t.userName, !name.isEmpty
        else { throw ServiceError(.badIdentityTokenRejected) }
        // A password in clear is taken only on an encrypted channel.
        let algorithm = t.encryptionAlgorithm ?? ""
        if algorithm.isEmpty, security.mode != .signAndEncrypt { throw ServiceError(.badIdentityTokenRejected) }
        // Past the server's rate of password checks: refused before the costly check (OPC 10000-4 §7.38
        // Bad_ServerTooBusy: not the resources now); the client tries again later.
        guard server.passwordChecks.take(now: server.now()) else {
            if server.refusals.shouldLog("password checks") {
                server.logger.warning(
                    "opcua: more than \(Int(server.passwordChecks.perSecond)) logins a second: some answered Bad_ServerTooBusy (someone trying passwords?)"
                )
            }
            throw ServiceError(.badServerTooBusy)
        }
        let password: [UInt8]
        do {
            password = try UserPassword.decrypt(
                t.password ?? [], algorithm: algorithm, serverNonce: session.serverNonce, key: identity.key)
        } catch { throw ServiceError(error.status) }
        guard users.accepts(name: name, password: password) else {
            server.log("session \(session.number): user '\(name)' refused")
            throw ServiceError(.badUserAccessDenied)
        }
        return name
    }

    // MARK: Read

    private func read(_ q: ReadRequest, _ header: ResponseHeader, now: Date) throws(ServiceError) -> ReadResponse {
        guard q.maxAge >= 0 else { throw ServiceError(.badMaxAgeInvalid) }
        guard q.timestampsToReturn != .invalid else { throw ServiceError(.badTimestampsToReturnInvalid) }
        let items = try operations(q.nodesToRead)
        let stamp = DateTime(now)
        return ReadResponse(
            responseHeader: header,
            results: items.map { item in
                if let range = item.indexRange, !range.isEmpty { return DataValue(status: .badIndexRangeInvalid) }
                if let encoding = item.dataEncoding.name, !encoding.isEmpty, encoding != "Default Binary" {
                    return DataValue(status: .badDataEncodingInvalid)
                }
                return server.addressSpace.read(item.nodeId, item.attributeId, now: stamp)
                    .stamped(q.timestampsToReturn, attribute: item.attributeId, serverTime: stamp)
            })
    }

    // MARK: Browse

    private func browse(_ q: BrowseRequest, _ header: ResponseHeader, _ session: Session) throws(ServiceError)
        -> BrowseResponse
    {
        guard q.view.viewId.isNull else { throw ServiceError(.badViewIdUnknown) }
        let items = try operations(q.nodesToBrowse)
        let limit = Int(
            q.requestedMaxReferencesPerNode == 0
                ? UInt32(server.configuration.maxBrowseReferences)
                : min(q.requestedMaxReferencesPerNode, UInt32(server.configuration.maxBrowseReferences)))
        return BrowseResponse(
            responseHeader: header,
            results: items.map { d in
                let (status, refs) = server.addressSpace.browse(d)
                guard status.isGood else { return BrowseResult(statusCode: status) }
                return page(refs, limit: limit, session: session)
            })
    }

    /// The first `limit` references, the rest behind a continuation point (at most 10 a session).
    private func page(_ refs: [ReferenceDescription], limit: Int, session: Session) -> BrowseResult {
        guard refs.count > limit else { return BrowseResult(statusCode: .good, references: refs) }
        guard
            let point = session.keep(
                Session.Continuation(limit: limit, rest: Array(refs[limit...])), max: ServerCore.maxContinuationPoints)
        else { return BrowseResult(statusCode: .badNoContinuationPoints) }
        return BrowseResult(statusCode: .good, continuationPoint: point, references: Array(refs[..<limit]))
    }

    /// The next page of each continuation point, as many references as the Browse asked for a page (OPC 10000-4
    /// §5.8.3), or the point released.
    private func browseNext(_ q: BrowseNextRequest, _ header: ResponseHeader, _ session: Session)
        throws(ServiceError) -> BrowseNextResponse
    {
        let points = try operations(q.continuationPoints)
        return BrowseNextResponse(
            responseHeader: header,
            results: points.map { point in
                guard let point, let c = session.take(point) else {
                    return BrowseResult(statusCode: .badContinuationPointInvalid)
                }
                if q.releaseContinuationPoints { return BrowseResult(statusCode: .good) }
                return page(c.rest, limit: c.limit, session: session)
            })
    }
}

extension DataValue {
    /// With the timestamps a client asked for (OPC 10000-4 §7.40, TimestampsToReturn): the source's as read, the
    /// server's `serverTime`; an attribute other than Value has neither (§5.10.2).
    func stamped(_ returned: TimestampsToReturn, attribute: UInt32, serverTime: DateTime) -> DataValue {
        var v = self
        let value = attribute == AttributeId.value.rawValue
        if !value || returned == .server || returned == .neither { v.sourceTimestamp = nil }
        v.serverTimestamp = value && (returned == .server || returned == .both) ? serverTime : nil
        return v
    }
}

/// A service's failure: the status its ServiceFault carries.
struct ServiceError: Error {
    let status: StatusCode
    init(_ status: StatusCode) { self.status = status }
}

/// A request of a session service (it carries the session's authentication token in its header).
protocol ServiceRequest: Structure {
    var requestHeader: RequestHeader { get }
}

extension ReadRequest: ServiceRequest {}
extension WriteRequest: ServiceRequest {}
extension BrowseRequest: ServiceRequest {}
extension BrowseNextRequest: ServiceRequest {}
extension TranslateBrowsePathsToNodeIdsRequest: ServiceRequest {}
extension RegisterNodesRequest: ServiceRequest {}
extension UnregisterNodesRequest: ServiceRequest {}
extension CallRequest: ServiceRequest {}
extension CreateSessionRequest: ServiceRequest {}
extension ActivateSessionRequest: ServiceRequest {}
extension CloseSessionRequest: ServiceRequest {}
extension GetEndpointsRequest: ServiceRequest {}
extension FindServersRequest: ServiceRequest {}
extension CreateSubscriptionRequest: ServiceRequest {}
extension ModifySubscriptionRequest: ServiceRequest {}
extension SetPublishingModeRequest: ServiceRequest {}
extension DeleteSubscriptionsRequest: ServiceRequest {}
extension CreateMonitoredItemsRequest: ServiceRequest {}
extension ModifyMonitoredItemsRequest: ServiceRequest {}
extension DeleteMonitoredItemsRequest: ServiceRequest {}
extension SetMonitoringModeRequest: ServiceRequest {}
extension PublishRequest: ServiceRequest {}
extension RepublishRequest: ServiceRequest {}
extension TransferSubscriptionsRequest: ServiceRequest {}

/// The executor method calls run on: a concurrent dispatch queue of the server's own (its threads are GCD's, not the
/// cooperative pool's), so a call is answered even while every pool thread is blocked elsewhere in the process.
final class MethodExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = MethodExecutor()
    private let queue = DispatchQueue(label: "vlogger.opcua.methods", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
