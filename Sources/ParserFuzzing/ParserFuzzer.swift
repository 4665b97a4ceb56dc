import TagImages
import FEIG
import Foundation
import ISO15693
import SensorTags
import Readers
import DriverFEIG
import DriverPCSC
import DriverPN5180
import LinkedDrivers
import LinkedOutputs
import TagSecurity
import TagSimulator
import Type5NDEF
import ISO15693Fuzzing
import Mustache
import NIOConcurrencyHelpers
import Logging
import OPCUA
import OPCUAServer
import VLoggerOPCUA
import FieldState
import VLoggerCore
import VLoggerService
import VLoggerModel
import VLoggerMQTT
import VLoggerSync
import VLoggerIngest
import VLoggerStore
import VLoggerConfig
import VLoggerOutbox

/// Feeds mutated files and values to every parser of outside input above the air protocol (whose decoders
/// `DecoderFuzzer` covers): TOML, the configuration, rules, the register CSV, scenarios, the three tag-image
/// formats, NDEF messages and the capability container, and the values of the command line (UIDs, block
/// numbers, flags, times, durations, listen addresses). A parser may accept or reject an input, never
/// trap. Seeds are the project's own files (`Config/`), mutated byte by byte and line by line, with numbers
/// that overflow, deep nesting and repeated pieces spliced in. `swift test` runs a few thousand inputs per
/// target; `vlogger-fuzz` a million or more.
public struct ParserFuzzer {
    public struct Target: Sendable {
        public let name: String
        public let seeds: [[UInt8]]
        /// True when the parser accepted the input.
        let parse: @Sendable ([UInt8]) -> Bool
    }

    public struct Tally: Sendable {
        public var inputs = 0
        public var accepted = 0
        public var rejected = 0
    }

    public var random: DecoderFuzzer.Random
    public init(seed: UInt64) { random = DecoderFuzzer.Random(seed: seed) }

    /// Pieces spliced into inputs: numbers past every range, nesting openers, odd characters.
    static let splices: [String] = [
        "9223372036854775807", "-9223372036854775808", "18446744073709551616", "4611686018427387904", "1e300", "-1",
        "0", "NaN",
        "0xFFFFFFFFFFFFFFFF", "[[[[[[[[", "{a={b={c=", "\"", "'", "\\u0000", "\u{0}", "\r\n", "=", ",", "#", "\"\"\"",
        "{", "}", "[", "]", ":", "..", "é", "\u{FEFF}", "1970-01-01T00:00:00Z", "99999-99-99",
    ]

