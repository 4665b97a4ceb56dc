import Foundation
import ISO15693
import VLoggerConfig

/// What the agent remembers of the passwords it gave on its own (a plan's read password, a privacy password), so
/// that a password that did not work is not given again: an NXP chip that gets a wrong password is mute until its
/// power is reset, and repeated wrong passwords look like an attack (docs/reference/tag-passwords.md).
///
/// A rejection holds until an operator acts: the secrets file changes (its size, time or inode) or the agent
/// restarts. A refusal (no password configured) is reported once per visit of the tag.
final class PasswordMemory {
    /// Which password: the agent keeps each apart (a rejected read password says nothing of the privacy one).
    enum Kind: Hashable { case read, write, privacy }
    struct Key: Hashable {
        var uid: UID
        var kind: Kind
    }
    /// Rejected passwords, with the secrets file's stamp at the rejection.
    private var rejected: [Key: FileStamp?] = [:]
    /// UIDs whose refusal was reported in this visit.
    private var reported: Set<UID> = []

    /// Whether a password may be given to `uid`: not when one was rejected and the secrets file is as it was then.
    func mayTry(_ uid: UID, _ kind: Kind, secretsFile: String?) -> Bool {
        let key = Key(uid: uid, kind: kind)
        guard let then = rejected[key] else { return true }
        if then != FileStamp.of(secretsFile) {
            rejected[key] = nil
            return true
        }
        return false
    }

    /// Whether `uid`'s `kind` of password is waiting for an operator (a rejection that still holds).
    func isRejected(_ uid: UID, _ kind: Kind, secretsFile: String?) -> Bool {
        !mayTry(uid, kind, secretsFile: secretsFile)
    }

    func reject(_ uid: UID, _ kind: Kind, secretsFile: String?) {
        rejected[Key(uid: uid, kind: kind)] = FileStamp.of(secretsFile)
    }

    /// True the first time in a visit: the caller reports then, and stays quiet until the tag has left.
    func firstReport(_ uid: UID) -> Bool { reported.insert(uid).inserted }

    /// The tag left the field: its next visit reports again (a rejection stays).
    func left(_ uid: UID) { reported.remove(uid) }
}
