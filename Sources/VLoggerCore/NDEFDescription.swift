import Foundation
import VLoggerModel
import ISO15693
import Type5NDEF
import VLoggerStore

/// How NDEF records are shown: one line each for people, a JSON object each for machines (the CLI's
/// `--json` and the `ndef` field the agent stores with its readings).
public enum NDEFDescription {
    static func tnfName(_ t: TNF) -> String {
        switch t {
        case .empty: return "empty"
        case .wellKnown: return "well-known"
        case .media: return "media"
        case .absoluteURI: return "absolute-uri"
        case .external: return "external"
        case .unknown: return "unknown"
        case .unchanged: return "unchanged"
        case .reserved: return "reserved"
        }
    }

    /// Printable text of data that is valid UTF-8 without control characters, else nil.
    static func printable(_ data: [UInt8]) -> String? {
        guard !data.isEmpty, let s = String(validating: data, as: UTF8.self),
            !s.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\n" && $0 != "\t" })
        else { return nil }
        return s
    }

    static func dataText(_ data: [UInt8]) -> String {
        if let s = printable(data) { return "\(data.count) bytes \"\(s)\"" }
        return "\(data.count) bytes"
            + (data.isEmpty ? "" : " \(Hex.format(Array(data.prefix(32))))\(data.count > 32 ? " …" : "")")
    }

    /// One line for a record, e.g. `Text (en): "vlogger demo"`.
    public static func line(_ r: NDEFRecord) -> String {
        let meaning: NDEFPayload
        do { meaning = try r.interpret() } catch { return "\(tnfName(r.tnf)) \"\(r.typeText)\": \(error)" }
        let id = r.id.isEmpty ? "" : " [id \"\(String(decoding: r.id, as: UTF8.self))\"]"
        switch meaning {
        case let .text(t, lang, utf16): return "Text (\(lang)\(utf16 ? ", UTF-16" : "")): \"\(t)\"" + id
        case let .uri(u): return "URI: \(u)" + id
        case let .smartPoster(inner):
            return "Smart Poster: " + inner.map(line).joined(separator: "; ") + id
                + (meaning.smartPosterProblem.map { " (warning: \($0))" } ?? "")
        case let .mime(type, data): return "MIME \(type): \(dataText(data))" + id
        case let .external(type, data): return "External \(type): \(dataText(data))" + id
        case let .absoluteURI(u, data): return "Absolute URI \(u)" + (data.isEmpty ? "" : ": \(dataText(data))") + id
        case .empty: return "Empty record"
        case let .other(rec): return "\(tnfName(rec.tnf)) type \"\(rec.typeText)\": \(dataText(rec.payload))" + id
        }
    }

    /// A record as JSON: tnf, type, id, payload (hex), and what it means.
    public static func object(_ r: NDEFRecord) -> NDEFRecordJSON {
        var o = NDEFRecordJSON(tnf: tnfName(r.tnf), type: r.typeText, payload: WireHex(r.payload))
        if !r.id.isEmpty { o.id = String(decoding: r.id, as: UTF8.self) }
        do {
            let meaning = try r.interpret()
            switch meaning {
            case let .text(t, lang, utf16):
                o.kind = "text"; o.text = t; o.lang = lang; o.encoding = utf16 ? "UTF-16" : "UTF-8"
            case let .uri(u): o.kind = "uri"; o.uri = u
            case let .smartPoster(inner):
                o.kind = "smart-poster"; o.records = inner.map(object)
                if let problem = meaning.smartPosterProblem { o.warning = problem }
            case let .mime(type, data):
                o.kind = "mime"; o.mime = type
                if let s = printable(data) { o.text = s }
            case let .external(type, data):
                o.kind = "external"; o.external = type
                if let s = printable(data) { o.text = s }
            case let .absoluteURI(u, _): o.kind = "absolute-uri"; o.uri = u
            case .empty: o.kind = "empty"
            case .other: o.kind = "other"
            }
        } catch {
            o.kind = "invalid"
            o.error = "\(error)"
        }
        return o
    }

    /// The records as one compact JSON array, as stored with readings.
    public static func json(_ records: [NDEFRecord]) -> String {
        String(decoding: WireJSON.encode(records.map(object)), as: UTF8.self)
    }
}

/// One NDEF record as JSON. Members in the order of their names (as stored with readings before this type).
public struct NDEFRecordJSON: Encodable, Sendable, Equatable {
    public var encoding: String?
    public var error: String?
    public var external: String?
    public var id: String?
    public var kind = "invalid"
    public var lang: String?
    public var mime: String?
    public var payload: WireHex
    public var records: [NDEFRecordJSON]?
    public var text: String?
    public var tnf: String
    public var type: String
    public var uri: String?
    public var warning: String?

    init(tnf: String, type: String, payload: WireHex) {
        self.tnf = tnf
        self.type = type
        self.payload = payload
    }
}

/// The fields a plan with `ndef = true` adds to its NDEF reading: every record as JSON (`ndef`), and for
/// rules and CSV columns the first Text record's text (`ndef_text`) and the first URI (`ndef_uri`).
public enum NDEFFields {
    public static let records = TableDescription.ndefRecordsField, text = "ndef_text", uri = "ndef_uri"
    public static let all = [records, text, uri]

    public static func decode(_ records: [NDEFRecord]) -> [(name: String, value: FieldValue)] {
        var out: [(name: String, value: FieldValue)] = [(Self.records, .json(NDEFDescription.json(records)))]
        let meanings = records.compactMap { try? $0.interpret() }
        for m in meanings { if case let .text(t, _, _) = m { out.append((text, .text(t))); break } }
        for m in meanings { if case let .uri(u) = m { out.append((uri, .text(u))); break } }
        return out
    }
}