    /// A mutated copy of one of `seeds` (or random bytes, one input in eight).
    mutating func input(_ seeds: [[UInt8]]) -> [UInt8] {
        if random.below(8) == 0 || seeds.isEmpty {
            return (0..<random.below(64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }
        var b = seeds[random.below(seeds.count)]
        for _ in 0...random.below(6) {
            let at = b.isEmpty ? 0 : random.below(b.count)
            switch random.below(9) {
            case 0 where !b.isEmpty: b[at] = UInt8(truncatingIfNeeded: random.next())
            case 1 where !b.isEmpty: b[at] ^= UInt8(1 << random.below(8))
            case 2 where !b.isEmpty: b.removeSubrange(at..<min(b.count, at + 1 + random.below(16)))
            case 3: b.insert(contentsOf: Array(Self.splices[random.below(Self.splices.count)].utf8), at: at)
            case 4 where !b.isEmpty:
                // A piece of the input repeated (structure: a table, a key, a record twice or many times).
                let end = min(b.count, at + 1 + random.below(64))
                let piece = Array(b[at..<end])
                for _ in 0..<(1 + random.below(random.below(16) == 0 ? 400 : 3)) { b.insert(contentsOf: piece, at: at) }
            case 5:
                // Deep nesting.
                let open = [UInt8(ascii: "["), UInt8(ascii: "{")][random.below(2)]
                b.insert(
                    contentsOf: [UInt8](repeating: open, count: 1 + random.below(random.below(8) == 0 ? 5000 : 80)),
                    at: at)
            case 6 where !b.isEmpty:
                // A line dropped or duplicated.
                let lines = b.split(separator: 0x0A, omittingEmptySubsequences: false)
                var l = Array(lines)
                let k = random.below(l.count)
                if random.below(2) == 0 { l.remove(at: k) } else { l.insert(l[k], at: k) }
                b = Array(l.joined(separator: [0x0A]))
            case 7 where !b.isEmpty: b.removeLast(random.below(b.count))
            default:
                // A digit run replaced by a huge number.
                if let d = b.indices.dropFirst(at).first(where: { (0x30...0x39).contains(b[$0]) }) {
                    var e = d
                    while e < b.count, (0x30...0x39).contains(b[e]) { e += 1 }
                    b.replaceSubrange(d..<e, with: Array(Self.splices[random.below(5)].utf8))
                }
            }
        }
        return b
    }

    /// Runs `count` inputs through `target`.
    public mutating func run(_ target: Target, _ count: Int) -> Tally {
        var t = Tally()
        for _ in 0..<count {
            let b = input(target.seeds)
            t.inputs += 1
            if target.parse(b) { t.accepted += 1 } else { t.rejected += 1 }
        }
        return t
    }

    // MARK: The targets

    /// The drivers the executable registers: the configuration target's `[[reader]]` checks go through them. A
    /// fuzz executable registers them before it runs the targets (tests register the same list).
    public static var drivers: [any ReaderDriver] { LinkedDrivers.all }
    /// The output kinds the executable registers: the configuration target's output sections go through them.
    public static var outputs: [any OutputKind] { LinkedOutputs.all }

    /// Every target, seeded from the files under `config` (the repository's `Config/`).
    public static func targets(config: URL) -> [Target] {
        func files(_ dir: String, _ suffix: String) -> [[UInt8]] {
            let d = config.appendingPathComponent(dir)
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: d.path)) ?? []).filter {
                $0.hasSuffix(suffix)
            }.sorted()
            return names.compactMap { try? [UInt8](Data(contentsOf: d.appendingPathComponent($0))) }
        }
        @Sendable func text(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self) }
        // A SLIX2 file of every SLIX key (docs/reference/flipper-slix.md), for the Flipper target.
        let slix2Seed = [
            "Filetype: Flipper NFC device", "Version: 4", "Device type: SLIX", "UID: E0 04 01 08 2A D2 8E 83",
            "DSFID: 00", "AFI: 00", "IC Reference: 01", "Lock DSFID: false", "Lock AFI: false", "Block Count: 2",
            "Block Size: 04", "Data Content: E1 40 28 01 03 00 FE 00", "Security Status: 00 00",
            "Capabilities: Default", "Password Read: 00 00 00 00", "Password Write: 00 00 00 00",
            "Password Privacy: 7F FD 6E 5B", "Password Destroy: 0F 0F 0F 0F", "Password EAS: 00 00 00 00",
            "Signature: CA E8 18 3C B4 82 3C 76 5A FD EB 78 C9 D6 6C 95 99 90 FD 52 A5 82 0E 76 E1 D6 E0 25 D7 6E AD 79",
            "Privacy Mode: false", "Protection Pointer: 00", "Protection Condition: 00", "Lock EAS: false",
            "Lock PPL: false",
        ].joined(separator: "\n")
        let toml = files("", ".toml"), images = files("demo-field", ".json") + files("demo-field-dock", ".json")
        let scenarios = images.filter { Scenario.isScenario(text($0)) }
        let ndef: [[UInt8]] = [
            NDEFMessage.encode([.text("vlogger demo"), .uri("https://www.example.com/p/0001")]),
            NDEFMessage.encode([.smartPoster([.uri("https://example.com/"), .text("title", language: "de")])]),
            NDEFMessage.encode([
                .mime("text/plain", Array("hello".utf8)), .external("example.com:asset", [1, 2]), .empty,
            ]),
        ]
        let memories: [[UInt8]] = [
            [0xE1, 0x40, 0x0A, 0x01, 0x03, 0x13] + ndef[0] + [0xFE],
            [0xE2, 0x40, 0x00, 0x01, 0x00, 0x00, 0x03, 0xFF, 0x03, 0x00, 0xFE],
        ]
        let templates: [[UInt8]] = [
            "<h1>{{gateway}}</h1>{{#alarms}}<tr class=\"alarm\"><td>{{rule}}</td></tr>{{/alarms}}{{^alarms}}none{{/alarms}}",
            "{{! a comment }}{{{svg}}}{{#live}}<script>x()</script>{{/live}}{{> partial}}{{=<% %>=}}<% gateway %>",
        ].map { Array($0.utf8) }
        let berlin = LocalTime(zone: TimeZone(identifier: "Europe/Berlin") ?? .current)
        let values = [
            "2026-03-29 02:30", "2026-10-25 02:30", "0000-01-01", "9999-12-31T23:59", "E004015012345678", "0xF8", "248",
            "high,address,option", "0x22", "500ms", "24h", "2026-11-22T08:00:00Z",
            "2026-11-22 08:00", "now", "7d", "127.0.0.1:9715", "[::1]:0", "E00401*", "de-CH-1901", "es-419",
            "22:00-06:00", "*/15 6-22 * * 1-5", "0 2 31 2 *",
            "postgresql://gw@db.plant.example:6432/fleet?sslmode=verify-full&sslrootcert=/etc/ca.pem",
            "postgres://gw@[::1]/fleet", "mqtts://[::1]:8883", "mqtt://broker.plant.example",
            "vlogger/{gateway}/{reader}/{kind}",
        ].map { Array($0.utf8) }
        return [
            Target(name: "toml", seeds: toml) { b in (try? TOML.parse(text(b))) != nil },
            Target(name: "config", seeds: toml) { b in (try? AgentConfig.parse(text(b), file: "fuzz.toml")) != nil },
            Target(name: "rules", seeds: toml) { b in (try? RuleSet.parse(text(b), file: "fuzz.toml")) != nil },
            Target(name: "register", seeds: files("", ".csv")) { b in
                (try? AssetRegister.parse(text(b), file: "fuzz.csv")) != nil
            },
            Target(name: "scenario", seeds: scenarios) { b in (try? Scenario.decode(text(b))) != nil },
            Target(name: "image-vlogger", seeds: images) { b in (try? TagImageFormat.vlogger.decode(text(b))) != nil },
            // With the memory-only dumps of 2020–2024 ("15693", "15693 v2", "15693 v3") and their file-name UID.
            Target(
                name: "image-proxmark3",
                seeds: images
                    + [
                        #"{"Created": "proxmark3", "FileType": "15693", "raw": "E1401001030BD10107540268"}"#,
                        #"{"FileType": "15693 v2", "blocks": {"0": "E1401001", "1": "030BD101"}}"#,
                        #"{"FileType": "15693 v3", "blocks": {"0": "E1401001030BD101", "1": "0754026800000000"}}"#,
                    ].map { Array($0.utf8) }
            ) { b in
                (try? TagImageFormat.proxmark3.decode(text(b), fileName: "hf-15-E004010812345678-dump.json")) != nil
            },
            // With a SLIX2 file of every SLIX key (docs/reference/flipper-slix.md); what decodes is written again.
            Target(
                name: "image-flipper",
                seeds: files("demo-field", ".nfc")
                    + [
                        Array(slix2Seed.utf8)
                    ]
            ) { b in
                guard let image = try? TagImageFormat.flipper.decode(text(b)) else { return false }
                _ = try? TagImageFormat.flipper.encode(image)
                return true
            },
            Target(name: "ndef", seeds: ndef) { b in
                guard let records = try? NDEFMessage.decode(b) else { return false }
                for r in records { _ = NDEFDescription.line(r) }
                _ = NDEFDescription.json(records)
                _ = NDEFFields.decode(records)
                return true
            },
            Target(name: "ndef-memory", seeds: memories) { b in
                _ = try? CapabilityContainer.decode(b)
                _ = try? NDEFArea.scan(b, memoryBytes: b.count + 16)
                return (try? NDEFArea.decode(image: b)) != nil
            },
            Target(
                name: "blocks-file",
                seeds: [
                    "# asset label\n0x10  41 53 2D 30\n0x11: 30303432\n18,00000000\n0xFFFF=01020304\n",
                    "0 00\n1 01\n2 02\n",
                ].map { Array($0.utf8) }
            ) { b in
                (try? BlockFile.parse(String(decoding: b, as: UTF8.self))) != nil
            },
            Target(
                name: "write-request",
                seeds: [
                    #"{"uid": "E008010000004212", "block": "0xF9", "data": "0102030405060708", "flags": "option", "expires": "7d", "reader": "dock-3"}"#,
                    #"{"uid": "E004010812345602", "block": 249, "data": "A1A2A3A4"}"#,
                    #"{"uid": "E004010812345602", "block": 250, "lock": true, "yes": true}"#,
                ].map { Array($0.utf8) }
            ) { b in
                (try? WriteRequest.parse(Data(b), now: 1_763_800_000_000, readers: ["dock-3", "cage-room"])) != nil
            },
            // What a chip answers for its originality (docs/reference/originality-signatures.md): READ SIGNATURE's
            // 32 bytes, GET NXP SYSTEM INFO's 7, the TruST25 blocks 0x3F–0x4F; verified against every known key.
            Target(
                name: "originality",
                seeds: [
                    "32D9E7579CD77E6F1FA11419231E874826984C5F189FDE1421684563A9663377",
                    "00000101000000", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
                ].compactMap { try? Hex.parse($0) }
                    + [
                        Array("K04S".utf8)
                            + Array("FE458A550ACD30B45B9C4D10676FC63E30AC69027217547FBDF04A8F7942AD3B".utf8)
                    ]
            ) { b in
                // Accepted: a well-formed answer (whether its signature verifies or not).
                let uid = UID(manufacturer: .nxp, serial: 0x0118_009B_5FEE)
                let info = NXPSecurity.SystemInfo(b)
                let nxp = Originality.verify(uid, signature: b, scheme: .nxpReadSignature)
                _ = Originality.verify(uid, signature: b, scheme: .stTruST25)
                var trust25 = false
                if case .success(let s) = Originality.trust25Signature(b) {
                    trust25 = true
                    _ = Originality.verify(uid, signature: s, scheme: .stTruST25)
                }
                if case .malformed = nxp { return info != nil || trust25 }
                return true
            },
            // The tags' secrets file (`[security] secrets-file`, docs/reference/tag-passwords.md): NXP and ST
            // passwords by UID, prefix or asset; a bad value is named by its line, never repeated.
            Target(
                name: "secrets",
                seeds: [
                    "[[tag]]\nuid = \"E004010812345699\"\nnxp-write = \"A1B2C3D4\"\n",
                    "[[tag]]\nuid = \"E0022600*\"\nst-password-1 = \"0011223344556677\"\n[[tag]]\nasset = \"P-1\"\nnxp-privacy = \"0F0F0F0F\"\n",
                ].map { Array($0.utf8) }
            ) { b in
                guard let s = try? TagSecrets.parse(text(b), file: "secrets.toml") else { return false }
                _ = s.nxpPassword(0x02, uid: UID(manufacturer: .nxp, serial: 1), asset: "P-1")
                _ = s.stPassword(1, uid: UID(manufacturer: .stMicroelectronics, serial: 1), asset: nil)
                return true
            },
            // An ST25DV's area registers as READ CONFIGURATION answers them (7 bytes), against memories of every
            // size the first bytes say (docs/reference/tag-passwords.md, "ST25DV areas").
            Target(
                name: "st-areas",
                seeds: [[0, 0xFF, 0, 0xFF, 0, 0xFF, 0, 0x07, 0xFF], [0, 0, 0x05, 0x01, 0x0A, 0x02, 0, 0x07, 0xFF]]
            ) { b in
                guard b.count >= 9 else { return false }
                let blockCount = Int(b[7]) << 8 | Int(b[8]) + 1
                guard let areas = STSecurity.areas(registers: Array(b[0..<7]), blockCount: blockCount) else {
                    return false
                }
                // The areas cover the memory once, in order.
                var next = 0
                for a in areas {
                    precondition(a.firstBlock == next && a.lastBlock >= a.firstBlock, "areas out of order")
                    next = a.lastBlock + 1
                }
                precondition(next == blockCount, "areas do not cover the memory")
                return true
            },
            // A row's JSON as the fan-in reads it back (`vlogger central ingest`: messages from any publisher on the
            // broker): one object or an array of them, each accepted as a row or refused with a reason.
            Target(
                name: "outbox-json-row",
                seeds: [
                    #"{"key":"gw-1/readings/7","table":"readings","time":"2026-11-29T04:43:45.027Z","gateway":"gw-1","reader":"dock","uid":"E008010000004212","block":"0xF8","count":1,"data":"6608C201","temperature":21.5,"field_uid":"x","ndef":[{"type":"T"}]}"#,
                    #"[{"key":"gw-1/writes/1","table":"writes","time":"2026-01-01T00:00:00.000Z","gateway":"gw-1","uid":"E0","block":"0x0100","data":"01020304","flags":"0x02","result":"ok","verified":1,"exchanges":2},{"table":"events"}]"#,
                    #"{"key":"gw-1/audit_results/3","table":"audit_results","gateway":"gw-1","audit":1,"uid":"E0","status":"present","seen_rounds":3,"time":"2026-01-01T00:00:00.000Z"}"#,
                ].map { Array($0.utf8) }
            ) { b in
                OutboxJSON.rows(from: b).contains { (try? $0.get()) != nil }
            },
            // The fan-in's MQTT packets from a broker, fed in pieces of any size: a packet or a typed refusal.
            Target(
                name: "mqtt-packets",
                seeds: [
                    [0x20, 0x02, 0x01, 0x00, 0x90, 0x03, 0x00, 0x01, 0x01],
                    [0x3A, 0x0A, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x12, 0x34, 0x7B, 0x7D, 0x0A, 0xD0, 0x00],
                    [0x30, 0xFF, 0xFF, 0xFF, 0x7F], [0x40, 0x02, 0x00, 0x01, 0xB0, 0x02, 0x00, 0x01],
                ]
            ) { b in
                var r = MQTTWire.Reader(maxPacket: 1 << 16)
                var i = 0
                var packets = 0
                while i < b.count {
                    let n = 1 + Int(b[i] % 7)
                    r.append(b[i..<min(b.count, i + n)])
                    i += n
                    do {
                        while try r.next() != nil { packets += 1 }
                    } catch { return false }
                }
                return packets > 0
            },
            // The ingest's --broker values.
            Target(
                name: "mqtt-broker-url",
                seeds: ["mqtt://127.0.0.1:1883", "mqtt://[::1]:4222/", "mqtt://nats-1", "mqtts://x:8883"].map {
                    Array($0.utf8)
                }
            ) { b in
                (try? CentralIngest.Broker(url: String(decoding: b, as: UTF8.self))) != nil
            },
            // The strict JSON reader on its own (the write API's bodies), with numbers, escapes and nesting.
            Target(
                name: "strict-json",
                seeds: [
                    #"{"a": [1, -0, 2.5e-3, true, false, null], "b": {"c": "\u00e9\ud83d\ude00\n"}}"#,
                    #"[{"uid": "E008010000004212"}, 9223372036854775807, -9223372036854775808]"#,
                ].map { Array($0.utf8) }
            ) { b in
                (try? StrictJSON.parse(b)) != nil
            },
            // OPC UA Binary (the coming server's requests): every decoder of a built-in type reads the same bytes;
            // what one accepts it writes back, and those bytes read and write again the same (bytes, not values,
            // are compared: a NaN is not equal to itself).
            Target(name: "opcua-binary", seeds: OPCUASeeds.all) { b in
                func check<T: BinaryCodable>(_: T.Type) -> Bool {
                    guard let v = try? T.decode(b, limits: OPCUASeeds.limits) else { return false }
                    let once = v.encoded
                    precondition(
                        (try? T.decode(once, limits: OPCUASeeds.limits))?.encoded == once, "\(T.self) round trip")
                    return true
                }
                // A service message's body: its type's encoding NodeId, then that generated type's fields (namespace
                // 0's, or AutoID's with their optional fields and unions).
                var service = false
                var r = BinaryReader(b, limits: OPCUASeeds.limits)
                if let id = try? NodeId(from: &r),
                    let type = structuresByEncoding[id] ?? AutoID.structuresByEncoding[id],
                    let v = try? type.decode(Array(b[r.offset...]), limits: OPCUASeeds.limits)
                {
                    let once = v.encoded
                    precondition(
                        (try? type.decode(once, limits: OPCUASeeds.limits))?.encoded == once, "\(type) round trip")
                    service = true
                }
                let results = [
                    service, check(Variant.self), check(DataValue.self), check(DiagnosticInfo.self), check(NodeId.self),
                    check(ExpandedNodeId.self), check(ExtensionObject.self), check(LocalizedText.self),
                    check(QualifiedName.self),
                ]
                return results.contains(true)
            },
            // The OPC UA server's users file (salted PBKDF2 hashes, one line a user).
            Target(
                name: "opcua-users",
                seeds: [
                    "# users\noperator:pbkdf2-sha256:210000:000102030405060708090a0b0c0d0e0f:406433fe72ab0716eee13c031f384b8e90179328a0c50863477d84a06f7295dc\n"
                ].map { Array($0.utf8) }
            ) { b in
                (try? UsersFile(text(b))) != nil
            },
            // UA-TCP: the header of every message and chunk, a whole Hello, and the server's negotiation of it.
            Target(name: "opcua-transport", seeds: OPCUASeeds.transport) { b in
                guard let h = try? MessageHeader.parse(b, maxSize: 65_536) else { return false }
                if h.kind == .open || h.kind == .message || h.kind == .close {
                    // A secure-conversation chunk: read, written again the same, and put into a message.
                    guard let chunk = try? SecureChunk(b) else { return true }
                    let once = chunk.encoded
                    precondition((try? SecureChunk(once))?.encoded == once, "chunk round trip")
                    var assembler = ChunkAssembler(maxMessageSize: 1 << 16, maxChunkCount: 4)
                    _ = try? assembler.add(chunk)
                    // Opened as a signed and encrypted chunk: a typed refusal, whatever the bytes.
                    _ = try? SecureChunk(b, opening: OPCUASeeds.symmetric)
                    return true
                }
                guard h.kind == .hello, let hello = try? Hello(message: b) else { return true }
                precondition((try? Hello(message: hello.message)) == hello, "HEL round trip")
                if let n = try? TransportLimits.server.negotiate(hello) {
                    precondition(n.receiveBufferSize <= TransportLimits.server.receiveBufferSize, "receive buffer")
                    precondition(n.sendBufferSize <= hello.receiveBufferSize, "send buffer")
                }
                return true
            },
            // The OPC UA server's channel: after a Hello and an OPN (policy None), either raw UA-TCP messages
            // (first byte even) or a service request's body in a MSG of the open channel (odd): whatever comes,
            // a typed answer or an ERR, never a trap; the channel is closed after each input.
            Target(name: "opcua-server", seeds: OPCUASeeds.server) { b in
                OPCUASeeds.serve(b)
            },
            // A reader's AutoID methods (Scan, ReadTag, WriteTag, ReadBlocks, WriteBlocks, QueueBlocks) with
            // arguments read from the bytes as Variants, over a field access that answers at once: whatever the
            // arguments, the call's status or an AutoID status, never a trap.
            Target(name: "opcua-methods", seeds: OPCUAMethodSeeds.seeds) { b in
                OPCUAMethodSeeds.call(b)
            },
            // A PC/SC reader's answers in each codec (docs/reference/reader-paths.md §2.3, §2.6): the first byte picks the
            // codec (and Identiv's CRC habit), the rest is the response APDU, read and mapped to the driver's typed
            // errors; the vendor envelopes' command side (the bench's parser) reads the same bytes. Seeds: the public
            // OMNIKEY 5022CL and ACR1552U answers to NXP READ CONFIG, silence, an unclean answer, a refusal.
            Target(
                name: "pcsc-answers",
                seeds: [
                    "00 C0 03 00 90 00 92 01 00 96 02 00 00 97 05 00 00 00 0A 00 90 00",
                    "00 C0 03 01 64 01 90 00", "01 00 00 00 00 00 0A 00 54 00 09 02 90 00", "01 02 00 FF 90 00",
                    "01 6D 00", "02 00 00 00 0A 00 90 00", "02 64 01", "03 00 00 00 0A 00 CF E5 90 00", "03 6F 00",
                    "04 FF 68 0E 03 0F 05 00 00 00 00 00 00 00 00 00 02 C0 04 3D 00",
                    "05 FF FD 04 01 05 B2 11 22 33 44 00",
                ]
                .compactMap { try? Hex.parse($0) }
            ) { b in
                guard let first = b.first else { return false }
                let rest = Array(b.dropFirst())
                switch first % 6 {
                case 4: return PCSC.Omnikey.frame(in: rest) != nil
                case 5: return PCSC.Identiv.frame(in: rest) != nil
                default:
                    let codec: PCSC.Codec = [.transparent, .omnikey, .identiv, .identiv][Int(first % 6)]
                    return (try? PCSCReader.answer(rest, codec: codec, identivCRC: first % 6 == 3, limit: 236)) != nil
                }
            },
            // A PN5180's answers (docs/reference/pn5180.md): the input is what the chip clocks out, frame after frame,
            // to the driver opening the reader (reset, the version, the RF configuration, the field) and sending an
            // Inventory and a slot marker; BUSY follows the handshake, the clock is simulated. Every register value,
            // RX_STATUS and READ_DATA the driver reads comes from the input. Seeds: the public logs' answers.
            Target(
                name: "pn5180-answers",
                seeds: [
                    "04 00 00 00 00 04 00 00 00 00 00 02 00 00 07 40 00 00 0A 00 00 00 00 00 C4 14 94 B5 50 01 04 E0",
                    "04 00 00 00 05 03 04 02 00 00 00 40 00 00 07 40 04 00 02 00 04 00 FF FF",
                    "04 00 00 00 FF FF", "04 00 00 00 00 04 00 04 00 00 00 00 00 00",
                ]
                .compactMap { try? Hex.parse($0) }
            ) { b in
                let pins = ScriptedPN5180Pins(b)
                let reader = PN5180Reader(link: PN5180Link(pins: pins), name: "fuzz")
                do {
                    try reader.fieldOn()
                    _ = try? reader.transceive([0x06, 0x01, 0x00], wait: .standard)
                    return (try? reader.nextSlot()) != nil
                } catch { return false }
            },
            // FEIG host frames (real frames from FEIG's buffered read mode, see Tests/FEIGTests), both directions.
            Target(
                name: "feig-frame",
                seeds: [
                    "02 00 07 FF 33 DD 56", "02 00 07 FF 32 54 47", "02 00 07 FF 31 CF 75",
                    "02 00 09 FF 22 00 FF 79 69",
                ]
                .compactMap { try? Hex.parse($0) }
            ) { b in
                var ok = false
                for d in [FEIGFrame.Direction.request, .reply] {
                    if let f = try? FEIGFrame.decode(b, direction: d) {
                        ok = ok || (!f.explanation.isEmpty && f.encoded() == b)
                    }
                }
                return ok
            },
            // A FEIG reader's replies after STATUS (real LR1002 Inventory data, a Read Multiple Blocks, Get System
            // Information and Get Reader Info layout), each read by every reply parser of the feig driver.
            Target(
                name: "feig-reply",
                seeds: [
                    "02 03 00 E0 02 51 00 02 56 4A A4 03 00 E0 02 23 00 18 89 2B 09",
                    "02 04 00 04 03 02 01 01 08 07 06 05",
                    "00 E0 04 01 50 12 34 56 78 00 03 1B 01", "03 05 00 00 4D 00 08 04 00 04 00",
                    "00 E0 02 26 00 00 C0 FF EE 00 03 07 FF 26", "23 29 E0 02 26 00 00 C0 FF EE 03 07 F0 04",
                ].compactMap { try? Hex.parse($0) }
            ) { b in
                var ok = 0
                // The same bytes as an [0xB0] request's data: `decode --protocol feig` explains MODE and EXT_ADR from them.
                _ = FEIGFrame(request: 0xB0, data: b).explanation
                if (try? FEIGISO.inventory(b)) != nil { ok += 1 }
                if let n = b.first, (try? FEIGISO.blocks(b, expected: Int(n))) != nil { ok += 1 }
                if (try? FEIGISO.systemInfo(b)) != nil { ok += 1 }
                if let n = b.first, (try? FEIGISO.securityStatus(b, expected: Int(n))) != nil { ok += 1 }
                if let i = try? FEIGReaderInfo.decode(b) { ok += i.summary.isEmpty ? 0 : 1 }
                return ok > 0
            },
            Target(
                name: "feig-device",
                seeds: [
                    "/dev/ttyUSB0,baud=38400,parity=even,address=0", "tcp://127.0.0.1:10001,timeout=500",
                    "tcp://[::1]:4001,frames=standard,char-timeout=12",
                ].map { Array($0.utf8) }
            ) { b in
                guard let d = try? FEIGDevice.parse(text(b)) else { return false }
                return !d.description.isEmpty
            },
            // A reading's stored decoded fields (the export reads them back from a store file, which anything
            // may have written): every member found, every string value unescaped, one row written.
            Target(
                name: "decoded-json",
                seeds: [
                    #"{"temperature":21.5,"note":"a \"q\", \u00e9\ud83d\ude00","ndef":[{"type":"T","ok":true}],"n":null}"#,
                    #"{ "a" : { "b" : [1, "}"] } , "c":false }"#, "{}",
                ].map { Array($0.utf8) }
            ) { b in
                var out: [UInt8] = []
                var w = RowWriter(format: .jsonl, names: ["a", "b"])
                return b.withUnsafeBufferPointer { p in
                    var members = 0
                    let ok = JSONMembers.scan(p) { key, value in
                        members += 1
                        _ = JSONMembers.key(p, key, is: Array("note".utf8))
                        w.beginRow(&out)
                        w.decoded(p, value, nested: members % 2 == 0, &out)
                        w.endRow(&out)
                    }
                    return ok
                }
            },
            // What a Sparkplug host sends the edge node: an NCMD payload (protobuf) and a STATE (JSON).
            Target(
                name: "sparkplug-ncmd",
                seeds: [
                    SparkplugPayloads.death(bdSeq: 7, at: 1_763_800_000_000),
                    // Tahu's rebirth request: metric "Node Control/Rebirth", Boolean (11), true.
                    [0x08, 0x01, 0x12, 0x1A, 0x0A, 0x14] + Array("Node Control/Rebirth".utf8) + [
                        0x20, 0x0B, 0x70, 0x01,
                    ],
                ]
            ) { b in SparkplugPayloads.isRebirthRequest(b) },
            Target(
                name: "sparkplug-state",
                seeds: [#"{"online":true,"timestamp":1763800000000}"#, #"{"online":false,"timestamp":0}"#].map {
                    Array($0.utf8)
                }
            ) { b in SparkplugPayloads.hostState(b) != nil },
            // What a broker delivers on an MQTT output's instance topic (another gateway's announcement, or anything):
            // parsed, judged against a clock, and described when it is a conflict.
            Target(
                name: "mqtt-instance",
                seeds: [
                    #"{"client_id":"vlogger-gw-mqtt","host":"gw-b","instance":"0123456789abcdef0123456789abcdef","run":"00ff00ff00ff00ff","time":"2026-11-27T21:00:00.000Z","time_ms":1795813200000}"#,
                    #"{"instance":"0123456789abcdef0123456789abcdee","time_ms":253402300799999}"#, "online",
                ].map { Array($0.utf8) }
            ) { b in
                let w = InstanceWatch(instance: "0123456789abcdef0123456789abcdef", host: "h", clientID: "c")
                guard let other = w.received(b, retained: b.count % 2 == 0, now: 1_795_813_200_000) else {
                    return false
                }
                return !InstanceWatch.describe(other, own: w.own, gateway: "gw", output: "mqtt").isEmpty
            },
            // The live stream's query string (name=value pairs split on & and =, as a router would) and its
            // Last-Event-ID.
            Target(
                name: "stream-query",
                seeds: [
                    "reader=dock-3&uid=E008010000004212&kind=reading,violation", "kind=event&last_event_id=12-3",
                    "last_event_id=-1-2", "kind=bogus",
                ].map { Array($0.utf8) }
            ) { b in
                let t = text(b)
                let pairs = t.split(separator: "&").map { p -> (String, String) in
                    let kv = p.split(separator: "=", maxSplits: 1)
                    return (String(kv.first ?? ""), kv.count > 1 ? String(kv[1]) : "")
                }
                return (try? StreamQuery.parse(pairs, lastEventID: pairs.last?.1)) != nil
            },
            // The read API's list queries (the same splitting as the stream's).
            Target(
                name: "read-query",
                seeds: [
                    "uid=E008010000004212&since=2026-11-26T00:00:00Z&until=now&after_id=5&limit=10",
                    "kind=violation&reader=dock-3&since=1h", "limit=1001", "after_id=-1",
                ].map { Array($0.utf8) }
            ) { b in
                let pairs = text(b).split(separator: "&").map { p -> (String, String) in
                    let kv = p.split(separator: "=", maxSplits: 1)
                    return (String(kv.first ?? ""), kv.count > 1 ? String(kv[1]) : "")
                }
                return (try? ReadQuery.parse(pairs, events: true, now: 1_763_800_000_000)) != nil
            },
            Target(name: "values", seeds: values) { b in
                let t = text(b)
                var ok = 0
                if (try? UID(parsing: t)) != nil { ok += 1 }
                if (try? BlockNumber(parsing: t)) != nil { ok += 1 }
                if (try? RequestFlags(parsing: t)) != nil { ok += 1 }
                if (try? DurationText.parse(t)) != nil { ok += 1 }
                if (try? TimeSpec.parse(t, now: 1_763_800_000_000)) != nil { ok += 1 }
                // A local date in a zone with summer time (export --since without an offset).
                if (try? TimeSpec.parse(t, now: 1_763_800_000_000, zone: berlin)) != nil { ok += 1 }
                if (try? ListenAddress(parsing: t)) != nil { ok += 1 }
                if (try? UIDPattern(parsing: t)) != nil { ok += 1 }
                if (try? Hex.parse(t)) != nil { ok += 1 }
                if NDEFLanguage.isValid(t) { ok += 1 }
                if (try? ShiftWindow(t)) != nil { ok += 1 }
                if (try? CronSchedule(t)) != nil { ok += 1 }
                if (try? SyncSettings(url: t)) != nil { ok += 1 }
                if (try? MQTTSettings(url: t)) != nil { ok += 1 }
                if MQTTSettings.topicProblem(t) == nil { ok += 1 }
                if (try? LocalTime(identifier: t)) != nil { ok += 1 }
                return ok > 0
            },
            // Sensor tags' answers (docs/reference/sensor-tags.md): every decoder of the four kinds on the same bytes.
            Target(
                name: "sensor-answers",
                seeds: [
                    [0x64, 0x00, 0x05, 0x00, 0xD7, 0x03, 0x00, 0x00], [0x00, 0x00, 0x11],
                    [0x02, 0x29, 0x02, 0x29, 0, 0, 0, 0], [0x40, 0x4B, 0x00, 0x01, 0x04, 0x03, 0x02, 0x01],
                    [UInt8](repeating: 0xFF, count: 96),
                ]
            ) { b in
                var ok = 0
                if (try? FM13.records(b)) != nil { ok += 1 }
                if (try? FM13.Status(answer: b)) != nil { ok += 1 }
                if (try? FM13.oneShotCelsius(b)) != nil { ok += 1 }
                if (try? RF430.SampleStatus(block0: b)) != nil { ok += 1 }
                if let s = try? RF430.Sample(block9: b) {
                    _ = s.celsius
                    ok += 1
                }
                if let h = try? SmarTag.Header(payload: b), (try? SmarTag.samples(payload: b, header: h)) != nil {
                    ok += 1
                }
                for order in SL13A.ByteOrder.allCases {
                    if (try? SL13A.LogState(answer: b, order: order)) != nil { ok += 1 }
                    if (try? SL13A.MeasurementSetup(answer: b, order: order)) != nil { ok += 1 }
                    if (try? SL13A.temperatureCode(b, order: order)) != nil { ok += 1 }
                }
                return ok > 0
            },
            // A page template from `[service] templates` (swift-mustache parses it), rendered with a small view.
            Target(name: "template", seeds: templates) { b in
                guard let t = try? MustacheTemplate(string: text(b)) else { return false }
                _ = t.render(["gateway": "gw", "alarms": [["rule": "<r>"]], "live": true] as [String: Any])
                return true
            },
        ]
    }
}

