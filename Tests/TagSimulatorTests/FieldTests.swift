import Foundation
import Testing
import ISO15693
@testable import TagSimulator

@Suite struct FieldTests {
    func field(_ profiles: [(ChipProfile, UInt64)]) -> SimulatedField {
        let f = SimulatedField(
            tags: profiles.map { SimulatedTag(image: .blank(profile: $0.0, uid: $0.0.makeUID(serial: $0.1))) })
        f.powerOn()
        return f
    }
    func onAir(_ r: Request) throws -> [UInt8] { try r.encodeOnAir() }
    func close(_ t: AirTime, _ us: Double) -> Bool { abs(t.microseconds - us) <= us * 0.01 }

    /// docs/reference/iso15693.md Part 2 §1.7: worked air times, charged by the field itself (±1 %).
    @Test func airTimeOfExchanges() throws {
        let f = field([(.icodeSLIX2, 1)])
        let uid = f.tags[0].uid
        let inv = f.transmit(try onAir(Request(.inventory(afi: nil, mask: .none), flags: [.highDataRate, .oneSlot])))
        #expect(close(inv.total - AirTiming.t2, 5871) && close(inv.total, 6180))
        let rsb = f.transmit(try onAir(Request(.readSingleBlock(3), addressing: .addressed(uid))))
        #expect(close(rsb.total, 7087))
        let rmb = f.transmit(try onAir(Request(.readMultipleBlocks(first: 0, count: 32), addressing: .addressed(uid))))
        #expect(close(rmb.total, 44_840))
        let empty = SimulatedField()
        empty.powerOn()
        var round = empty.transmit(try onAir(Request(.inventory(afi: nil, mask: .none)))).total
        for _ in 1..<16 { round = round + empty.nextSlot().total }
        #expect(close(round, 9780))
        // Low data rate: the 12-byte inventory answer takes 15709 µs (NXP RdLib nominal).
        let low = f.transmit(try onAir(Request(.inventory(afi: nil, mask: .none), flags: [.oneSlot])))
        #expect(abs((low.listenTime - AirTiming.t1).microseconds - 15709) < 3)
        // 1-of-256 coding: a 5-byte request takes 5 × 4833 µs + SOF + EOF.
        f.coding = .oneOf256
        let slow = f.transmit(try onAir(Request(.inventory(afi: nil, mask: .none), flags: [.highDataRate, .oneSlot])))
        #expect(abs(slow.readerTime.microseconds - (5 * 4833.0 + 75.52 + 37.76)) < 1)
    }

