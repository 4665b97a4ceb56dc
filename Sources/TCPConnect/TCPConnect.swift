#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP connection opened the way every client of vlogger that speaks to a socket itself opens it (the FEIG
/// reader's network link, the fan-in's MQTT subscriber): the host's addresses tried in turn (a name resolved,
/// IPv4 or IPv6), each connect non-blocking with a time limit, the socket close-on-exec, non-blocking and with
/// Nagle off (small request frames go at once).
public enum TCPConnect {
    /// Why no address took the connection: the resolver's answer, or the last address's.
    public struct Failure: Error, Sendable {
        public let reason: String
    }

    /// A connected socket to `host:port`; the port is the caller's to check (1…65535).
    public static func open(host: String, port: Int, timeoutMs: Int) -> Result<Int32, Failure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else { return .failure(Failure(reason: String(cString: gai_strerror(rc)))) }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let ai = cursor {
            cursor = ai.pointee.ai_next
            let fd = socket(
                ai.pointee.ai_family,
                ai.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                ai.pointee.ai_protocol)
            guard fd >= 0 else {
                lastError = String(cString: strerror(errno))
                continue
            }
            if connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) != 0 && errno != EINPROGRESS {
                lastError = String(cString: strerror(errno))
                close(fd)
                continue
            }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var soError: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            if poll(&p, 1, Int32(timeoutMs)) != 1 {
                lastError = "no connection within \(timeoutMs) ms"
                close(fd)
                continue
            }
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
            guard soError == 0 else {
                lastError = String(cString: strerror(soError))
                close(fd)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return .success(fd)
        }
        return .failure(Failure(reason: lastError))
    }
}