/// Seeds of the OPC UA Binary target: a value of each built-in type in a Variant, arrays and a matrix, nested
/// DataValues and Variants, a DiagnosticInfo chain, NodeIds in every form.
enum OPCUASeeds {
    /// One server for every input (its sessions bounded by its limit, as a real one's are).
    static let core: ServerCore = {
        var c = ServerConfiguration(
            host: "127.0.0.1", port: 4840, applicationUri: "urn:vlogger:fuzz", applicationName: "fuzz",
            identity: nil, security: [EndpointSecurity(.none, .none)])
        c.maxSessions = 20
        var logger = Logger(label: "vlogger.fuzz.opcua")
        logger.logLevel = .critical
        return ServerCore(
            configuration: c,
            addressSpace: (try? AddressSpace.standard(applicationUri: "urn:vlogger:fuzz")) ?? AddressSpace(),
            logger: logger)
    }()

    static let hello = Hello(receiveBufferSize: 65_536, sendBufferSize: 65_536, endpointUrl: "opc.tcp://fuzz").message

    static func open(_ requestId: UInt32) -> [UInt8] {
        SecureChunk(
            kind: .open, channelId: 0,
            security: .asymmetric(policyUri: SecureChunk.policyNone, senderCertificate: nil, receiverThumbprint: nil),
            sequenceNumber: 1, requestId: requestId,
            body: OpenSecureChannelRequest(requestType: .issue, securityMode: .none, requestedLifetime: 60_000)
                .messageBody
        ).encoded
    }

