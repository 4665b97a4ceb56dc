import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whether a listener could bind an address now (doctor's checks of `[service] listen` and `[opcua] listen`).
public enum BindCheck {
    public enum Result: Equatable, Sendable {
        case free, inUse
        case error(String)
    }

    /// Binds a TCP socket to `host` (a name or an IPv4/IPv6 address) and `port`, and closes it again.
    public static func tryBind(host: String, port: UInt16) -> Result {
        #if canImport(Glibc)
            var hints = addrinfo()
            hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var res: UnsafeMutablePointer<addrinfo>?
            let rc = getaddrinfo(host, String(port), &hints, &res)
            guard rc == 0, let ai = res else {
                return .error("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
            }
            defer { freeaddrinfo(res) }
            let fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype, ai.pointee.ai_protocol)
            guard fd >= 0 else { return .error(String(cString: strerror(errno))) }
            defer { close(fd) }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if bind(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) != 0 {
                return errno == EADDRINUSE ? .inUse : .error(String(cString: strerror(errno)))
            }
            return .free
        #else
            return .error("not on Linux")
        #endif
    }
}
