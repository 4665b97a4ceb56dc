import Foundation
import ISO15693
import SensorTags
import Testing

/// Each sensor kind's answers and requests against the vendor's own code paths, as docs/reference/sensor-tags.md
/// quotes them with file and line; the frames' CRCs are those the reference page computed independently.

/// Fudan FM13HT160-T5T: Fudan's SDK (FudanMicro/FM13DT160, `NFCUtils.java`, `InstructMap.java`).
@Suite struct FM13Tests {
    let uid = try! UID(parsing: "E01D700011223344")

    /// Normal-mode records, the SDK's rule (`NFCUtils.java:1245-1320`): 10-bit two's complement ÷ 4, bit 13 the field.
    @Test func recordsDecodeAsTheSDKDoes() throws {
        let cases: [([UInt8], Double, Bool)] = [
            ([0x64, 0x00], 25.00, false), ([0x64, 0x20], 25.00, true), ([0xD7, 0x03], -10.25, false),
            ([0x00, 0x02], -128.00, false), ([0xFF, 0x01], 127.75, false),
        ]
        for (first, celsius, field) in cases {
            let r = try FM13.Record(bytes: (first + [0x05, 0x00])[...])
            #expect(r.celsius == celsius && r.fieldPresent == field, "\(first)")
            #expect(r.timeNumber == 5 && r.bytes == first + [0x05, 0x00])
        }
        #expect(throws: SensorError.self) { try FM13.records([1, 2, 3]) }
        #expect(try FM13.records([0x64, 0, 0, 0, 0xD7, 0x03, 0, 0]).map(\.celsius) == [25, -10.25])
    }

    /// The one-shot result `00 64 20` (flags, then the last two bytes little-endian) is 25.00 °C.
    @Test func oneShotTemperature() throws {
        #expect(try FM13.oneShotCelsius([0x64, 0x20]) == 25.00)
        #expect(throws: SensorError.self) { try FM13.oneShotCelsius([0x64]) }
    }

    /// The reference page's frames, built by the ISO 15693 encoder from the SDK's parameters.
    @Test func framesAreTheSDKs() throws {
        func frame(_ code: UInt8, _ parameters: [UInt8], addressed: Bool) throws -> [UInt8] {
            try Request(
                .custom(code: code, manufacturer: FM13.manufacturer, parameters: parameters), flags: [.highDataRate],
                addressing: addressed ? .addressed(uid) : .nonAddressed
            ).encodeOnAir()
        }
        #expect(
            try frame(FM13.Code.status, FM13.statusParameters, addressed: true)
                == [0x22, 0xCF, 0x1D, 0x44, 0x33, 0x22, 0x11, 0x00, 0x70, 0x1D, 0xE0, 0x01, 0x00, 0x00, 0x77, 0x32])
        #expect(
            try frame(FM13.Code.readMemory, FM13.readMemory(address: 0x1000, length: 249), addressed: false)
                == [0x02, 0xB1, 0x1D, 0x10, 0x00, 0x00, 0xF8, 0xC0, 0x0D])
        #expect(
            try frame(FM13.Code.readRegister, FM13.readRegister(FM13.Register.recordCount), addressed: false)
                == [0x02, 0xC6, 0x1D, 0xC0, 0x91, 0xFC, 0x9C])
        #expect(
            try frame(FM13.Code.measure, FM13.Measure.startTemperature, addressed: true)
                == [0x22, 0xC0, 0x1D, 0x44, 0x33, 0x22, 0x11, 0x00, 0x70, 0x1D, 0xE0, 0x06, 0x00, 0xF8, 0xE6])
        #expect(
            try frame(FM13.Code.measure, FM13.Measure.readTemperature, addressed: true)
                == [0x22, 0xC0, 0x1D, 0x44, 0x33, 0x22, 0x11, 0x00, 0x70, 0x1D, 0xE0, 0x84, 0x00, 0x84, 0x59])
        #expect(throws: SensorError.self) { try FM13.readMemory(address: 0x1000, length: 250) }
        // "B1 minimum unit is 4 bytes": 249 asked, 252 answered.
        #expect(FM13.answerLength(forRead: 249) == 252 && FM13.answerLength(forRead: 4) == 4)
    }

    /// 4,864 records in requests of 63 records (252 bytes) from 0x1000: 78 requests, the last of 13 records.
    @Test func theWholeLogInTheSDKsChunks() {
        let reads = FM13.logReads(from: 0, to: FM13.maxRecords)
        #expect(reads.count == 78 && reads.map(\.records).reduce(0, +) == 4864)
        #expect(reads.first?.address == 0x1000 && reads.first?.length == 249 && reads.last?.records == 13)
        #expect(reads.last?.address == 0x1000 + UInt16(77 * 252) && reads.last?.length == 52)
        #expect(FM13.logReads(from: 10, to: 10).isEmpty && FM13.logReads(from: 0, to: 5000).isEmpty)
    }

    /// Record i at start + delay × 60 + i × interval (`NFCUtils.java` 661-895); the CF status bits (`resp[2]`).
    @Test func recordTimeAndStatus() throws {
        let expected: Int64 = (1_764_000_000 + 120 + 900) * 1000
        #expect(
            FM13.recordTime(startSeconds: 1_764_000_000, delayMinutes: 2, intervalSeconds: 300, index: 3) == expected)
        let s = try FM13.Status(answer: [0x00, 0x00, 0x11])
        #expect(s.logging && s.batteryOK)
        #expect(try !FM13.Status(answer: [0x00, 0x00, 0x00]).logging)
        #expect(FM13.bigEndian([0x69, 0x25, 0x4A, 0x00][...]) == 0x6925_4A00)
    }
}

