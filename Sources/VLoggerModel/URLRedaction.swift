/// One way to show a URL without its credentials, wherever a URL is shown or stored: messages, events (and so
/// exports, fleet sync, MQTT), logs, `/healthz`, `outputs status` (docs/integrating.md, "Credentials in URLs").
///
/// Hidden: the user information (`user:password@`; a user name is kept outside http and https), the query and fragment (`?token=…`), the path after the fixed
/// prefix of the webhook hosts that put their secret in the path (Slack `hooks.slack.com/services/…`, Discord
/// `discord.com/api/webhooks/…`, Microsoft Teams `*.webhook.office.com/webhookb2/…` and
/// `outlook.office.com/webhook/…`), any path segment configured as secret, and any path segment that looks like a
/// token (16 characters or more of letters, digits, `-` and `_`, with both letters and digits). Each hidden part
/// becomes `…`.
public enum URLRedaction {
    /// Hosts whose webhook URLs carry their secret in the path, and the path prefix that is not secret.
    static let pathSecretHosts: [(host: String, prefix: String)] = [
        ("hooks.slack.com", "/services/"), ("discord.com", "/api/webhooks/"), ("discordapp.com", "/api/webhooks/"),
        ("webhook.office.com", "/webhookb2/"), ("outlook.office.com", "/webhook/"), ("chat.googleapis.com", "/v1/"),
    ]

    public static func redact(_ url: String, secretSegments: [String] = []) -> String {
        var rest = Substring(url)
        var out = ""
        // scheme://
        if let r = rest.range(of: "://") {
            out += rest[..<r.upperBound]
            rest = rest[r.upperBound...]
        }
        // authority up to the first /, ? or #
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        if let at = authority.lastIndex(of: "@") {
            // An http(s) user may be a token; a database's or broker's user name is kept (its password never).
            let user = authority[..<at]
            let web = out.lowercased().hasPrefix("http")
            let name = user.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            out += web || name.isEmpty ? "…@" : (user.contains(":") ? "\(name):…@" : "\(name)@")
            authority = authority[authority.index(after: at)...]
        }
        out += authority
        let host = authority.split(separator: ":").first.map { $0.lowercased() } ?? ""
        // query and fragment
        var path = rest
        var tail = ""
        if let q = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            path = rest[..<q]
            tail = String(rest[q]) + "…"
        }
        if let known = pathSecretHosts.first(where: { host == $0.host || host.hasSuffix("." + $0.host) }),
            path.hasPrefix(known.prefix), path.count > known.prefix.count
        {
            return out + known.prefix + "…" + tail
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            let s = String(segment)
            return secretSegments.contains(s) || looksLikeToken(s) ? "…" : s
        }
        return out + segments.joined(separator: "/") + tail
    }

    static func looksLikeToken(_ s: String) -> Bool {
        guard s.count >= 16 else { return false }
        var letters = false, digits = false
        for c in s.unicodeScalars {
            switch c {
            case "a"..."z", "A"..."Z": letters = true
            case "0"..."9": digits = true
            case "-", "_": continue
            default: return false
            }
        }
        return letters && digits
    }
}
