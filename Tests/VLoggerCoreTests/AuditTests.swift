import Foundation
import ISO15693
import Readers
import TagSimulator
import TestDrivers
import Testing
import VLoggerStore
import VLoggerModel
@testable import VLoggerCore
import DriverSim

/// Audits on two simulated fields (a cage room and a dock door), with the demo tags.
@Suite(.drivers) struct AuditTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func reader(_ id: String, _ location: String, _ uids: [String]) throws -> (AuditReader, SimulatedField) {
        let demo = try FieldFolder(url: Self.root.appendingPathComponent("Config/demo-field"))
        let dock = try FieldFolder(url: Self.root.appendingPathComponent("Config/demo-field-dock"))
        let field = SimulatedField()
        for t in demo.field.tags + dock.field.tags where uids.contains(t.uid.description) {
            field.add(SimulatedTag(image: t.image))
        }
        return (
            AuditReader(
                config: ReaderConfig(id: id, location: location),
                session: ReaderSession(reader: SimulatorReader.switchedOn(field))),
            field
        )
    }

    /// The one orchestration abandons an audit whose wait between rounds is cut short (the service's shutdown): no
    /// record, so nothing half-done is stored; the first round's inventory was made.
    @Test func anAuditStoppedBetweenRoundsGivesNoRecord() async throws {
        let (cage, _) = try reader("r1", "cage", ["E008010000004212"])
        var settings = AuditSettings()
        settings.rounds = 2
        let clock = SimulatedClock(start: 1_763_800_000_000)
        var inventories = 0
        let counting = AuditParticipant(
            id: "r1",
            inventory: {
                inventories += 1
                return ((try? cage.session.client.inventory())?.map(\.uid) ?? [], clock.now())
            }, check: { _ in [] })
        let record = await Auditor.run(
            location: "cage", readers: [counting], register: [], lastSeen: [:], gateway: "gw", settings: settings,
            now: clock.now, wait: { _ in false })
        #expect(record == nil && inventories == 1)
    }

    @Test func everyAssetGetsOneResultAndUnregisteredTagsAreUnexpected() async throws {
        let uid = { (s: String) in try UID(parsing: s) }
        let register = [
            AssetRow(
                uid: try uid("E008010000004212"), assetID: "CAGE-12", location: "cage", extra: ["model": "MB89R118"]),
            AssetRow(
                uid: try uid("E002260000C0FFEE"), assetID: "AS-00042", location: "cage",
                extra: ["model": "SLIX2", "block_0x100": "41532D3030303432"]),
            AssetRow(
                // at the dock
                uid: try uid("E004010812345602"), assetID: "PAL-0002", location: "cage", extra: ["locked_0x00": "yes"]),
            AssetRow(uid: try uid("E00401000000BEEF"), assetID: "PAL-0099", location: "cage"),  // nowhere
            // here, registered at the dock
            AssetRow(uid: try uid("E004010812345601"), assetID: "PAL-0001", location: "dock"),
        ]
        let (cage, field) = try reader(
            "r1", "cage", ["E008010000004212", "E002260000C0FFEE", "E004010812345601", "E007C00000000505"])
        // The bin answers only the first round: seen in 1 of 3, still seen (a tag missed once is not missing).
        var settings = AuditSettings()
        settings.rounds = 3
        settings.spacingMs = 500
        let clock = SimulatedClock(start: 1_763_800_000_000)
        let bin = try uid("E007C00000000505")
        var armed = true
        cage.session.reader.trace = { e in
            if armed, e.direction == .tagToReader { armed = false; _ = field.remove(bin) }
        }
        let lastSeen: [UID: (time: Millis, reader: String?, location: String?)] = [
            try uid("E004010812345602"): (clock.now() - 60_000, "r2", "dock")
        ]
        var waits: [Millis] = []
        let a = try #require(
            await Auditor.run(
                location: "cage", readers: [AuditParticipant(cage, now: clock.now)], register: register,
                lastSeen: lastSeen, gateway: "gw", settings: settings, now: clock.now,
                wait: { ms in
                    waits.append(ms)
                    clock.sleep(untilMs: ms, stop: StopSignal())
                    return true
                }))
        // Rounds 2 and 3 start 500 ms and 1000 ms after the audit's start.
        #expect(waits == [1_763_800_000_500, 1_763_800_001_000])
        let by = Dictionary(uniqueKeysWithValues: a.results.map { ($0.uid.description, $0) })
        #expect(a.results.count == 6)
        #expect(
            by["E008010000004212"]?.status == .present && by["E008010000004212"]?.seenRounds == 3
                && by["E008010000004212"]?.failedChecks == [])
        // The ST25DV's asset block matches; its model does not (a registered mistake is reported as a failed check).
        #expect(
            by["E002260000C0FFEE"]?.status == .present
                && by["E002260000C0FFEE"]?.failedChecks == ["model: ST ST25DV64K, registered SLIX2"],
            "\(by["E002260000C0FFEE"]?.failedChecks ?? [])")
        #expect(by["E004010812345602"]?.status == .wrongLocation && by["E004010812345602"]?.seenLocation == "dock")
        #expect(by["E00401000000BEEF"]?.status == .missing)
        #expect(
            by["E004010812345601"]?.status == .wrongLocation && by["E004010812345601"]?.registeredLocation == "dock"
                && by["E004010812345601"]?.seenLocation == "cage")
        #expect(by["E007C00000000505"]?.status == .unexpected && by["E007C00000000505"]?.seenRounds == 1)
        #expect(
            a.count(.present) == 2 && a.count(.missing) == 1 && a.count(.wrongLocation) == 2
                && a.count(.unexpected) == 1 && a.failedChecks == 1)
        // The rounds are spaced on the clock: 3 rounds, 500 ms apart.
        #expect(a.finished - a.started == 1000)
        // Stored and read back whole.
        let store = try Store(path: scratchPath("audit.db"))
        let id = try store.saveAudit(a)
        let back = try #require(try store.audit(id))
        #expect(back.results.count == 6 && back.count(.wrongLocation) == 2 && back.failedChecks == 1)
        #expect(
            back.results.first { $0.uid.description == "E002260000C0FFEE" }?.failedChecks == [
                "model: ST ST25DV64K, registered SLIX2"
            ])
        #expect(try store.audits(location: "cage").first?.count(.present) == 2)
    }

    @Test func diffListsStatusAndCheckChangesOnly() throws {
        let a1 = try UID(parsing: "E008010000004212"), a2 = try UID(parsing: "E004010812345602"),
            u = try UID(parsing: "E007C00000000506")
        func r(_ uid: UID, _ s: AuditResult.Status, _ checks: [String] = []) -> AuditResult {
            AuditResult(
                uid: uid, assetID: nil, status: s, registeredLocation: "dock", seenLocation: nil, seenBy: nil,
                seenRounds: 3, firstSeen: nil, lastSeen: nil, failedChecks: checks)
        }
        let before = AuditRecord(
            started: 0, finished: 1, gateway: "gw", location: "dock", readers: ["r"], rounds: 3, trigger: "manual",
            results: [r(a1, .present), r(a2, .present), r(u, .unexpected)])
        let after = AuditRecord(
            started: 10, finished: 11, gateway: "gw", location: "dock", readers: ["r"], rounds: 3, trigger: "manual",
            results: [r(a1, .missing), r(a2, .present, ["block 0x00 not locked, registered locked"])])
        let changes = AuditChange.between(before, after)
        #expect(changes.map(\.uid) == [a2, a1, u].sorted { $0.description < $1.description })
        #expect(changes.first { $0.uid == a1 }.map { ($0.before, $0.after) } ?? (nil, nil) == (.present, .missing))
        #expect(changes.first { $0.uid == u }?.after == nil)
        #expect(changes.first { $0.uid == a2 }?.checksAfter == ["block 0x00 not locked, registered locked"])
        #expect(AuditChange.between(before, before).isEmpty)
    }
}

