import FieldState
import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import Logging
import OPCUA
import OPCUAServer
import VLoggerConfig
import VLoggerModel
import VLoggerOutbox
import VLoggerStore

/// `[opcua]` as an output kind (registered in LinkedOutputs): a server that others connect to.
public struct OPCUAOutputKind: OutputKind {
    public init() {}
    public var section: OutputSection { .table("opcua") }
    public var keys: [String] { OPCUASettings.keys }
    public var summary: String {
        "an OPC UA server (UA-TCP; None, Basic256Sha256, Aes128_Sha256_RsaOaep): readers, tags in the field and their values, events"
    }
    public var sample: String {
        """
        [opcua]                               # the OPC UA server (docs/opcua.md)
        listen = "127.0.0.1:4840"             # the default; "0.0.0.0:4840" for the plant network
        # security = ["Basic256Sha256 SignAndEncrypt", "Aes128_Sha256_RsaOaep SignAndEncrypt"]   # default: all, None too
        # allow-unsecured = true              # None on a network address (refused there otherwise)
        # anonymous = false                   # then users-file is needed
        # users-file = "/etc/vlogger/opcua-users"   # vlogger opcua user add NAME
        # pki = "/var/lib/vlogger/opcua-pki"  # default: opcua-pki beside the store
        # hosts = ["gateway-7.plant.example", "10.0.0.7"]   # in the server's certificate (default: this host's name)
        # allow-lock = true                   # clients may lock tags' blocks for ever (AutoID's LockTag)

        """
    }

    public func read(_ section: Section, index: Int, _ reader: ConfigReader, _ context: OutputReadContext)
        -> (any OutputSettings)?
    {
        OPCUASettings.read(section, reader, resolve: context.resolve)
    }
}

extension OPCUASettings: ServerSettings {
    public var files: [OutputFile] {
        usersFile.map { [OutputFile(what: "opcua.users-file", path: $0, secret: true, minLength: 0)] } ?? []
    }

    public func warnings(file: String) -> [String] {
        var out: [String] = []
        if security.contains("None") && anonymous && !listen.isLoopback {
            out.append(
                "\(file): [opcua] offers security None to anonymous clients on \(listen): anyone on the network reads the field (security = [\"Basic256Sha256 SignAndEncrypt\"] and anonymous = false close that)"
            )
        }
        return out
    }

    /// The PKI folder: as configured, or `opcua-pki` beside the store.
    public func pkiFolder(store: String?) -> PKIFolder {
        if let pki { return PKIFolder(path: pki) }
        let dir = store.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path } ?? "."
        return PKIFolder(path: URL(fileURLWithPath: dir).appendingPathComponent("opcua-pki").path)
    }

    /// `vlogger doctor`: the port (free, or a vlogger OPC UA server answering a Hello there), the server's
    /// certificate (valid, naming the configured hosts), the users file (readable by its owner only, well formed).
    public func doctorProbe(_ context: OutputContext) async -> OutputProbe? {
        let destination = "opc.tcp://\(listen)"
        func fail(_ kind: String, _ message: String, _ advice: String) -> OutputProbe {
            OutputProbe(
                check: "opcua", destination: destination, failure: OutboxFailure(kind: kind, message: message),
                advice: advice)
        }
        var found: [String] = []
        switch PortProbe.check(host: listen.host, port: listen.port) {
        case .free: found.append("\(listen) is free")
        case .opcua: found.append("an OPC UA server answers on \(listen) (the running service?)")
        case .taken:
            return fail(
                "port", "\(listen) is in use by a program that does not speak OPC UA",
                "choose another [opcua] listen port (`ss -ltnp` shows who holds it)")
        case .error(let e):
            return fail("port", "\(listen): \(e)", "use an address of this machine and a free port")
        }
        let pki = pkiFolder(store: context.storePath ?? context.store?.path)
        let own = URL(fileURLWithPath: pki.path).appendingPathComponent("own/cert.der")
        if let data = try? Data(contentsOf: own) {
            guard let cert = try? ApplicationCertificate(der: Array(data)) else {
                return fail(
                    "certificate", "\(own.path) is not a certificate", "move it away: the service makes a new one")
            }
            let now = Date()
            guard now >= cert.notValidBefore, now <= cert.notValidAfter else {
                return fail(
                    "certificate", "the server's certificate is valid \(cert.notValidBefore) to \(cert.notValidAfter)",
                    "vlogger opcua renew makes a new one (restart the service; clients trust it again)")
            }
            if cert.notValidAfter < now.addingTimeInterval(30 * 86_400) {
                return fail(
                    "certificate", "the server's certificate ends on \(cert.notValidAfter)",
                    "vlogger opcua renew makes a new one (restart the service; clients trust it again)")
            }
            let missing = pki.missingHosts(hosts ?? [], in: cert)
            if !missing.isEmpty {
                return fail(
                    "certificate", "the server's certificate does not name \(missing.joined(separator: ", "))",
                    "vlogger opcua renew makes one with [opcua] hosts (restart the service; clients trust it again)")
            }
            let uri = applicationUri ?? "urn:vlogger:\(context.gatewayID)"
            if cert.applicationUri != uri {
                return fail(
                    "certificate",
                    "the server's certificate is for \(cert.applicationUri ?? "no ApplicationUri"), not \(uri)",
                    "vlogger opcua renew makes one for \(uri) (restart the service; clients trust it again)")
            }
            found.append("its certificate is valid until \(cert.notValidAfter)")
        } else {
            found.append("its certificate is made at the first start in \(pki.path)")
        }
        if let usersFile {
            // Its mode is the secrets check's (doctor's "secrets" line); here: that it reads.
            guard let text = try? String(contentsOfFile: usersFile, encoding: .utf8) else {
                return fail("users", "\(usersFile) cannot be read", "vlogger opcua user add NAME makes it")
            }
            do { _ = try UsersFile(text) } catch {
                return fail("users", "\(usersFile): \(error)", "fix the line, or remove it and add the user again")
            }
            found.append("\(usersFile) is well formed")
        }
        return OutputProbe(
            check: "opcua", destination: destination, failure: nil, detail: "[opcua]: " + found.joined(separator: "; "))
    }

    public func makeServer(_ context: OutputContext) throws -> any OutputServer {
        guard let state = context.fieldState else {
            throw VLoggerError("[opcua] needs the field state of a running service")
        }
        return GatewayOPCUAServer(settings: self, context: context, state: state)
    }
}

