import Foundation
import ISO15693
import VLoggerConfig

/// The tags' passwords (`[security] secrets-file`, docs/reference/tag-passwords.md): a TOML file of `[[tag]]`
/// tables, each naming its tags by `uid` (a UID, or a prefix ending in `*`) or by `asset` (the register's id), with
/// the NXP ICODE passwords `nxp-read`, `nxp-write`, `nxp-privacy` (4 bytes in hex each) and the ST25DV RF area
/// passwords `st-password-1` … `st-password-3` (8 bytes in hex each, sent as written). The file must be mode 0600
/// or stricter, and owned by root when vlogger runs as root; it is refused otherwise. A password is never printed:
/// this type's description says how many entries it has, errors name the file and the line.
public struct TagSecrets: Sendable, CustomStringConvertible {
    struct Entry: Sendable {
        var uid: UID?
        var prefix: String?
        var asset: String?
        var nxp: [UInt8: [UInt8]]
        var st: [UInt8: [UInt8]] = [:]
    }
    var entries: [Entry] = []

    public var description: String { "\(entries.count) tag secret\(entries.count == 1 ? "" : "s") (values not shown)" }

    static let nxpKeys: [String: UInt8] = [
        "nxp-read": NXPSecurity.readPassword, "nxp-write": NXPSecurity.writePassword,
        "nxp-privacy": NXPSecurity.privacyPassword,
    ]

    static let stKeys: [String: UInt8] = ["st-password-1": 1, "st-password-2": 2, "st-password-3": 3]

    /// The NXP password `id` for a tag: an entry for its UID first, then one for its asset, then the longest prefix.
    public func nxpPassword(_ id: UInt8, uid: UID, asset: String?) -> [UInt8]? {
        lookup(uid: uid, asset: asset) { $0.nxp[id] }
    }

    /// The ST25DV RF password `number` (1–3) for a tag, found as `nxpPassword` finds its passwords.
    public func stPassword(_ number: UInt8, uid: UID, asset: String?) -> [UInt8]? {
        lookup(uid: uid, asset: asset) { $0.st[number] }
    }

    /// Every password the file holds for a tag (NXP and ST alike): a password given with a client's access must be
    /// one of them when there is any (`PasswordUnlock.passwords`).
    public func passwords(uid: UID, asset: String?) -> [[UInt8]] {
        Self.nxpKeys.values.sorted().compactMap { nxpPassword($0, uid: uid, asset: asset) }
            + Self.stKeys.values.sorted().compactMap { stPassword($0, uid: uid, asset: asset) }
    }

    private func lookup(uid: UID, asset: String?, _ value: (Entry) -> [UInt8]?) -> [UInt8]? {
        if let e = entries.first(where: { $0.uid == uid && value($0) != nil }) { return value(e) }
        if let asset, let e = entries.first(where: { $0.asset == asset && value($0) != nil }) { return value(e) }
        let text = uid.description
        return entries.filter { e in e.prefix.map { text.hasPrefix($0) } == true && value(e) != nil }
            .max { ($0.prefix?.count ?? 0) < ($1.prefix?.count ?? 0) }.flatMap(value)
    }

    /// Reads and checks the file (its mode and owner first, then its content; every problem with its line).
    public static func load(_ path: String) throws(ConfigError) -> TagSecrets {
        try requirePrivate(path, "the secrets file ([security] secrets-file)")
        return try parse(try ConfigReader.load(path), file: path)
    }

    /// A file holding one NXP password (8 hex digits on its first line), with the secrets file's checks (mode 0600
    /// or stricter, root-owned under root). The value is never repeated in an error.
    public static func passwordFile(_ path: String) throws(ConfigError) -> [UInt8] {
        try requirePrivate(path, "the password file")
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError(issues: [ConfigIssue(file: path, line: 0, message: "cannot read the password file")])
        }
        let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        guard let bytes = try? Hex.parse(line.trimmingCharacters(in: .whitespaces)), bytes.count == 4 else {
            throw ConfigError(issues: [
                ConfigIssue(file: path, line: 1, message: "an NXP password is 4 bytes in hex (8 hex digits)")
            ])
        }
        return bytes
    }

    /// A file of secrets is readable by its owner only (mode 0600 or stricter), and owned by root when vlogger runs as
    /// root; `what` names it in the error.
    static func requirePrivate(_ path: String, _ what: String) throws(ConfigError) {
        func refuse(_ message: String) -> ConfigError {
            ConfigError(issues: [ConfigIssue(file: path, line: 0, message: message)])
        }
        var st = stat()
        guard stat(path, &st) == 0 else { throw refuse("cannot read \(what)") }
        let mode = st.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw refuse(
                "\(what) is mode \(String(mode, radix: 8)): others may read it; make it 0600 or stricter (chmod 600 \(path))"
            )
        }
        if geteuid() == 0, st.st_uid != 0 {
            throw refuse("vlogger runs as root: \(what) must be owned by root (uid \(st.st_uid))")
        }
    }

    /// Parses the content (no file checks; the tests and the fuzzer use it).
    public static func parse(_ text: String, file: String) throws(ConfigError) -> TagSecrets {
        let table = try ConfigReader.parse(text: text, file: file)
        let r = ConfigReader(file: file)
        let top = Section(r, table, name: "", keys: ["tag"])
        var out = TagSecrets()
        for s in top.tables("tag", keys: ["uid", "asset", "comment"] + nxpKeys.keys.sorted() + stKeys.keys.sorted()) {
            var e = Entry(nxp: [:])
            if let u = s.string("uid") {
                if u.hasSuffix("*") {
                    let p = String(u.dropLast()).uppercased()
                    if p.count < 4 || !p.hasPrefix("E0") || p.contains(where: { !$0.isHexDigit }) {
                        r.issue(
                            s.node("uid")?.line ?? s.line,
                            "\(s.name).uid: a prefix is E0 and at least 2 more hex digits, then *")
                    }
                    e.prefix = p
                } else {
                    do { e.uid = try UID(parsing: u) } catch {
                        r.issue(s.node("uid")?.line ?? s.line, "\(s.name).uid: \(error)")
                    }
                }
            }
            e.asset = s.string("asset")
            if (e.uid == nil && e.prefix == nil) == (e.asset == nil) {
                r.issue(s.line, "\(s.name): give uid (a UID or a prefix*) or asset, one of them")
            }
            for (key, id) in nxpKeys {
                guard let v = s.string(key) else { continue }
                // The value is never repeated in a message.
                guard let bytes = try? Hex.parse(v), bytes.count == 4 else {
                    r.issue(s.node(key)?.line ?? s.line, "\(s.name).\(key): 4 bytes in hex (8 hex digits)")
                    continue
                }
                e.nxp[id] = bytes
            }
            for (key, number) in stKeys {
                guard let v = s.string(key) else { continue }
                guard let bytes = try? Hex.parse(v), bytes.count == STSecurity.passwordLength else {
                    r.issue(s.node(key)?.line ?? s.line, "\(s.name).\(key): 8 bytes in hex (16 hex digits)")
                    continue
                }
                e.st[number] = bytes
            }
            if e.nxp.isEmpty && e.st.isEmpty {
                r.issue(
                    s.line, "\(s.name): no password (nxp-read, nxp-write, nxp-privacy, st-password-1 … st-password-3)")
            }
            out.entries.append(e)
        }
        try r.finish()
        return out
    }
}
