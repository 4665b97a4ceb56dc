import Testing

@testable import VLoggerModel

/// Issue 46, item 5: one function hides the credentials of every URL vlogger shows or stores. The URL forms are the
/// services' own documented ones: Slack incoming webhooks `https://hooks.slack.com/services/T…/B…/<token>`, Discord
/// `https://discord.com/api/webhooks/<id>/<token>`, Microsoft Teams (Office 365 connectors)
/// `https://<tenant>.webhook.office.com/webhookb2/<ids>/IncomingWebhook/<token>/<id>`.
@Suite struct URLRedactionTests {
    @Test func pathTokensOfKnownHostsUserInfoAndQueriesAreHidden() {
        let cases: [(String, String)] = [
            (
                "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
                "https://hooks.slack.com/services/…"
            ),
            (
                "https://discord.com/api/webhooks/123456789012345678/abcDEF-ghi_JKL",
                "https://discord.com/api/webhooks/…"
            ),
            (
                "https://contoso.webhook.office.com/webhookb2/a1b2@c3d4/IncomingWebhook/e5f6/g7h8",
                "https://contoso.webhook.office.com/webhookb2/…"
            ),
            ("https://user:pa55@example.com/hook?token=abc#frag", "https://…@example.com/hook?…"),
            ("https://example.com/hooks/vlogger?sig=1", "https://example.com/hooks/vlogger?…"),
            ("https://example.com/hooks/Zk3j9sQ2mXa8Lp0Rt7VwYu1n/x", "https://example.com/hooks/…/x"),
            ("postgresql://vlogger:secret@db:5432/fleet", "postgresql://vlogger:…@db:5432/fleet"),
            ("mqtts://broker.example.com:8883", "mqtts://broker.example.com:8883"),
            ("https://example.com/a-plain-long-path-name/ok", "https://example.com/a-plain-long-path-name/ok"),
        ]
        for (url, shown) in cases { #expect(URLRedaction.redact(url) == shown, "\(url)") }
        #expect(
            URLRedaction.redact("https://example.com/x/s3cr3t/y", secretSegments: ["s3cr3t"])
                == "https://example.com/x/…/y")
    }
}
