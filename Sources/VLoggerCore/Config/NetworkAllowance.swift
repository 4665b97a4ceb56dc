import Foundation
import VLoggerConfig
#if canImport(Glibc)
    import Glibc
#endif

extension AgentConfig {
    /// Every remote host the configuration names, in the order of the file.
    public var remotes: [Remote] {
        var out: [Remote] = []
        for r in readers {
            if let d = r.device, let (host, port) = r.driver.driver.remote(device: d) {
                out.append(Remote(what: "reader \(r.id) (\(r.driver))", host: host, port: port))
            }
        }
        out += outputs.flatMap(\.remotes)
        return out
    }
}

/// The systemd drop-in that lets the service reach the remotes its configuration names. The shipped unit denies
/// every IP address but loopback (`IPAddressDeny=any`, `IPAddressAllow=localhost`); systemd applies that to
/// every socket of the unit (systemd.resource-control(5), "IPAddressAllow=ADDRESS[/PREFIXLENGTH]…"), outgoing
/// ones too, so a fleet sync or a FEIG reader at 10.0.0.21 could not be reached. `IPAddressAllow=` takes
/// addresses, not names: names are resolved when the drop-in is written, and written again after a change
/// (`vlogger config network --output …`, which the package runs at install and upgrade).
public enum NetworkAllowance {
    /// The numeric addresses of `host` (an address is itself; a name is resolved now).
    public static func addresses(_ host: String) -> [String] {
        if ListenAddress.ipv4(host) != nil || ListenAddress.ipv6(host) != nil { return [host] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var out: [String] = []
        var p: UnsafeMutablePointer<addrinfo>? = first
        while let a = p {
            var buf = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(a.pointee.ai_addr, a.pointee.ai_addrlen, &buf, socklen_t(buf.count), nil, 0, NI_NUMERICHOST)
                == 0
            {
                let s = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !out.contains(s) { out.append(s) }
            }
            p = a.pointee.ai_next
        }
        return out
    }

    /// The drop-in's text for `remotes` (`resolve` is `addresses` but for tests), and the hosts that did not
    /// resolve (left out, and said).
    public static func dropIn(_ remotes: [Remote], source: String, resolve: (String) -> [String] = addresses) -> (
        text: String, unresolved: [String]
    ) {
        var lines = [
            "# Written by `vlogger config network --config \(source)`: the remote hosts that configuration names, which the",
            "# unit's IPAddressDeny=any would otherwise block. Write it again after changing them, then",
            "# systemctl daemon-reload && systemctl restart vlogger.", "[Service]",
        ]
        var unresolved: [String] = []
        for r in remotes {
            let addrs = resolve(r.host)
            if addrs.isEmpty {
                unresolved.append(r.host); lines.append("# \(r.what): \(r.host) did not resolve when this was written");
                continue
            }
            lines.append("# \(r.what): \(r.host):\(r.port)")
            for a in addrs { lines.append("IPAddressAllow=\(a)") }
        }
        return (lines.joined(separator: "\n") + "\n", unresolved)
    }

    /// The addresses an existing drop-in allows.
    public static func allowed(inDropIn text: String) -> Set<String> {
        Set(
            text.split(separator: "\n").compactMap { line -> String? in
                let t = line.trimmingCharacters(in: .whitespaces)
                guard t.hasPrefix("IPAddressAllow=") else { return nil }
                return String(t.dropFirst("IPAddressAllow=".count))
            })
    }
}
