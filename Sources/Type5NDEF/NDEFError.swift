/// Why NDEF data could not be read or written. Every malformed input ends here, never in a trap.
public enum NDEFError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The capability container is missing, malformed or not one this mapping may read.
    case capabilityContainer(String)
    /// A TLV runs past the data area or has a bad length.
    case tlv(String)
    /// A record header or length runs past the message, or chunks are out of order.
    case record(String)
    /// A payload does not follow its record type (e.g. a Text record with a language longer than the payload).
    case payload(String)
    /// The message does not fit the tag.
    case tooLarge(message: Int, capacity: Int)

    public var description: String {
        switch self {
        case let .capabilityContainer(m): return "capability container: \(m)"
        case let .tlv(m): return "TLV: \(m)"
        case let .record(m): return "NDEF record: \(m)"
        case let .payload(m): return "NDEF payload: \(m)"
        case let .tooLarge(m, c):
            return
                "the NDEF message is \(m) bytes but this tag takes at most \(c) (its NDEF data area less the TLV's type and length)"
        }
    }
}
