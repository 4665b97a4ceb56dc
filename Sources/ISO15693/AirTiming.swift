/// A duration on air in carrier cycles (1/fc, fc = 13.56 MHz). Integer ticks keep sums exact.
public struct AirTime: Hashable, Comparable, Sendable, AdditiveArithmetic, CustomStringConvertible, Codable {
    public static let carrierHz = 13_560_000.0
    public var ticks: Int64
    public init(ticks: Int64) { self.ticks = ticks }
    public static func ticks(_ n: Int64) -> AirTime { AirTime(ticks: n) }
    /// The smallest whole number of ticks that lasts at least `us` microseconds.
    public static func microseconds(_ us: Double) -> AirTime {
        AirTime(ticks: Int64((us * carrierHz / 1_000_000).rounded(.up)))
    }
    public var microseconds: Double { Double(ticks) * 1_000_000 / Self.carrierHz }
    public var milliseconds: Double { microseconds / 1000 }
    public static var zero: AirTime { AirTime(ticks: 0) }
    public static func + (a: Self, b: Self) -> Self { AirTime(ticks: a.ticks + b.ticks) }
    public static func - (a: Self, b: Self) -> Self { AirTime(ticks: a.ticks - b.ticks) }
    public static func * (a: Self, n: Int) -> Self { AirTime(ticks: a.ticks * Int64(n)) }
    public static func < (a: Self, b: Self) -> Bool { a.ticks < b.ticks }
    /// `6180.5 µs`, or `44.84 ms` from 10 ms up.
    public var description: String {
        microseconds >= 10_000 ? String(format2: milliseconds) + " ms" : String(format1: microseconds) + " µs"
    }
}

/// Reader → tag coding (ISO/IEC 15693-2): 1 out of 4 (26.48 kbit/s) or 1 out of 256 (1.65 kbit/s).
public enum ReaderCoding: String, Sendable, CaseIterable, Codable {
    case oneOfFour = "1-of-4"
    case oneOf256 = "1-of-256"
}

/// The durations of ISO/IEC 15693 framing, from `docs/reference/iso15693.md` Part 2 §1 (Proxmark3 armsrc timing
/// bookkeeping, ST RFAL, NXP RdLib, LRIS64K/M24LR datasheets):
/// reader byte 4096/fc (1-of-4) or 65536/fc (1-of-256), reader SOF 1024/fc, EOF 512/fc;
/// tag byte 4096/fc, SOF and EOF 2048/fc at the high rate with one subcarrier (×4 at the low rate;
/// 4064/fc and 2032/fc with two subcarriers, derived); t1 = 4352/fc (nominal; window 4320–4384),
/// t2 = 4192/fc; an empty inventory slot lasts t1max + tag SOF = (4384 + 2048)/fc.
public enum AirTiming {
    public static let readerSOF = AirTime(ticks: 1024)
    public static let readerEOF = AirTime(ticks: 512)
    public static let t1 = AirTime(ticks: 4352)
    public static let t1Min = AirTime(ticks: 4320)
    public static let t1Max = AirTime(ticks: 4384)
    public static let t2 = AirTime(ticks: 4192)
    /// Longest a tag may take to answer a write-alike command (ISO/IEC 15693-3: 20 ms).
    public static let writeAlikeMaximum = AirTime.microseconds(20_000)

    public static func readerByte(_ coding: ReaderCoding) -> AirTime {
        coding == .oneOfFour ? AirTime(ticks: 4096) : AirTime(ticks: 65536)
    }

    /// The tag's response rate and modulation follow the request's data-rate and subcarrier flags:
    /// one subcarrier at the high rate is the base; two subcarriers scale by 4064/4096 (fc/508 instead of
    /// fc/512); the low rate takes four times as long.
    private static func tagScaled(_ highRateOneSubcarrier: Int64, _ flags: RequestFlags) -> AirTime {
        let base = flags.contains(.dualSubcarrier) ? highRateOneSubcarrier * 4064 / 4096 : highRateOneSubcarrier
        return AirTime(ticks: flags.contains(.highDataRate) ? base : base * 4)
    }

    public static func tagByte(_ flags: RequestFlags) -> AirTime { tagScaled(4096, flags) }

    public static func tagSOF(_ flags: RequestFlags) -> AirTime { tagScaled(2048, flags) }

    /// A reader frame of `bytes` bytes (CRC included): SOF + bytes + EOF.
    public static func readerFrame(bytes: Int, coding: ReaderCoding) -> AirTime {
        readerSOF + readerByte(coding) * bytes + readerEOF
    }

    /// A tag frame of `bytes` bytes (CRC included): SOF + bytes + EOF.
    public static func tagFrame(bytes: Int, flags: RequestFlags) -> AirTime {
        tagSOF(flags) + tagByte(flags) * bytes + tagSOF(flags)
    }

    /// An inventory slot in which no tag answers: the reader listens t1max plus a tag SOF.
    public static func emptySlot(_ flags: RequestFlags) -> AirTime {
        t1Max + tagSOF(flags)
    }
}

extension String {
    init(format1 v: Double) { self = Self.fixed(v, 1) }
    init(format2 v: Double) { self = Self.fixed(v, 2) }
    static func fixed(_ v: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let r = (v * scale).rounded() / scale
        var s = "\(r)"
        if let dot = s.firstIndex(of: ".") {
            let decimals = s.distance(from: dot, to: s.endIndex) - 1
            if decimals < digits { s += String(repeating: "0", count: digits - decimals) }
        } else {
            s += "." + String(repeating: "0", count: digits)
        }
        return s
    }
}