/// The server a running gateway serves: the PKI folder read (its certificate made on first start), the users
/// file read at each login, the gateway's namespace on namespace 0.
final class GatewayOPCUAServer: OutputServer, @unchecked Sendable {
    /// The register's assets as the store has them (imported at start), the first `GatewayNamespace.maxAssets` by
    /// id; none where the store cannot say.
    static func assets(_ context: OutputContext, logger: Logger) -> [AssetRow] {
        guard let store = context.store else { return [] }
        let rows: [AssetRow]
        do { rows = try store.assets() } catch {
            logger.warning("opcua: the register's assets could not be read from the store (\(error)); Assets is empty")
            return []
        }
        if rows.count > GatewayNamespace.maxAssets {
            logger.warning(
                "opcua: the register has \(rows.count) assets; Assets shows the first \(GatewayNamespace.maxAssets) by id"
            )
        }
        return Array(rows.sorted { $0.assetID < $1.assetID }.prefix(GatewayNamespace.maxAssets))
    }

    let settings: OPCUASettings
    let context: OutputContext
    let state: FieldState
    var name: String { settings.name }

    init(settings: OPCUASettings, context: OutputContext, state: FieldState) {
        self.settings = settings
        self.context = context
        self.state = state
    }

    /// The running server and its address (nil before it listens and after it stopped).
    private let running = NSLock()
    private var serving: (core: ServerCore, url: String)?

    func status() -> ServerStatus? {
        guard let (core, url) = running.withLock({ serving }) else { return nil }
        let s = core.statistics()
        return ServerStatus(
            listening: url,
            counts: [
                .init("connections", s.connections, help: "OPC UA connections (UA-TCP) open now."),
                .init("sessions", s.sessions, help: "OPC UA sessions open now (activated or not)."),
                .init("subscriptions", s.subscriptions, help: "OPC UA subscriptions of every session now."),
                .init("monitored_items", s.monitoredItems, help: "OPC UA monitored items of every subscription now."),
                .init(
                    "pending_bytes", s.pendingOutputBytes,
                    help: "OPC UA answers waiting for clients that have not taken them yet, in bytes."),
                .init(
                    "refused_certificates", s.refusedCertificates, counter: true,
                    help: "OPC UA client certificates refused (untrusted, expired, not the client's ApplicationUri)."),
                .init(
                    "failed_activations", s.failedActivations, counter: true,
                    help: "OPC UA ActivateSession requests refused (a wrong password, a bad signature)."),
            ])
    }

    static func hostName() -> String { ProcessInfo.processInfo.hostName }