    static var server: [[UInt8]] {
        let requests: [any Structure] = [
            GetEndpointsRequest(endpointUrl: "opc.tcp://x"), FindServersRequest(),
            CreateSessionRequest(
                sessionName: "s", clientNonce: [UInt8](repeating: 1, count: 32), requestedSessionTimeout: 1000),
            ReadRequest(nodesToRead: [ReadValueId(nodeId: NodeId(2258), attributeId: 13)]),
            BrowseRequest(nodesToBrowse: [BrowseDescription(nodeId: NodeId(84), browseDirection: .both)]),
            CreateSubscriptionRequest(requestedPublishingInterval: 100), PublishRequest(),
            CallRequest(methodsToCall: [CallMethodRequest(objectId: NodeId(2253), methodId: NodeId(11492))]),
            ActivateSessionRequest(), CloseSessionRequest(),
        ]
        return requests.map { [1] + $0.messageBody } + [
            [0] + hello, [0] + open(2),
            [0]
                + SecureChunk(
                    kind: .message, channelId: 1, security: .symmetric(tokenId: 1), sequenceNumber: 2, requestId: 3,
                    body: GetEndpointsRequest().messageBody
                ).encoded,
        ]
    }

    /// One input against a fresh channel of the shared server.
    static func serve(_ b: [UInt8]) -> Bool {
        guard let first = b.first else { return false }
        let sent = NIOLockedValueBox(0)
        guard let channel = core.connect(send: { bytes in sent.withLockedValue { $0 += bytes.count } }, close: {})
        else { return false }
        defer { channel.connectionClosed() }
        channel.receive(hello)
        channel.receive(open(1))
        let rest = Array(b.dropFirst())
        if first & 1 == 1 {
            // A request's body, in one MSG chunk of the open channel.
            channel.receive(
                SecureChunk(
                    kind: .message, channelId: channel.channelId, security: .symmetric(tokenId: 1), sequenceNumber: 2,
                    requestId: 2, body: rest
                ).encoded)
        } else {
            // Raw messages, cut by their headers' sizes (as the framing does), at most 16.
            var at = 0
            for _ in 0..<16 where at + 8 <= rest.count {
                let size =
                    Int(rest[at + 4]) | Int(rest[at + 5]) << 8 | Int(rest[at + 6]) << 16 | Int(rest[at + 7]) << 24
                guard size >= 8, at + size <= rest.count else {
                    channel.receive(Array(rest[at...]))
                    break
                }
                channel.receive(Array(rest[at..<(at + size)]))
                at += size
            }
        }
        core.tick()
        return channel.isOpen
    }

