import Foundation
import OPCUA

/// The server's application instance: its certificate and the key it was made for.
public struct ServerIdentity: Sendable {
    public let certificate: ApplicationCertificate
    public let key: RSAKeyPair
    public init(certificate: ApplicationCertificate, key: RSAKeyPair) {
        self.certificate = certificate
        self.key = key
    }
}

/// One security policy and mode the server offers an endpoint for.
public struct EndpointSecurity: Hashable, Sendable, CustomStringConvertible {
    public let policy: SecurityPolicy
    public let mode: MessageSecurityMode
    public init(_ policy: SecurityPolicy, _ mode: MessageSecurityMode) {
        self.policy = policy
        self.mode = mode
    }

    public var description: String {
        let name = policy.uri.split(separator: "#").last.map(String.init) ?? policy.uri
        return mode == .none ? name : "\(name) \(mode == .sign ? "Sign" : "SignAndEncrypt")"
    }

    /// Every combination the server can offer: None, and each RSA policy in Sign and SignAndEncrypt.
    public static let all: [EndpointSecurity] =
        [EndpointSecurity(.none, .none)]
        + [SecurityPolicy.basic256Sha256, .aes128Sha256RsaOaep].flatMap {
            [EndpointSecurity($0, .sign), EndpointSecurity($0, .signAndEncrypt)]
        }

    /// The security level an endpoint advertises (higher is stronger; OPC 10000-4 §7.14 leaves the scale to the
    /// server): None 0, Sign 1–2, SignAndEncrypt 3–4, the AES-128 policy above Basic256Sha256.
    var level: UInt8 {
        let base: UInt8 = mode == .signAndEncrypt ? 3 : mode == .sign ? 1 : 0
        return mode == .none ? 0 : base + (policy == .aes128Sha256RsaOaep ? 1 : 0)
    }
}

/// What the server is made with: where it listens, who it is, what it offers and whom it lets in. The trust
/// list and users are asked for on each use, so `vlogger opcua trust` and a new user take effect at once.
public struct ServerConfiguration: Sendable {
    /// Where it listens.
    public var host: String
    public var port: Int
    /// The host endpoints name when the client's URL says none (nil: `host`; set it where `host` is 0.0.0.0).
    public var advertisedHost: String?
    public var applicationUri: String
    public var productUri = "https://github.com/vlogger/vlogger"
    public var applicationName: String
    public var manufacturerName = "vlogger"
    public var productName = "vlogger"
    public var softwareVersion = "0"
    public var buildNumber = "0"
    public var identity: ServerIdentity?
    public var security: [EndpointSecurity]
    public var allowAnonymous: Bool
    /// The users file's entries (nil: no user names accepted).
    public var users: @Sendable () -> UsersFile?
    /// The SHA-256 fingerprints of the trusted client certificates.
    public var trusted: @Sendable () -> Set<String>
    /// A client certificate that was refused (kept for `vlogger opcua certificates` and `trust`).
    public var rejected: @Sendable (ApplicationCertificate) -> Void
    public var limits = TransportLimits.server
    public var maxChannels = 64
    public var maxSessions = 50
    /// Subscriptions, monitored items and queued notifications per session (memory stays bounded).
    public var maxSubscriptionsPerSession = 16
    public var maxMonitoredItemsPerSubscription = 10_000
    public var maxBrowseReferences = 1000

    public init(
        host: String, port: Int, applicationUri: String, applicationName: String, identity: ServerIdentity?,
        security: [EndpointSecurity], allowAnonymous: Bool = true,
        users: @escaping @Sendable () -> UsersFile? = { nil }, trusted: @escaping @Sendable () -> Set<String> = { [] },
        rejected: @escaping @Sendable (ApplicationCertificate) -> Void = { _ in }
    ) {
        self.host = host
        self.port = port
        self.applicationUri = applicationUri
        self.applicationName = applicationName
        self.identity = identity
        self.security = security
        self.allowAnonymous = allowAnonymous
        self.users = users
        self.trusted = trusted
        self.rejected = rejected
    }

    /// The URI of UA-TCP with UA Binary (OPC 10000-7).
    static let transportProfile = "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary"
    /// RSA PKCS#1 v1.5 with SHA-256, the asymmetric signature of both RSA policies (OPC 10000-7).
    static let rsaSha256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"

    func applicationDescription(port: Int) -> ApplicationDescription {
        ApplicationDescription(
            applicationUri: applicationUri, productUri: productUri, applicationName: LocalizedText(applicationName),
            applicationType: .server, discoveryUrls: ["opc.tcp://\(advertisedHost ?? host):\(port)"])
    }

    /// The endpoints as GetEndpoints and CreateSession describe them, for the URL the client dialled (its host
    /// echoed, so a client behind NAT or a DNS name reconnects the way it came).
    func endpoints(url: String?, port: Int) -> [EndpointDescription] {
        let endpointUrl =
            url.flatMap { $0.hasPrefix("opc.tcp://") ? $0 : nil } ?? "opc.tcp://\(advertisedHost ?? host):\(port)"
        return security.compactMap { s in
            if s.mode != .none, identity == nil { return nil }
            var tokens: [UserTokenPolicy] = []
            if allowAnonymous { tokens.append(UserTokenPolicy(policyId: "anonymous", tokenType: .anonymous)) }
            if identity != nil {
                // On an unsecured endpoint the password is still encrypted, to the server's key, with
                // Basic256Sha256's algorithm (RSA-OAEP); on a secured one with the channel's policy.
                tokens.append(
                    UserTokenPolicy(
                        policyId: "username", tokenType: .userName,
                        securityPolicyUri: s.mode == .none ? SecurityPolicy.basic256Sha256.uri : nil))
            }
            return EndpointDescription(
                endpointUrl: endpointUrl, server: applicationDescription(port: port),
                serverCertificate: identity?.certificate.der, securityMode: s.mode, securityPolicyUri: s.policy.uri,
                userIdentityTokens: tokens, transportProfileUri: Self.transportProfile, securityLevel: s.level)
        }
    }
}
