import Foundation
import ISO15693
import Readers
import SensorTags
import TagImages
import TestDrivers
import Testing
import VLoggerModel

@testable import TagSimulator
@testable import VLoggerCore
import DriverSim

/// The ams SL13A as a sensor kind (docs/reference/sensor-tags.md, "ams / IDS SL13A"): the state from A8/A3/AA (AD
/// with a measurement) packed as FEIG's handler has it, in both byte orders and both frame forms (neither settled by
/// a public source: options), every answer kept raw, and ams's 30 ms answer window.
@Suite(.drivers) struct SL13AKindTests {
    static let uid = try! UID(parsing: "E03604CA013E1201")
    /// 2026-11-25 06:00:00 in FEIG's packing, the year field raw (26).
    static let startWord: UInt32 = 26 << 26 | 11 << 22 | 25 << 17 | 6 << 12

    static func client(_ order: SL13A.ByteOrder, manufacturerByte: Bool) throws -> (ISO15693Client, SL13ALogger) {
        let tag = SimulatedTag(
            image: try TagImage(uid: uid, blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 64)))
        let logger = SL13ALogger(
            options: SL13A.Options(byteOrder: order, manufacturerByte: manufacturerByte), active: true,
            measurements: 300, startWord: startWord, interval: 600)
        tag.attach(logger)
        let field = SimulatedField()
        field.add(tag)
        return (ReaderSession(reader: SimulatorReader.switchedOn(field)).client, logger)
    }

    @Test(arguments: SL13A.ByteOrder.allCases, [true, false])
    func theStateInEitherForm(order: SL13A.ByteOrder, manufacturerByte: Bool) throws {
        let (client, _) = try Self.client(order, manufacturerByte: manufacturerByte)
        let kind = SL13AKind(options: SL13A.Options(byteOrder: order, manufacturerByte: manufacturerByte))
        let info = try kind.info(client, Self.uid, measure: true, wait: { _ in })
        #expect(info.logging == true && info.recordCount == 300 && info.intervalSeconds == 600)
        #expect(info.session == "sl13a:\(String(Self.startWord, radix: 16)):600")
        // The raw answers: the status word 0x40 << 24 | 300 << 14 | 1 in the chip's order.
        let status = SL13A.bytes(0x40 << 24 | 300 << 14 | 1, order)
        #expect(Array(info.raw["log_state"]?.prefix(4) ?? []) == status)
        #expect(info.current.contains(SensorValue("temperature_code", 0x0215, unit: "")))
        #expect(info.notes.contains { $0.contains("year field 26, month 11, day 25") })
        // The other byte order reads other numbers from the same answers: the option matters.
        let other = SL13AKind(
            options: SL13A.Options(byteOrder: order == .msb ? .lsb : .msb, manufacturerByte: manufacturerByte))
        #expect(try other.info(client, Self.uid, measure: false, wait: { _ in }).recordCount != 300)
        // The other frame form is not recognised: no answer, and the error says what to try.
        let wrongForm = SL13AKind(options: SL13A.Options(byteOrder: order, manufacturerByte: !manufacturerByte))
        do {
            _ = try wrongForm.info(client, Self.uid, measure: false, wait: { _ in })
            Issue.record("an answer to the other frame form")
        } catch { #expect("\(error)".contains("try the other frame form"), "\(error)") }
    }

    /// The SL13A answers later than a standard wait: heard within ams's 30 ms window, missed without it.
    @Test func theAnswerNeedsTheLongerWindow() throws {
        let (client, _) = try Self.client(.msb, manufacturerByte: true)
        let frame = SL13A.request(SL13A.Code.getBatteryLevel, uid: Self.uid, options: SL13A.Options(), flags: 0x22)
        #expect(throws: ClientError.self) { try client.raw(frame, wait: .standard) }
        #expect(try client.raw(frame, wait: .window(.microseconds(30_000))) == [0x00, 0x8A])
    }
}
