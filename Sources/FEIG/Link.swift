#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import ISO15693
import TCPConnect

/// A byte link to a FEIG reader: a serial port or a TCP connection (the LAN readers' port 10001).
public protocol FEIGLink: AnyObject {
    /// Writes all of `bytes`.
    func send(_ bytes: [UInt8]) throws(FEIGLinkError)
    /// Up to `max` bytes that arrive within `timeoutMs`; empty when none did.
    func receive(max: Int, timeoutMs: Int) throws(FEIGLinkError) -> [UInt8]
    /// Drops whatever has arrived and not been read (a late reply to an earlier request).
    func discardInput()
    func close()
}

/// What went wrong between the host and the reader.
public enum FEIGLinkError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The device could not be opened or configured.
    case open(String)
    /// Reading or writing failed (the port went away, the connection was reset).
    case io(String)
    /// No byte of a reply within the response timeout.
    case noAnswer(timeoutMs: Int)
    /// The reply stopped before its length field's end (the inter-character timeout passed).
    case incomplete(got: Int, expected: Int?)
    /// The reply is not a well-formed frame (CRC, length).
    case frame(FEIGFrameError)
    /// A well-formed reply to another command or from another bus address.
    case unexpectedReply(String)

    public var description: String {
        switch self {
        case .open(let s): return s
        case .io(let s): return s
        case .noAnswer(let ms):
            return
                "the FEIG reader did not answer within \(ms) ms (check the cable or address, the baud rate and parity, and COM-ADR)"
        case .incomplete(let got, let expected):
            return
                "the FEIG reader's reply stopped after \(got)\(expected.map { " of \($0)" } ?? "") bytes (inter-character timeout)"
        case .frame(let e): return "the FEIG reader's reply is damaged: \(e)"
        case .unexpectedReply(let s): return "unexpected reply from the FEIG reader: \(s)"
        }
    }
}

/// Request and reply over a link: sends a frame, reads one whole reply frame (its length from its first bytes,
/// then the rest, each byte within the inter-character timeout), checks it, and returns it.
public final class FEIGHost {
    public let link: FEIGLink
    /// How long the reader may take to start its reply (an Inventory with many tags takes longest).
    public var responseTimeoutMs: Int
    /// The longest gap between two bytes of one reply. No reader manual found states one; FEIG's own TCP host
    /// library (FETCP) defaults to 25 ms, its serial one derived it from the baud rate with an older default
    /// of 20 ms (Tests/FEIGTests/FEIG-FACTS.md §6).
    public var interCharacterTimeoutMs: Int

    public init(link: FEIGLink, responseTimeoutMs: Int = 3000, interCharacterTimeoutMs: Int = 25) {
        self.link = link
        self.responseTimeoutMs = responseTimeoutMs
        self.interCharacterTimeoutMs = interCharacterTimeoutMs
    }

    /// Sends `request` and returns the reader's reply to it.
    public func transact(_ request: FEIGFrame) throws(FEIGLinkError) -> FEIGFrame {
        link.discardInput()
        try link.send(request.encoded())
        let bytes = try receiveFrame()
        let reply: FEIGFrame
        do { reply = try FEIGFrame.decode(bytes, direction: .reply) } catch { throw .frame(error) }
        guard reply.command == request.command else {
            throw .unexpectedReply(
                "a reply to \(FEIGCommand.describe(reply.command)) where \(FEIGCommand.describe(request.command)) was asked"
            )
        }
        guard request.address == FEIGFrame.anyReader || reply.address == request.address else {
            throw .unexpectedReply(
                "COM-ADR 0x\(Hex.format([reply.address])) answered a request to 0x\(Hex.format([request.address]))")
        }
        return reply
    }

    /// One whole frame's bytes.
    func receiveFrame() throws(FEIGLinkError) -> [UInt8] {
        var bytes: [UInt8] = []
        var expected: Int?
        while true {
            let want = (expected ?? (bytes.first == 0x02 ? 3 : 1)) - bytes.count
            let chunk = try link.receive(
                max: max(1, want), timeoutMs: bytes.isEmpty ? responseTimeoutMs : interCharacterTimeoutMs)
            if chunk.isEmpty {
                throw bytes.isEmpty
                    ? .noAnswer(timeoutMs: responseTimeoutMs) : .incomplete(got: bytes.count, expected: expected)
            }
            bytes += chunk
            if expected == nil, let n = FEIGFrame.expectedLength(bytes[...]) {
                // The shortest reply: LEN COM-ADR CONTROL STATUS CRC CRC (advanced: three length bytes).
                let minimum = bytes[0] == 0x02 ? 8 : 6
                guard n >= minimum else { throw .frame(.badLength(declared: n, minimum: minimum)) }
                expected = n
            }
            if let expected, bytes.count >= expected { return bytes }
        }
    }
}