    /// Small limits, so that inputs reach them.
    static let limits = DecodingLimits(maxStringLength: 256, maxByteStringLength: 256, maxArrayLength: 64, maxDepth: 8)

    /// Basic256Sha256's symmetric keys from two fixed nonces, for chunks signed and encrypted.
    static let symmetric: ChunkCrypto = {
        let keys = SecurityPolicy.basic256Sha256.keys(
            clientNonce: [UInt8](repeating: 1, count: 32), serverNonce: [UInt8](repeating: 2, count: 32))
        return .symmetric(local: keys.client, remote: keys.client, encrypt: true)
    }()

    static var transport: [[UInt8]] {
        [
            Hello(receiveBufferSize: 65_536, sendBufferSize: 65_536, endpointUrl: "opc.tcp://127.0.0.1:4840").message,
            Hello(
                receiveBufferSize: 0x7FFF_FFFF, sendBufferSize: 0x7FFF_FFFF, maxMessageSize: 0x7FFF_FFFF,
                maxChunkCount: 0x7FFF_FFFF, endpointUrl: nil
            ).message,
            Acknowledge(receiveBufferSize: 8192, sendBufferSize: 8192, maxMessageSize: 0, maxChunkCount: 0).message,
            ErrorMessage(error: .badTcpMessageTooLarge, reason: "too large").message,
            MessageHeader(kind: .message, chunk: .intermediate, size: 16).bytes + [UInt8](repeating: 0, count: 8),
            SecureChunk(
                kind: .open, channelId: 0,
                security: .asymmetric(
                    policyUri: SecureChunk.policyNone, senderCertificate: nil, receiverThumbprint: nil),
                sequenceNumber: 1, requestId: 1, body: [1, 0, 0xBE, 1]
            ).encoded,
            SecureChunk(
                kind: .message, chunk: .intermediate, channelId: 5, security: .symmetric(tokenId: 9), sequenceNumber: 2,
                requestId: 2, body: Array(0...40)
            ).encoded,
        ]
            + ((try? SecureChunk(
                kind: .message, channelId: 5, security: .symmetric(tokenId: 9), sequenceNumber: 3, requestId: 3,
                body: Array(0...60)
            ).sealed(with: symmetric)).map { [$0] } ?? [])
    }

