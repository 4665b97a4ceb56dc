import TagImages
import Foundation
import Logging
import TestDrivers
import Testing
import ISO15693
import Readers
import TagSimulator
@testable import VLoggerCore
import VLoggerCLI
import DriverSim
import VLoggerModel

@Suite(.drivers) struct CoreTests {
    func session(_ images: [TagImage]) throws -> ISO15693Client {
        let field = SimulatedField(tags: images.map { SimulatedTag(image: $0) })
        let reader = SimulatorReader(field: field)
        try reader.fieldOn()
        return ISO15693Client(reader: reader)
    }

    @Test func traceShowsBytesOnAirAndMeaning() throws {
        let img = TagImage.blank(profile: .icodeSLIX2, uid: try UID(parsing: "E004010812345601"))
        let client = try session([img])
        var lines: [String] = []
        let formatter = TraceFormatter { lines.append($0) }
        client.reader.trace = formatter.handle
        _ = try client.inventory()
        // The 16-slot request goes out as 06 01 00 CD 09 (docs/reference/iso15693.md Part 2 §1.5), followed by 15 slot-marker EOFs.
        #expect(lines.first?.hasPrefix(">> 06 01 00 CD 09") == true)
        #expect(lines.filter { $0.hasPrefix("EOF") }.count == 15)
        #expect(lines.contains { $0.hasPrefix("<<") && $0.contains("UID E004010812345601") })
        // The air time the trace adds up equals the reader's own account.
        #expect(formatter.total == client.reader.airTime)
        // A long answer is wrapped, not cut: Get System Information of a SLIX2 shows every byte on air, the CRC
        // on the continuation line.
        lines = []
        var onAir: [UInt8] = []
        client.reader.trace = { e in
            if e.direction == .tagToReader { onAir = e.bytes }
            formatter.handle(e)
        }
        _ = try client.send(Request(.getSystemInformation, flags: [.highDataRate]))
        let answer = try #require(lines.firstIndex { $0.hasPrefix("<<") })
        var shown = String(lines[answer].dropFirst(3).prefix(44))
        for l in lines[(answer + 1)...] where l.hasPrefix("   ") { shown += " " + l }
        let hex = shown.split(separator: " ").map(String.init).filter { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
        #expect(onAir.count > TraceFormatter.bytesPerLine && hex == onAir.map { Hex.format([$0]) }, "\(lines)")
    }

    @Test func dumpAndRestoreSkipLockedBlocks() throws {
        var img = TagImage.blank(profile: .icodeSLIX2, uid: try UID(parsing: "E004010812345601"))
        img.blocks[1] = [1, 2, 3, 4]
        img.locked[2] = true
        let client = try session([img])
        let dumped = try TagDump.dump(client, uid: img.uid)
        #expect(dumped.blocks == img.blocks && dumped.locked == img.locked && dumped.icReference == 0x01)
        var target = dumped
        target.blocks[1] = [9, 9, 9, 9]
        target.blocks[2] = [8, 8, 8, 8]  // locked on the tag: reported, not written
        let report = try TagDump.restore(client, uid: img.uid, image: target)
        #expect(report.written == 1 && report.lockedSkipped == [2])
        #expect(try client.readBlocks(img.uid, first: 1, count: 2).map(\.data) == [[9, 9, 9, 9], [0, 0, 0, 0]])
        #expect(report.notApplied.isEmpty)
        // A dump with more locks, another AFI and DSFID and their locks: restore says what it left, and the
        // tag keeps its own (locking cannot be undone; AFI and DSFID have their commands).
        target.locked[5] = true
        (target.afi, target.dsfid, target.afiLocked, target.dsfidLocked) = (0x07, 0x01, true, true)
        let second = try TagDump.restore(client, uid: img.uid, image: target)
        #expect(
            second.notApplied == [
                "the lock of block 0x05 (vlogger lock)", "AFI 0x07 (the tag has 0x00)", "DSFID 0x01 (the tag has 0x00)",
                "the AFI lock", "the DSFID lock",
            ], "\(second.notApplied)")
        #expect(try client.readBlocks(img.uid, first: 5, count: 1, security: true).first?.security?.isLocked == false)
    }

    @Test func readerSessionErrorsAreReadable() {
        #expect(throws: VLoggerError.self) {
            try ReaderSession.open(kind: ReaderKind(SimulatorDriver()), field: "/nonexistent-field", device: nil)
        }
    }
}

/// Log lines for journald: sd-daemon(3) priority prefixes (<3> LOG_ERR, <4> LOG_WARNING, <5> LOG_NOTICE,
/// <6> LOG_INFO, <7> LOG_DEBUG), one line per message, filtered by the level.
@Suite(.drivers) struct JournalLogTests {
    final class Lines: @unchecked Sendable {
        let lock = NSLock()
        var lines: [String] = []
        func add(_ s: String) { lock.lock(); lines.append(s); lock.unlock() }
    }

