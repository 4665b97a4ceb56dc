import ISO15693

/// Optional custom commands (docs/reference/optional-commands.md): the queries a path sends only to learn something
/// it can do without — a chip's page protection, its NXP system information, its originality signature, an ST25DV's
/// area registers. A chip that does not implement such a command answers an error (the ICODE SLI and SLI-S answer
/// 0x0F in addressed mode: SLI specification Rev 3.1 §3.5.2, SLI-S data sheet §8.4.2) or, through some readers and
/// on other chips, nothing at all; neither is a failure: the
/// command is "not supported" by that tag for the rest of its visit, and is not sent to it again until the tag has
/// left (`forget`). A mandatory command's timeout keeps its meaning (the tag left, the air was bad): only these
/// queries are read this way.
extension ISO15693Client {
    /// What became of an optional custom command.
    public enum OptionalAnswer: Equatable, Sendable {
        /// The bytes of the answer after its flags.
        case answered([UInt8])
        /// The tag did not answer it cleanly (silence or a garbled answer after the client's retries, or an error
        /// answer), now or earlier in this visit; the reason says which.
        case notSupported(String)

        public var bytes: [UInt8]? {
            if case .answered(let b) = self { return b }
            return nil
        }
    }

    /// Sends a custom command that the caller can do without. Throws only what is not the tag's: the reader failed,
    /// its field is off, the frame cannot be sent. Silence, a garbled answer (after the client's retries) and an
    /// error answer make the command "not supported" for this tag until `forget(uid)`; it is then not sent again.
    public func optionalCustom(
        _ uid: UID, code: UInt8, manufacturer: ManufacturerCode, parameters: [UInt8] = []
    ) throws(ClientError) -> OptionalAnswer {
        let key = UInt16(manufacturer.rawValue) << 8 | UInt16(code)
        let name = "custom command 0x\(Hex.format([code]))"
        if unsupportedCustom[uid]?.contains(key) == true {
            return .notSupported("\(name): not answered earlier in this visit")
        }
        do {
            return .answered(try custom(uid, code: code, manufacturer: manufacturer, parameters: parameters))
        } catch {
            let why: String
            switch error {
            case .reader(.timeout, _): why = "\(name): no answer (the chip does not implement it)"
            case .reader(.crcError, _), .reader(.collision, _), .malformed: why = "\(name): \(error)"
            case .tag(let code, _): why = "\(name): the tag answered \(code)"
            case .reader(.readerStatus, _): why = "\(name): \(error)"
            case .reader, .invalid, .verifyFailed: throw error
            }
            // Bounded over months: a gateway sees new tags every day, each remembered only while it is present.
            if unsupportedCustom.count >= 10_000 { unsupportedCustom.removeAll() }
            unsupportedCustom[uid, default: []].insert(key)
            if case .tag = error { silentCustom[uid]?.remove(key) } else { silentCustom[uid, default: []].insert(key) }
            return .notSupported(why)
        }
    }

    /// Whether `uid` left an optional custom command unanswered earlier in this visit.
    public func refusedEarlier(_ uid: UID, code: UInt8, manufacturer: ManufacturerCode) -> Bool {
        unsupportedCustom[uid]?.contains(UInt16(manufacturer.rawValue) << 8 | UInt16(code)) == true
    }

    /// Whether that was silence or a garbled answer (not an error answer): the air may have been to blame, and a
    /// caller with reason to ask again (a write refused with an error protection may explain) may `askAgain`.
    public func silentEarlier(_ uid: UID, code: UInt8, manufacturer: ManufacturerCode) -> Bool {
        silentCustom[uid]?.contains(UInt16(manufacturer.rawValue) << 8 | UInt16(code)) == true
    }

    /// Forgets that `uid` left the command unanswered, so that the next `optionalCustom` sends it again.
    public func askAgain(_ uid: UID, code: UInt8, manufacturer: ManufacturerCode) {
        let key = UInt16(manufacturer.rawValue) << 8 | UInt16(code)
        unsupportedCustom[uid]?.remove(key)
        silentCustom[uid]?.remove(key)
    }

    /// Forgets what `uid` left unanswered (its visit ended: the agent saw it leave).
    public func forgetOptional(_ uid: UID) {
        unsupportedCustom[uid] = nil
        silentCustom[uid] = nil
    }
}
