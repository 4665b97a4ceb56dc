/// Text that reaches an MQTT topic, an HTTP header, a file name or a page (a reader's location, an asset id, a
/// site): no control character (U+0000–U+001F, TAB included, and U+007F–U+009F) and no Unicode non-character
/// (U+FDD0–U+FDEF and the last two code points of every plane). MQTT 3.1.1 §1.5.3 and 5.0 §1.5.4 say a UTF-8 string
/// SHOULD NOT hold them and libmosquitto's `mosquitto_validate_utf8` refuses them in a topic; RFC 9110 §5.5 allows
/// no control character in a header field value except HTAB. Such text is refused where it enters (configuration,
/// register import) with `problem`, and replaced where it still arrives (`MQTTOutput.level`).
public enum PlainText {
    public static func isPlain(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        if v <= 0x1F || (v >= 0x7F && v <= 0x9F) { return false }
        if v >= 0xFDD0 && v <= 0xFDEF { return false }
        return (v & 0xFFFE) != 0xFFFE
    }

    /// What is wrong with `text` for such a place (the first character refused and its position, 1-based), or nil.
    public static func problem(_ text: String) -> String? {
        for (i, c) in text.unicodeScalars.enumerated() where !isPlain(c) {
            let hex = String(c.value, radix: 16, uppercase: true)
            let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            let name: String =
                c.value == 0x09 ? "a TAB" : c.value <= 0x9F ? "a control character" : "a Unicode non-character"
            return
                "\(name) (\(code)) at character \(i + 1); MQTT topics, HTTP headers and pages cannot carry control characters or non-characters"
        }
        return nil
    }
}
