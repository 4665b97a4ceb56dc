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

/// Starting and stopping an FM13's log as Fudan's SDK does it (`InstructMap.java` cases 3, 5, 13, 19, 20, 22, 7 and
/// 8; docs/reference/sensor-tags.md): the registers, the planned count and the SDK's bookkeeping written, then START;
/// a new logging session is what `sensor info` and the collector see next. Settings out of the chip's range are
/// refused before anything is sent.
@Suite(.drivers) struct SensorControlTests {
    static let uid = try! UID(parsing: "E01D7000AABBCC09")

    static func rig() throws -> (SimulatedTag, FM13Logger, ISO15693Client) {
        let image = try TagImage(
            uid: uid, blockSize: 4, blocks: Array(repeating: [0, 0, 0, 0], count: 256), profileID: "fm13ht160")
        let tag = SimulatedTag(image: image, profile: .fm13ht160)
        let logger = FM13Logger(startSeconds: 1_764_000_000, intervalSeconds: 60)
        logger.take(Array(repeating: 4, count: 50))
        tag.attach(logger)
        let field = SimulatedField()
        field.add(tag)
        return (tag, logger, ReaderSession(reader: SimulatorReader.switchedOn(field)).client)
    }

    @Test func startMakesANewSessionAndStopEndsIt() throws {
        let (tag, logger, client) = try Self.rig()
        let kind = FM13Kind()
        let before = try kind.info(client, Self.uid, measure: false, wait: { _ in })
        #expect(before.session == "fm13:1764000000:0:60" && before.recordCount == 50)
        let steps = try kind.startLog(
            client, Self.uid,
            LogSettings(intervalSeconds: 600, delayMinutes: 2, records: 100, start: 1_764_600_000_000))
        #expect(steps.last == "logging started" && logger.controls == ["start"])
        // The SDK's bookkeeping, big-endian: delay 0x0110, interval 0x0114, start 0x0140.
        let memory = tag.image.blocks.flatMap { $0 }
        #expect(Array(memory[0x110..<0x112]) == [0x00, 0x02] && Array(memory[0x114..<0x116]) == [0x02, 0x58])
        #expect(FM13.bigEndian(memory[0x140..<0x144]) == 1_764_600_000)
        let after = try kind.info(client, Self.uid, measure: false, wait: { _ in })
        #expect(after.session == "fm13:1764600000:2:600" && after.logging == true, "\(after.session ?? "-")")
        // The first record of the new session: start + delay.
        #expect(after.start == Millis(1_764_600_120_000))
        try kind.stopLog(client, Self.uid)
        #expect(logger.controls == ["start", "stop"])
        #expect(try kind.info(client, Self.uid, measure: false, wait: { _ in }).logging == false)
    }

    @Test func settingsOutOfRangeAreRefusedBeforeTheAir() throws {
        let (_, logger, client) = try Self.rig()
        let before = client.exchanges
        for s in [
            LogSettings(intervalSeconds: 0, records: 10, start: 0),
            LogSettings(intervalSeconds: 70_000, records: 10, start: 0),
            LogSettings(intervalSeconds: 60, delayMinutes: 256, records: 10, start: 0),
            LogSettings(intervalSeconds: 60, records: 4865, start: 0),
        ] {
            #expect(throws: SensorFailure.self) { try FM13Kind().startLog(client, Self.uid, s) }
        }
        #expect(client.exchanges == before && logger.controls.isEmpty)
        // A kind without controls says so.
        #expect(throws: SensorFailure.self) { try RF430Kind().stopLog(client, Self.uid) }
    }
}