    static var all: [[UInt8]] {
        let guid = Guid(
            data1: 0x7296_2B91, data2: 0xFA75, data3: 0x4AE6, data4: [0x8D, 0x28, 0xB4, 0x04, 0xDC, 0x7D, 0xAF, 0x63])
        let scalars: [Scalar] = [
            .boolean(true), .sByte(-5), .byte(200), .int16(-3), .uInt16(6), .int32(-2), .uInt32(4), .int64(-9),
            .uInt64(18), .float(1.5), .double(-2.25), .string("Kühlraum"), .string(nil),
            .dateTime(DateTime(rawValue: 1)),
            .guid(guid), .byteString([1, 2]), .xmlElement("<a/>"), .nodeId(NodeId(85)),
            .nodeId(NodeId(namespace: 2, .string("Dock"))), .nodeId(NodeId(namespace: 4, .guid(guid))),
            .nodeId(NodeId(namespace: 5, .opaque([0xDE]))), .nodeId(NodeId(70000, namespace: 3)),
            .expandedNodeId(ExpandedNodeId(NodeId(1025), namespaceUri: "urn:x", serverIndex: 2)),
            .statusCode(StatusCode(0x80AB_0000)), .qualifiedName(QualifiedName(namespace: 2, "Reader")),
            .localizedText(LocalizedText(locale: "de", "Leser")),
            .extensionObject(ExtensionObject(typeId: NodeId(298), body: .binary([1, 2, 3]))),
            .dataValue(
                DataValue(value: .scalar(.double(21.5)), status: StatusCode(0), sourceTimestamp: DateTime(rawValue: 5))),
            .diagnosticInfo(
                DiagnosticInfo(symbolicId: 1, additionalInfo: "x", innerDiagnosticInfo: DiagnosticInfo(locale: 2))),
        ]
        var out = scalars.map { Variant.scalar($0).encoded }
        out.append(Variant.array(.int32, (1...6).map { .int32($0) }, dimensions: [2, 3]).encoded)
        out.append(
            Variant.array(.variant, [.variant(.scalar(.int32(1))), .variant(.array(.string, [.string("a")]))]).encoded)
        out.append(DataValue(value: .scalar(.dataValue(DataValue(value: .null))), serverPicoseconds: 7).encoded)
        out.append(ExtensionObject(typeId: NodeId(namespace: 1, .string("T")), body: .xml("<x/>")).encoded)
        // Service messages as a request's body carries them.
        let header = RequestHeader(authenticationToken: NodeId(namespace: 0, .opaque([1, 2])), requestHandle: 7)
        let read = ReadRequest(
            requestHeader: header, timestampsToReturn: .both,
            nodesToRead: [ReadValueId(nodeId: NodeId(2259), attributeId: 13)])
        let browse = BrowseRequest(
            requestHeader: header,
            nodesToBrowse: [BrowseDescription(nodeId: NodeId(85), browseDirection: .forward, includeSubtypes: true)])
        let session = CreateSessionRequest(
            requestHeader: header,
            clientDescription: ApplicationDescription(
                applicationUri: "urn:x", applicationName: LocalizedText("x"), discoveryUrls: ["opc.tcp://x:4840"]),
            endpointUrl: "opc.tcp://127.0.0.1:4840", clientNonce: Array(repeating: 7, count: 32))
        out.append(ReadRequest.binaryEncodingId.encoded + read.encoded)
        out.append(BrowseRequest.binaryEncodingId.encoded + browse.encoded)
        out.append(CreateSessionRequest.binaryEncodingId.encoded + session.encoded)
        // AutoID's structure with an optional field and its unions.
        let uid: [UInt8] = [0xE0, 0x04, 0x01, 0x50, 0x12, 0x34, 0x56, 0x78]
        let result = ScanResult(
            codeType: "UID", scanData: .byteString(uid), timestamp: DateTime(rawValue: 9), location: .name("Dock 3"))
        let settings = ScanSettings(duration: 500, cycles: 1, dataAvailable: true, locationType: .name)
        out.append(ScanResult.binaryEncodingId.encoded + result.encoded)
        out.append(ScanSettings.binaryEncodingId.encoded + settings.encoded)
        return out
    }
}

