/// Text from outside (a tag's NDEF record or ASCII block, an API client's reader id, a register cell) made
/// safe for a terminal: a terminal obeys ESC sequences (title, colours, cursor moves: ECMA-48), and C1
/// controls (U+0080–U+009F; 0x9B is CSI on terminals that take 8-bit controls), a carriage return or a
/// line feed in a field forges a line, and bidirectional controls (Unicode UAX #9: U+202A–U+202E,
/// U+2066–U+2069, U+200E/F, U+061C) reorder what is shown ("Trojan Source", CVE-2021-42574). Each such
/// character is shown as a visible escape instead (`\x1B`, `\u{202E}`); all other text is kept as it is.
public enum SafeText {
    /// Whether a scalar must not reach a terminal as it is.
    public static func isUnsafe(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x00...0x08, 0x0A...0x1F, 0x7F...0x9F: return true  // C0 but tab, DEL, C1
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true  // bidi controls
        case 0x2028, 0x2029: return true  // line and paragraph separators
        default: return false
        }
    }

    /// `text` with every unsafe scalar replaced by a visible escape.
    public static func terminal(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = String.UnicodeScalarView()
        for u in text.unicodeScalars {
            guard isUnsafe(u) else { out.append(u); continue }
            let hex = String(u.value, radix: 16, uppercase: true)
            let escape = u.value < 0x100 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{\(hex)}"
            out.append(contentsOf: escape.unicodeScalars)
        }
        return String(out)
    }
}