/// A file descriptor link: a serial port (termios, raw, 8 data bits, 1 stop bit) or a connected socket.
public final class FDLink: FEIGLink {
    private var fd: Int32
    public let name: String

    init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    public enum Parity: String, Sendable, CaseIterable { case none, even, odd }

    /// The baud rates a FEIG reader's serial interface offers (CFG1 BAUD codes 5–10: 4800 to 115200; the
    /// readers whose manuals say leave the factory at 38400 baud, 8 data bits, even parity, 1 stop bit;
    /// Tests/FEIGTests/FEIG-FACTS.md §6). 230400 for USB-serial adapters in between.
    public static let baudRates: [Int: speed_t] = [
        4800: speed_t(B4800), 9600: speed_t(B9600), 19200: speed_t(B19200), 38400: speed_t(B38400),
        57600: speed_t(B57600), 115200: speed_t(B115200), 230400: speed_t(B230400),
    ]

    /// Opens a serial port raw, at `baud` with `parity`, 8 data bits, 1 stop bit, no flow control.
    public static func serial(path: String, baud: Int = 38400, parity: Parity = .even) throws(FEIGLinkError) -> FDLink {
        guard let speed = baudRates[baud] else {
            throw .open(
                "\(path): \(baud) baud is not one of \(baudRates.keys.sorted().map(String.init).joined(separator: ", "))"
            )
        }
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw .open("\(path): \(String(cString: strerror(errno)))") }
        var t = termios()
        guard tcgetattr(fd, &t) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .open("\(path) is not a serial port (\(reason))")
        }
        cfmakeraw(&t)
        t.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD)
        t.c_cflag &= ~(tcflag_t(CSTOPB) | tcflag_t(CRTSCTS) | tcflag_t(PARENB) | tcflag_t(PARODD))
        switch parity {
        case .none: break
        case .even: t.c_cflag |= tcflag_t(PARENB)
        case .odd: t.c_cflag |= tcflag_t(PARENB) | tcflag_t(PARODD)
        }
        cfsetispeed(&t, speed)
        cfsetospeed(&t, speed)
        var applied = tcsetattr(fd, TCSANOW, &t) == 0
        if !applied, errno == EINVAL, parity != .none, path.hasPrefix("/dev/pts/") {
            // A pseudo-terminal frames no characters, so it has no parity bit to set; Linux refuses PARENB on a
            // pty slave that was opened before. The emulator and tests run there; a real port takes the setting.
            t.c_cflag &= ~(tcflag_t(PARENB) | tcflag_t(PARODD))
            applied = tcsetattr(fd, TCSANOW, &t) == 0
        }
        guard applied else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .open("\(path): cannot set \(baud) baud, \(parity.rawValue) parity (\(reason))")
        }
        tcflush(fd, TCIOFLUSH)
        return FDLink(fd: fd, name: path)
    }

    /// Connects to `host:port` (IPv4 or IPv6, a name resolved) within `timeoutMs`.
    public static func tcp(host: String, port: Int, timeoutMs: Int = 3000) throws(FEIGLinkError) -> FDLink {
        guard (1...65535).contains(port) else { throw .open("tcp://\(host):\(port): the port must be 1…65535") }
        switch TCPConnect.open(host: host, port: port, timeoutMs: timeoutMs) {
        case .success(let fd): return FDLink(fd: fd, name: "tcp://\(host):\(port)")
        case .failure(let f): throw .open("tcp://\(host):\(port): \(f.reason)")
        }
    }

    public func send(_ bytes: [UInt8]) throws(FEIGLinkError) {
        guard fd >= 0 else { throw .io("\(name) is closed") }
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&p, 1, 1000)
                    continue
                }
                throw .io("\(name): write failed (\(String(cString: strerror(errno))))")
            }
            off += n
        }
    }

    public func receive(max: Int, timeoutMs: Int) throws(FEIGLinkError) -> [UInt8] {
        guard fd >= 0 else { throw .io("\(name) is closed") }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&p, 1, Int32(clamping: timeoutMs))
        if ready < 0 {
            if errno == EINTR { return [] }
            throw .io("\(name): \(String(cString: strerror(errno)))")
        }
        guard ready > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: Swift.max(1, max))
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return [] }
            throw .io("\(name): read failed (\(String(cString: strerror(errno))))")
        }
        // Readable with nothing to read: the other end closed (the socket) or hung up (the port).
        guard n > 0 else { throw .io("\(name): the connection was closed by the reader") }
        return Array(buffer[0..<n])
    }

    public func discardInput() {
        guard fd >= 0 else { return }
        var scratch = [UInt8](repeating: 0, count: 512)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 0) == 1, p.revents & Int16(POLLIN) != 0 else { return }
            let n = scratch.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return }
        }
    }

    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    deinit { close() }
}