/// TI RF430FRL152H: TI's SLOA233 reader (`application/nfc_app.c`).
@Suite struct RF430Tests {
    /// `NFC_calculateTemperature` (lines 456-465) on the reference page's worked values.
    @Test func temperatureAsTIsReaderComputesIt() throws {
        let cases: [(UInt16, UInt16, Double)] = [(10498, 10498, 25.00), (5320, 10498, 39.64), (12000, 8000, 16.90)]
        for (therm, ref, celsius) in cases {
            let t = try #require(RF430.Sample(reference: ref, thermistor: therm).celsius)
            #expect(abs(t - celsius) < 0.01, "\(therm)/\(ref): \(t)")
        }
        #expect(RF430.Sample(reference: 0x3FFF, thermistor: 100).celsius == nil)
        // Block 9: reference then thermistor, each little-endian (lines 195-196).
        #expect(
            try RF430.Sample(block9: [0x02, 0x29, 0x02, 0x29, 0, 0, 0, 0]) == .init(reference: 10498, thermistor: 10498)
        )
    }

    /// Block 0 byte 1 & 3: 10 ready, 11 error (lines 349-378); the configuration TI writes (lines 397-422), block 0
    /// last, and the reference page's frame for it.
    @Test func statusAndConfiguration() throws {
        #expect(try RF430.SampleStatus(block0: [0x01, 0x02]) == .ready)
        #expect(try RF430.SampleStatus(block0: [0x01, 0x03]) == .error)
        #expect(try RF430.SampleStatus(block0: [0x01, 0x01]) == .busy)
        #expect(RF430.configuration.map(\.block) == [1, 2, 3, 4, 5, 6, 7, 0])
        let uid = try UID(parsing: "E007A200000ADF8D")
        let block0 = try #require(RF430.configuration.last)
        let frame = try Request(
            .writeSingleBlock(BlockNumber(UInt16(block0.block)), data: block0.data), flags: [.highDataRate],
            addressing: .addressed(uid)
        ).encodeOnAir()
        #expect(
            frame == [
                0x22, 0x21, 0x8D, 0xDF, 0x0A, 0x00, 0x00, 0xA2, 0x07, 0xE0, 0x00, 0x01, 0x00, 0x03, 0x03, 0x01, 0x01,
                0x00, 0x40, 0x4E, 0xF9,
            ])
    }
}

/// ST SmarTag: ST's app (STMicroelectronics/STNFCSensor_Android, `GregorianCalendarExt.kt`,
/// `SensorDataSampleValue.kt`, `SmarTag.kt`).
@Suite struct SmarTagTests {
    /// 2024-05-17 13:45:30 packed as ST packs it: 6 << 26 | 17 << 21 | 5 << 17 | 13 << 12 | 45 << 6 | 30 =
    /// 0x1A2ADB5E, stored little-endian.
    @Test func timestampCell() throws {
        let cell = try SmarTag.cell([0x5E, 0xDB, 0x2A, 0x1A][...])
        #expect(cell == 0x1A2A_DB5E)
        let t = SmarTag.Timestamp(cell: cell)
        #expect([t.year, t.month, t.day, t.hour, t.minute, t.second] == [2024, 5, 17, 13, 45, 30] && t.isValid)
        #expect(SmarTag.Timestamp.cell(year: 2024, month: 5, day: 17, hour: 13, minute: 45, second: 30) == cell)
        #expect(!SmarTag.Timestamp(cell: 0).isValid)
    }

    /// 25 °C and 50 % with no pressure or acceleration: 0xFFF << 20 | 65 << 13 | 50 << 6 | 0x3F = 0xFFF82CBF.
    @Test func valueCell() {
        let v = SmarTag.Value(cell: 0xFFF8_2CBF)
        #expect(v.temperature == 25 && v.humidity == 50 && v.pressure == nil && v.acceleration == nil)
        #expect(SmarTag.Value(cell: SmarTag.Value.cell(temperature: -5)).temperature == -5)
        // Pressure v = 2000 → 1010 mbar; acceleration 3 → 768 mg.
        let p = SmarTag.Value(cell: 2000 << 20 | 0x7F << 13 | 0x7F << 6 | 3)
        #expect(p.pressure == 1010 && p.acceleration == 768 && p.temperature == nil)
    }

