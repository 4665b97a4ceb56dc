import ISO15693

/// ST25DV area passwords on the air (docs/reference/tag-passwords.md, "ST25DV areas"): the area map from READ
/// CONFIGURATION (always allowed), and PRESENT PASSWORD, which opens the RF user security session of the areas that
/// password controls until the field goes off or another password is presented.
extension ISO15693Client {
    /// The areas of an ST25DV with `blockCount` blocks: the seven area registers, read one by one. nil when the chip
    /// does not answer READ CONFIGURATION (an optional command: `optionalCustom`).
    public func stAreas(_ uid: UID, blockCount: Int) throws(ClientError) -> [STSecurity.Area]? {
        guard let registers = try stAreaRegisters(uid) else { return nil }
        guard let areas = STSecurity.areas(registers: registers, blockCount: blockCount) else {
            throw ClientError.invalid(
                "the ST25DV's area registers \(Hex.format(registers)) do not make an area map of \(blockCount) blocks")
        }
        return areas
    }

    /// The seven area registers (`STSecurity.areaRegisters`' order) as READ CONFIGURATION answers them; nil when the
    /// chip does not answer it (now or earlier in its visit).
    public func stAreaRegisters(_ uid: UID) throws(ClientError) -> [UInt8]? {
        var registers: [UInt8] = []
        for pointer in STSecurity.areaRegisters {
            guard
                let v = try optionalCustom(
                    uid, code: STSecurity.readConfiguration, manufacturer: .stMicroelectronics, parameters: [pointer]
                ).bytes
            else { return nil }
            guard v.count == 1 else {
                throw ClientError.invalid("READ CONFIGURATION of register 0x\(Hex.format([pointer])): \(v.count) bytes")
            }
            registers.append(v[0])
        }
        return registers
    }

    /// PRESENT PASSWORD `number` (1–3) with `password` (8 bytes, sent as written). Sent once: a wrong password
    /// closes the session (error 0x0F, "the present password is incorrect"), and is never retried.
    public func stPresentPassword(_ uid: UID, number: UInt8, password: [UInt8]) throws(ClientError) -> PasswordOutcome {
        guard password.count == STSecurity.passwordLength else {
            throw ClientError.invalid("an ST25DV password is 8 bytes")
        }
        return try Self.passwordOutcome("PRESENT PASSWORD") { () throws(ClientError) in
            _ = try custom(
                uid, code: STSecurity.presentPassword, manufacturer: .stMicroelectronics,
                parameters: [number] + password, retries: 0)
        }
    }
}