    @Test func collisionsAndSlots() throws {
        let f = field([(.icodeSLIX2, 0x10), (.icodeSLIX2, 0x20)])  // low nibbles both 0: same slot 0
        let first = f.transmit(try onAir(Request(.inventory(afi: nil, mask: .none))))
        #expect(first.outcome == .collision)
        // One slot: both answer at once → collision.
        #expect(
            f.transmit(try onAir(Request(.inventory(afi: nil, mask: .none), flags: [.highDataRate, .oneSlot]))).outcome
                == .collision)
        // Mask extended by the slot number and 4 more bits separates them (slots 1 and 2).
        let m = try InventoryMask(length: 4, value: 0)
        var outcomes = [f.transmit(try onAir(Request(.inventory(afi: nil, mask: m)))).outcome]
        for _ in 1..<16 { outcomes.append(f.nextSlot().outcome) }
        #expect(outcomes.filter { if case .response = $0 { return true } else { return false } }.count == 2)
        #expect(!outcomes.contains(.collision))
    }

    @Test func statesQuietSelectReset() throws {
        let f = field([(.icodeSLIX2, 1), (.icodeSLIX2, 2)])
        let a = f.tags[0].uid
        #expect(f.transmit(try onAir(Request(.stayQuiet, addressing: .addressed(a)))).outcome == .silence)
        #expect(f.tags[0].state == .quiet)
        // A quiet tag ignores non-addressed requests and inventory, but answers addressed ones.
        let one = f.transmit(try onAir(Request(.inventory(afi: nil, mask: .none), flags: [.highDataRate, .oneSlot])))
        guard case let .response(frame) = one.outcome else { Issue.record("expected one answer"); return }
        #expect(frame[2] == f.tags[1].uid.onAirBytes[0])
        if case .response = f.transmit(try onAir(Request(.readSingleBlock(0), addressing: .addressed(a)))).outcome {
        } else {
            Issue.record("quiet tag must answer addressed reads")
        }
        // Select: quiet → selected; only the selected tag answers select-mode requests.
        _ = f.transmit(try onAir(Request(.select, addressing: .addressed(a))))
        #expect(f.tags[0].state == .selected)
        if case .response = f.transmit(try onAir(Request(.readSingleBlock(0), addressing: .selected))).outcome {
        } else {
            Issue.record("selected tag must answer")
        }
        // Selecting another tag returns the first to Ready.
        _ = f.transmit(try onAir(Request(.select, addressing: .addressed(f.tags[1].uid))))
        #expect(f.tags[0].state == .ready && f.tags[1].state == .selected)
        _ = f.transmit(try onAir(Request(.resetToReady, addressing: .selected)))
        #expect(f.tags[1].state == .ready)
        f.powerOff()
        #expect(f.tags.allSatisfy { $0.state == .powerOff })
    }

    @Test func locksAndChipErrors() throws {
        let f = field([(.icodeSLIX2, 1)])
        let uid = f.tags[0].uid
        func send(_ r: Request, eof: AirTime? = nil) throws -> Response? {
            guard case let .response(frame) = f.transmit(try onAir(r), eofAfter: eof).outcome else { return nil }
            return try Response.decode(try CRC16.strip(frame), to: r)
        }
        #expect(
            try send(Request(.writeSingleBlock(5, data: [1, 2, 3, 4]), addressing: .addressed(uid)))?.body == .done)
        #expect(try send(Request(.lockBlock(5), addressing: .addressed(uid)))?.body == .done)
        #expect(try send(Request(.lockBlock(5), addressing: .addressed(uid)))?.body == .error(.blockAlreadyLocked))
        #expect(
            try send(Request(.writeSingleBlock(5, data: [9, 9, 9, 9]), addressing: .addressed(uid)))?.body
                == .error(.blockLocked))
        #expect(f.tags[0].image.blocks[5] == [1, 2, 3, 4])
        #expect(
            try send(Request(.readSingleBlock(80), addressing: .addressed(uid)))?.body == .error(.blockNotAvailable))
        // SLIX2 has no extended commands and no Write Multiple Blocks: error 0x01.
        #expect(
            try send(Request(.extendedReadSingleBlock(1), addressing: .addressed(uid)))?.body
                == .error(.commandNotSupported))
        #expect(
            try send(
                Request(.writeMultipleBlocks(first: 1, count: 1, data: [0, 0, 0, 0]), addressing: .addressed(uid)))?
                .body == .error(.commandNotSupported))
        #expect(try send(Request(.writeAFI(0x42), addressing: .addressed(uid)))?.body == .done)
        #expect(try send(Request(.lockAFI, addressing: .addressed(uid)))?.body == .done)
        #expect(try send(Request(.writeAFI(0x43), addressing: .addressed(uid)))?.body == .error(.blockLocked))
        #expect(f.tags[0].image.afi == 0x42 && f.tags[0].image.afiLocked)
        // Security status with the Option flag.
        #expect(
            try send(Request(.readSingleBlock(5), flags: [.highDataRate, .option], addressing: .addressed(uid)))?.body
                == .blocks([BlockRead(number: 5, data: [1, 2, 3, 4], security: .locked)]))
    }

    @Test func chipQuirks() throws {
        let f = field([(.tagitHFIPlus, 1), (.m24lr64, 2), (.st25dv64k, 3)])
        let (ti, m24, st) = (f.tags[0].uid, f.tags[1].uid, f.tags[2].uid)
        // TI Tag-it: without the Option flag no write and no answer; with it, the EOF after 20 ms collects
        // the answer; an EOF before the 10 ms programming time gives error 0x13 and no change.
        #expect(
            f.transmit(
                try onAir(Request(.writeSingleBlock(1, data: [1, 1, 1, 1]), addressing: .addressed(ti))),
                eofAfter: .microseconds(20_000)
            ).outcome == .silence)
        let early = f.transmit(
            try onAir(
                Request(
                    .writeSingleBlock(1, data: [2, 2, 2, 2]), flags: [.highDataRate, .option],
                    addressing: .addressed(ti))), eofAfter: .microseconds(5000))
        guard case let .response(e) = early.outcome else { Issue.record("expected an answer"); return }
        #expect(Array(e.prefix(2)) == [0x01, 0x13])
        let ok = f.transmit(
            try onAir(
                Request(
                    .writeSingleBlock(1, data: [3, 3, 3, 3]), flags: [.highDataRate, .option],
                    addressing: .addressed(ti))), eofAfter: .microseconds(20_000))
        guard case let .response(o) = ok.outcome else { Issue.record("expected an answer"); return }
        #expect(o.first == 0x00 && f.tags[0].image.blocks[1] == [3, 3, 3, 3])
        // Option-flag write cycle with a 20 ms EOF wait: T_vcd(17) + 20 ms + EOF + t1 + T_vicc(3) + t2 ≈ 27.12 ms (docs/reference/iso15693.md Part 2 §1.7 e).
        #expect(abs(ok.total.microseconds - 27_120) < 271)
        // M24LR64: plain commands without Protocol Extension are refused; with it, 2-byte block numbers.
        guard
            case let .response(r1) = f.transmit(try onAir(Request(.readSingleBlock(1), addressing: .addressed(m24))))
                .outcome
        else { Issue.record("the answer is not of the expected kind"); return }
        #expect(r1.first == 0x01)
        guard
            case let .response(r2) = f.transmit(
                try onAir(
                    Request(
                        .readSingleBlock(0x400), flags: [.highDataRate, .protocolExtension], addressing: .addressed(m24)
                    ))
            ).outcome
        else { Issue.record("the answer is not of the expected kind"); return }
        #expect(r2.first == 0x00 && r2.count == 1 + 4 + 2)
        // ST25DV64K: block 0x7FF through Extended Read; Write Multiple of 5 blocks refused (≤ 4).
        guard
            case let .response(r3) = f.transmit(
                try onAir(Request(.extendedReadSingleBlock(0x7FF), addressing: .addressed(st)))
            ).outcome
        else { Issue.record("the answer is not of the expected kind"); return }
        #expect(r3.first == 0x00)
        guard
            case let .response(r4) = f.transmit(
                try onAir(
                    Request(
                        .writeMultipleBlocks(first: 0, count: 5, data: Array(repeating: 0, count: 20)),
                        addressing: .addressed(st)))
            ).outcome
        else { Issue.record("the answer is not of the expected kind"); return }
        #expect(r4.first == 0x01)
        // Write without Option: the answer comes t1 + 5 ms after the EOF (ST25DV typical 5 ms per block).
        let w = f.transmit(try onAir(Request(.writeSingleBlock(0, data: [1, 2, 3, 4]), addressing: .addressed(st))))
        #expect(
            abs(
                (w.listenTime - AirTiming.t1 - AirTiming.tagFrame(bytes: 3, flags: [.highDataRate])).microseconds - 5000
            ) < 1)
    }

    @Test func injectedFaults() throws {
        let f = field([(.icodeSLIX2, 1), (.icodeSLIX2, 2)])
        let uid = f.tags[0].uid
        let read = try onAir(Request(.readSingleBlock(0), addressing: .addressed(uid)))
        f.inject(.noResponse(uid: uid, count: 1))
        #expect(f.transmit(read).outcome == .silence)
        f.inject(.corruptCRC(uid: uid, count: 1))
        guard case let .response(bad) = f.transmit(read).outcome else { Issue.record("expected a frame"); return }
        #expect(!CRC16.isValid(bad))
        f.inject(.collision(count: 1))
        #expect(f.transmit(read).outcome == .collision)
        if case .response = f.transmit(read).outcome {} else { Issue.record("faults must be used up") }
        f.inject(.leaveAfter(uid: uid, exchanges: 1))
        if case .response = f.transmit(read).outcome {} else { Issue.record("still there for one exchange") }
        #expect(f.transmit(read).outcome == .silence)
        #expect(f.tag(uid) == nil)
        let newcomer = SimulatedTag(
            image: .blank(profile: .rf430frl152h, uid: ChipProfile.rf430frl152h.makeUID(serial: 9)))
        f.arrive(newcomer, afterExchanges: 1)
        let probe = try onAir(Request(.readSingleBlock(0), addressing: .addressed(newcomer.uid)))
        #expect(f.transmit(probe).outcome == .silence)
        if case .response = f.transmit(probe).outcome {} else { Issue.record("the tag should have arrived") }
        // A write slower than the reader waits: the reader times out, the block is written all the same.
        let other = f.tags[0].uid
        f.inject(.slowWrite(uid: other, extra: .microseconds(30_000)))
        let w = f.transmit(
            try onAir(Request(.writeSingleBlock(2, data: [7, 7, 7, 7]), addressing: .addressed(other))),
            listenTimeout: .microseconds(20_000))
        #expect(w.outcome == .silence && f.tag(other)?.image.blocks[2] == [7, 7, 7, 7])
        // A frame with a bad CRC is ignored by every tag.
        var corrupt = read
        corrupt[corrupt.count - 1] ^= 0xFF
        #expect(f.transmit(corrupt).outcome == .silence)
    }
}

