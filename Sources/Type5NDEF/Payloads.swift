import Foundation
import ISO15693

/// What a record means, for the record types the seeds' apps read and write.
public enum NDEFPayload: Equatable, Sendable {
    case text(String, language: String, utf16: Bool)
    case uri(String)
    case smartPoster([NDEFRecord])
    case mime(type: String, data: [UInt8])
    case external(type: String, data: [UInt8])
    case absoluteURI(String, data: [UInt8])
    case empty
    /// A type this mapping does not interpret: kept as bytes.
    case other(NDEFRecord)
}

/// The URI identifier codes 0x00–0x23 of the NFC Forum URI RTD (docs/reference/iso15693.md Part 3 §5.4).
public enum URIPrefix {
    public static let table: [String] = [
        "", "http://www.", "https://www.", "http://", "https://", "tel:", "mailto:", "ftp://anonymous:anonymous@",
        "ftp://ftp.", "ftps://", "sftp://", "smb://", "nfs://", "ftp://", "dav://", "news:", "telnet://", "imap:",
        "rtsp://", "urn:", "pop:", "sip:", "sips:", "tftp:", "btspp://", "btl2cap://", "btgoep://", "tcpobex://",
        "irdaobex://", "file://", "urn:epc:id:", "urn:epc:tag:", "urn:epc:pat:", "urn:epc:raw:", "urn:epc:", "urn:nfc:",
    ]

    /// The longest prefix of `uri` in the table, and its code.
    public static func split(_ uri: String) -> (code: UInt8, rest: String) {
        var best = (code: UInt8(0), length: 0)
        for (i, p) in table.enumerated() where !p.isEmpty && uri.hasPrefix(p) && p.count > best.length {
            best = (UInt8(i), p.count)
        }
        return (best.code, String(uri.dropFirst(best.length)))
    }
}

extension NDEFRecord {
    public static func text(_ text: String, language: String = "en", utf16: Bool = false) -> NDEFRecord {
        let lang = Array(language.utf8.prefix(0x3F))
        let body: [UInt8]
        if utf16 {
            // UTF-16 with a big-endian byte order mark.
            body = [0xFE, 0xFF] + text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        } else {
            body = Array(text.utf8)
        }
        return NDEFRecord(
            tnf: .wellKnown, type: [0x54], payload: [UInt8(lang.count) | (utf16 ? 0x80 : 0)] + lang + body)
    }

