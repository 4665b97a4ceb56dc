import Foundation
import VLoggerCore
#if canImport(Glibc)
    import Glibc
#endif
import CHost
import VLoggerStore
import VLoggerConfig

/// `vlogger doctor`: what makes a gateway fail on site, checked in one run, each with what to do about it.
/// The checks only look (nothing is written to the store, no tag is changed); a reader check runs one
/// Inventory.
public struct Doctor {
    public struct Check: Sendable, Equatable {
        public enum Status: String, Sendable { case pass, fail }
        public var name: String
        public var status: Status
        public var detail: String
        /// What to do when it fails (empty when it passes).
        public var advice: String

        public static func pass(_ name: String, _ detail: String) -> Check {
            Check(name: name, status: .pass, detail: detail, advice: "")
        }
        public static func fail(_ name: String, _ detail: String, _ advice: String) -> Check {
            Check(name: name, status: .fail, detail: detail, advice: advice)
        }
    }

    public var configPath: String
    /// The environment the drivers' host checks read (pcscd's socket: `$PCSCLITE_CSOCK_NAME`).
    public var environment = ProcessInfo.processInfo.environment
    /// Less free space than this under the store's folder fails the disk check.
    public var minimumFreeBytes: Int64 = 100 * 1024 * 1024
    /// Whether to check the readers (off: `--no-readers`, when the service holds them).
    public var readers = true
    /// The kernel's clock state; replaceable for tests.
    public var clockState: () -> ClockState = Doctor.kernelClock

    public init(configPath: String) { self.configPath = configPath }

    public enum ClockState: Sendable, Equatable {
        case synchronized
        case unsynchronized
        case unknown(String)
    }

    /// Every check, in the order an installer would go through them. A configuration that does not load
    /// ends the list there (the other checks need it).
    public func run() -> [Check] {
        var out: [Check] = []
        let config: AgentConfig
        do {
            config = try AgentConfig.load(configPath)
            _ = try RuleSet.load(
                rulesFile: config.rulesFile, registerFile: config.registerFile, plans: config.plans,
                configFile: configPath)
            out.append(
                .pass(
                    "config",
                    "\(configPath): \(config.readers.count) reader\(config.readers.count == 1 ? "" : "s"), \(config.plans.count) plans; rules and register load"
                ))
        } catch {
            out.append(
                .fail(
                    "config", "\(configPath): \(error)",
                    "fix the file (`vlogger config check --config \(configPath)` names each problem with its line)"))
            out.append(clock())
            return out
        }
        if readers {
            var checked = Set<String>()
            for rc in config.readers where checked.insert(rc.driver.rawValue).inserted {
                for c in rc.driver.driver.hostChecks(environment: environment) {
                    out.append(
                        Check(name: c.name, status: c.passed ? .pass : .fail, detail: c.detail, advice: c.advice))
                }
            }
            for rc in config.readers { out.append(reader(rc)) }
        }
        out += store(config.storePath)
        out.append(secrets(config))
        out += remotes(config)
        out.append(clock())
        if let listen = config.listen { out.append(listener(listen)) }
        return out
    }

    // MARK: Secrets

    /// The token, password and CA files the configuration names: readable, long enough, and not readable by
    /// other users.
    func secrets(_ config: AgentConfig) -> Check {
        let (errors, warnings) = config.secretFileProblems()
        let named =
            [config.apiTokenFile, config.readTokenFile].compactMap { $0 } + config.outputs.flatMap(\.files).map(\.path)
        if let e = errors.first {
            return .fail(
                "secrets", e, "create the file with the service's user able to read it (mode 0600, owner vlogger)")
        }
        if let w = warnings.first {
            return .fail("secrets", w, "chmod 600 the file; only the service's user needs to read it")
        }
        return .pass(
            "secrets",
            named.isEmpty
                ? "no secret files configured"
                : "\(named.count) file\(named.count == 1 ? "" : "s") readable, the secret ones by the service only")
    }

    // MARK: Remote hosts

    /// The drop-in that allows the service's remote hosts (only where systemd runs the service).
    public var networkDropIn = "/etc/systemd/system/vlogger.service.d/network.conf"
    /// Whether systemd is PID 1 here (the unit's IPAddressDeny applies only then).
    public var underSystemd = FileManager.default.fileExists(atPath: "/run/systemd/system")

