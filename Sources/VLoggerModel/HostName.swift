import Foundation

/// This machine's name (`gethostname`, no resolver lookup: a gateway whose DNS is unreachable must not wait on
/// it), as the claims of a gateway id record it.
public enum HostName {
    public static let current: String = {
        var buf = [CChar](repeating: 0, count: 256)
        guard gethostname(&buf, buf.count) == 0 else { return "" }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()
}