/// The blocks file of `vlogger write --when-seen --blocks-from` and the write API's lock keys.
@Suite(.drivers) struct BlockFileTests {
    @Test func consecutiveBlocksBecomeOneWriteInBlockOrder() throws {
        let runs = try BlockFile.parse(
            "# label\n0x11: 30303432\n0x10  41 53 2D 30\n\n20,DEADBEEF   # the serial\n21=00000000\r\n")
        #expect(runs.map { $0.first.int } == [0x10, 20])
        #expect(runs.map { Hex.format($0.data, separator: "") } == ["41532D3030303432", "DEADBEEF00000000"])
        // A run longer than a queued write (2048 bytes) is split at whole blocks.
        let long = (0..<600).map { String(format: "%d %08X", $0, $0) }.joined(separator: "\n")
        #expect(try BlockFile.parse(long).map { $0.data.count } == [2048, 352])
    }

    @Test func badFilesNameTheLine() {
        for (text, says) in [
            ("", "no blocks"), ("# nothing\n", "no blocks"), ("0x10\n", "line 1: expected a block number"),
            ("0x10 4153\n0x11 41532D30\n", "line 2: 4 bytes, but line 1 has 2"),
            ("0x10 41\n0x10 42\n", "line 2: block 0x10 is already on line 1"),
            ("x 00\n", "line 1: block 'x'"), ("1 0G\n", "line 1: data"), ("70000 00\n", "line 1: block '70000'"),
            ("1 " + String(repeating: "00", count: 33) + "\n", "33 bytes; a block has 1 to 32"),
        ] {
            #expect(throws: BlockFile.Invalid.self, "\(text)") { try BlockFile.parse(text) }
            do { _ = try BlockFile.parse(text) } catch {
                #expect(error.description.contains(says), "\(text): \(error)")
            }
        }
    }

    @Test func locksOverTheAPIOnlyWithYes() throws {
        func parse(_ s: String) throws(WriteRequest.Invalid) -> QueuedWrite {
            try WriteRequest.parse(Data(s.utf8), now: 0)
        }
        #expect(try parse(#"{"uid": "E004011000000A03", "block": 21, "lock": true, "yes": true}"#).operation == .lock)
        let wl = try parse(#"{"uid": "E004011000000A03", "block": 16, "data": "41532D30", "lock": true, "yes": true}"#)
        #expect(wl.operation == .writeLock && wl.data == [0x41, 0x53, 0x2D, 0x30])
        #expect(
            try parse(#"{"uid": "E004011000000A03", "block": 16, "data": "41532D30", "lock": false}"#).operation
                == .write)
        for (body, says) in [
            (#"{"uid": "E004011000000A03", "block": 21, "lock": true}"#, "irreversible"),
            (#"{"uid": "E004011000000A03", "block": 21, "lock": 1, "yes": 1}"#, "lock: true or false"),
            (#"{"uid": "E004011000000A03", "block": 21, "lock": true, "yes": "yes"}"#, "yes: true or false"),
            (#"{"uid": "E004011000000A03", "block": 21, "data": "00", "yes": true}"#, "yes: confirms a lock"),
        ] {
            do { _ = try parse(body); Issue.record("accepted \(body)") } catch {
                #expect(error.description.contains(says), "\(body): \(error)")
            }
        }
    }
}
