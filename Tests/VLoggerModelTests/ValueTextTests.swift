import Testing

@testable import VLoggerModel

/// The one formatting of times, block numbers and bytes (`ValueText`), on worked examples.
@Suite struct ValueTextTests {
    static func text(_ body: (inout [UInt8]) -> Void) -> String {
        var out: [UInt8] = []
        body(&out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Times as RFC 3339 / ISO 8601 UTC with milliseconds, on dates whose day numbers are known (counted by
    /// Python's `date` subtraction): the epoch, 2000-02-29 (a leap day of a year divisible by 400: 11,016 days
    /// after 1970-01-01), 2100-02-28 and the next day, 2100-03-01 (2100 is not a leap year: 47,540 and 47,541
    /// days), the last millisecond of 9999 (SQLite's `strftime` range) and the millisecond before the epoch
    /// (floor division, not truncation).
    @Test func timesAreISO8601UTCWithMilliseconds() {
        let cases: [(Millis, String)] = [
            (0, "1970-01-01T00:00:00.000Z"),
            (11_016 * 86_400_000 + 1, "2000-02-29T00:00:00.001Z"),
            (47_540 * 86_400_000, "2100-02-28T00:00:00.000Z"),
            (47_541 * 86_400_000, "2100-03-01T00:00:00.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (-86_400_000, "1969-12-31T00:00:00.000Z"),
            (-86_400_001, "1969-12-30T23:59:59.999Z"),
            (1_763_800_000_250, "2025-11-22T08:26:40.250Z"),
        ]
        for (ms, expected) in cases {
            #expect(Self.text { ValueText.appendTime(ms, to: &$0) } == expected)
            #expect(TimeSpec.format(ms) == expected)
        }
        // Every Int64 is printed without a trap (a time from outside, such as an MQTT announcement's, before it is
        // checked). The extremes in the proleptic Gregorian calendar are what Java's
        // `Instant.ofEpochMilli(Long.MAX_VALUE)` and `(Long.MIN_VALUE)` print (+292278994-08-17T07:12:55.807Z and
        // -292275055-05-16T16:47:04.192Z); the time of day checked with Python's divmod (floor division).
        #expect(TimeSpec.format(Int64.max) == "292278994-08-17T07:12:55.807Z")
        #expect(TimeSpec.format(Int64.min) == "-292275055-05-16T16:47:04.192Z")
    }

    /// Block numbers as ISO 15693 tools print them: one byte below 256 (`0xF8`), two from there (extended
    /// commands address up to 0xFFFF).
    @Test func blocksFlagsBytesAndNumbers() {
        #expect(Self.text { ValueText.appendBlock(0, to: &$0) } == "0x00")
        #expect(Self.text { ValueText.appendBlock(0xF8, to: &$0) } == "0xF8")
        #expect(Self.text { ValueText.appendBlock(0x100, to: &$0) } == "0x0100")
        #expect(Self.text { ValueText.appendBlock(0xFFFF, to: &$0) } == "0xFFFF")
        #expect(Self.text { ValueText.appendFlags(0x22, to: &$0) } == "0x22")
        #expect(Self.text { ValueText.appendHex([0x00, 0x0A, 0xFF], to: &$0) } == "000AFF")
        #expect(Self.text { ValueText.appendInteger(Int64.min, to: &$0) } == "-9223372036854775808")
        #expect(Self.text { ValueText.appendInteger(Int64.max, to: &$0) } == "9223372036854775807")
        #expect(Self.text { ValueText.appendInteger(0, to: &$0) } == "0")
    }

    /// RFC 4180 quoting and the OWASP formula guard in CSV; JSON strings and null in JSON lines.
    @Test func oneRowInEachFormat() {
        for format in [RowWriter.Format.csv, .jsonl] {
            var w = RowWriter(format: format, names: ["t", "n", "s", "f", "x"])
            var out: [UInt8] = []
            w.header(to: &out)
            w.beginRow(&out)
            w.time(0, &out)
            w.integer(-5, &out)
            w.text(Array("a \"b\", c".utf8), &out)
            w.text(Array("=1+1".utf8), &out)
            w.null(&out)
            w.endRow(&out)
            let s = String(decoding: out, as: UTF8.self)
            if format == .csv {
                #expect(s == "t,n,s,f,x\r\n1970-01-01T00:00:00.000Z,-5,\"a \"\"b\"\", c\",'=1+1,\r\n")
            } else {
                #expect(s == #"{"t":"1970-01-01T00:00:00.000Z","n":-5,"s":"a \"b\", c","f":"=1+1"}"# + "\n")
            }
        }
    }

    /// The members of a stored JSON object, with escapes (RFC 8259 §7: `\uD83D\uDE00` is one scalar, U+1F600).
    @Test func membersOfAStoredObject() {
        let json = Array(#"{"a":1,"b\"c":"x\u00e9\ud83d\ude00","n":{"k":[1,"}"]},"z":true}"#.utf8)
        var seen: [String] = []
        let ok = json.withUnsafeBufferPointer { p in
            JSONMembers.scan(p) { key, value in
                let k = String(decoding: JSONMembers.unescape(p, key) ?? [], as: UTF8.self)
                seen.append("\(k)=\(String(decoding: p[value], as: UTF8.self))")
                if k == "b\"c" {
                    let inner = (value.lowerBound + 1)..<(value.upperBound - 1)
                    #expect(JSONMembers.unescape(p, inner) == Array("xé😀".utf8))
                    #expect(JSONMembers.key(p, key, is: Array("b\"c".utf8)))
                }
            }
        }
        #expect(ok)
        #expect(seen == ["a=1", #"b"c="x\u00e9\ud83d\ude00""#, #"n={"k":[1,"}"]}"#, "z=true"])
        for bad in [#"{"a":1"#, #"{"a" 1}"#, "[1]", #"{"a":1,}"#, ""] {
            #expect(!Array(bad.utf8).withUnsafeBufferPointer { JSONMembers.scan($0) { _, _ in } }, "\(bad)")
        }
    }
}