/// Damaged files in a field folder are errors that name the file, not tags or scenarios that silently vanish.
@Suite struct DamagedFieldFolderTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func folder(_ files: [String: String]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("field-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let demo = Self.root.appendingPathComponent("Config/demo-field/mb89r118-cage-12.json")
        try FileManager.default.copyItem(at: demo, to: dir.appendingPathComponent("mb89r118-cage-12.json"))
        for (name, text) in files {
            try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return dir
    }

    @Test func aDamagedScenarioOrImageNamesItsFile() throws {
        let scenario = try String(
            contentsOf: Self.root.appendingPathComponent("Config/demo-field/scenario.json"), encoding: .utf8)
        let image = try String(
            contentsOf: Self.root.appendingPathComponent("Config/demo-field/slix2-pallet-0001.json"), encoding: .utf8)
        let cases: [(String, String, String)] = [
            ("scenario.json", String(scenario.dropLast(20)), "scenario.json: not valid JSON"),  // cut short
            ("scenario.json", "{\"steps\": []}", "scenario.json: a scenario needs the key"),
            (
                "pallet.json",
                image.replacingOccurrences(of: "\"blocks\": [", with: "\"blocks\" [", options: [], range: nil),
                "pallet.json: not valid JSON"
            ),
        ]
        for (name, text, needle) in cases {
            let dir = try folder([name: text])
            defer { try? FileManager.default.removeItem(at: dir) }
            #expect { try FieldFolder(url: dir) } throws: { "\($0)".contains(needle) }
        }
        // Valid JSON of another kind is still left alone.
        let dir = try folder(["notes.json": "{\"note\": \"not a tag\"}"])
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try FieldFolder(url: dir).field.tags.count == 1)
    }
}

