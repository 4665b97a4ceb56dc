import Foundation
import OPCUA
import OPCUAServer
import VLoggerConfig
import VLoggerModel

/// `[opcua]`: the gateway's OPC UA server (docs/opcua.md). Its certificate, the trusted clients' and the refused
/// ones live in the PKI folder; users in a file of salted hashes (`vlogger opcua user add`).
public struct OPCUASettings: Equatable, Sendable {
    public var name = "opcua"
    /// Loopback unless configured: a network address is a decision (docs/opcua.md).
    public var listen = ListenAddress(host: "127.0.0.1", port: 4840)
    /// Whether security None may be offered on a network address (it is refused there otherwise).
    public var allowUnsecured = false
    /// The policies and modes offered, as `None`, `Basic256Sha256 Sign`, `Aes128_Sha256_RsaOaep SignAndEncrypt`.
    public var security: [String] = Self.allSecurity
    public var anonymous = true
    public var usersFile: String?
    /// The PKI folder (nil: `opcua-pki` beside the store).
    public var pki: String?
    /// The ApplicationUri (nil: `urn:vlogger:GATEWAY`).
    public var applicationUri: String?
    /// Host names and addresses the certificate names (nil: this host's name).
    public var hosts: [String]?
    /// Whether clients may lock tags' blocks for ever (AutoID's LockTag): off unless configured.
    public var allowLock = false

    public init() {}

    public static let allSecurity = EndpointSecurity.all.map(\.description)
    static let keys = [
        "listen", "security", "anonymous", "users-file", "pki", "application-uri", "hosts", "allow-unsecured",
        "allow-lock",
    ]

    /// The security settings as the server takes them.
    public var endpointSecurity: [EndpointSecurity] {
        security.compactMap { text in EndpointSecurity.all.first { $0.description == text } }
    }

    static func read(_ s: Section, _ r: ConfigReader, resolve: (String) -> String) -> OPCUASettings? {
        var out = OPCUASettings()
        if let l = s.string("listen") {
            do { out.listen = try ListenAddress(parsing: l) } catch {
                r.issue(s.node("listen")?.line ?? s.line, "opcua.listen: \(error)")
            }
        }
        if let list = s.strings("security") {
            let unknown = list.filter { !allSecurity.contains($0) }
            if list.isEmpty || !unknown.isEmpty {
                r.issue(
                    s.node("security")?.line ?? s.line,
                    "opcua.security: \(unknown.first.map { "'\($0)' is not one of" } ?? "empty; choose from") \(allSecurity.map { "\"\($0)\"" }.joined(separator: ", ")) (Basic128Rsa15 and Basic256 are deprecated and not offered)"
                )
            } else {
                out.security = list
            }
        }
        if let a = s.bool("anonymous") { out.anonymous = a }
        if let l = s.bool("allow-lock") { out.allowLock = l }
        out.usersFile = s.string("users-file").map(resolve)
        out.pki = s.string("pki").map(resolve)
        if let uri = s.string("application-uri") {
            if uri.isEmpty || uri.count > 200 || uri.contains(where: \.isWhitespace) {
                r.issue(s.node("application-uri")?.line ?? s.line, "opcua.application-uri: a URI without spaces")
            } else {
                out.applicationUri = uri
            }
        }
        if let h = s.strings("hosts") {
            if h.isEmpty || h.contains(where: { $0.isEmpty || $0.count > 253 }) {
                r.issue(s.node("hosts")?.line ?? s.line, "opcua.hosts: host names or addresses")
            } else {
                out.hosts = h
            }
        }
        if let a = s.bool("allow-unsecured") { out.allowUnsecured = a }
        if out.security.contains("None"), !out.listen.isLoopback, !out.allowUnsecured {
            r.issue(
                s.node("security")?.line ?? s.line,
                "opcua: security None on \(out.listen) (a network address) lets anyone read the field without signing or encryption; offer only signed policies there, or say allow-unsecured = true"
            )
        }
        if !out.anonymous && out.usersFile == nil {
            r.issue(s.line, "opcua: anonymous = false needs users-file (else nobody can log in)")
        }
        return out
    }
}
