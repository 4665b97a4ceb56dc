import FieldState
import Foundation
import ISO15693
import Testing
import VLoggerModel

/// The fields' live state as one model (issue 48, item 2): what the pages, `/api/v1/tags`, `/metrics` and servers
/// read, and the change stream a server subscribes to. The facts are the behaviour docs/design.md gives it ("The
/// field state"): values merged over a tag's plans and forgotten when it leaves, a violation a state from its
/// event to its end, a subscriber's changes in order, and a subscriber that falls behind told to read it again
/// while the polling threads never wait.
@Suite struct FieldStateTests {
    static let cage = try! UID(parsing: "E008010000004212")
    static let shelf = try! UID(parsing: "E004010812345601")

    static func state() -> FieldState {
        FieldState(
            readers: [
                FieldState.Reader(id: "cage-room", location: "Cold room", intervalMs: 1000),
                FieldState.Reader(id: "dock-3", location: "Dock door 3", intervalMs: 2000),
            ], units: ["temperature": "°C"])
    }

    static func reading(_ uid: UID, _ time: Millis, _ decoded: [(name: String, value: FieldValue)]) -> Reading {
        Reading(
            time: time, gateway: "gw", reader: "cage-room", location: "Cold room", uid: uid, first: BlockNumber(0xF8),
            count: 1, data: [0, 0, 0, 0], decoded: decoded)
    }

    static func event(
        _ kind: Event.Kind, _ uid: UID, _ time: Millis, name: String = "", severity: Event.Severity = .info
    )
        -> Event
    {
        Event(
            time: time, gateway: "gw", reader: "cage-room", location: "Cold room", uid: uid, kind: kind, name: name,
            severity: severity, detail: "\(kind)")
    }

