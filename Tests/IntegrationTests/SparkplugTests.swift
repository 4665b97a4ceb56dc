import Foundation
import Testing

/// The Sparkplug B edge node (`sparkplug = true`) against a real broker (Eclipse Mosquitto, bench/mqtt/broker.sh)
/// and a decoder nobody here wrote: Python's protobuf runtime with code Debian's protoc generates from Eclipse
/// Tahu's schema (Tests/IntegrationTests/Support/sparkplug/), behind Eclipse Paho
/// (Support/sparkplug_subscriber.py). The rules checked are the Sparkplug 3.0 specification's, as
/// docs/reference/sparkplug-b.md gives them with their tck-ids.
@Suite(.serialized, .enabled(if: mqttAvailable() && sparkplugDecoderAvailable(), "no mosquitto, paho or protobuf here"))
struct SparkplugTests {
    typealias CLI = CLITests
    typealias Fault = SyncFaultTests
    typealias Broker = MQTTTests.Broker

    /// One decoded message.
    struct Message {
        var topic: String
        var qos: Int
        var payload: [String: Any]
        var type: String { topic.split(separator: "/").dropFirst(2).first.map(String.init) ?? "" }
        var device: String? { topic.split(separator: "/").dropFirst(4).first.map(String.init) }
        var seq: Int? { payload["seq"] as? Int }
        var metrics: [[String: Any]] { payload["metrics"] as? [[String: Any]] ?? [] }
        func metric(_ name: String) -> [String: Any]? { metrics.first { $0["name"] as? String == name } }
        func values(_ name: String) -> [Any] {
            metrics.filter { $0["name"] as? String == name }.compactMap { $0["value"] }
        }
    }

    struct Subscriber {
        let out: String
        let pid: pid_t

        static func start(_ broker: Broker, dir: URL) throws -> Subscriber {
            let out = dir.appendingPathComponent("spb.jsonl").path
            let script = CLI.root.appendingPathComponent("Tests/IntegrationTests/Support/sparkplug_subscriber.py").path
            let pid = try Fault.spawn(
                #"exec python3 "$@""#, [script, "127.0.0.1", broker.port, out, "300"],
                stdout: dir.appendingPathComponent("spb.out").path, stderr: dir.appendingPathComponent("spb.err").path)
            let end = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: out + ".ready") && Date() < end {
                Thread.sleep(forTimeInterval: 0.05)
            }
            guard FileManager.default.fileExists(atPath: out + ".ready") else {
                throw CLI.CLIFailure(
                    "the Sparkplug subscriber did not start: \((try? String(contentsOfFile: dir.appendingPathComponent("spb.err").path, encoding: .utf8)) ?? "")"
                )
            }
            return Subscriber(out: out, pid: pid)
        }

