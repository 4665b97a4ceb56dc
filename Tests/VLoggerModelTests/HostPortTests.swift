import Testing
import VLoggerModel

/// The host part of the URLs vlogger takes servers from (RFC 3986 §3.2.2: an IPv6 address in brackets; §3.2.3:
/// the port after the last colon), one reading for the sync, the MQTT output and the fan-in.
@Suite struct HostPortTests {
    @Test(arguments: [
        ("db.example.com", "db.example.com", 5432), ("db:6432", "db", 6432), ("[::1]", "::1", 5432),
        ("[fe80::1%eth0]:5433", "fe80::1%eth0", 5433), ("10.0.0.7:65535", "10.0.0.7", 65535),
    ])
    func accepted(_ text: String, _ host: String, _ port: Int) throws {
        let r = try HostPort.parse(Substring(text), defaultPort: 5432, what: "sync.url")
        #expect(r.host == host && r.port == port)
    }

    @Test(arguments: [
        ("db:0", "port '0' is not 1…65535"), ("db:65536", "port '65536' is not 1…65535"),
        ("db:99999999999999999999", "is not 1…65535"), ("db:+80", "port '+80'"), ("db:", "port ''"),
        (":5432", "the host is empty"), ("[::1", "unclosed ["), ("[::1]x", "'x' after the address in brackets"),
        ("", "the host is empty"),
    ])
    func refused(_ text: String, _ reason: String) {
        #expect {
            try HostPort.parse(Substring(text), defaultPort: 1883, what: "output.mqtt.url")
        } throws: { e in
            (e as? VLoggerError).map { $0.message.hasPrefix("output.mqtt.url: ") && $0.message.contains(reason) }
                ?? false
        }
    }
}