    func run() async throws {
        let logger = context.logger
        let pki = settings.pkiFolder(store: context.store?.path)
        let uri = settings.applicationUri ?? "urn:vlogger:\(context.gatewayID)"
        let host = Self.hostName()
        let hosts = settings.hosts ?? [host]
        let identity = try pki.identity(applicationUri: uri, hosts: hosts)
        let missing = pki.missingHosts(hosts, in: identity.certificate)
        if !missing.isEmpty {
            logger.warning(
                "opcua: the server's certificate does not name \(missing.joined(separator: ", ")): a client that dials it refuses the server (Bad_CertificateHostNameInvalid); vlogger opcua renew makes one with [opcua] hosts"
            )
        }
        if identity.certificate.notValidAfter < Date().addingTimeInterval(30 * 86_400) {
            logger.warning(
                "opcua: the server's certificate is valid until \(identity.certificate.notValidAfter): vlogger opcua renew makes a new one (clients then trust it again)"
            )
        }
        let usersFile = settings.usersFile
        let users = UsersCache(path: usersFile, logger: logger)
        let refusals = RefusalLog()
        var config = ServerConfiguration(
            host: settings.listen.host, port: settings.listen.port, applicationUri: uri,
            applicationName: "vlogger \(context.gatewayID)", identity: identity,
            security: settings.endpointSecurity, allowAnonymous: settings.anonymous, users: { users.current() },
            trusted: { pki.trustedFingerprints() },
            rejected: { cert in
                pki.reject(cert)
                // Once per certificate and ten minutes: a client that retries at once must not flood the journal.
                if refusals.shouldLog(cert.fingerprint) {
                    logger.warning(
                        "opcua: refused the client certificate \(cert.subject) (\(cert.fingerprint)); to let it in: vlogger opcua trust \(cert.fingerprint)"
                    )
                }
            })
        config.softwareVersion = context.version
        config.productName = "vlogger"
        // Endpoints advertise the host the client dialled; a server listening on every address needs a name.
        if config.host == "0.0.0.0" || config.host == "::" { config.advertisedHost = settings.hosts?.first ?? host }
        let space = try AddressSpace.standard(applicationUri: uri)
        let core = ServerCore(configuration: config, addressSpace: space, logger: logger)
        let namespace = GatewayNamespace(
            space: space, state: state, gateway: context.gatewayID, site: context.site, version: context.version,
            methods: core.methods, access: context.fieldAccess, rules: context.alarmRules,
            acknowledge: context.acknowledgeAlarm, assets: Self.assets(context, logger: logger),
            allowLock: settings.allowLock, post: { core.post($0) })
        let server = OPCUAServer(core: core)
        let port = try await server.start()
        logger.notice(
            "opcua: listening on opc.tcp://\(settings.listen.host):\(port) (\(settings.endpointSecurity.map(\.description).joined(separator: ", "))); certificate \(identity.certificate.fingerprint) in \(pki.path)"
        )
        running.withLock { serving = (core, "opc.tcp://\(settings.listen.host):\(port)") }
        defer { withExtendedLifetime(namespace) {} }
        do {
            while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
        } catch {}
        running.withLock { serving = nil }
        namespace.methods?.stop()
        await server.stop()
        logger.info("opcua: stopped")
    }
}

/// The users file, read again when it changes (a user added while the server runs can log in).
final class UsersCache: @unchecked Sendable {
    let path: String?
    let logger: Logger
    private let lock = NSLock()
    private var stamp: (Date, Int)?
    private var users: UsersFile?

    init(path: String?, logger: Logger) {
        self.path = path
        self.logger = logger
    }

    func current() -> UsersFile? {
        guard let path else { return nil }
        let attrs = try? FileManager.default.attributesOfItem(atPath: path)
        let now = ((attrs?[.modificationDate] as? Date) ?? .distantPast, (attrs?[.size] as? Int) ?? -1)
        return lock.withLock {
            if let s = stamp, s == now { return users }
            stamp = now
            do {
                let text = try String(contentsOfFile: path, encoding: .utf8)
                users = try UsersFile(text)
            } catch {
                logger.error("opcua: users file \(path): \(error); no user can log in until it is fixed")
                users = try? UsersFile("")
            }
            return users
        }
    }
}

/// Whether a port is free, taken by an OPC UA server (it acknowledges a Hello), or taken by something else.
enum PortProbe {
    enum Outcome {
        case free, opcua, taken
        case error(String)
    }

    static func check(host: String, port: Int) -> Outcome {
        guard let p = UInt16(exactly: port) else { return .error("\(port) is not a port") }
        switch BindCheck.tryBind(host: host, port: p) {
        case .free: return .free
        case .error(let e): return .error(e)
        case .inUse:
            let target = host == "0.0.0.0" || host == "localhost" ? "127.0.0.1" : host
            return helloAnswered(host: target, port: port) ? .opcua : .taken
        }
    }

    /// Sends a Hello and waits up to 2 s for an ACK.
    static func helloAnswered(host: String, port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { return false }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return false }
        let hello = Hello(
            receiveBufferSize: 65_536, sendBufferSize: 65_536, endpointUrl: "opc.tcp://\(host):\(port)"
        ).message
        guard hello.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == hello.count else {
            return false
        }
        var answer = [UInt8](repeating: 0, count: 3)
        let n = answer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 3, Int32(MSG_WAITALL)) }
        return n == 3 && answer == Array("ACK".utf8)
    }
}
