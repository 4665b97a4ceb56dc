import ISO15693
import Readers
import VLoggerModel

/// Makes NXP tags in privacy mode visible to the agent (`[security] privacy-tags`; docs/reference/tag-passwords.md):
/// a tag in privacy mode answers nothing but GET RANDOM NUMBER and SET PASSWORD, so it never answers the inventory
/// until its privacy password is given — after which it answers until its power is reset (it leaves the field).
/// Every `privacy-interval`, while a listed tag is not in the field, the agent gives the password before the
/// inventory: addressed to each listed UID (`privacy-unlock = "addressed"`), or once without a UID (the default,
/// the form known to work on real chips: one privacy tag in the field at a time, and one password for the listed
/// tags). A password that is not accepted is not given again until the secrets file changes or the agent restarts;
/// audits never give one.
final class PrivacyUnlocker {
    private let log: AgentLog
    private let passwords: PasswordMemory
    private var nextTry: Millis = 0
    /// Problems already reported (each once until it clears).
    private var reported: Set<String> = []

    init(log: AgentLog, passwords: PasswordMemory) {
        self.log = log
        self.passwords = passwords
    }

    /// Before a cycle's inventory: gives the privacy password to the listed tags that are not in the field, when due.
    func run(
        _ session: ReaderSession, config: AgentConfig, inField: Set<UID>, asset: (UID) -> String?, now: Millis
    ) {
        guard !config.privacyTags.isEmpty, now >= nextTry else { return }
        nextTry = now + config.privacyIntervalMs
        let file = config.secretsFile
        let absent = config.privacyTags.filter {
            !inField.contains($0) && passwords.mayTry($0, .privacy, secretsFile: file)
        }
        guard !absent.isEmpty, let file else { return }
        let secrets: TagSecrets
        do { secrets = try TagSecrets.load(file) } catch {
            once("secrets", detail: "privacy: the secrets file: \(error); no privacy password given")
            return
        }
        reported.remove("secrets")
        var withPassword: [(uid: UID, password: [UInt8])] = []
        for uid in absent {
            guard let p = secrets.nxpPassword(NXPSecurity.privacyPassword, uid: uid, asset: asset(uid)) else {
                once(
                    "none \(uid)", uid: uid, detail: "privacy: the secrets file has no nxp-privacy password for \(uid)")
                continue
            }
            withPassword.append((uid, p))
        }
        guard !withPassword.isEmpty else { return }
        switch config.privacyUnlock {
        case .addressed:
            for t in withPassword {
                let outcome: ISO15693Client.PasswordOutcome
                do {
                    outcome = try session.client.nxpSetPassword(
                        t.uid, id: NXPSecurity.privacyPassword, password: t.password)
                } catch {
                    continue  // no answer to GET RANDOM NUMBER: not in the field
                }
                finish(session, outcome, uids: [t.uid], file: file)
            }
        case .nonAddressed:
            let distinct = Set(withPassword.map { Hex.format($0.password) })
            guard distinct.count == 1, let password = withPassword.first?.password else {
                once(
                    "several passwords",
                    detail:
                        "privacy: the listed tags have \(distinct.count) different privacy passwords; without a UID only one can be given: use one password, or privacy-unlock = \"addressed\""
                )
                return
            }
            reported.remove("several passwords")
            // Every tag that answers the inventory (not in privacy mode) is made quiet first, so that the
            // non-addressed GET RANDOM NUMBER and SET PASSWORD reach only tags in privacy mode (an ordinary ICODE
            // tag answers GET RANDOM NUMBER too); they are made Ready again after.
            let client = session.client
            let visible: [UID]
            do { visible = try client.inventory(afi: nil).map(\.uid) } catch { return }  // a garbled round: next time
            for u in visible { try? client.stayQuiet(u) }
            defer { for u in visible { try? client.resetToReady(u) } }
            let outcome: ISO15693Client.PasswordOutcome
            do { outcome = try client.nxpLeavePrivacy(password: password, retries: 0) } catch {
                if case .reader(let e, _) = error, Self.isGarbled(e) {
                    once(
                        "collision",
                        detail:
                            "privacy: several tags answered GET RANDOM NUMBER at once; without a UID a privacy password is given to one tag at a time: none given"
                    )
                } else {
                    reported.remove("collision")
                }
                return  // no answer: no tag in privacy mode in the field
            }
            reported.remove("collision")
            finish(session, outcome, uids: withPassword.map(\.uid), file: file)
        }
    }

    private func finish(_ session: ReaderSession, _ outcome: ISO15693Client.PasswordOutcome, uids: [UID], file: String)
    {
        switch outcome {
        case .accepted:
            log.logger.info("privacy: password accepted; the tag answers the inventory until its power is reset")
        case .rejected(let why):
            // An NXP chip that gets a wrong password is mute until its power is reset.
            session.resetField()
            for uid in uids { passwords.reject(uid, .privacy, secretsFile: file) }
            log.event(
                .error, uid: uids.count == 1 ? uids[0] : nil, name: "password-rejected", severity: .critical,
                detail:
                    "privacy password rejected (\(why)) for \(uids.map(\.description).joined(separator: ", ")); the field was reset; not given again until the secrets file changes or the service restarts"
            )
        }
    }

    /// Several tags answering at once: a collision, or a frame that fails its CRC.
    static func isGarbled(_ e: ReaderError) -> Bool {
        switch e {
        case .collision, .crcError: return true
        default: return false
        }
    }

    private func once(_ key: String, uid: UID? = nil, detail: String) {
        guard reported.insert(key).inserted else { return }
        log.event(.error, uid: uid, name: "privacy", severity: .warning, detail: detail)
    }
}
