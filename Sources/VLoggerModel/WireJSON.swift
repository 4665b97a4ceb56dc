import Foundation

/// The one encoder of the JSON objects vlogger writes for people and programs (HTTP answers, `--json` of the
/// commands, `/healthz`): `Codable` types whose keys are snake_case by their `CodingKeys`, encoded with
/// members in the order of their names (the same object gives the same bytes), slashes as they are, a missing value left out (Swift's synthesised `encodeIfPresent`), and times, block
/// numbers and bytes through `WireTime`, `WireBlock` and `WireHex`, which format them as `ValueText` formats
/// every exported cell. Stored rows (a reading, an event, an audit and its results, a write) go out through
/// `OutboxJSON` and `RowWriter` with the same formats and names; docs/json.md is the vocabulary.
public enum WireJSON {
    /// `value` as JSON text (UTF-8): one line, or indented for people when `pretty`.
    public static func encode<T: Encodable>(_ value: T, pretty: Bool = false) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.withoutEscapingSlashes, .sortedKeys, .prettyPrinted] : [.withoutEscapingSlashes, .sortedKeys]
        do {
            return Array(try encoder.encode(value))
        } catch {
            // Only a non-finite Double can fail, and none of the wire types holds one (WireNumber guards them).
            var out: [UInt8] = Array("{\"error\":".utf8)
            JSONText.appendQuoted("cannot encode \(T.self): \(error)", to: &out)
            out.append(0x7D)
            return out
        }
    }

    /// `value` as JSON text, with members whose values are already JSON (a stored row as `OutboxJSON` writes it)
    /// added after its own: `{…own members…,"last_reading":{…}}`. A nil value leaves its member out.
    public static func encode<T: Encodable>(_ value: T, appending raw: [(String, [UInt8]?)]) -> [UInt8] {
        var out = encode(value)
        guard out.last == 0x7D else { return out }
        out.removeLast()
        for case let (key, json?) in raw {
            if out.last != 0x7B { out.append(0x2C) }
            JSONText.appendQuoted(key, to: &out)
            out.append(0x3A)
            out += json
        }
        out.append(0x7D)
        return out
    }
}

/// A time on the wire: ISO 8601 UTC with milliseconds (`2026-11-22T08:30:00.250Z`), as every export has it.
public struct WireTime: Encodable, Sendable, Equatable {
    public var ms: Millis
    public init(_ ms: Millis) { self.ms = ms }
    public init?(_ ms: Millis?) {
        guard let ms else { return nil }
        self.ms = ms
    }

    public func encode(to encoder: Encoder) throws {
        var out: [UInt8] = []
        ValueText.appendTime(ms, to: &out)
        var c = encoder.singleValueContainer()
        try c.encode(String(decoding: out, as: UTF8.self))
    }
}

/// A block number on the wire: `0xF8` below 256, `0x0100` from there on.
public struct WireBlock: Encodable, Sendable, Equatable {
    public var number: Int
    public init(_ number: Int) { self.number = number }
    public func encode(to encoder: Encoder) throws {
        var out: [UInt8] = []
        ValueText.appendBlock(Int64(number), to: &out)
        var c = encoder.singleValueContainer()
        try c.encode(String(decoding: out, as: UTF8.self))
    }
}

/// Bytes on the wire: upper-case hex without separators.
public struct WireHex: Encodable, Sendable, Equatable {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public func encode(to encoder: Encoder) throws {
        var out: [UInt8] = []
        ValueText.appendHex(bytes, to: &out)
        var c = encoder.singleValueContainer()
        try c.encode(String(decoding: out, as: UTF8.self))
    }
}

/// A manufacturer on the wire: its code (`0x04`) and its name in separate members, as a tag's `manufacturer_code`
/// and `manufacturer`.
public struct WireByte: Encodable, Sendable, Equatable {
    public var value: UInt8
    public init(_ value: UInt8) { self.value = value }
    public func encode(to encoder: Encoder) throws {
        var out: [UInt8] = []
        ValueText.appendHexNumber(Int64(value), width: 2, to: &out)
        var c = encoder.singleValueContainer()
        try c.encode(String(decoding: out, as: UTF8.self))
    }
}

/// An error answer: `{"error":"…","parameter":"…"}` (the parameter when one is at fault).
public struct WireError: Encodable, Sendable, Equatable {
    public var error: String
    public var parameter: String?
    public init(_ error: String, parameter: String? = nil) {
        self.error = error
        self.parameter = parameter
    }
}

/// A coding key made at run time (a register's column names, an output's name in `/healthz`).
public struct WireKey: CodingKey {
    public var stringValue: String
    public var intValue: Int? { nil }
    public init(_ s: String) { stringValue = s }
    public init?(stringValue: String) { self.stringValue = stringValue }
    public init?(intValue: Int) { nil }
}