    /// A ring of 4 slots after 6 samples, the next one going to slot 2: the oldest is slot 2, then 3, 0, 1.
    @Test func ringBufferOldestFirst() throws {
        var payload = [UInt8](repeating: 0, count: (16 + 8) * 4)
        func put(_ cell: Int, _ value: UInt32) {
            for k in 0..<4 { payload[cell * 4 + k] = UInt8(truncatingIfNeeded: value >> (8 * k)) }
        }
        put(1, 60 | 1 << 16)  // 60 s, sampling
        put(2, SmarTag.Timestamp.cell(year: 2026, month: 11, day: 26, hour: 8, minute: 0, second: 0))
        put(10, UInt32(30 + 40) | UInt32(2 + 40) << 8)
        put(15, 6 | UInt32((16 + 2 * 2) * 4) << 16)
        for (slot, minute) in [(0, 4), (1, 5), (2, 2), (3, 3)] {
            put(
                16 + slot * 2,
                SmarTag.Timestamp.cell(year: 2026, month: 11, day: 26, hour: 8, minute: minute, second: 0))
            put(17 + slot * 2, SmarTag.Value.cell(temperature: 20 + minute))
        }
        let header = try SmarTag.Header(payload: payload)
        #expect(header.intervalSeconds == 60 && header.mode == 1 && header.sampleCount == 6)
        #expect(header.maxTemperature == 30 && header.minTemperature == 2)
        let samples = try SmarTag.samples(payload: payload, header: header)
        #expect(samples.map(\.time.minute) == [2, 3, 4, 5])
        #expect(samples.map { $0.value.temperature } == [22, 23, 24, 25])
        #expect(throws: SensorError.self) { try SmarTag.Header(payload: [0, 1]) }
    }
}

/// ams SL13A: FEIG's handler (`FedmIscTagHandler_ISO15693_IDS_SL13A.cpp`) for the packing; the byte order on air
/// is not settled, so every decode runs in both.
@Suite struct SL13ATests {
    let uid = try! UID(parsing: "E03604CA013E1201")

    /// Measurement status (lines 751-759): active, 300 measurements, pointer 0x40; counters 1, 2, 3, 4.
    @Test(arguments: SL13A.ByteOrder.allCases) func logStateInBothByteOrders(order: SL13A.ByteOrder) throws {
        let status: UInt32 = 0x40 << 24 | 300 << 14 | 1
        let counters: UInt32 = 0x0403_0201
        let answer = SL13A.bytes(status, order) + SL13A.bytes(counters, order)
        #expect(order == .msb ? answer[0] == 0x40 : answer[0] == 0x01)
        let s = try SL13A.LogState(answer: answer, order: order)
        #expect(s.active && s.measurements == 300 && s.pointer == 0x40 && s.memoryReplacements == 0)
        #expect(s.limitCounts == [1, 2, 3, 4] && s.raw == answer)
        // Read in the other order, the same bytes mean something else: the option matters.
        let other: SL13A.ByteOrder = order == .msb ? .lsb : .msb
        #expect(try SL13A.LogState(answer: answer, order: other) != s)
    }

    /// Start time (lines 665-670) and log mode's interval (lines 264-272) in both orders.
    @Test(arguments: SL13A.ByteOrder.allCases) func measurementSetupInBothByteOrders(order: SL13A.ByteOrder) throws {
        let start: UInt32 = 25 << 26 | 11 << 22 | 26 << 17 | 8 << 12 | 30 << 6 | 15
        let limits: UInt32 = 100 << 20 | 50 << 10 | 10
        let mode: UInt32 = 600 << 10 | 200
        let answer = [start, limits, mode, 0].flatMap { SL13A.bytes($0, order) }
        let s = try SL13A.MeasurementSetup(answer: answer, order: order)
        let fields: [Int] = [
            s.start.yearField, s.start.month, s.start.day, s.start.hour, s.start.minute, s.start.second,
        ]
        #expect(fields == [25, 11, 26, 8, 30, 15])
        #expect(s.interval == 600 && s.limits == [10, 50, 100, 200])
        let expected: UInt16 = order == .msb ? 0x012C : 0x2C01
        #expect(try SL13A.temperatureCode([0x01, 0x2C], order: order) == expected)
    }

    /// The reference page's frames: Get Temperature with and without the manufacturer byte, Get Log State.
    @Test func framesWithAndWithoutTheManufacturerByte() {
        let wire: [UInt8] = [0x01, 0x12, 0x3E, 0x01, 0xCA, 0x04, 0x36, 0xE0]
        #expect(
            SL13A.frame(SL13A.Code.getTemperature, uid: uid, options: .init()) == [0x20, 0xAD, 0x36] + wire + [
                0xAC, 0xCD,
            ])
        #expect(
            SL13A.frame(SL13A.Code.getTemperature, uid: uid, options: .init(manufacturerByte: false))
                == [0x20, 0xAD] + wire + [0x60, 0x86])
        #expect(
            SL13A.frame(SL13A.Code.getLogState, uid: uid, options: .init()) == [0x20, 0xA8, 0x36] + wire + [0x17, 0x51])
        #expect(
            SL13A.frame(SL13A.Code.setPassive, uid: uid, options: .init()) == [0x20, 0xA6, 0x36] + wire + [0xEC, 0xD0])
    }
}
