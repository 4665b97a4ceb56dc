/// A frame (request or response) that does not follow ISO/IEC 15693-3. Never a trap: every decoder in this
/// module reports malformed input with one of these.
public enum FrameError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(what: String, needed: Int, got: Int)
    case crcMismatch(expected: UInt16, found: UInt16)
    case wrongLength(what: String, expected: String, got: Int)
    case invalidUID(String)
    case invalidField(String)
    case empty

    public var description: String {
        switch self {
        case let .truncated(what, needed, got):
            return "truncated \(what): needs at least \(needed) bytes, got \(got)"
        case let .crcMismatch(expected, found):
            return "CRC mismatch: frame carries \(Hex.format([UInt8(found & 0xFF), UInt8(found >> 8)])) on air, "
                + "its bytes give \(Hex.format([UInt8(expected & 0xFF), UInt8(expected >> 8)]))"
        case let .wrongLength(what, expected, got):
            return "wrong length for \(what): expected \(expected) bytes, got \(got)"
        case let .invalidUID(why):
            return "invalid UID: \(why)"
        case let .invalidField(why):
            return why
        case .empty:
            return "empty frame"
        }
    }
}