/// The `opcua-methods` target: a gateway namespace with one reader, its methods over a field access that answers
/// at once (a tag E004010812345601 of 80 four-byte blocks in the field), and one alarm condition (its Acknowledge and
/// AddComment) with ConditionType's ConditionRefresh.
enum OPCUAMethodSeeds {
    struct Field: FieldAccess {
        static let uid = try! UID(parsing: "E004010812345601")
        static let size = 320
        func scan(reader: String, origin: String?) async -> Result<[UID], FieldAccessError> { .success([Self.uid]) }
        func read(reader: String, uid: UID, _ range: TagRange, origin: String, password: TagPassword?) async
            -> Result<[UInt8], FieldAccessError>
        {
            guard uid == Self.uid else { return .failure(FieldAccessError(.notInField, "not in the field")) }
            let (start, count): (Int, Int)
            switch range {
            case .blocks(let first, let n): (start, count) = (first * 4, n * 4)
            case .bytes(let offset, let length): (start, count) = (offset, length)
            }
            guard start >= 0, count > 0, start <= Self.size, count <= Self.size - start else {
                return .failure(FieldAccessError(.outOfRange, "past the end"))
            }
            return .success(Array(repeating: 0x5A, count: count))
        }
        func write(
            reader: String, uid: UID, at start: TagRange.Start, data: [UInt8], origin: String, password: TagPassword?
        ) async -> Result<String, FieldAccessError> {
            uid == Self.uid ? .success("written") : .failure(FieldAccessError(.notInField, "not in the field"))
        }
        func queueWrite(reader: String, uid: UID, firstBlock: Int, data: [UInt8], origin: String) async
            -> Result<Int64, FieldAccessError>
        { .success(1) }
    }

