import ISO15693
import Readers
import VLoggerOutbox

/// Opening an NXP ICODE password session before a read or write of password-protected blocks (docs/reference/
/// tag-passwords.md): the blocks' protection status first (GET MULTIPLE BLOCK PROTECTION STATUS), then for each
/// password they need (read, then write) GET RANDOM NUMBER and SET PASSWORD, in the RF session the read or write
/// follows in. Passwords never leave this code: not in outcomes, events, logs or traces (`TraceFormatter.masked`).
public enum PasswordUnlock {
    public enum Outcome: Equatable, Sendable {
        /// No password needed (not an NXP chip, no protected block, or a chip that does not answer the protection
        /// status: no page protection).
        case open
        /// The passwords the blocks need were accepted: the write goes ahead in the same RF session.
        case unlocked
        /// A password is needed and none is configured (or the secrets file is refused): none was tried.
        case refused(String)
        /// The tag did not accept a password of the secrets file (an NXP chip is then mute until its power is reset).
        case rejected(String)
        /// The tag did not accept the password given with the access, sent where the secrets file holds none for the
        /// tag (the chip is mute until its power is reset; the file's passwords are not in question).
        case givenRejected(String)
        /// No password can open the blocks for this access (an ST25DV area never writable over RF, or one no RF
        /// password opens, or blocks over areas of different passwords): refused before any password.
        case forbidden(String)
    }

    /// What the blocks are opened for: a read needs the read password of read-protected blocks; a write needs that
    /// and the write password of write-protected blocks (a read-protected page is written only after the read
    /// password: Flipper's SLIX listener checks both for a write).
    public enum Purpose: Sendable { case read, write }

    /// What became of work on blocks that may need a password (`guarded`).
    public enum Guarded<T> {
        /// The work was done (after opening a password session when one was needed).
        case done(T, Outcome)
        /// The blocks need a password that is not configured (`.refused`) or was not accepted (`.rejected`):
        /// nothing was written.
        case stopped(Outcome)
    }

    /// Error answers that a block's protection may explain, when the status was not asked first: 0x0F (what
    /// Flipper's SLIX listener and the simulator answer for a protected NXP page; no NXP data sheet read names
    /// one), 0x12 (an ST25DV area write-protected without its session, DS13519) and 0x15 (read-protected, ST).
    /// A real lock answers 0x12 too: the status then says so, and the error stands.
    public static let protectionErrors: Set<ISOErrorCode> = [.unknownError, .blockLocked, .blockReadProtected]

    /// Whether asking the blocks' protection before touching them can matter (docs/reference/optional-commands.md):
    /// the chip's model has page protection (NXP) or areas (ST25DV), or the secrets file holds an NXP read or write
    /// password for this tag or its asset. Otherwise the blocks are read or written at once, and only an error
    /// answer that protection may explain makes vlogger ask (`guarded`).
    /// A password given with the access (`given`) makes it matter on any NXP chip.
    public static func statusCanMatter(
        _ client: ISO15693Client, _ uid: UID, secretsFile: String?, asset: String?, given: TagPassword? = nil
    ) -> Bool {
        let model = (try? client.memory(of: uid))?.model ?? ICModel.identify(uid: uid)
        if uid.manufacturer == .stMicroelectronics { return STSecurity.hasAreas(model) }
        guard uid.manufacturer == .nxp else { return false }
        if model?.hasPageProtection == true || given != nil { return true }
        guard let secretsFile else { return false }
        // A secrets file that cannot be read cannot say: ask, and say what is wrong with it if a password is needed.
        guard let secrets = try? TagSecrets.load(secretsFile) else { return true }
        return [NXPSecurity.readPassword, NXPSecurity.writePassword].contains {
            secrets.nxpPassword($0, uid: uid, asset: asset) != nil
        }
    }

