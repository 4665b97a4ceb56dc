import Foundation
import VLoggerConfig
import VLoggerOutbox

/// `[[output.webhook]]` as an output kind (registered in LinkedOutputs).
public struct WebhookOutputKind: OutputKind {
    public init() {}
    public var section: OutputSection { .list("webhook") }
    public var keys: [String] { WebhookSettings.keys }
    public var summary: String { "webhooks: chosen events POSTed as signed JSON to an HTTP(S) endpoint" }
    public var sample: String {
        """
        [[output.webhook]]                    # chosen events POSTed as JSON (docs/integrating.md, "Webhooks")
        url = "https://hooks.example.com/vlogger"   # EDIT
        events = ["violation", "reader_down"] # event kinds, and audit, write
        # secret-file = "/etc/vlogger/webhook-secret"  # HMAC-SHA256 key (16+ characters): the signature header
        # ca-file = "/etc/vlogger/hooks-ca.pem"
        # timeout = "10s"

        """
    }

    public func read(_ section: Section, index: Int, _ reader: ConfigReader, _ context: OutputReadContext)
        -> (any OutputSettings)?
    {
        WebhookSettings.read(section, index: index, reader, resolve: context.resolve)
    }
}

extension WebhookSettings: OutputSettings {
    public var files: [OutputFile] {
        [
            secretFile.map { OutputFile(what: "output.webhook \(name) secret-file", path: $0, minLength: 16) },
            caFile.map { OutputFile(what: "output.webhook \(name) ca-file", path: $0, secret: false) },
        ].compactMap { $0 }
    }

    public var remotes: [Remote] {
        guard let u = URL(string: url), let host = u.host else { return [] }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        return [Remote(what: "output \(name) (webhook)", host: bare, port: u.port ?? (u.scheme == "https" ? 443 : 80))]
    }

    public func makeOutput(_ context: OutputContext) throws -> Output {
        Output(
            consumer: try WebhookOutput(
                settings: self, gateway: context.gatewayID, store: try context.requireStore("a webhook"),
                logger: context.logger),
            intervalMs: intervalMs, wakesOnCommit: true,
            signature: "\(self) \(context.gatewayID) \(Output.stamp(secretFile))")
    }
}

extension Collection where Element == any OutputSettings {
    /// The webhooks among a configuration's outputs.
    public var webhooks: [WebhookSettings] { compactMap { $0 as? WebhookSettings } }
}
