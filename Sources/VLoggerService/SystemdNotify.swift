#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET (a path, or '@' for the abstract
/// namespace). Does nothing when the service does not run under systemd with Type=notify.
public enum SystemdNotify {
    public static var socketPath: String? {
        guard let p = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !p.isEmpty else { return nil }
        return p
    }

    /// The watchdog interval systemd asked for (WatchdogSec=), if any.
    public static var watchdogMs: Int64? {
        guard let s = ProcessInfo.processInfo.environment["WATCHDOG_USEC"], let us = Int64(s), us > 0 else {
            return nil
        }
        if let pid = ProcessInfo.processInfo.environment["WATCHDOG_PID"], Int32(pid) != getpid() { return nil }
        return us / 1000
    }

    @discardableResult
    public static func send(_ state: String) -> Bool {
        guard let path = socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in for (i, b) in bytes.enumerated() { p[i] = b } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, message.count, 0, sa, length) }
            }
        }
        return sent == message.count
    }
}