    /// Each remote host the configuration names: reachable over TCP within 2 s, and allowed by the unit's
    /// network drop-in where systemd runs the service.
    func remotes(_ config: AgentConfig) -> [Check] {
        let allowed = (try? String(contentsOfFile: networkDropIn, encoding: .utf8)).map(
            NetworkAllowance.allowed(inDropIn:))
        return config.remotes.map { r in
            let name = "remote \(r.what)"
            let addrs = NetworkAllowance.addresses(r.host)
            guard !addrs.isEmpty else {
                return .fail(
                    name, "\(r.host): the name does not resolve",
                    "check the host name and this machine's DNS (resolvectl status)")
            }
            if underSystemd, !addrs.allSatisfy({ allowed?.contains($0) ?? false }) {
                return .fail(
                    name,
                    "\(r.host):\(r.port) (\(addrs.joined(separator: ", "))) is not allowed by \(networkDropIn): the unit's IPAddressDeny=any blocks it",
                    "vlogger config network --config \(configPath) --output \(networkDropIn) && systemctl daemon-reload && systemctl restart vlogger"
                )
            }
            if let problem = Self.tcpProblem(r.host, r.port, timeoutMs: 2000) {
                return .fail(
                    name, "\(r.host):\(r.port): \(problem)",
                    "check that the host is up and that no firewall between here and there drops port \(r.port)")
            }
            return .pass(name, "\(r.host):\(r.port) answers\(underSystemd ? " and the unit allows it" : "")")
        }
    }