    static let core: ServerCore = {
        let space = (try? AddressSpace.standard(applicationUri: "urn:vlogger:fuzz")) ?? AddressSpace()
        var logger = Logger(label: "vlogger.fuzz.methods")
        logger.logLevel = .critical
        return ServerCore(
            configuration: ServerConfiguration(
                host: "127.0.0.1", port: 4840, applicationUri: "urn:vlogger:fuzz", applicationName: "fuzz",
                identity: nil, security: [EndpointSecurity(.none, .none)]),
            addressSpace: space, logger: logger)
    }()
    static let state = FieldState(readers: [FieldState.Reader(id: "r", location: nil, intervalMs: 1000)])
    static let namespace: GatewayNamespace = {
        let n = GatewayNamespace(
            space: core.addressSpace, state: state, gateway: "fuzz", site: nil, methods: core.methods,
            access: Field(), rules: [AlarmRule(name: "warm", severity: .critical, field: "t", low: 0, high: 8)],
            acknowledge: { _ in true }, scanPause: { _ in }, post: { _ in })
        state.eventRecorded(
            Event(
                time: 1_800_000_000_000, gateway: "fuzz", reader: "r", uid: Field.uid, kind: .violation, name: "warm",
                severity: .critical, detail: "t 9 > 8"), asset: nil)
        n.settled()
        return n
    }()
    static let methods = ["Scan", "ReadTag", "WriteTag", "ReadBlocks", "WriteBlocks", "QueueBlocks"]
    /// The condition's methods (Acknowledge i=9111, AddComment i=9029) and ConditionRefresh (i=3875 on i=2782).
    static var conditionMethods: [(NodeId, NodeId)] {
        let condition = namespace.id("Alarms/\(Field.uid)/warm")
        return [(condition, NodeId(9111)), (condition, NodeId(9029)), (NodeId(2782), NodeId(3875))]
    }

    static func variants(_ list: [Variant]) -> [UInt8] {
        var w = BinaryWriter(capacity: 64)
        for v in list { v.encode(to: &w) }
        return w.bytes
    }

    static var seeds: [[UInt8]] {
        let uid = Variant.scalar(.byteString(Field.uid.displayBytes))
        let id = Variant.scalar(.extensionObject(ScanData.byteString(Field.uid.displayBytes).extensionObject))
        let u16 = { (n: UInt16) in Variant.scalar(.uInt16(n)) }
        let u32 = { (n: UInt32) in Variant.scalar(.uInt32(n)) }
        return [
            [0] + variants([.scalar(.extensionObject(ScanSettings(cycles: 1).extensionObject))]),
            [1] + variants([id, .scalar(.string("UID")), u16(0), u32(4), u32(8), .scalar(.byteString([]))]),
            [2] + variants([id, .scalar(.string("UID")), u16(0), u32(5), .scalar(.byteString([1, 2])), .null]),
            // A call's Password (TagPassword): 4 bytes, and longer than any chip's.
            [1] + variants([id, .scalar(.string("UID")), u16(0), u32(4), u32(8), .scalar(.byteString([1, 2, 3, 4]))]),
            [2]
                + variants([
                    id, .scalar(.string("UID")), u16(0), u32(5), .scalar(.byteString([1, 2])),
                    .scalar(.byteString(Array(repeating: 9, count: 40))),
                ]),
            [3] + variants([uid, u16(1), u16(2)]),
            [4] + variants([uid, u16(1), .scalar(.byteString([1, 2, 3, 4]))]),
            [5] + variants([uid, u16(79), .scalar(.byteString([1, 2, 3, 4]))]),
            [6]
                + variants([
                    .scalar(.byteString(Array(repeating: 7, count: 16))), .scalar(.localizedText(LocalizedText("ok"))),
                ]),
            [7] + variants([.scalar(.byteString([])), .scalar(.localizedText(LocalizedText("note")))]),
            [8] + variants([.scalar(.uInt32(1))]),
        ]
    }

    /// The first byte picks the method, the rest are its arguments (at most 8 Variants).
    static func call(_ b: [UInt8]) -> Bool {
        guard let first = b.first else { return false }
        let pick = Int(first) % (methods.count + conditionMethods.count)
        let name = pick < methods.count ? methods[pick] : "condition \(pick - methods.count)"
        var r = BinaryReader(Array(b.dropFirst()), limits: OPCUASeeds.limits)
        var args: [Variant] = []
        while r.offset < b.count - 1, args.count < 8, let v = try? Variant(from: &r) { args.append(v) }
        let (object, method) =
            pick < methods.count
            ? (namespace.id("DeviceSet/r"), namespace.id("DeviceSet/r/\(name)"))
            : conditionMethods[pick - methods.count]
        let request = CallMethodRequest(objectId: object, methodId: method, inputArguments: args)
        let done = DispatchSemaphore(value: 0)
        let result = NIOLockedValueBox<CallMethodResult?>(nil)
        // Detached (the caller may be the main actor's thread, vlogger-fuzz's top level, which waits here) and on the
        // server's method executor, not on Swift's shared pool, whose thread this caller may be blocking.
        Task.detached(executorPreference: ServerCore.methodExecutor) {
            let answer = await core.call(request, sessionName: "fuzz")
            result.withLockedValue { $0 = answer }
            done.signal()
        }
        done.wait()
        let status = result.withLockedValue { $0 }?.statusCode ?? .badUnexpectedError
        precondition(
            status == .good
                || [
                    StatusCode.badInvalidArgument, .badArgumentsMissing, .badTooManyArguments, .badInvalidState,
                    .badEventIdUnknown, .badConditionBranchAlreadyAcked, .badSubscriptionIdInvalid,
                ].contains(status), "\(name): \(status)")
        return status == .good
    }
}

/// A PN5180 whose every answer frame is the next bytes of a fuzz input (zeros once it is used up), with BUSY
/// following the handshake and a simulated clock: the `pn5180-answers` target.
final class ScriptedPN5180Pins: PN5180Pins {
    private var input: ArraySlice<UInt8>
    private var nssLow = false
    private var busyHigh = false
    private var time: UInt64 = 0
    /// Frames alternate between commands and, after a command that answers, its answer.
    private var answerNext = false

    init(_ bytes: [UInt8]) { input = bytes[...] }

    var holdsNSS: Bool { true }
    func now() -> UInt64 { time }
    func sleep(microseconds: UInt32) { time += UInt64(microseconds) }
    func close() {}
    func busy() throws(ReaderError) -> Bool { busyHigh }
    func setReset(_ high: Bool) throws(ReaderError) {}
    func setNSS(_ high: Bool) throws(ReaderError) {
        nssLow = !high
        if high { busyHigh = false }
    }

    func transfer(_ tx: [UInt8]) throws(ReaderError) -> [UInt8] {
        time += UInt64(tx.count)
        busyHigh = nssLow
        if answerNext {
            answerNext = false
            let n = min(tx.count, input.count)
            let out = Array(input.prefix(n)) + [UInt8](repeating: 0, count: tx.count - n)
            input = input.dropFirst(n)
            return out
        }
        // READ_REGISTER, READ_EEPROM and READ_DATA are followed by their answer.
        answerNext = [
            PN5180.Command.readRegister.rawValue, PN5180.Command.readEEPROM.rawValue, PN5180.Command.readData.rawValue,
        ]
        .contains(tx.first ?? 0xFF)
        return [UInt8](repeating: 0xFF, count: tx.count)
    }
}
