import ISO15693

/// Feeds random and mutated frames to every decoder of the ISO15693 module. A decoder may accept or reject a
/// frame, never trap. Used by `swift test` (a few thousand inputs) and by the stand-alone
/// `iso15693-fuzz` executable (a million or more).
public struct DecoderFuzzer {
    /// SplitMix64: small, deterministic, seedable.
    public struct Random: RandomNumberGenerator {
        var state: UInt64
        public init(seed: UInt64) { state = seed }
        public mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        public mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
    }

    public struct Tally: Sendable {
        public var inputs = 0
        public var accepted = 0
        public var rejected = 0
    }

    /// Well-formed frames to mutate: requests of every command and typical answers.
    static let seeds: [[UInt8]] = {
        var s: [[UInt8]] = [
            [0x26, 0x01, 0x00], [0x06, 0x01, 0x00], [0x36, 0x01, 0x07, 0x04, 0x12], [0x02, 0x20, 0x05],
            [0x22, 0x23, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0, 0x00, 0x07], [0x02, 0x2B],
            [0x02, 0x33, 0x00, 0x01, 0x1F, 0x00], [0x02, 0xAB, 0x04], [0x0A, 0x20, 0x00, 0x04],
            [0x00, 0x0F, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0, 0x00, 0x00, 0x1B, 0x03, 0x01],
            [0x00, 0x00, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0], [0x01, 0x10], [0x00, 0x01, 0x02, 0x03, 0x04],
            // NXP (Fast) Inventory Read requests and an answer (UID bytes, then blocks).
            [0x66, 0xA1, 0x04, 0x00, 0x00, 0x01], [0x56, 0xA0, 0x04, 0x07, 0x0C, 0xBC, 0x0A, 0x10, 0x03],
            [0x00, 0x78, 0x56, 0x34, 0x12, 0x50, 0x01, 0x04, 0xE0, 0x01, 0x02, 0x03, 0x04],
        ]
        for code: UInt8 in [
            0x21, 0x22, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2C, 0x30, 0x31, 0x32, 0x34, 0x3B, 0x3C, 0xE0, 0x02,
        ] {
            s.append([0x22, code, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xE0, 0x00, 0x01, 0xAA, 0xBB, 0xCC, 0xDD])
        }
        return s
    }()

    /// Requests for the response decoder to decode against.
    static let requests: [Request] = [
        Request(.inventory(afi: nil, mask: .none)), Request(.readSingleBlock(3)),
        Request(.readSingleBlock(3), flags: [.highDataRate, .option]),
        Request(.readMultipleBlocks(first: 0, count: 4)),
        Request(.readMultipleBlocks(first: 0, count: 3), flags: [.option]),
        Request(.getSystemInformation), Request(.getSystemInformation, flags: [.protocolExtension]),
        Request(.extendedGetSystemInformation(parameters: 0xFF)),
        Request(.getMultipleBlockSecurityStatus(first: 0, count: 5)),
        Request(.writeSingleBlock(1, data: [1, 2, 3, 4])), Request(.extendedReadMultipleBlocks(first: 300, count: 2)),
        Request(.custom(code: 0xAB, manufacturer: .nxp, parameters: [])),
        Request(.stayQuiet, addressing: .nonAddressed),
    ]

    public var random: Random
    public init(seed: UInt64) { random = Random(seed: seed) }

    mutating func input() -> [UInt8] {
        if random.below(4) == 0 {
            return (0..<random.below(40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }
        var f = Self.seeds[random.below(Self.seeds.count)]
        for _ in 0...random.below(4) {
            switch random.below(5) {
            case 0 where !f.isEmpty: f[random.below(f.count)] = UInt8(truncatingIfNeeded: random.next())
            case 1 where !f.isEmpty: f.removeLast(random.below(f.count) + 1)
            case 2: f.append(UInt8(truncatingIfNeeded: random.next()))
            case 3 where !f.isEmpty: f[random.below(f.count)] ^= UInt8(1 << random.below(8))
            default: f = CRC16.appending(to: f)
            }
        }
        return f
    }

    /// Runs `count` inputs through every decoder and returns how many each accepted or rejected.
    public mutating func run(_ count: Int) -> Tally {
        var t = Tally()
        for _ in 0..<count {
            let f = input()
            t.inputs += 1
            var ok = false
            if (try? Request.decode(f)) != nil { ok = true }
            if let r = try? Request.decode(f) { _ = r.summary; _ = try? r.encode() }
            if (try? CRC16.strip(f)) != nil { ok = true }
            for req in Self.requests {
                if let r = try? Response.decode(f, to: req) { ok = true; _ = r.summary; _ = r.encode() }
                if (try? Response.decode(f, to: req, blockSize: 4)) != nil { ok = true }
            }
            if let r = try? Request.decode(f), let read = NXPInventoryRead(r) {
                ok = true
                _ = try? read.request(flags: r.flags, oneSlot: r.inventorySlots == 1)
            }
            for (length, slots16) in [(0, false), (0, true), (4, true), (12, true), (64, false)] {
                if let m = try? InventoryMask(length: length, value: 0x5A5A_5A5A_5A5A_5A5A) {
                    let read = NXPInventoryRead(fast: true, mask: m, first: 0, count: 1 + random.below(3))
                    if (try? read.decodeAnswer(f, slot: random.below(16), sixteenSlots: slots16, blockSize: 4)) != nil {
                        ok = true
                    }
                }
            }
            if f.count == 8, (try? UID(onAir: f)) != nil { ok = true }
            _ = try? UID(parsing: Hex.format(f))
            _ = try? Hex.parse(String(decoding: f, as: UTF8.self))
            _ = try? RequestFlags(parsing: String(decoding: f, as: UTF8.self))
            _ = try? BlockNumber(parsing: String(decoding: f, as: UTF8.self))
            if ok { t.accepted += 1 } else { t.rejected += 1 }
        }
        return t
    }
}