    public static func uri(_ uri: String) -> NDEFRecord {
        let (code, rest) = URIPrefix.split(uri)
        return NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [code] + Array(rest.utf8))
    }

    public static func smartPoster(_ records: [NDEFRecord]) -> NDEFRecord {
        NDEFRecord(tnf: .wellKnown, type: Array("Sp".utf8), payload: NDEFMessage.encode(records))
    }

    public static func mime(_ type: String, _ data: [UInt8]) -> NDEFRecord {
        NDEFRecord(tnf: .media, type: Array(type.utf8), payload: data)
    }

    /// NFC Forum External type, `domain:type` (stored lower-case as the RTD compares case-insensitively).
    public static func external(_ type: String, _ data: [UInt8]) -> NDEFRecord {
        NDEFRecord(tnf: .external, type: Array(type.lowercased().utf8), payload: data)
    }

    public static func absoluteURI(_ uri: String, _ data: [UInt8] = []) -> NDEFRecord {
        NDEFRecord(tnf: .absoluteURI, type: Array(uri.utf8), payload: data)
    }

    public static let empty = NDEFRecord(tnf: .empty, type: [], payload: [])

    /// How deep Smart Posters may nest inside this one. The Smart Poster RTD nests none in practice; a
    /// crafted message of thousands of nested posters would otherwise be described (and turned into JSON)
    /// by recursion until the stack runs out.
    public static let maxPosterNesting = 4

    /// Walks the posters inside `records` level by level (no recursion) and refuses more than `maxPosterNesting`.
    static func checkPosterNesting(_ records: [NDEFRecord]) throws(NDEFError) {
        var level = [records], depth = 1
        while true {
            var next: [[NDEFRecord]] = []
            for recs in level {
                for r in recs where r.tnf == .wellKnown && r.type == Array("Sp".utf8) {
                    next.append(try NDEFMessage.decode(r.payload))
                }
            }
            if next.isEmpty { return }
            depth += 1
            guard depth <= maxPosterNesting else {
                throw .payload("Smart Posters nested more than \(maxPosterNesting) deep")
            }
            level = next
        }
    }

    /// What the record means.
    public func interpret() throws(NDEFError) -> NDEFPayload {
        switch (tnf, type) {
        case (.empty, _): return .empty
        case (.wellKnown, [0x54]):
            guard let status = payload.first else { throw .payload("a Text record needs a status byte") }
            let langLength = Int(status & 0x3F)
            guard 1 + langLength <= payload.count else {
                throw .payload(
                    "Text record: language code of \(langLength) bytes runs past the payload (\(payload.count) bytes)")
            }
            guard let lang = String(validating: payload[1..<(1 + langLength)], as: UTF8.self) else {
                throw .payload("Text record: language code is not ASCII")
            }
            let body = Array(payload[(1 + langLength)...])
            let utf16 = status & 0x80 != 0
            let text: String?
            if utf16 {
                guard body.count % 2 == 0 else { throw .payload("Text record: UTF-16 text has an odd number of bytes") }
                var units = stride(from: 0, to: body.count, by: 2).map { UInt16(body[$0]) << 8 | UInt16(body[$0 + 1]) }
                if units.first == 0xFFFE {
                    units = units.dropFirst().map { $0 >> 8 | $0 << 8 }
                } else if units.first == 0xFEFF {
                    units.removeFirst()
                }
                text = String(validating: units, as: UTF16.self)
            } else {
                text = String(validating: body, as: UTF8.self)
            }
            guard let text else { throw .payload("Text record: the text is not valid \(utf16 ? "UTF-16" : "UTF-8")") }
            return .text(text, language: lang, utf16: utf16)
        case (.wellKnown, [0x55]):
            guard let code = payload.first else { throw .payload("a URI record needs an identifier code") }
            guard Int(code) < URIPrefix.table.count else {
                throw .payload("URI identifier code 0x\(Hex.format([code])) is reserved (0x24–0xFF)")
            }
            guard let rest = String(validating: payload.dropFirst(), as: UTF8.self) else {
                throw .payload("URI record: not UTF-8")
            }
            return .uri(URIPrefix.table[Int(code)] + rest)
        case (.wellKnown, Array("Sp".utf8)):
            let inner = try NDEFMessage.decode(payload)
            try Self.checkPosterNesting(inner)
            return .smartPoster(inner)
        case (.media, _): return .mime(type: typeText, data: payload)
        case (.external, _): return .external(type: typeText, data: payload)
        case (.absoluteURI, _): return .absoluteURI(typeText, data: payload)
        default: return .other(self)
        }
    }
}

/// The language code of a Text record (NFC Forum Text RTD: "the language code is an IANA language code … as
/// defined in RFC 3066", at most 63 bytes in the 6-bit length). RFC 5646 (BCP 47) tags: subtags of 1 to 8
/// ASCII letters or digits joined by '-', the primary one 2 to 8 letters (`en`, `de-CH-1901`, `es-419`,
/// `zh-Hant-TW`).
public enum NDEFLanguage {
    public static func isValid(_ tag: String) -> Bool {
        guard !tag.isEmpty, tag.utf8.count <= 0x3F else { return false }
        let subtags = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let primary = subtags.first, (2...8).contains(primary.count),
            primary.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return false }
        return subtags.allSatisfy {
            (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }
}

extension NDEFPayload {
    /// What is wrong with a Smart Poster as decoded: the Smart Poster RTD requires exactly one URI record;
    /// nil when it has one (or this is no Smart Poster).
    public var smartPosterProblem: String? {
        guard case let .smartPoster(inner) = self else { return nil }
        let uris = inner.filter {
            (try? $0.interpret()).map { if case .uri = $0 { return true } else { return false } } ?? false
        }.count
        return uris == 1
            ? nil : "not a valid Smart Poster: \(uris) URI records (the Smart Poster RTD requires exactly one)"
    }
}
