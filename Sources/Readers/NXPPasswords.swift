import ISO15693

/// NXP ICODE passwords on the air (docs/reference/tag-passwords.md): the protection status of blocks, and opening a
/// password session — GET RANDOM NUMBER, then SET PASSWORD with the password XORed with it, in one RF session (the
/// field stays on until the protected command that follows). A wrong password mutes the chip until its power is
/// reset, so SET PASSWORD is sent once, never retried.
extension ISO15693Client {
    /// GET MULTIPLE BLOCK PROTECTION STATUS: one status byte per block (bit 0 locked, bit 1 read and bit 2 write
    /// protected by a password), blocks `first` … (at most 256, below block 256). An optional command
    /// (`optionalCustom`): nil when the tag does not answer it (the ICODE SLI and SLIX have no page protection and
    /// need not answer), now or earlier in its visit.
    public func nxpProtectionStatus(_ uid: UID, first: BlockNumber, count: Int) throws(ClientError) -> [UInt8]? {
        guard first.int + count <= 256, (1...256).contains(count) else {
            throw ClientError.invalid("GET MULTIPLE BLOCK PROTECTION STATUS covers blocks 0x00…0xFF")
        }
        guard
            let answer = try optionalCustom(
                uid, code: NXPSecurity.getMultipleBlockProtectionStatus, manufacturer: .nxp,
                parameters: [UInt8(first.int), UInt8(count - 1)]
            ).bytes
        else { return nil }
        guard answer.count == count else {
            throw ClientError.invalid(
                "GET MULTIPLE BLOCK PROTECTION STATUS: \(answer.count) status bytes for \(count) blocks")
        }
        return answer
    }

    /// What became of SET PASSWORD.
    public enum PasswordOutcome: Equatable, Sendable {
        case accepted
        /// No answer: a wrong password (the chip is mute until its power is reset), or an answer lost on the air.
        case rejected(String)
    }

    /// GET RANDOM NUMBER, then SET PASSWORD (`id`: 0x01 read, 0x02 write, …) with `password` (4 bytes) XORed with it.
    /// Throws when GET RANDOM NUMBER fails (nothing was tried); `.rejected` when SET PASSWORD got no answer.
    public func nxpSetPassword(_ uid: UID, id: UInt8, password: [UInt8]) throws(ClientError) -> PasswordOutcome {
        guard password.count == 4 else { throw ClientError.invalid("an NXP password is 4 bytes") }
        let random = try custom(uid, code: NXPSecurity.getRandomNumber, manufacturer: .nxp)
        guard random.count == 2 else {
            throw ClientError.invalid("GET RANDOM NUMBER answered \(random.count) bytes, not 2")
        }
        return try Self.passwordOutcome { () throws(ClientError) in
            _ = try custom(
                uid, code: NXPSecurity.setPassword, manufacturer: .nxp,
                parameters: [id] + NXPSecurity.xor(password, random: random), retries: 0)
        }
    }

    /// Makes a tag in NXP privacy mode answer again until its power is reset: GET RANDOM NUMBER and SET PASSWORD
    /// (privacy, 0x04), both non-addressed (the UID of a tag in privacy mode is not known). With several such tags
    /// in the field their answers collide: one tag at a time (docs/reference/tag-passwords.md).
    /// `retries`: of GET RANDOM NUMBER (nil: the client's).
    public func nxpLeavePrivacy(password: [UInt8], retries: Int? = nil) throws(ClientError) -> PasswordOutcome {
        guard password.count == 4 else { throw ClientError.invalid("an NXP password is 4 bytes") }
        let flags = baseFlags
        let random = try send(
            Request(
                .custom(code: NXPSecurity.getRandomNumber, manufacturer: .nxp, parameters: []), flags: flags,
                addressing: .nonAddressed), retries: retries)
        guard case .data(let r) = random.body, r.count == 2 else {
            throw ClientError.invalid("GET RANDOM NUMBER: no 2-byte answer (is a tag in privacy mode in the field?)")
        }
        return try Self.passwordOutcome { () throws(ClientError) in
            _ = try send(
                Request(
                    .custom(
                        code: NXPSecurity.setPassword, manufacturer: .nxp,
                        parameters: [NXPSecurity.privacyPassword] + NXPSecurity.xor(password, random: r)),
                    flags: flags, addressing: .nonAddressed), retries: 0)
        }
    }

    /// What became of a password command sent once by `send`: no answer (the chip went mute), an error answer or a
    /// garbled one is a rejection; any other failure (the reader's own) is thrown.
    static func passwordOutcome(_ command: String = "SET PASSWORD", _ send: () throws(ClientError) -> Void)
        throws(ClientError) -> PasswordOutcome
    {
        do {
            try send()
            return .accepted
        } catch {
            if case .reader(.timeout, _) = error { return .rejected("no answer to \(command)") }
            if case .tag(let code, _) = error { return .rejected("the tag refused \(command) (\(code))") }
            // A garbled answer: whether the password was taken is not known, and sending it again could be a second
            // wrong one. Taken as a rejection (an operator looks), never resent.
            switch error {
            case .reader(.crcError, _), .reader(.collision, _), .malformed:
                return .rejected("a garbled answer to \(command) (\(error)): not known whether it was taken")
            default: break
            }
            throw error
        }
    }
}
