#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A small read-only HTTP/1.1 server for health, metrics and the status page: one thread accepts and
/// answers one request per connection (GET and HEAD only; nothing it serves changes state). Requests are
/// limited to 8 KiB and 2 s, so a slow or hostile client cannot hold it.
public final class HTTPServer: @unchecked Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        public init(status: Int, contentType: String, body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
        public static func text(_ s: String, status: Int = 200, type: String = "text/plain; charset=utf-8") -> Response {
            Response(status: status, contentType: type, body: Array(s.utf8))
        }
    }

    public typealias Handler = @Sendable (_ path: String) -> Response

    public let host: String
    public private(set) var port: UInt16
    private let handler: Handler
    private var fd: Int32 = -1
    private var thread: Thread?
    private let lock = NSLock()
    private var stopping = false

    /// `listen`: "127.0.0.1:9715", ":9715" (loopback), or "0.0.0.0:9715". Port 0 picks a free port.
    public init(listen: String, handler: @escaping Handler) throws {
        let parts = listen.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let p = UInt16(parts[1]) else {
            throw VLoggerError("listen address '\(listen)': expected HOST:PORT, e.g. 127.0.0.1:9715")
        }
        host = parts[0].isEmpty ? "127.0.0.1" : String(parts[0])
        port = p
        self.handler = handler
    }

    /// Binds and starts answering on a background thread.
    public func start() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw VLoggerError("HTTP: socket() failed: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            close(fd)
            throw VLoggerError("HTTP: '\(host)' is not an IPv4 address (use 127.0.0.1, or 0.0.0.0 for every interface)")
        }
        let bound = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let e = String(cString: strerror(errno))
            close(fd)
            throw VLoggerError("HTTP: cannot listen on \(host):\(port): \(e)")
        }
        guard listen(fd, 16) == 0 else { throw VLoggerError("HTTP: listen() failed: \(String(cString: strerror(errno)))") }
        var actual = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        port = UInt16(bigEndian: actual.sin_port)
        let t = Thread { [self] in self.acceptLoop() }
        t.name = "vlogger-http"
        thread = t
        t.start()
    }

    public func stop() {
        lock.lock()
        stopping = true
        lock.unlock()
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
        fd = -1
    }

    private var isStopping: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopping
    }

    private func acceptLoop() {
        while !isStopping {
            let c = accept(fd, nil, nil)
            if c < 0 {
                if errno == EINTR { continue }
                if isStopping { return }
                usleep(10_000)
                continue
            }
            serve(c)
            close(c)
        }
    }

    static let reasons = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
                          413: "Content Too Large", 500: "Internal Server Error", 503: "Service Unavailable"]

    private func serve(_ c: Int32) {
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        // Read the head (up to the blank line); a body, if any, is ignored (GET and HEAD have none).
        while !Self.headComplete(request) {
            let n = buffer.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
            if n <= 0 { if n < 0 && errno == EINTR { continue }; if request.isEmpty { return }; send(c, .text("request timed out\n", status: 408), head: false); return }
            request += buffer[0..<n]
            if request.count > 8192 { send(c, .text("request head too large\n", status: 413), head: false); return }
        }
        guard let line = String(decoding: request, as: UTF8.self).split(separator: "\r\n", maxSplits: 1).first else {
            send(c, .text("bad request\n", status: 400), head: false)
            return
        }
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { send(c, .text("bad request\n", status: 400), head: false); return }
        let method = String(parts[0])
        guard method == "GET" || method == "HEAD" else {
            send(c, .text("only GET and HEAD: nothing here changes state\n", status: 405), head: false)
            return
        }
        let path = String(parts[1].split(separator: "?", maxSplits: 1).first ?? "/")
        send(c, handler(path), head: method == "HEAD")
    }

    static func headComplete(_ r: [UInt8]) -> Bool {
        guard r.count >= 4 else { return false }
        for i in 0...(r.count - 4) where r[i] == 0x0D && r[i + 1] == 0x0A && r[i + 2] == 0x0D && r[i + 3] == 0x0A { return true }
        return false
    }

    private func send(_ c: Int32, _ r: Response, head: Bool) {
        var extra = r.status == 405 ? "Allow: GET, HEAD\r\n" : ""
        extra += "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
        let header = "HTTP/1.1 \(r.status) \(Self.reasons[r.status] ?? "Status")\r\nContent-Type: \(r.contentType)\r\nContent-Length: \(r.body.count)\r\n\(extra)Connection: close\r\n\r\n"
        var out = Array(header.utf8)
        if !head { out += r.body }
        var off = 0
        while off < out.count {
            let n = out.withUnsafeBytes { Glibc.send(c, $0.baseAddress! + off, out.count - off, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
            off += n
        }
    }
}