    /// Runs `body` (a write, or the reads and the write of a queued write) on blocks `first`+`count` of `uid`, with
    /// the password session they need: opened first when `statusCanMatter`; otherwise the blocks are touched at
    /// once, and only when the tag answers an error that protection may explain (`protectionErrors`) is the status
    /// asked, the session opened and `body` run again. A chip that does not answer the status query has no page
    /// protection: the error stands.
    /// `given`: a password given with the access (`TagPassword`); `rejectedEarlier`: whether the tag rejected the
    /// secrets file's password for reading or for writing before (such a password is refused, not sent again);
    /// `askFirst` false: `body` is tried first whatever the chip (a read, as the plan reads do: the status costs an
    /// exchange on every read of a chip with page protection that protects nothing).
    public static func guarded<T>(
        _ client: ISO15693Client, _ uid: UID, first: BlockNumber, count: Int, for purpose: Purpose,
        secretsFile: String?, asset: String?, given: TagPassword? = nil,
        rejectedEarlier: (Purpose) -> Bool = { _ in false }, askFirst: Bool = true,
        _ body: () throws(ClientError) -> T
    ) throws(ClientError) -> Guarded<T> {
        var asked = false
        var outcome = Outcome.open
        if askFirst, statusCanMatter(client, uid, secretsFile: secretsFile, asset: asset, given: given) {
            asked = true
            outcome = try open(
                client, uid, first: first, count: count, for: purpose, secretsFile: secretsFile, asset: asset,
                given: given, rejectedEarlier: rejectedEarlier)
            switch outcome {
            case .open, .unlocked: break
            case .refused, .rejected, .givenRejected, .forbidden: return .stopped(outcome)
            }
        }
        do {
            return .done(try body(), outcome)
        } catch {
            // Asked and answered: the status stands, and so does the error. Asked and met with silence (the air, a
            // chip at the edge of the field): asked once more now that an error says protection may matter.
            let query =
                uid.manufacturer == .nxp ? NXPSecurity.getMultipleBlockProtectionStatus : STSecurity.readConfiguration
            let silent = client.silentEarlier(uid, code: query, manufacturer: uid.manufacturer)
            guard !asked || silent, case .tag(let code, _) = error, protectionErrors.contains(code),
                uid.manufacturer == .nxp || uid.manufacturer == .stMicroelectronics
            else { throw error }
            if silent { client.askAgain(uid, code: query, manufacturer: uid.manufacturer) }
            outcome = try open(
                client, uid, first: first, count: count, for: purpose, secretsFile: secretsFile, asset: asset,
                given: given, rejectedEarlier: rejectedEarlier)
            switch outcome {
            case .open: throw error
            case .unlocked: return .done(try body(), outcome)
            case .refused, .rejected, .givenRejected, .forbidden: return .stopped(outcome)
            }
        }
    }

    /// Asks the blocks' protection status and opens the password session they need. The status query is optional
    /// (`optionalCustom`): a chip that does not answer it has no page protection, and the blocks are `.open`. The
    /// passwords come from the secrets file; `given` (a password given with the access) must be one the file holds
    /// for the tag, and is sent only where the file holds none for it (`passwords`).
    public static func open(
        _ client: ISO15693Client, _ uid: UID, first: BlockNumber, count: Int, for purpose: Purpose,
        secretsFile: String?, asset: String?, given: TagPassword? = nil,
        rejectedEarlier: (Purpose) -> Bool = { _ in false }
    ) throws(ClientError) -> Outcome {
        if uid.manufacturer == .stMicroelectronics {
            return try openST(
                client, uid, first: first, count: count, for: purpose, secretsFile: secretsFile, asset: asset,
                given: given, rejectedEarlier: rejectedEarlier)
        }
        guard uid.manufacturer == .nxp, first.int + count <= 256,
            let status = try client.nxpProtectionStatus(uid, first: first, count: count)
        else { return .open }
        var needed: [(id: UInt8, name: String)] = []
        if status.contains(where: NXPSecurity.readProtected) { needed.append((NXPSecurity.readPassword, "read")) }
        if purpose == .write, status.contains(where: NXPSecurity.writeProtected) {
            needed.append((NXPSecurity.writePassword, "write"))
        }
        guard !needed.isEmpty else { return .open }
        let blocks = "blocks \(first)+\(count)"
        let chosen = passwords(
            needed.map {
                (
                    "the NXP \($0.name) password", "nxp-\($0.name)",
                    rejectedEarlier($0.id == NXPSecurity.readPassword ? .read : .write)
                )
            }, of: blocks, uid, asset: asset, length: 4, secretsFile: secretsFile, given: given
        ) { secrets, i in secrets.nxpPassword(needed[i].id, uid: uid, asset: asset) }
        let values: [[UInt8]]
        let givenSent: Bool
        switch chosen {
        case .failure(let refusal): return .refused(refusal.why)
        case .success(let v): (values, givenSent) = v
        }
        for (n, password) in zip(needed, values) {
            if case .rejected(let why) = try client.nxpSetPassword(uid, id: n.id, password: password) {
                let what = "the NXP \(n.name) password\(givenSent ? " given" : "") (\(why))"
                return givenSent
                    ? .givenRejected("password rejected: \(what)") : .rejected("password rejected: \(what)")
            }
        }
        return .unlocked
    }

    /// Why the passwords a session needs cannot be given (`Outcome.refused`).
    struct Refusal: Error {
        let why: String
        init(_ why: String) { self.why = why }
    }