/// Issue 47, item 10: the demo's cold-room alarm never cleared (its drift ran on to 85 °C). A signal's `repeat`
/// starts the drift again from `start` (the ripple keeps its own phase), so the demo's alarm ends every 5 minutes.
@Suite struct SignalRepeatTests {
    @Test func theDriftStartsAgainEveryRepeat() throws {
        let s = try Scenario.decode(
            """
            {"vlogger-scenario": 1, "steps": [], "signals": [{"uid": "E008010000004212", "block": "0xF8", "byte": 0,
             "type": "i16le", "scale": 0.01, "start": 20, "slope-per-hour": 3600, "repeat": "60s"}]}
            """
        ).signals[0]
        #expect(s.repeatMs == 60_000)
        #expect(s.value(atMs: 30_000) == 50 && s.value(atMs: 59_000) == 79)
        #expect(s.value(atMs: 60_000) == 20 && s.value(atMs: 90_000) == 50)
        #expect(throws: (any Error).self) {
            try Scenario.decode(
                #"{"vlogger-scenario": 1, "steps": [], "signals": [{"uid": "E008010000004212", "block": 0, "type": "u8", "repeat": "soon"}]}"#
            )
        }
    }

    /// The demo cage: past the rule's 24 °C after about 10 s, back at 21.5 °C ± 0.6 at 5 minutes, and again.
    @Test func theDemoCageCoolsEveryFiveMinutes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(
            contentsOf: root.appendingPathComponent("Config/demo-field/scenario.json"), encoding: .utf8)
        let cage = try #require(try Scenario.decode(text).signals.first { $0.block == 0xF8 && $0.byte == 0 })
        #expect(cage.value(atMs: 0) == 21.5 && cage.value(atMs: 20_000) > 24)
        #expect(cage.value(atMs: 299_000) > 80 && cage.value(atMs: 300_000) < 22.2)
        #expect(cage.value(atMs: 320_000) > 24)
    }
}