        func messages() -> [Message] {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let t = o["topic"] as? String
                else { return nil }
                return Message(
                    topic: t, qos: o["qos"] as? Int ?? -1,
                    payload: o["payload"] as? [String: Any] ?? ["text": o["payload"] ?? ""])
            }
        }

        /// Waits until `done` holds for the messages so far (or 30 s).
        @discardableResult
        func wait(_ what: String, seconds: Double = 30, _ done: ([Message]) -> Bool) -> [Message] {
            let end = Date().addingTimeInterval(seconds)
            var m = messages()
            while !done(m) && Date() < end {
                Thread.sleep(forTimeInterval: 0.1)
                m = messages()
            }
            if !done(m) {
                Issue.record("waited \(Int(seconds)) s for \(what); \(m.count) messages: \(m.suffix(5).map(\.topic))")
            }
            return m
        }

        func command(_ name: String, _ text: String) throws {
            try text.write(toFile: out + "." + name, atomically: true, encoding: .utf8)
        }

        func stop() {
            _ = FileManager.default.createFile(atPath: out + ".stop", contents: nil)
            _ = Fault.wait(pid)
        }
    }

    static let edge = "spBv1.0/plant-1/"

    static func config(_ s: (dir: URL, config: String, store: String), _ broker: Broker, extra: String = "") throws {
        try MQTTTests.config(
            s,
            "url = \"mqtt://127.0.0.1:\(broker.port)\"\nsparkplug = true\nsparkplug-group = \"plant-1\"\n\(extra)")
    }

    /// The session rules over the messages of one edge node, in the order the broker delivered them: each
    /// connection's first message is NBIRTH with seq 0 (tck-id-topics-nbirth-seq-num); every later message but
    /// NDEATH has seq = the previous + 1, 255 followed by 0 (tck-id-payloads-sequence-num-incrementing); NDEATH has
    /// no seq (tck-id-topics-ndeath-seq) and the bdSeq of its session's NBIRTH (tck-id-topics-nbirth-bdseq-matching);
    /// DDATA and DDEATH only for a device with a DBIRTH since the last NBIRTH; a metric repeated in one message
    /// has distinct timestamps; BIRTH metrics each have a timestamp and a datatype, DATA metrics no datatype
    /// (tck-id-payloads-metric-datatype-not-req) and only names their birth declared (tck-id-topics-dbirth-metric-
    /// reqs); QoS 0 but for NDEATH (1).
    /// Returns the bdSeq of each NBIRTH (and counts in `wraps` each 255 followed by 0).
    static func checkSession(_ all: [Message], wraps: UnsafeMutablePointer<Int>? = nil) -> [Int] {
        // What the node publishes (not the commands a host sends it).
        let messages = all.filter { $0.topic.hasPrefix(edge) && !$0.type.hasSuffix("CMD") }
        var expected: Int?
        var bdSeqs: [Int] = []
        var born = Set<String>()
        var declared: [String: Set<String>] = [:]
        var nodeDeclared = Set<String>()
        var lastBirthBdSeq: Int?
        for m in messages {
            switch m.type {
            case "NBIRTH":
                #expect(m.seq == 0, "NBIRTH seq \(String(describing: m.seq))")
                let bd = m.metric("bdSeq")
                #expect(
                    bd?["datatype"] as? Int == 4 && bd?["value_field"] as? String == "long_value",
                    "\(String(describing: bd))")
                let rebirth = m.metric("Node Control/Rebirth")
                #expect(rebirth?["datatype"] as? Int == 11 && rebirth?["value"] as? Bool == false)
                lastBirthBdSeq = bd?["value"] as? Int
                bdSeqs.append(lastBirthBdSeq ?? -1)
                born = []
                nodeDeclared = Set(m.metrics.compactMap { $0["name"] as? String })
                expected = 1
            case "NDEATH":
                #expect(m.seq == nil && m.qos == 1, "NDEATH: seq \(String(describing: m.seq)), QoS \(m.qos)")
                // The bdSeq of its session's NBIRTH; or, for a session the broker lost before its NBIRTH (its Will),
                // a bdSeq past the last NBIRTH's: a new connection's number (tck-id-topics-nbirth-bdseq-increment).
                let death = m.values("bdSeq").first as? Int
                #expect(
                    death == lastBirthBdSeq || (death ?? -1) > (lastBirthBdSeq ?? -1),
                    "NDEATH bdSeq \(String(describing: death)) vs NBIRTH \(String(describing: lastBirthBdSeq))")
                #expect(m.metrics.count == 1)
                expected = nil
            default:
                #expect(m.qos == 0, "\(m.topic) QoS \(m.qos)")
                if let e = expected {
                    #expect(m.seq == e, "\(m.topic): seq \(String(describing: m.seq)), expected \(e)")
                }
                if m.seq == 0 { wraps?.pointee += 1 }
                expected = m.seq.map { $0 == 255 ? 0 : $0 + 1 }
                if m.type == "DBIRTH", let d = m.device {
                    born.insert(d)
                    declared[d] = Set(m.metrics.compactMap { $0["name"] as? String })
                }
                if m.type == "DDATA" || m.type == "DDEATH" {
                    #expect(m.device.map(born.contains) == true, "\(m.topic) before its DBIRTH")
                }
                if m.type == "DDATA" || m.type == "NDATA" {
                    let names = m.type == "NDATA" ? nodeDeclared : declared[m.device ?? ""] ?? []
                    for x in m.metrics {
                        #expect(!(x["datatype"] is Int), "\(m.topic): \(x["name"] ?? "") has a datatype in DATA")
                        #expect(
                            names.contains(x["name"] as? String ?? ""),
                            "\(m.topic): \(x["name"] ?? "") not in its birth")
                    }
                }
                if m.type == "DDEATH", let d = m.device { born.remove(d) }
            }
            if m.type.hasSuffix("BIRTH") {
                #expect(m.metrics.allSatisfy { $0["timestamp"] is Int && $0["datatype"] is Int }, "\(m.topic)")
            }
            var seen = Set<String>()
            for x in m.metrics {
                let key = "\(x["name"] ?? "")@\(x["timestamp"] ?? "")"
                #expect(seen.insert(key).inserted, "\(m.topic): \(key) twice in one message")
            }
        }
        return bdSeqs
    }

    /// The keys of the rows the messages carry (`Reading/JSON`, `Event/JSON`), with whether each was historical.
    static func keys(_ messages: [Message]) -> [String: Bool] {
        var out: [String: Bool] = [:]
        for m in messages where m.type == "DDATA" || m.type == "NDATA" {
            for x in m.metrics where ["Reading/JSON", "Event/JSON"].contains(x["name"] as? String ?? "") {
                guard let text = x["value"] as? String, let o = MQTTTests.object(text), let k = o["key"] as? String
                else { continue }
                out[k] = (x["is_historical"] as? Bool) ?? false
            }
        }
        return out
    }

    /// A demo run, decoded by the independent decoder: one session by the rules above, every stored reading and
    /// event in a data message, each tag a device (named by its asset id: Config/assets.csv has E008010000004212 as
    /// CAGE-12) whose DBIRTH declares every field with its type and unit (decoded numbers Double 10, `engUnit` °C)
    /// and whose DDATA carries the values without types, the clean leave an NDEATH. Then the stream again through
    /// pysparkplug (PyPI), a second implementation nobody here wrote (Support/sparkplug_check.py).
    @Test func aDemoRunIsOneSessionWithEveryRow() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "200ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try Self.config(s, broker)
        let sub = try Subscriber.start(broker, dir: s.dir)
        defer { sub.stop() }
        let run = try CLI.run(["run", "--config", s.config, "--duration", "4s"])
        #expect(run.code == 0, "\(run.err)")
        let stored = try MQTTTests.storedKeys(s.store, gateway: "gw-demo-01")
        let all = sub.wait("NDEATH") { $0.contains { $0.type == "NDEATH" } }
        Thread.sleep(forTimeInterval: 1)
        #expect(
            sub.messages().filter { $0.type == "NDEATH" }.count == 1, "a clean leave is one NDEATH (no Will after it)")
        let bdSeqs = Self.checkSession(all)
        #expect(bdSeqs == [0], "\(bdSeqs)")
        #expect(all.first?.type == "NBIRTH" && all.dropFirst().first?.type == "DBIRTH")
        #expect(all.last?.type == "NDEATH")
        #expect(stored.count > 20)
        #expect(
            Set(Self.keys(all).keys) == stored, "missing: \(stored.subtracting(Self.keys(all).keys).sorted().prefix(5))"
        )
        // Issue 47, item 3: one device per tag, born once (the demo run is one session), never mixed.
        let births = all.filter { $0.type == "DBIRTH" }
        #expect(Set(births.compactMap(\.device)).count == births.count, "a device born twice: \(births.map(\.topic))")
        let cage = try #require(births.first { $0.device == "CAGE-12" }, "\(births.map(\.topic))")
        #expect(cage.metric("Properties/UID")?["value"] as? String == "E008010000004212")
        let temperature = try #require(cage.metric("Field/temperature"))
        #expect(temperature["datatype"] as? Int == 10)
        #expect((temperature["properties"] as? [String: Any])?["engUnit"] as? String == "°C", "\(temperature)")
        #expect(cage.metric("Reading/Data")?["datatype"] as? Int == 17)
        #expect(
            cage.metric("Reading/Block")?["datatype"] as? Int == 4
                && cage.metric("Reading/Block")?["is_null"] as? Bool == true)
        // Its data: the demo's climate tag, 21.5 °C, 45 % (Config/demo-field), the reader as a property.
        let reading = try #require(all.first { $0.type == "DDATA" && $0.device == "CAGE-12" })
        #expect(reading.values("Field/temperature").first as? Double == 21.5, "\(reading.metrics)")
        #expect(reading.values("Properties/Reader").first as? String == "cage-room", "\(reading.metrics)")
        #expect(
            reading.metric("Reading/Block")?["value_field"] as? String == "long_value"
                && !(reading.metric("Reading/Block")?["datatype"] is Int))
        for m in all where m.type == "DDATA" {
            for json in m.values("Reading/JSON") {
                let uid = (json as? String).flatMap(MQTTTests.object)?["uid"] as? String
                #expect(uid == births.first { $0.device == m.device }?.metric("Properties/UID")?["value"] as? String)
            }
        }
        // pysparkplug's reading of the same stream.
        let check = try Fault.shell(
            #"python3 "$1" "$2" plant-1"#,
            [CLI.root.appendingPathComponent("Tests/IntegrationTests/Support/sparkplug_check.py").path, sub.out])
        if check.err.contains("No module named 'pysparkplug'") {
            #expect(ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_MQTT"] != "1", "pysparkplug is required here")
        } else {
            #expect(check.code == 0, "\(check.out)\(check.err)")
            print("pysparkplug: \(check.out)")
        }
        // The bdSeq of the next connection is kept beside the store.
        let kept = try String(
            contentsOfFile: s.dir.appendingPathComponent("sparkplug-mqtt.bdseq").path, encoding: .utf8)
        #expect(kept.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    /// The service killed: the broker publishes its Will, NDEATH with the session's bdSeq; started again while the
    /// broker is down for 15 s, it keeps polling, then connects with the next bdSeq (kept across the restart), and
    /// the backlog arrives marked is_historical while newer rows do not; every stored row arrives. An NCMD rebirth
    /// request brings NBIRTH (seq 0, the same bdSeq) and the DBIRTH again.
    @Test func aKilledNodeDiesByItsWillAndComesBackWithItsBacklog() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "500ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        // One row a round, one message a row (each tag is one device, whose rows would share a message while their
        // times differ): the second session goes past 256 messages before the rebirth below, so its seq wraps.
        try Self.config(s, broker, extra: "batch-size = 1")
        let sub = try Subscriber.start(broker, dir: s.dir)
        defer { sub.stop() }
        func start() throws -> pid_t {
            try Fault.spawn(
                #"exec "$1" run --config "$2""#, [try CLI.binary().path, s.config],
                stdout: s.dir.appendingPathComponent("gw.out").path, stderr: s.dir.appendingPathComponent("gw.err").path
            )
        }
        var pid = try start()
        sub.wait("data of the first session") { $0.contains { $0.type == "DDATA" } }
        kill(pid, SIGKILL)
        _ = Fault.wait(pid)
        sub.wait("the Will") { $0.contains { $0.type == "NDEATH" } }
        try broker.down()
        pid = try start()
        Thread.sleep(forTimeInterval: 15)
        try broker.up()
        sub.wait("the second NBIRTH", seconds: 90) { $0.filter { $0.type == "NBIRTH" }.count == 2 }
        // The backlog and the live rows after it: past 256 messages of the second session (a seq wrap) first.
        sub.wait("300 messages of the second session", seconds: 90) { m in
            guard let second = m.indices.filter({ m[$0].type == "NBIRTH" }).dropFirst().first else { return false }
            return m[second...].filter { $0.topic.hasPrefix(Self.edge) && !$0.type.hasSuffix("CMD") }.count >= 300
        }
        let before = sub.messages().count
        try sub.command("rebirth", Self.edge + "NCMD/gw-demo-01")
        let all = sub.wait("the rebirth") { $0.filter { $0.type == "NBIRTH" }.count == 3 }
        #expect(all[before...].contains { $0.type == "NBIRTH" })
        Thread.sleep(forTimeInterval: 2)
        kill(pid, SIGTERM)
        #expect(Fault.wait(pid) == 0)
        // The clean NDEATH: the last message of the node, after the rebirth.
        let final = sub.wait("the clean NDEATH") { m in
            let node = m.filter { $0.topic.hasPrefix(Self.edge) && !$0.type.hasSuffix("CMD") }
            return node.last?.type == "NDEATH" && node.filter { $0.type == "NBIRTH" }.count >= 3
        }
        var wraps = 0
        let bdSeqs = Self.checkSession(final, wraps: &wraps)
        // The first process's session is 0; the restarted process goes on from its kept number (not 0 again), one
        // number per accepted connection (more than one if the broker lost a connection under load); a rebirth
        // keeps its session's number. On a quiet machine: [0, 1, 1].
        #expect(bdSeqs.first == 0 && bdSeqs.count >= 3, "\(bdSeqs)")
        let later = Array(bdSeqs.dropFirst())
        #expect(later.allSatisfy { $0 > 0 } && later == later.sorted(), "\(bdSeqs)")
        #expect(bdSeqs.suffix(2).first == bdSeqs.last, "the rebirth keeps the bdSeq: \(bdSeqs)")
        // The backlog's session publishes more than 256 messages: its seq goes past 255 to 0 (checked above).
        #expect(wraps > 0, "no seq wrap seen in \(final.count) messages")
        let stored = try MQTTTests.storedKeys(s.store, gateway: "gw-demo-01")
        let keys = Self.keys(final)
        #expect(Set(keys.keys) == stored, "missing: \(stored.subtracting(keys.keys).sorted().prefix(5))")
        let historical = keys.values.filter { $0 }.count
        print(
            "Sparkplug restart: \(stored.count) rows stored, \(historical) arrived is_historical, \(final.count) messages, \(wraps) seq wraps, bdSeq \(bdSeqs)"
        )
        #expect(historical > 0 && historical < stored.count)
    }

    /// A reader that fails (the FEIG reader emulator killed) is the node's `Reader/door-feig/Up` = false (NDATA);
    /// back on the same port, true again, and the readings it takes follow as DDATA of their tags, with
    /// `Properties/Reader` door-feig. No device dies: a tag is not its reader (issue 47, item 3).
    @Test func aReaderThatFailsIsDownOnTheNodeAndComesBack() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "300ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let field = try CLI.field()
        defer { try? FileManager.default.removeItem(at: field) }
        var emu = try FEIGCLITests.Emulator(field: field)
        let port = String(emu.address.split(separator: ":").last ?? "")
        var text = try String(contentsOfFile: s.config, encoding: .utf8)
        text +=
            "\n[[reader]]\nid = \"door-feig\"\ndriver = \"feig\"\ndevice = \"\(emu.address)\"\nlocation = \"Door 1\"\n"
        try text.write(toFile: s.config, atomically: true, encoding: .utf8)
        try Self.config(s, broker)
        let sub = try Subscriber.start(broker, dir: s.dir)
        defer { sub.stop() }
        let pid = try Fault.spawn(
            #"exec "$1" run --config "$2""#, [try CLI.binary().path, s.config],
            stdout: s.dir.appendingPathComponent("gw.out").path, stderr: s.dir.appendingPathComponent("gw.err").path)
        func byFeig(_ m: Message) -> Bool {
            m.type == "DDATA" && m.values("Properties/Reader").contains { $0 as? String == "door-feig" }
        }
        func up(_ m: Message, _ value: Bool) -> Bool {
            m.type == "NDATA" && m.values("Reader/door-feig/Up").contains { $0 as? Bool == value }
        }
        sub.wait("door-feig data") { $0.contains(where: byFeig) }
        emu.stop()
        sub.wait("door-feig down on the node") { $0.contains { up($0, false) } }
        emu = try FEIGCLITests.Emulator(field: field, extra: ["--tcp", port])
        defer { emu.stop() }
        let all = sub.wait("up again and data after it") { m in
            guard let down = m.firstIndex(where: { up($0, false) }),
                let again = m[down...].firstIndex(where: { up($0, true) })
            else { return false }
            return m[again...].contains(where: byFeig)
        }
        kill(pid, SIGTERM)
        _ = Fault.wait(pid)
        _ = Self.checkSession(all)
        #expect(!all.contains { $0.type == "DDEATH" }, "a device died with its reader")
        let birth = try #require(all.first { $0.type == "NBIRTH" })
        #expect(birth.metric("Reader/door-feig/Up")?["datatype"] as? Int == 11)
        #expect(birth.metric("Reader/door-feig/Location")?["value"] as? String == "Door 1")
    }

    /// With a primary host: no birth until its STATE says online; its STATE saying offline brings NDEATH and a
    /// new connection (the next bdSeq) that waits again; online again, the births and the rows kept meanwhile.
    @Test func aPrimaryHostGatesTheBirths() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "300ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try Self.config(s, broker, extra: "sparkplug-primary-host = \"scada-1\"\ninterval = \"200ms\"")
        let sub = try Subscriber.start(broker, dir: s.dir)
        defer { sub.stop() }
        let pid = try Fault.spawn(
            #"exec "$1" run --config "$2""#, [try CLI.binary().path, s.config],
            stdout: s.dir.appendingPathComponent("gw.out").path, stderr: s.dir.appendingPathComponent("gw.err").path)
        Thread.sleep(forTimeInterval: 3)
        #expect(!sub.messages().contains { $0.topic.hasPrefix(Self.edge) }, "a birth before the host was online")
        let t0 = Int(Date().timeIntervalSince1970 * 1000)
        try sub.command("state", "scada-1 online \(t0)")
        sub.wait("NBIRTH after STATE online") { $0.contains { $0.type == "NBIRTH" } }
        sub.wait("data") { $0.contains { $0.type == "DDATA" } }
        try sub.command("state", "scada-1 offline \(t0 + 1)")
        sub.wait("NDEATH after STATE offline") { $0.contains { $0.type == "NDEATH" } }
        Thread.sleep(forTimeInterval: 2)
        try sub.command("state", "scada-1 online \(t0 + 2)")
        let all = sub.wait("the second NBIRTH", seconds: 60) { $0.filter { $0.type == "NBIRTH" }.count == 2 }
        Thread.sleep(forTimeInterval: 2)
        kill(pid, SIGTERM)
        _ = Fault.wait(pid)
        let final = sub.wait("the clean NDEATH") { $0.filter { $0.type == "NDEATH" }.count == 2 }
        #expect(all.count <= final.count)
        let bdSeqs = Self.checkSession(final)
        #expect(bdSeqs.count == 2 && bdSeqs[1] == bdSeqs[0] + 1, "\(bdSeqs)")
        let stored = try MQTTTests.storedKeys(s.store, gateway: "gw-demo-01")
        #expect(Set(Self.keys(final).keys) == stored)
    }

    /// Issue 46, items 6 and 10: a STATE from far in the future (a forged or broken host clock) is ignored, so the
    /// true host's later STATE still counts; 200 rebirth requests in a burst make one rebirth (at most one per
    /// `sparkplug-rebirth-interval`, 5 s by default), not 200. On 6b52d4c the forged STATE sent NDEATH and the
    /// node stayed silent until a restart, and 200 NCMD gave 200 NBIRTHs.
    @Test func aForgedStateAndARebirthFloodAreShrugged() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "300ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try Self.config(s, broker, extra: "sparkplug-primary-host = \"scada-1\"\ninterval = \"200ms\"")
        let sub = try Subscriber.start(broker, dir: s.dir)
        defer { sub.stop() }
        let pid = try Fault.spawn(
            #"exec "$1" run --config "$2""#, [try CLI.binary().path, s.config],
            stdout: s.dir.appendingPathComponent("gw.out").path, stderr: s.dir.appendingPathComponent("gw.err").path)
        defer {
            kill(pid, SIGKILL)
            _ = Fault.wait(pid)
        }
        let t0 = Int(Date().timeIntervalSince1970 * 1000)
        try sub.command("state", "scada-1 online \(t0)")
        sub.wait("NBIRTH after STATE online") { $0.contains { $0.type == "NBIRTH" } }
        try sub.command("rebirth", "\(Self.edge)NCMD/gw-demo-01 200")
        Thread.sleep(forTimeInterval: 4)
        let births = sub.messages().filter { $0.type == "NBIRTH" }.count
        #expect(births <= 2, "\(births) NBIRTHs after 200 rebirth requests in 4 s")
        // Ten years ahead: ignored.
        try sub.command("state", "scada-1 offline \(t0 + 315_360_000_000)")
        Thread.sleep(forTimeInterval: 3)
        #expect(!sub.messages().contains { $0.type == "NDEATH" }, "the forged STATE was believed")
        // The host's own next STATE counts.
        try sub.command("state", "scada-1 offline \(t0 + 5)")
        sub.wait("NDEATH after the true STATE offline") { $0.contains { $0.type == "NDEATH" } }
        let log = try String(contentsOfFile: s.dir.appendingPathComponent("gw.err").path, encoding: .utf8)
        #expect(log.contains("ahead of this gateway's clock"), "\(log.suffix(2000))")
        // The ignored requests are said in one line, not 199.
        #expect(
            log.components(separatedBy: "rebirth request within the rebirth interval").count <= 3, "\(log.suffix(2000))"
        )
    }
}

/// Python's protobuf runtime and Debian's protoc (in CI: installed by .ci/run, so the tests run).
func sparkplugDecoderAvailable() -> Bool {
    if ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_MQTT"] == "1" { return true }
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/protoc") else { return false }
    return (try? SyncFaultTests.shell("python3 -c 'import google.protobuf'", []).code) == 0
}
