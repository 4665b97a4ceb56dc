import ISO15693
import VLoggerCore
import VLoggerModel

/// What the tag commands print with `--json`: one `Encodable` type each, snake_case, encoded by `WireJSON`
/// (indented, for a person reading along). docs/json.md is the vocabulary.

/// Prints `value` as indented JSON.
func printJSON<T: Encodable>(_ value: T) {
    print(String(decoding: WireJSON.encode(value, pretty: true), as: UTF8.self))
}

/// Prints JSON text as one line (the read API's bytes, for `--json` of the store's commands).
func printLine(_ json: [UInt8]) {
    print(String(decoding: json, as: UTF8.self))
}

/// Air time on the wire: whole microseconds.
func airMicroseconds(_ session: ReaderSession) -> Int64 { Int64(session.reader.airTime.microseconds.rounded()) }

/// `doctor --json`: `status` is `ok` or `fail`, as the text's first column says.
struct DoctorJSON: Encodable {
    struct Check: Encodable {
        var name: String
        var status: String
        var detail: String
        var advice: String?
    }
    var ok: Bool
    var checks: [Check]
}

struct ScanJSON: Encodable {
    struct Tag: Encodable {
        var uid: String
        var dsfid: WireByte
        var manufacturerCode: WireByte
        var manufacturer: String?
        var model: String?
        enum CodingKeys: String, CodingKey {
            case uid, dsfid, manufacturerCode = "manufacturer_code", manufacturer, model
        }
    }
    var tags: [Tag]
    var airTimeUs: Int64
    enum CodingKeys: String, CodingKey { case tags, airTimeUs = "air_time_us" }
}

struct BlockJSON: Encodable {
    var block: WireBlock
    var data: WireHex
    var locked: Bool?
    init(_ b: BlockRead) {
        block = WireBlock(b.number.int)
        data = WireHex(b.data)
        locked = b.security?.isLocked
    }
}

struct ReadJSON: Encodable {
    var uid: String
    var blocks: [BlockJSON]
    var airTimeUs: Int64
    enum CodingKeys: String, CodingKey { case uid, blocks, airTimeUs = "air_time_us" }
}

struct WriteJSON: Encodable {
    var uid: String
    var first: WireBlock
    var blocks: Int
    var verified: Bool
    var retries: Int
    var airTimeUs: Int64
    enum CodingKeys: String, CodingKey { case uid, first, blocks, verified, retries, airTimeUs = "air_time_us" }
}

struct LockJSON: Encodable {
    var uid: String
    var block: WireBlock
    var locked: Bool
}

struct RawJSON: Encodable {
    var request: WireHex
    var response: WireHex
    var meaning: String?
}

struct DecodeJSON: Encodable {
    var frame: WireHex
    var crc: String
    var meaning: String
}

struct InfoJSON: Encodable {
    var uid: String
    var manufacturerCode: WireByte
    var manufacturer: String?
    var model: String?
    var blockCount: Int
    var blockSize: Int
    var source: String
    var addressing: String
    var writeNeedsOption: Bool
    var dsfid: WireByte?
    var afi: WireByte?
    var icReference: WireByte?
    var originality: String
    /// NXP ICODE: GET NXP SYSTEM INFO's page protection and feature flags (4 bytes, least significant first).
    var pageProtection: PageProtectionJSON?
    var nxpFeatures: WireHex?
    /// ST25DV: the areas (READ CONFIGURATION of ENDAi and RFAiSS), each in words.
    var areas: [String]?
    enum CodingKeys: String, CodingKey {
        case uid, manufacturerCode = "manufacturer_code", manufacturer, model, blockCount = "block_count"
        case blockSize = "block_size", source, addressing, writeNeedsOption = "write_needs_option", dsfid, afi
        case icReference = "ic_reference", originality, pageProtection = "page_protection", nxpFeatures = "nxp_features"
        case areas
    }
}

/// `ndef read`, `ndef write`, `ndef format`, `ndef lock`, `ndef decode`, `ndef encode`: the parts each has.
struct NDEFJSON: Encodable {
    var uid: String?
    var status: String?
    var cc: WireHex?
    var capacity: Int?
    var reason: String?
    var hex: WireHex?
    var message: WireHex?
    var messageBytes: Int?
    var records: [NDEFRecordJSON]?
    var blocksWritten: Int?
    var option: Bool?
    var verified: Bool?
    var blocksLocked: Int?
    var alreadyLocked: Int?
    var lockProblem: String?
    var error: String?
    var airTimeUs: Int64?
    enum CodingKeys: String, CodingKey {
        case uid, status, cc, capacity, reason, hex, message, messageBytes = "message_bytes", records
        case blocksWritten = "blocks_written", option, verified, blocksLocked = "blocks_locked"
        case alreadyLocked = "already_locked", lockProblem = "lock_problem", error, airTimeUs = "air_time_us"
    }
}

/// `devices --json`: every driver's devices.
struct DeviceJSON: Encodable {
    var driver: String
    var name: String
    var detail: String
}

struct DevicesJSON: Encodable {
    var items: [DeviceJSON]
}

/// `outputs status --json`: each output's backlog per table and its destination's answer.
struct OutputStatusJSON: Encodable {
    struct Backlog: Encodable {
        var rows: Int
        var oldest: WireTime?
    }
    var name: String
    var title: String
    var backlog: [String: Backlog]
    var destination: String
    var failure: String?
    var failureKind: String?
    /// The output's own lines (the fleet sync: its safety window, the last gap the central reported).
    var notes: [String] = []
    enum CodingKeys: String, CodingKey {
        case name, title, backlog, destination, failure, failureKind = "failure_kind", notes
    }
}

struct PageProtectionJSON: Encodable {
    var pointer: WireBlock
    var condition: WireByte
    var text: String
    /// GET NXP SYSTEM INFO's lock bits (b0 AFI, b1 EAS, b2 DSFID, b3 page protection) and their reading.
    var lockBits: WireByte
    var locks: String
}