    @Test func prefixesLevelsAndOneLinePerMessage() {
        let sink = Lines()
        let logger = Logger(label: "t") { _ in JournalLogHandler(level: .notice, journal: true, write: { sink.add($0) })
        }
        logger.error("reader gone")
        logger.warning("read-timeout", metadata: ["uid": "E008010000004212"])
        logger.notice("two\nlines")
        logger.info("per-poll noise")
        logger.debug("more noise")
        #expect(
            sink.lines == [
                "<3>error: reader gone\n", "<4>warning: read-timeout uid=E008010000004212\n",
                "<5>notice: two ⏎ lines\n",
            ])
        #expect(
            [Logger.Level.critical, .error, .warning, .notice, .info, .debug].map(JournalLogHandler.prefix) == [
                "<2>critical", "<3>error", "<4>warning", "<5>notice", "<6>info", "<7>debug",
            ])
    }

    /// Not the journal (a terminal, a file): the local time instead of the priority prefix (systemd.exec(5): the
    /// journal is recognised by JOURNAL_STREAM naming stderr's device and inode).
    @Test func aTerminalGetsTheTimeNotThePriority() {
        let sink = Lines()
        let when = Date(timeIntervalSince1970: 1_763_800_000.25)
        let logger = Logger(label: "t") { _ in
            JournalLogHandler(level: .notice, journal: false, now: { when }, write: { sink.add($0) })
        }
        logger.warning("read-timeout", metadata: ["uid": "E008010000004212"])
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
        #expect(sink.lines == ["\(f.string(from: when)) warning: read-timeout uid=E008010000004212\n"])
        #expect(sink.lines.first?.hasSuffix(".250 warning: read-timeout uid=E008010000004212\n") == true)
        // Under a test runner stderr is no journal stream.
        #expect(!JournalLogHandler.stderrIsTheJournal || ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil)
    }
}

/// The inventory's ideal against the worked numbers of docs/reference/iso15693.md §1.7 (derived from ISO/IEC 15693-2/-3
/// timing: one-slot exchange with one answer 6180.5 µs; 16-slot round with k tags alone T16(k): 0 → 9.78 ms,
/// 2 → 17.94, 8 → 42.44, 16 → 75.10).
@Suite(.drivers) struct InventoryIdealTests {
    @Test func idealIsTheLesserOfOneSlotEachAndFull16SlotRounds() {
        let f: RequestFlags = [.highDataRate]
        func ms(_ n: Int) -> Double { (PollCost.inventory(tags: n, flags: f).milliseconds * 100).rounded() / 100 }
        #expect(ms(1) == 6.18)
        #expect(ms(2) == 12.36)  // two one-slot exchanges beat a 16-slot round (17.94)
        #expect(ms(8) == 42.44)  // T16(8) beats 8 × 6.18
        #expect(ms(16) == 75.10)
        #expect(ms(50) == 243.24 || ms(50) == 243.25)  // 3 × T16(16) + T16(2), each rounded from ticks
        // More than 16 tags are never cheaper than one full round per 16 (the old bound stopped at 16 answers).
        #expect(abs(ms(200) - (12 * 75.10 + 42.44)) < 0.02, "\(ms(200))")
    }
}

/// A simulated reader stands for a reader with its own frame limit (`[[reader]] max-response`). ST25DV64K:
/// 2048 blocks of 4 bytes, at most 256 blocks per Read Multiple Blocks (the chip profile, from ST's datasheet).
@Suite(.drivers) struct ReaderFrameLimitTests {
    @Test func aWholeST25DV64KIsEightReadsWhenTheReaderTakesTheChipsMaximum() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = """
            [[reader]]
            id = "bench"
            field = "\(root.path)/Config/demo-field"
            max-response = 1100

            [[reader]]
            id = "plain"
            field = "\(root.path)/Config/demo-field-dock"
            """
        let c = try AgentConfig.parse(text, file: "t.toml")
        #expect(c.readers.map(\.maxResponseBytes) == [1100, nil])
        let session = try ReaderSession.open(c.readers[0])
        #expect(session.reader.limits.maxResponseBytes == 1100)
        let uid = try UID(parsing: "E002260000C0FFEE")
        let m = try session.client.memory(of: uid)
        #expect(m.blockCount == 2048 && m.blockSize == 4)
        // 256 bytes (the simulator's default): 63 blocks a read, 34 reads; 1100 bytes: the chip's 256, 8 reads.
        // 2048 / 63, split at block 255 too
        #expect(ISO15693Client.readSteps(m, first: 0, count: 2048, security: false, limits: ReaderLimits()).count == 34)
        let steps = ISO15693Client.readSteps(m, first: 0, count: 2048, security: false, limits: session.reader.limits)
        #expect(steps.count == 8 && steps.allSatisfy { $0.count == 256 })
        let before = session.client.exchanges
        #expect(try session.client.readBlocks(uid, first: 0, count: 2048).count == 2048)
        #expect(session.client.exchanges - before == 8)
        do {
            _ = try AgentConfig.parse("[[reader]]\nid = \"x\"\ndriver = \"pcsc\"\nmax-response = 300\n", file: "t.toml")
            Issue.record("max-response accepted for pcsc")
        } catch {
            #expect("\(error)".contains("max-response is for a simulated reader"))
        }
    }
}
