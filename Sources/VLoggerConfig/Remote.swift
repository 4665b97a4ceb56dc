/// A host the gateway connects to, named by the configuration: the fleet-sync server, a reader on the
/// LAN (FEIG's `tcp://HOST:PORT`), an MQTT broker, a webhook's host.
public struct Remote: Equatable, Sendable {
    public var what: String
    public var host: String
    public var port: Int
    public init(what: String, host: String, port: Int) {
        self.what = what
        self.host = host
        self.port = port
    }
}
