/// An output's name (its cursors, metrics and log lines carry it): 1 to 40 ASCII letters, digits, `-` or `_`.
public enum OutputName {
    public static func isValid(_ n: String) -> Bool {
        !n.isEmpty && n.count <= 40
            && n.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }
}
