import Foundation

/// Type Name Format (header bits 2–0).
public enum TNF: UInt8, Sendable, CaseIterable {
    case empty = 0, wellKnown = 1, media = 2, absoluteURI = 3, external = 4, unknown = 5, unchanged = 6, reserved = 7
}

/// One NDEF record as on the tag (chunks already joined): TNF, type, ID and payload bytes.
public struct NDEFRecord: Equatable, Sendable {
    public var tnf: TNF
    public var type: [UInt8]
    public var id: [UInt8]
    public var payload: [UInt8]

    public init(tnf: TNF, type: [UInt8], id: [UInt8] = [], payload: [UInt8]) {
        self.tnf = tnf
        self.type = type
        self.id = id
        self.payload = payload
    }

    public var typeText: String { String(decoding: type, as: UTF8.self) }
}

/// An NDEF message: one or more records, MB on the first, ME on the last.
public enum NDEFMessage {
    // Header bits (docs/reference/iso15693.md Part 3 §5.4).
    static let mb: UInt8 = 0x80, me: UInt8 = 0x40, cf: UInt8 = 0x20, sr: UInt8 = 0x10, il: UInt8 = 0x08

    /// Decodes a message, joining chunked records (CF): the first chunk carries the type, the middle and
    /// last chunks have TNF Unchanged (6) and no type.
    public static func decode(_ bytes: [UInt8]) throws(NDEFError) -> [NDEFRecord] {
        if bytes.isEmpty { return [] }
        var records: [NDEFRecord] = []
        var i = 0
        var chunked: NDEFRecord?
        var first = true
        while true {
            guard i < bytes.count else { throw .record("the message ends without a record marked Message End") }
            let start = i
            let h = bytes[i]
            i += 1
            guard let tnf = TNF(rawValue: h & 0x07) else { throw .record("bad TNF") }
            if first && h & mb == 0 { throw .record("the first record lacks Message Begin") }
            if !first && h & mb != 0 {
                throw .record("Message Begin on a record at offset \(start) that is not the first")
            }
            func need(_ n: Int, _ what: String) throws(NDEFError) {
                guard i + n <= bytes.count else {
                    throw .record("\(what) of the record at offset \(start) runs past the end (\(bytes.count) bytes)")
                }
            }
            try need(1, "the type length")
            let typeLength = Int(bytes[i]); i += 1
            var payloadLength: Int
            if h & sr != 0 {
                try need(1, "the payload length")
                payloadLength = Int(bytes[i]); i += 1
            } else {
                try need(4, "the 4-byte payload length")
                payloadLength = bytes[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) }
                i += 4
            }
            var idLength = 0
            if h & il != 0 {
                try need(1, "the ID length")
                idLength = Int(bytes[i]); i += 1
            }
            try need(typeLength, "the type")
            let type = Array(bytes[i..<(i + typeLength)]); i += typeLength
            try need(idLength, "the ID")
            let id = Array(bytes[i..<(i + idLength)]); i += idLength
            try need(payloadLength, "the payload (\(payloadLength) bytes)")
            let payload = Array(bytes[i..<(i + payloadLength)]); i += payloadLength
            switch tnf {
            case .empty where typeLength != 0 || payloadLength != 0 || idLength != 0:
                throw .record("an Empty record (TNF 0) at offset \(start) has a type, ID or payload")
            case .unknown where typeLength != 0, .unchanged where typeLength != 0:
                throw .record("TNF \(tnf.rawValue) at offset \(start) must have no type")
            case .reserved:
                throw .record("TNF 7 (reserved) at offset \(start)")
            default: break
            }
            let isChunk = h & cf != 0
            if var c = chunked {
                guard tnf == .unchanged, idLength == 0 else {
                    throw .record("a middle or last chunk at offset \(start) must have TNF Unchanged and no ID")
                }
                c.payload += payload
                if isChunk { chunked = c } else { records.append(c); chunked = nil }
            } else {
                guard tnf != .unchanged else {
                    throw .record("TNF Unchanged at offset \(start) outside a chunked record")
                }
                let r = NDEFRecord(tnf: tnf, type: type, id: id, payload: payload)
                if isChunk { chunked = r } else { records.append(r) }
            }
            first = false
            if h & me != 0 {
                guard chunked == nil else { throw .record("Message End inside a chunked record") }
                return records
            }
        }
    }

    /// Encodes records as one message; short records (SR) where the payload is under 256 bytes.
    public static func encode(_ records: [NDEFRecord]) -> [UInt8] {
        var out: [UInt8] = []
        for (n, r) in records.enumerated() {
            var h = r.tnf.rawValue
            if n == 0 { h |= mb }
            if n == records.count - 1 { h |= me }
            let short = r.payload.count < 256
            if short { h |= sr }
            if !r.id.isEmpty { h |= il }
            out.append(h)
            out.append(UInt8(truncatingIfNeeded: r.type.count))
            if short {
                out.append(UInt8(r.payload.count))
            } else {
                let l = UInt32(r.payload.count)
                out += [UInt8(l >> 24), UInt8(l >> 16 & 0xFF), UInt8(l >> 8 & 0xFF), UInt8(l & 0xFF)]
            }
            if !r.id.isEmpty { out.append(UInt8(truncatingIfNeeded: r.id.count)) }
            out += r.type + r.id + r.payload
        }
        return out
    }
}
