/// The host part of a URL: `HOST`, `HOST:PORT`, `[IPv6]` or `[IPv6]:PORT`. One reading for every URL vlogger
/// takes a server from (the sync's PostgreSQL hosts, an MQTT output's broker, the fan-in's brokers), so that each
/// refuses the same things with the same words. `what` names the setting in the errors (`sync.url`).
public enum HostPort {
    /// `host:port`, an IPv6 address in brackets: what `parse` reads.
    public static func text(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    public static func parse(_ text: Substring, defaultPort: Int, what: String) throws(VLoggerError) -> (
        host: String, port: Int
    ) {
        var host = String(text)
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw VLoggerError("\(what): unclosed [ in the host") }
            host = String(text[text.index(after: text.startIndex)..<close])
            let after = text[text.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                throw VLoggerError("\(what): '\(after.prefix(20))' after the address in brackets")
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        var port = defaultPort
        if let portText {
            // At most five digits before the number is read: "99999999999999999999" is not an overflow.
            guard portText.count <= 5, portText.allSatisfy(\.isASCIIDigit), let p = Int(portText),
                (1...65535).contains(p)
            else { throw VLoggerError("\(what): port '\(portText.prefix(20))' is not 1…65535") }
            port = p
        }
        guard !host.isEmpty else { throw VLoggerError("\(what): the host is empty") }
        return (host, port)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
