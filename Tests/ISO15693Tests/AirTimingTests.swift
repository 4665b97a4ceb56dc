import Testing
@testable import ISO15693

/// Worked numbers from docs/reference/iso15693.md Part 2 §1.7 (derived from ISO/IEC 15693-2 timing
/// as bookkept by Proxmark3, RFAL and NXP RdLib); each within ±1 %.
@Suite struct AirTimingTests {
    func close(_ t: AirTime, _ us: Double) -> Bool { abs(t.microseconds - us) <= us * 0.01 }

    @Test func frameDurations() {
        // Reader byte 4096/fc = 302.07 µs; SOF 75.52 µs; EOF 37.76 µs; tag SOF 151.03 µs at the high rate.
        #expect(abs(AirTiming.readerByte(.oneOfFour).microseconds - 302.07) < 0.01)
        #expect(abs(AirTiming.readerSOF.microseconds - 75.52) < 0.01)
        #expect(abs(AirTiming.readerEOF.microseconds - 37.76) < 0.01)
        #expect(abs(AirTiming.tagSOF([.highDataRate]).microseconds - 151.03) < 0.01)
        // NXP RdLib nominal time of a 12-byte Inventory answer: 3928 µs high rate, 15709 µs low rate.
        #expect(abs(AirTiming.tagFrame(bytes: 12, flags: [.highDataRate]).microseconds - 3928) < 2)
        #expect(abs(AirTiming.tagFrame(bytes: 12, flags: []).microseconds - 15709) < 3)
        #expect(abs(AirTiming.t1.microseconds - 320.9) < 0.1 && abs(AirTiming.t2.microseconds - 309.1) < 0.1)
    }

    @Test func workedNumbers() {
        let inv =
            AirTiming.readerFrame(bytes: 5, coding: .oneOfFour) + AirTiming.t1
            + AirTiming.tagFrame(bytes: 12, flags: [.highDataRate])
        #expect(close(inv, 5871))
        #expect(close(inv + AirTiming.t2, 6180))
        let rsb =
            AirTiming.readerFrame(bytes: 13, coding: .oneOfFour) + AirTiming.t1
            + AirTiming.tagFrame(bytes: 7, flags: [.highDataRate]) + AirTiming.t2
        #expect(close(rsb, 7087))
        let rmb =
            AirTiming.readerFrame(bytes: 14, coding: .oneOfFour) + AirTiming.t1
            + AirTiming.tagFrame(bytes: 3 + 4 * 32, flags: [.highDataRate]) + AirTiming.t2
        #expect(close(rmb, 44_840))
        let empty16 =
            AirTiming.readerFrame(bytes: 5, coding: .oneOfFour) + AirTiming.emptySlot([.highDataRate]) * 16 + AirTiming
            .readerEOF * 15
        #expect(close(empty16, 9780))
    }
}