    /// The values of the passwords `needed` (what each is, its secrets-file key, whether the tag rejected the file's
    /// before) for `blocks`, and whether they are the one given. The file's, each; where the file holds no password at
    /// all for the tag, the one given (`length` bytes) in every place. A password given where the file holds any for
    /// the tag must be one of those, and then the file's are sent: a client cannot try passwords on a tag the file
    /// knows. A file password the tag rejected before is refused, not sent again. Refusals never name a value.
    static func passwords(
        _ needed: [(what: String, key: String, rejectedEarlier: Bool)], of blocks: String, _ uid: UID, asset: String?,
        length: Int, secretsFile: String?, given: TagPassword?, _ lookup: (TagSecrets, Int) -> [UInt8]?
    ) -> Result<([[UInt8]], given: Bool), Refusal> {
        let names = needed.map(\.what).joined(separator: " and ")
        var secrets: TagSecrets?
        if let secretsFile {
            do { secrets = try TagSecrets.load(secretsFile) } catch {
                return .failure(Refusal("\(blocks) need \(names); the secrets file: \(error)"))
            }
        }
        if let given {
            let known = secrets?.passwords(uid: uid, asset: asset) ?? []
            if known.isEmpty {
                guard given.bytes.count == length else {
                    return .failure(
                        Refusal(
                            "the password given is \(given.bytes.count) bytes; \(names) of \(blocks) \(needed.count == 1 ? "is" : "are") \(length) bytes; no password was sent to the tag"
                        ))
                }
                return .success((Array(repeating: given.bytes, count: needed.count), given: true))
            }
            guard known.contains(where: given.matches) else {
                return .failure(
                    Refusal(
                        "the password given is not one the secrets file holds for \(uid) (\(blocks) need \(names)); no password was sent to the tag"
                    ))
            }
        }
        var values: [[UInt8]] = []
        for (i, n) in needed.enumerated() {
            if let secrets, let v = lookup(secrets, i) {
                if n.rejectedEarlier {
                    return .failure(
                        Refusal(
                            "\(blocks): the tag rejected \(n.what) of the secrets file earlier; not given again until the secrets file changes or the service restarts"
                        ))
                }
                values.append(v)
            } else if secretsFile == nil {
                return .failure(
                    Refusal(
                        "\(blocks) are protected by \(n.what), and no secrets file is configured ([security] secrets-file)"
                    ))
            } else {
                return .failure(
                    Refusal("\(blocks) are protected by \(n.what); the secrets file has no \(n.key) for \(uid)"))
            }
        }
        return .success((values, given: false))
    }

    /// ST25DV areas (docs/reference/tag-passwords.md, "ST25DV areas"): the area map (READ CONFIGURATION, no password),
    /// the areas the blocks fall in, and PRESENT PASSWORD of the one RF password they need. Only one RF session is
    /// open at a time, so blocks whose areas need different passwords are refused (write them area by area); a write
    /// to an area whose writes are forbidden, or whose protection no password lifts, is refused before the air.
    static func openST(
        _ client: ISO15693Client, _ uid: UID, first: BlockNumber, count: Int, for purpose: Purpose,
        secretsFile: String?, asset: String?, given: TagPassword?, rejectedEarlier: (Purpose) -> Bool
    ) throws(ClientError) -> Outcome {
        let memory = try client.memory(of: uid)
        guard STSecurity.hasAreas(memory.model) else { return .open }
        guard let areas = try client.stAreas(uid, blockCount: memory.blockCount) else { return .open }
        let last = first.int + count - 1
        let touched = areas.filter { $0.firstBlock <= last && first.int <= $0.lastBlock }
        let blocks = "blocks \(first)+\(count)"
        if purpose == .write, let a = touched.first(where: \.writeForbidden) {
            return .forbidden("\(blocks): area \(a.number) of the ST25DV is never writable over RF (RW_PROTECTION 11b)")
        }
        let guarded = touched.filter {
            purpose == .read ? $0.readNeedsSession : $0.writeNeedsSession || $0.readNeedsSession
        }
        guard !guarded.isEmpty else { return .open }
        if let a = guarded.first(where: { $0.password == 0 }) {
            return .forbidden(
                "\(blocks): area \(a.number) of the ST25DV is protected and no RF password opens it (PWD_CTRL 00b)")
        }
        let numbers = Set(guarded.map(\.password))
        guard numbers.count == 1, let number = numbers.first else {
            return .forbidden(
                "\(blocks) span areas \(guarded.map { String($0.number) }.joined(separator: ", ")) opened by different passwords (\(numbers.sorted().map { "RF_PWD_\($0)" }.joined(separator: ", "))); only one RF session is open at a time: write them area by area"
            )
        }
        let what = "the ST25DV's RF_PWD_\(number) (area \(guarded.map { String($0.number) }.joined(separator: ", ")))"
        let password: [UInt8]
        let givenSent: Bool
        // One RF password opens reads and writes alike: one the tag rejected for either is not sent again.
        switch passwords(
            [(what, "st-password-\(number)", rejectedEarlier(.read) || rejectedEarlier(.write))], of: blocks, uid,
            asset: asset, length: STSecurity.passwordLength, secretsFile: secretsFile, given: given,
            { secrets, _ in secrets.stPassword(UInt8(number), uid: uid, asset: asset) })
        {
        case .failure(let refusal): return .refused(refusal.why)
        case .success(let v): (password, givenSent) = (v.0[0], v.given)
        }
        if case .rejected(let why) = try client.stPresentPassword(uid, number: UInt8(number), password: password) {
            let text = "password rejected: \(what)\(givenSent ? ", the password given" : "") (\(why))"
            return givenSent ? .givenRejected(text) : .rejected(text)
        }
        return .unlocked
    }
}
