import TestDrivers
import Testing
import VLoggerCore
@testable import VLoggerService
import VLoggerConfig

/// DNS rebinding: a page on attacker.example whose name resolves to 127.0.0.1 reaches the gateway with
/// `Host: attacker.example` (RFC 9110 §7.2: Host carries the name the client used). IP literals, localhost,
/// this machine's own name and the configured names are answered.
@Suite(.drivers) struct HostAllowListTests {
    @Test func onlyOurNamesAndAddressesAreAnswered() throws {
        let list = HostAllowList(
            address: try ListenAddress(parsing: "127.0.0.1:9715"),
            extra: ["gateway-12.plant.example", "scrape.plant.example."])
        for ok in [
            "127.0.0.1:9715", "localhost:9715", "LOCALHOST", "[::1]:9715", "10.1.2.3:9715",
            "gateway-12.plant.example:9715", "gateway-12.plant.example.", "scrape.plant.example:9715", nil,
        ] {
            #expect(list.allows(ok), "\(String(describing: ok))")
        }
        for bad in [
            "attacker.example", "attacker.example:9715", "127.0.0.1.attacker.example", "[not-v6]:1",
            "localhost.attacker.example",
        ] {
            #expect(!list.allows(bad), "\(bad)")
        }
        #expect(
            HostAllowList(address: try ListenAddress(parsing: "127.0.0.1:9715"), extra: ["*"]).allows(
                "anything.example"))
    }
}
