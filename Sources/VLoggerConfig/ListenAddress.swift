import Foundation
import VLoggerModel

#if canImport(Glibc)
    import Glibc
#endif

/// Where the HTTP listener binds: `HOST:PORT` with an IPv4 address or a name, or `[IPv6]:PORT`.
public struct ListenAddress: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public init(parsing text: String) throws(VLoggerError) {
        let hostPart: Substring, portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw VLoggerError("listen address '\(text)': expected [IPv6]:PORT, e.g. [::1]:9715")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw VLoggerError("listen address '\(text)': expected HOST:PORT, e.g. 127.0.0.1:9715 or [::1]:9715")
            }
            (hostPart, portPart) = (parts[0], parts[1])
        }
        guard let port = Int(portPart), (0...65535).contains(port) else {
            throw VLoggerError("listen address '\(text)': the port must be 0…65535 (0 picks a free one)")
        }
        host = hostPart.isEmpty ? "127.0.0.1" : String(hostPart)
        self.port = port
    }

    /// Only this machine can connect: 127.0.0.0/8 (RFC 1122 §3.2.1.3), ::1 and IPv4-mapped 127.x (RFC 4291
    /// §2.5.3, §2.5.5.2), or the name localhost (RFC 6761 §6.3). Decided on the parsed address: a name such as
    /// 127.evil.example is not an address, and may resolve anywhere.
    public var isLoopback: Bool {
        if host.lowercased() == "localhost" { return true }
        if let v4 = Self.ipv4(host) { return v4[0] == 127 }
        if let v6 = Self.ipv6(host) {
            if v6 == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return v6[0..<10].allSatisfy { $0 == 0 } && v6[10] == 0xFF && v6[11] == 0xFF && v6[12] == 127
        }
        return false
    }

    /// An IPv4 address in dotted-decimal form (inet_pton's: four decimal numbers 0–255), or nil.
    public static func ipv4(_ text: String) -> [UInt8]? {
        var a = in_addr()
        guard inet_pton(AF_INET, text, &a) == 1 else { return nil }
        return withUnsafeBytes(of: a.s_addr) { Array($0) }
    }

    /// An IPv6 address (without brackets or zone), or nil.
    public static func ipv6(_ text: String) -> [UInt8]? {
        var a = in6_addr()
        guard inet_pton(AF_INET6, text, &a) == 1 else { return nil }
        return withUnsafeBytes(of: a) { Array($0) }
    }

    public var description: String { HostPort.text(host, port) }
}