    /// Connects to host:port with a time limit; nil when it answered.
    static func tcpProblem(_ host: String, _ port: Int, timeoutMs: Int) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return "does not resolve" }
        defer { freeaddrinfo(first) }
        var last = "no address"
        var p: UnsafeMutablePointer<addrinfo>? = first
        while let a = p {
            p = a.pointee.ai_next
            let fd = socket(
                a.pointee.ai_family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return nil }
            guard errno == EINPROGRESS else { last = String(cString: strerror(errno)); continue }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&pfd, 1, Int32(timeoutMs)) == 1 else { last = "no answer within \(timeoutMs) ms"; continue }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            if err == 0 { return nil }
            last = String(cString: strerror(err))
        }
        return last
    }

    // MARK: Readers

    func reader(_ rc: ReaderConfig) -> Check {
        let name = "reader \(rc.id)"
        // What the driver can tell without opening it (a device node missing or not this user's to open).
        if let problem = rc.driver.driver.preflight(field: rc.field, device: rc.device) {
            return .fail(name, "\(rc.driver.rawValue): \(problem)", rc.driver.driver.openAdvice(device: rc.device))
        }
        let session: ReaderSession
        do { session = try ReaderSession.open(rc) } catch {
            return .fail(
                name, "\(rc.driver.rawValue)\(rc.device.map { " " + $0 } ?? ""): cannot open: \(error)",
                rc.driver.driver.openAdvice(device: rc.device))
        }
        defer { try? session.reader.fieldOff() }
        do {
            let tags = try session.client.inventory(oneSlotFirst: true)
            let what =
                tags.isEmpty
                ? "no tag in the field"
                : "\(tags.count) tag\(tags.count == 1 ? "" : "s") in the field (\(tags.prefix(4).map(\.uid.description).joined(separator: ", "))\(tags.count > 4 ? ", …" : ""))"
            return .pass(name, "\(session.reader.name): answering; \(what)")
        } catch {
            return .fail(
                name, "\(session.reader.name): opened, but the inventory failed: \(error)",
                "check the antenna and its cable, keep metal away from it, and try `vlogger scan --reader \(rc.driver.rawValue)\(rc.device.map { " --device '\($0)'" } ?? "") --trace`"
            )
        }
    }

    // MARK: Store

    func store(_ path: String) -> [Check] {
        var out: [Check] = []
        let folder =
            (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        var isDir: ObjCBool = false
        if !FileManager.default.fileExists(atPath: folder, isDirectory: &isDir) || !isDir.boolValue {
            out.append(
                .fail(
                    "store folder", "\(folder) does not exist",
                    "create it for the service's user: `install -d -o vlogger -g vlogger -m 0750 \(folder)`"))
            return out
        }
        if access(folder, W_OK | X_OK) != 0 {
            out.append(
                .fail(
                    "store folder",
                    "\(folder) is not writable by \(Self.userName()) (the store and its -wal/-shm files are created there)",
                    "give the service's user the folder: `chown vlogger:vlogger \(folder)`"))
        } else {
            out.append(.pass("store folder", "\(folder) writable by \(Self.userName())"))
        }
        if FileManager.default.fileExists(atPath: path) {
            if access(path, R_OK | W_OK) != 0 {
                out.append(
                    .fail(
                        "store", "\(path) is not readable and writable by \(Self.userName())",
                        "`chown vlogger:vlogger \(path)*`"))
            } else {
                do {
                    let s = try Store(path: path, readOnly: true)
                    defer { s.close() }
                    let check = try s.integrityCheck()
                    let readings = (try? s.count("readings")) ?? 0
                    out.append(
                        check == "ok"
                            ? .pass("store", "\(path): integrity ok, \(readings) readings")
                            : .fail(
                                "store", "\(path): integrity check says: \(check)",
                                "stop the service and keep a copy of the file; `vlogger run` explains how to recover what can be saved"
                            ))
                } catch {
                    let text = "\(error)"
                    out.append(
                        text.contains("at schema")
                            ? .pass("store", "\(path): an older schema; the service migrates it when it starts")
                            : .fail(
                                "store", "\(path): \(text)",
                                "stop the service and keep a copy of the file before anything else"))
                }
            }
        } else {
            out.append(.pass("store", "\(path) does not exist yet; the service creates it"))
        }
        var fs = statvfs()
        if statvfs(folder, &fs) == 0 {
            let free = Int64(fs.f_bavail) &* Int64(fs.f_frsize)
            let mb = Double(free) / 1_048_576
            out.append(
                free >= minimumFreeBytes
                    ? .pass("disk", String(format: "%.0f MB free under %@", mb, folder))
                    : .fail(
                        "disk",
                        String(
                            format: "only %.1f MB free under %@ (less than %lld MB)", mb, folder,
                            minimumFreeBytes / 1_048_576),
                        "free space, or set [store] keep to prune old readings, or move the store to a larger disk"))
        }
        return out
    }

    // MARK: Clock

    func clock() -> Check {
        let year = Calendar(identifier: .gregorian).component(.year, from: Date())
        if year < 2024 {
            return .fail(
                "clock",
                "the system clock says \(ISO8601DateFormatter().string(from: Date())); every reading would be stamped with it",
                "set the time and enable synchronisation: `timedatectl set-ntp true`")
        }
        switch clockState() {
        case .synchronized: return .pass("clock", "synchronised (kernel NTP state); readings are stamped in UTC")
        case .unsynchronized:
            return .fail(
                "clock",
                "not synchronised (the kernel's NTP state is unsynchronised); every reading is timestamped with this clock",
                "enable time synchronisation: `timedatectl set-ntp true` (systemd-timesyncd) or install chrony")
        case let .unknown(why):
            return .fail(
                "clock", "synchronisation cannot be read: \(why)", "check `timedatectl` and enable synchronisation")
        }
    }

    /// The kernel's view (adjtimex(2)): STA_UNSYNC set means no time service has disciplined the clock.
    public static func kernelClock() -> ClockState {
        switch vlogger_clock_synchronized() {
        case 1: return .synchronized
        case 0: return .unsynchronized
        default: return .unknown(String(cString: strerror(errno)))
        }
    }

    // MARK: Listener

    func listener(_ listen: String) -> Check {
        guard let address = try? ListenAddress(parsing: listen), let port = UInt16(exactly: address.port) else {
            return .fail("listener", "\(listen) is not host:port", "set [service] listen to e.g. 127.0.0.1:8080")
        }
        let host = address.host
        switch BindCheck.tryBind(host: host, port: port) {
        case .free: return .pass("listener", "\(listen) is free for the service")
        case .inUse:
            if let answer = Self.httpGet(host: host, port: port, path: "/healthz"),
                answer.contains("vlogger") || answer.contains("\"status\"")
            {
                return .pass("listener", "\(listen): the vlogger service answers /healthz there")
            }
            return .fail(
                "listener", "\(listen) is in use by another program",
                "stop that program or choose another [service] listen address (`ss -ltnp` shows who holds it)")
        case let .error(e):
            return .fail(
                "listener", "\(listen): \(e)",
                "use an address of this machine (127.0.0.1, ::1, 0.0.0.0 or one of `ip addr`) and a port above 1023")
        }
    }

    /// A plain HTTP/1.0 GET with a 2 s timeout; the whole answer, or nil.
    static func httpGet(host: String, port: UInt16, path: String) -> String? {
        #if canImport(Glibc)
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var res: UnsafeMutablePointer<addrinfo>?
            let target = host == "0.0.0.0" ? "127.0.0.1" : (host == "::" ? "::1" : host)
            guard getaddrinfo(target, String(port), &hints, &res) == 0, let ai = res else { return nil }
            defer { freeaddrinfo(res) }
            let fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype, ai.pointee.ai_protocol)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var tv = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            guard connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 else { return nil }
            let request = Array("GET \(path) HTTP/1.0\r\nHost: \(target)\r\n\r\n".utf8)
            guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
                return nil
            }
            var out: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 4096)
            while out.count < 65536 {
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                out += buf[0..<n]
            }
            return out.isEmpty ? nil : String(decoding: out, as: UTF8.self)
        #else
            return nil
        #endif
    }

    static func userName() -> String {
        #if canImport(Glibc)
            if let pw = getpwuid(geteuid()), let name = pw.pointee.pw_name { return String(cString: name) }
        #endif
        return "uid \(geteuid())"
    }
}