    @Test func valuesMergeOverPlansCarryUnitsAndAreForgottenAtDeparture() {
        let s = Self.state()
        s.readingTaken(
            Self.reading(Self.cage, 1000, [("temperature", .number(4.5)), ("door", .text("shut"))]), asset: "CAGE-12")
        s.readingTaken(Self.reading(Self.cage, 2000, [("temperature", .number(5.0))]), asset: "CAGE-12")
        let v = s.latestValues[Self.cage]
        #expect(v?.time == 2000 && v?.asset == "CAGE-12")
        #expect(
            v?.values == [
                FieldState.Value(name: "temperature", value: .number(5.0), unit: "°C"),
                FieldState.Value(name: "door", value: .text("shut"), unit: nil),
            ])
        // A reading without decoded values changes nothing.
        s.readingTaken(Self.reading(Self.cage, 3000, []), asset: nil)
        #expect(s.latestValues[Self.cage]?.time == 2000)
        s.eventRecorded(Self.event(.departure, Self.cage, 4000), asset: nil)
        #expect(s.latestValues[Self.cage] == nil)
    }

    @Test func aViolationIsAStateFromItsEventToItsEndAndCriticalComesFirst() {
        let s = Self.state()
        s.readingTaken(Self.reading(Self.cage, 1000, [("temperature", .number(9.0))]), asset: nil)
        s.eventRecorded(Self.event(.violation, Self.cage, 1500, name: "too warm", severity: .warning), asset: nil)
        s.eventRecorded(Self.event(.violation, Self.shelf, 1600, name: "wrong maker", severity: .critical), asset: nil)
        #expect(s.alarms.map(\.rule) == ["wrong maker", "too warm"])
        // The alarm follows the tag's values while it lasts.
        s.readingTaken(Self.reading(Self.cage, 2000, [("temperature", .number(9.5))]), asset: nil)
        #expect(s.alarms.last?.latest.first?.value == .number(9.5))
        s.eventRecorded(Self.event(.violationEnded, Self.cage, 3000, name: "too warm"), asset: nil)
        #expect(s.alarms.map(\.rule) == ["wrong maker"])
    }

    @Test func aReaderChangeIsAChangeButItsPollTimeAloneIsNot() async {
        let s = Self.state()
        let (snapshot, changes) = s.subscribe(buffer: 16)
        #expect(snapshot.readers.map(\.id) == ["cage-room", "dock-3"])
        s.cycleDone(
            reader: "cage-room", tags: [Self.cage], up: true, lastGoodPollMs: 1000, name: "sim", intervalMs: 1000,
            location: "Cold room")
        s.cycleDone(
            reader: "cage-room", tags: [Self.cage], up: true, lastGoodPollMs: 2000, name: "sim", intervalMs: 1000,
            location: "Cold room")
        s.cycleDone(
            reader: "cage-room", tags: [Self.cage], up: false, lastGoodPollMs: 2000, name: "sim", intervalMs: 1000,
            location: "Cold room")
        s.cycleDone(
            reader: "nobody", tags: [], up: false, lastGoodPollMs: nil, name: "", intervalMs: 1, location: nil)
        var it = changes.makeAsyncIterator()
        guard case let .reader(first)? = await it.next(), case let .reader(second)? = await it.next() else {
            Issue.record("expected two reader changes")
            return
        }
        #expect(first.tags == [Self.cage] && first.up && first.lastGoodPollMs == 1000)
        #expect(!second.up)
        #expect(s.readers.first?.lastGoodPollMs == 2000)
        changes.cancel()
        #expect(await it.next() == nil)
        #expect(s.subscriberCount == 0)
    }

    /// A subscriber gets every change in order while it keeps up; one that falls behind by its whole buffer gets
    /// `.overflow`, reads the state again, and goes on from there; the feeding thread never waited for it.
    @Test func aSubscriberThatFallsBehindIsToldToReadTheStateAgain() async {
        let s = Self.state()
        let (_, changes) = s.subscribe(buffer: 8)
        var it = changes.makeAsyncIterator()
        for i in 0..<3 {
            s.readingTaken(Self.reading(Self.cage, Millis(i), [("temperature", .integer(Int64(i)))]), asset: nil)
        }
        for i in 0..<3 {
            guard case let .values(v)? = await it.next() else {
                Issue.record("change \(i) is not values")
                return
            }
            #expect(v.values.first?.value == .integer(Int64(i)) && v.time == Millis(i))
        }
        // 100 changes against a buffer of 8: the feeder runs through them all at once.
        for i in 0..<100 {
            s.readingTaken(
                Self.reading(Self.cage, Millis(100 + i), [("temperature", .integer(Int64(100 + i)))]), asset: nil)
        }
        guard case .overflow? = await it.next() else {
            Issue.record("expected .overflow")
            return
        }
        #expect(s.snapshot().values[Self.cage]?.values.first?.value == .integer(199))
        s.readingTaken(Self.reading(Self.cage, 500, [("temperature", .integer(500))]), asset: nil)
        guard case let .values(v)? = await it.next() else {
            Issue.record("expected the change after the overflow")
            return
        }
        #expect(v.values.first?.value == .integer(500))
    }

    /// Four threads feed one state while a subscriber takes its changes: every change arrives once, in each
    /// thread's order, and the state ends with each thread's last value.
    @Test func concurrentFeedersAndASubscriber() async {
        let s = FieldState(readers: [], units: [:])
        let uids = (0..<4).map { try! UID(parsing: String(format: "E00401000000%04X", $0)) }
        let (_, changes) = s.subscribe(buffer: 100_000)
        let perThread = 2000
        let consumer = Task { () -> [UID: [Int64]] in
            var got: [UID: [Int64]] = [:]
            var n = 0
            for await c in changes {
                if case let .values(v) = c, case let .integer(i)? = v.values.first?.value {
                    got[v.uid, default: []].append(i)
                }
                n += 1
                if n == 4 * perThread { break }
            }
            return got
        }
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<perThread {
                s.readingTaken(Self.reading(uids[t], Millis(i), [("n", .integer(Int64(i)))]), asset: nil)
            }
        }
        let got = await consumer.value
        for uid in uids {
            #expect(got[uid] == (0..<perThread).map(Int64.init))
            #expect(s.latestValues[uid]?.values.first?.value == .integer(Int64(perThread - 1)))
        }
    }

    /// An observer that starts from the state (`observe(from:)`, what the OPC UA namespace does) misses nothing:
    /// while a polling thread reads tags and sees them leave, the tags with values in the snapshot, plus those a
    /// reading brought and minus those that left after it, are at the end the tags the state has values of. (Read
    /// apart, a departure between the snapshot and the observation's start left a tag behind for good.)
    @Test func anObservationFromTheStateMissesNoChange() {
        let s = Self.state()
        let uids = (0..<8).map { try! UID(parsing: String(format: "E00401000000%04X", $0)) }
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var tags: Set<UID> = []
            func update(_ body: (inout Set<UID>) -> Void) { lock.withLock { body(&tags) } }
        }
        for round in 0..<50 {
            let seen = Seen()
            let feeder = Thread {
                for i in 0..<200 {
                    let uid = uids[(round + i) % uids.count]
                    if i % 3 == 2 {
                        s.eventRecorded(Self.event(.departure, uid, Millis(i)), asset: nil)
                    } else {
                        s.readingTaken(Self.reading(uid, Millis(i), [("n", .integer(Int64(i)))]), asset: nil)
                    }
                }
            }
            feeder.start()
            s.observe(
                from: { snap in seen.update { $0 = Set(snap.values.keys) } },
                { change in
                    switch change {
                    case .values(let v): seen.update { $0.insert(v.uid) }
                    case .departed(let uid, _, _): seen.update { $0.remove(uid) }
                    default: break
                    }
                })
            while !feeder.isFinished { usleep(100) }
            #expect(seen.lock.withLock { seen.tags } == Set(s.latestValues.keys), "round \(round)")
        }
    }
}
