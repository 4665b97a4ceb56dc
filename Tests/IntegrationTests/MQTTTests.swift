import Foundation
import Testing
import VLoggerStore

/// Whether the MQTT tests can run here (always in CI, where VLOGGER_REQUIRE_MQTT=1 makes a missing tool a failure).
func mqttAvailable() -> Bool {
    if ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_MQTT"] == "1" { return true }
    guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/mosquitto") else { return false }
    return (try? SyncFaultTests.shell("python3 -c 'import paho.mqtt.client'", []).code) == 0
}

/// The MQTT output against a real broker (Eclipse Mosquitto, bench/mqtt/broker.sh: loopback, free ports, a folder
/// of each test's own, stopped by its PID) and an independent subscriber (Eclipse Paho, Python:
/// Tests/IntegrationTests/Support/mqtt_subscriber.py). Skipped where mosquitto or paho is missing, except in CI
/// (VLOGGER_REQUIRE_MQTT=1), where they must run.
@Suite(.serialized, .enabled(if: mqttAvailable(), "no mosquitto or paho-mqtt here"))
struct MQTTTests {
    typealias CLI = CLITests
    typealias Fault = SyncFaultTests

    /// A broker of the test's own.
    struct Broker {
        let dir: String
        let env: [String: String]
        static let script = CLI.root.appendingPathComponent("bench/mqtt/broker.sh").path

        static func start() throws -> Broker {
            let dir = "/tmp/vlogger-mqtt-test-\(UInt32.random(in: 0...UInt32.max))"
            let r = try Fault.shell(#"VLOGGER_MQTT_DIR="$1" bash "$2" start"#, [dir, script])
            guard r.code == 0, r.out.hasPrefix("export ") else {
                throw CLI.CLIFailure("broker.sh start: \(r.out)\(r.err)")
            }
            var env: [String: String] = [:]
            for pair in r.out.dropFirst("export ".count).split(separator: " ") {
                let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if kv.count == 2 { env[kv[0]] = kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "'\n")) }
            }
            return Broker(dir: dir, env: env)
        }

        var port: String { env["VLOGGER_TEST_MQTT_PORT"] ?? "" }
        var tlsPort: String { env["VLOGGER_TEST_MQTT_TLS_PORT"] ?? "" }

        func restart(_ signal: String) throws {
            let r = try Fault.shell(#"VLOGGER_MQTT_DIR="$1" bash "$2" restart "$3""#, [dir, Self.script, signal])
            if r.code != 0 { throw CLI.CLIFailure("broker.sh restart: \(r.err)") }
        }

        /// Stopped (SIGTERM) with its folder kept, and started again on the same ports.
        func down() throws {
            let r = try Fault.shell(#"VLOGGER_MQTT_DIR="$1" bash "$2" down"#, [dir, Self.script])
            if r.code != 0 { throw CLI.CLIFailure("broker.sh down: \(r.err)") }
        }

        func up() throws {
            let r = try Fault.shell(#"VLOGGER_MQTT_DIR="$1" bash "$2" up"#, [dir, Self.script])
            if r.code != 0 { throw CLI.CLIFailure("broker.sh up: \(r.err)") }
        }

        func stop() { _ = try? Fault.shell(#"VLOGGER_MQTT_DIR="$1" bash "$2" stop"#, [dir, Self.script]) }
    }

    /// Paho, subscribed at QoS 1 with a persistent session (it gets what was published while it was away).
    struct Subscriber {
        let out: String
        let pid: pid_t

        static func start(_ broker: Broker, topic: String, dir: URL, seconds: Int = 120) throws -> Subscriber {
            let out = dir.appendingPathComponent("sub.jsonl").path
            let script = CLI.root.appendingPathComponent("Tests/IntegrationTests/Support/mqtt_subscriber.py").path
            let pid = try Fault.spawn(
                #"exec python3 "$@""#,
                [script, "127.0.0.1", broker.port, topic, out, String(seconds), "--persistent", "1"],
                stdout: dir.appendingPathComponent("sub.out").path, stderr: dir.appendingPathComponent("sub.err").path)
            let end = Date().addingTimeInterval(15)
            while !FileManager.default.fileExists(atPath: out + ".ready") && Date() < end {
                Thread.sleep(forTimeInterval: 0.05)
            }
            guard FileManager.default.fileExists(atPath: out + ".ready") else {
                throw CLI.CLIFailure(
                    "the subscriber did not subscribe: \((try? String(contentsOfFile: dir.appendingPathComponent("sub.err").path, encoding: .utf8)) ?? "")"
                )
            }
            return Subscriber(out: out, pid: pid)
        }

        /// The messages so far: (topic, retained, payload as JSON object or text).
        func messages() -> [(topic: String, retain: Bool, payload: String)] {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let t = o["topic"] as? String, let p = o["payload"] as? String
                else { return nil }
                return (t, (o["retain"] as? Bool) ?? false, p)
            }
        }

        func stop() {
            _ = FileManager.default.createFile(atPath: out + ".stop", contents: nil)
            _ = Fault.wait(pid)
        }
    }

    static func object(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    /// The keys of the rows in the store the output takes (readings, events), as the messages carry them.
    static func storedKeys(_ store: String, gateway: String) throws -> Set<String> {
        let s = try Store(path: store, readOnly: true)
        defer { s.close() }
        var keys = Set<String>()
        for t in [SyncTable.readings, .events] {
            for r in try s.outbox(t, after: 0, limit: 10_000_000) { keys.insert("\(gateway)/\(t.rawValue)/\(r.id)") }
        }
        return keys
    }

    static func config(_ setup: (dir: URL, config: String, store: String), _ mqtt: String) throws {
        let text = try String(contentsOfFile: setup.config, encoding: .utf8) + "\n[[output.mqtt]]\n" + mqtt + "\n"
        try text.write(toFile: setup.config, atomically: true, encoding: .utf8)
    }

    /// A demo run: every reading and event in the store arrives, each message is the row of `export --format jsonl`
    /// plus its key and table (without the columns of fields the reading has no value for), on the documented
    /// topic; the status topic says online, then offline.
    @Test func everyStoredRowArrivesAsTheExportHasIt() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "200ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try Self.config(s, "url = \"mqtt://127.0.0.1:\(broker.port)\"\npublish = [\"readings\", \"events\"]")
        let sub = try Subscriber.start(broker, topic: "vlogger/#", dir: s.dir)
        let run = try CLI.run(["run", "--config", s.config, "--duration", "4s"])
        #expect(run.code == 0, "\(run.err)")
        let stored = try Self.storedKeys(s.store, gateway: "gw-demo-01")
        var byKey: [String: (topic: String, object: [String: Any])] = [:]
        let end = Date().addingTimeInterval(10)
        repeat {
            Thread.sleep(forTimeInterval: 0.2)
            for m in sub.messages() {
                if let o = Self.object(m.payload), let k = o["key"] as? String { byKey[k] = (m.topic, o) }
            }
        } while Set(byKey.keys) != stored && Date() < end
        sub.stop()
        #expect(stored.count > 20)
        #expect(Set(byKey.keys) == stored, "missing: \(stored.subtracting(byKey.keys).sorted().prefix(5))")
        // Each reading's message is its export line plus key and kind, on vlogger/{gateway}/{reader}/reading.
        let export = try CLI.run(["export", "--config", s.config, "--since", "1h", "--format", "jsonl"])
        var checked = 0
        for (i, line) in export.out.split(separator: "\n").enumerated() {
            guard let row = Self.object(String(line)), let m = byKey["gw-demo-01/readings/\(i + 1)"] else { continue }
            var payload = m.object
            #expect(payload.removeValue(forKey: "table") as? String == "readings")
            payload.removeValue(forKey: "key")
            // The same members with the same values (a missing value is left out of both, docs/json.md).
            #expect(NSDictionary(dictionary: payload).isEqual(to: row), "\(payload)\n\(row)")
            #expect(m.topic == "vlogger/gw-demo-01/\(row["reader"] as? String ?? "?")/reading")
            checked += 1
        }
        #expect(checked > 20)
        let status = sub.messages().filter { $0.topic == "vlogger/gw-demo-01/status" }.map(\.payload)
        #expect(status.first == "online" && status.last == "offline", "\(status)")
    }

    /// Issue 47, items 3 and 4: Home Assistant discovery of a demo run checked by HA's own rules, read from its MQTT
    /// integration (Support/ha_discovery_check.py, docs/reference/home-assistant-mqtt-discovery.md): every discovery
    /// topic matches HA's topic matcher although the gateway id has a ':' (HA dropped it before), every tag scanner
    /// and sensor payload passes HA's schemas (a device with an identifier, a unit its device class allows, a
    /// unique_id), the scanners replayed with Jinja2 fire once per arrival (they listened to the readings before: 8.3
    /// scans a second for 8 tags), and every sensor's template reads a number from its tag's retained state. The
    /// state itself: the last values with their units, and the alarms.
    @Test func homeAssistantDiscoveryFollowsHomeAssistantsRules() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "200ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let text = try String(contentsOfFile: s.config, encoding: .utf8)
        try text.replacingOccurrences(of: "id = \"gw-demo-01\"", with: "id = \"plant:gw-01\"").write(
            toFile: s.config, atomically: true, encoding: .utf8)
        try Self.config(
            s, "url = \"mqtt://127.0.0.1:\(broker.port)\"\npublish = [\"readings\", \"events\"]\nhome-assistant = true")
        let sub = try Subscriber.start(broker, topic: "#", dir: s.dir)
        let run = try CLI.run(["run", "--config", s.config, "--duration", "4s"])
        #expect(run.code == 0, "\(run.err)")
        Thread.sleep(forTimeInterval: 1)
        sub.stop()
        // What a Home Assistant started now would get: the retained messages.
        let later = s.dir.appendingPathComponent("later")
        try FileManager.default.createDirectory(at: later, withIntermediateDirectories: true)
        let kept = try Subscriber.start(broker, topic: "#", dir: later)
        Thread.sleep(forTimeInterval: 1.5)
        kept.stop()
        let check = try Fault.shell(
            #"python3 "$1" "$2" "$3""#,
            [
                CLI.root.appendingPathComponent("Tests/IntegrationTests/Support/ha_discovery_check.py").path, sub.out,
                kept.out,
            ])
        #expect(check.code == 0, "\(check.out)\(check.err)")
        print("Home Assistant: \(check.out)")
        let messages = kept.messages()
        #expect(messages.contains { $0.topic == "homeassistant/tag/vlogger_plant_gw-01/cage-room/config" })
        // The retained state of the demo's climate tag: the temperature of its last stored reading with its unit,
        // in the cage room.
        let export = try CLI.run([
            "export", "--config", s.config, "--since", "1h", "--format", "jsonl", "--uid", "E008010000004212",
        ])
        let last = try #require(export.out.split(separator: "\n").last.flatMap { Self.object(String($0)) })
        let state = try #require(
            messages.last { $0.topic == "vlogger/plant:gw-01/tag/E008010000004212" && $0.retain }.flatMap {
                Self.object($0.payload)
            })
        #expect(
            (state["values"] as? [String: Any])?["temperature"] as? Double == last["temperature"] as? Double,
            "\(state)\n\(last)")
        #expect((state["units"] as? [String: Any])?["temperature"] as? String == "°C", "\(state)")
        #expect(state["asset_id"] as? String == "CAGE-12" && state["reader"] as? String == "cage-room")
        #expect(state["alarms"] is [Any] && state["present"] as? Bool == true, "\(state)")
        let sensor = try #require(
            messages.first {
                $0.topic == "homeassistant/sensor/vlogger_plant_gw-01/E008010000004212_temperature/config"
            }
            .flatMap { Self.object($0.payload) })
        #expect(sensor["device_class"] as? String == "temperature" && sensor["unit_of_measurement"] as? String == "°C")
        #expect(sensor["availability_topic"] as? String == "vlogger/plant:gw-01/status")
    }

    /// MQTT 5 (`protocol = "5"`): the broker sees a version-5 client (its log says `p5`), and the rows arrive.
    @Test func mqttFiveDelivers() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "200ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try Self.config(
            s, "url = \"mqtt://127.0.0.1:\(broker.port)\"\nprotocol = \"5\"\npublish = [\"readings\", \"events\"]")
        let sub = try Subscriber.start(broker, topic: "vlogger/#", dir: s.dir)
        let run = try CLI.run(["run", "--config", s.config, "--duration", "3s"])
        #expect(run.code == 0, "\(run.err)")
        let stored = try Self.storedKeys(s.store, gateway: "gw-demo-01")
        var keys = Set<String>()
        let end = Date().addingTimeInterval(10)
        repeat {
            Thread.sleep(forTimeInterval: 0.2)
            keys = Set(sub.messages().compactMap { Self.object($0.payload)?["key"] as? String })
        } while !stored.isSubset(of: keys) && Date() < end
        sub.stop()
        #expect(stored.count > 5 && stored.isSubset(of: keys))
        let log = (try? String(contentsOfFile: broker.dir + "/mosquitto.log", encoding: .utf8)) ?? ""
        #expect(log.contains("as vlogger-gw-demo-01-mqtt (p5"), "\(log.suffix(600))")
    }

    /// Messages the broker refuses (the ACL listener allows vlogger/# only): under MQTT 5 the batch fails and the
    /// cursor stays; nothing is counted as delivered.
    @Test func aRefusedMessageKeepsTheCursor() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "200ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try Self.config(
            s,
            "url = \"mqtt://127.0.0.1:\(broker.env["VLOGGER_TEST_MQTT_ACL_PORT"] ?? "")\"\nprotocol = \"5\"\ntopic = \"denied/{gateway}/{kind}\"\npublish = [\"readings\"]"
        )
        let run = try CLI.run(["run", "--config", s.config, "--duration", "3s"])
        #expect(run.code == 0, "\(run.err)")
        // The one-shot send fails too (exit 1). What the rounds say is `refused` (0x87) when the PUBACK's reason
        // code is seen first, and often `lost`: libmosquitto reports the client not connected for the messages
        // after a refused one (not traced further). Either way nothing counts as delivered.
        let send = try CLI.run(["outputs", "send", "--config", s.config, "mqtt"])
        #expect(send.code == 1, "\(send.out)\(send.err)")
        let said = run.err + send.out
        #expect(said.contains("failed (refused)") || said.contains("failed (lost)"), "\(said.suffix(2000))")
        let store = try Store(path: s.store, readOnly: true)
        defer { store.close() }
        #expect(try store.outboxCursor("mqtt", .readings) == 0)
        #expect(try store.outboxBacklog("mqtt", .readings).rows > 0)
    }

    /// SIGHUP with the output moved to another broker: the output stops (its status `offline` on the first
    /// broker), starts again from its cursor on the second, and every row stored arrives at one or the other.
    @Test func aReloadMovesTheOutputWithoutLosingARow() throws {
        let first = try Broker.start(), second = try Broker.start()
        defer {
            first.stop()
            second.stop()
        }
        let s = try AgentCLITests.setup(interval: "200ms", batch: 50, flush: "200ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let base = try String(contentsOfFile: s.config, encoding: .utf8)
        func point(to b: Broker) throws {
            try
                (base
                + "\n[[output.mqtt]]\nurl = \"mqtt://127.0.0.1:\(b.port)\"\npublish = [\"readings\", \"events\"]\n")
                .write(toFile: s.config, atomically: true, encoding: .utf8)
        }
        try point(to: first)
        let dirA = s.dir.appendingPathComponent("a"), dirB = s.dir.appendingPathComponent("b")
        for d in [dirA, dirB] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }
        let subA = try Subscriber.start(first, topic: "vlogger/#", dir: dirA)
        let subB = try Subscriber.start(second, topic: "vlogger/#", dir: dirB)
        let log = s.dir.appendingPathComponent("gateway.log").path
        let gateway = try Fault.spawn(
            #"cd "$1" && exec "$2" run --config "$3""#, [s.dir.path, try CLI.binary().path, s.config],
            stdout: "/dev/null", stderr: log)
        Thread.sleep(forTimeInterval: 3)
        try point(to: second)
        kill(gateway, SIGHUP)
        Thread.sleep(forTimeInterval: 3)
        kill(gateway, SIGTERM)
        #expect(Fault.wait(gateway) == 0)
        let stored = try Self.storedKeys(s.store, gateway: "gw-demo-01")
        func keys(_ sub: Subscriber) -> Set<String> {
            Set(sub.messages().compactMap { Self.object($0.payload)?["key"] as? String })
        }
        let end = Date().addingTimeInterval(10)
        while !stored.isSubset(of: keys(subA).union(keys(subB))) && Date() < end { Thread.sleep(forTimeInterval: 0.2) }
        subA.stop()
        subB.stop()
        let a = keys(subA), b = keys(subB)
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(text.contains("outputs: mqtt restarted with new settings"), "\(text.suffix(2000))")
        #expect(!a.isEmpty && !b.isEmpty, "first \(a.count), second \(b.count)")
        #expect(stored.isSubset(of: a.union(b)), "missing: \(stored.subtracting(a.union(b)).sorted().prefix(5))")
        let statusA = subA.messages().filter { $0.topic == "vlogger/gw-demo-01/status" }.map(\.payload)
        #expect(statusA.last == "offline", "\(statusA)")
    }

    /// What an operator sees of an MQTT output: `vlogger_output_connected` 1 while the broker is up and 0 once it
    /// is down (and `connected` in /healthz); `vlogger doctor` logs in as a probe (the running service's connection
    /// is not taken over: its status stays `online`), and a refused port is a `connect` failure; a reload that
    /// removes the output takes its series out of /metrics.
    @Test func connectedGaugeDoctorProbeAndRemoval() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "300ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let base = try String(contentsOfFile: s.config, encoding: .utf8)
        try Self.config(s, "url = \"mqtt://127.0.0.1:\(broker.port)\"\ninterval = \"200ms\"")
        let sub = try Subscriber.start(broker, topic: "vlogger/#", dir: s.dir)
        defer { sub.stop() }
        let log = s.dir.appendingPathComponent("gateway.log")
        let gateway = try Fault.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --listen 127.0.0.1:0"#,
            [s.dir.path, try CLI.binary().path, s.config], stdout: "/dev/null", stderr: log.path)
        var reaped = false
        defer {
            if !reaped {
                kill(gateway, SIGKILL)
                _ = Fault.wait(gateway)
            }
        }
        let p = try #require(
            ServiceTests.listenPort(log), "\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        func metric(_ needle: String, seconds: Double = 15) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if (try? ServiceTests.get(p, "/metrics").body.contains(needle)) == true { return true }
                Thread.sleep(forTimeInterval: 0.2)
            }
            return false
        }
        #expect(metric("vlogger_output_connected{output=\"mqtt\"} 1"))
        let health = try ServiceTests.get(p, "/healthz")
        #expect(health.body.contains(#""connected":true"#), "\(health.body)")
        // The doctor's probe: logs in beside the running service without taking its connection over.
        let doctor = try CLI.run(["doctor", "--config", s.config, "--no-readers"])
        #expect(doctor.out.contains("ok   broker mqtt") || doctor.out.contains("broker mqtt"), "\(doctor.out)")
        #expect(doctor.out.contains("accepted a probe connection"), "\(doctor.out)")
        Thread.sleep(forTimeInterval: 1)
        let status = sub.messages().filter { $0.topic == "vlogger/gw-demo-01/status" }.map(\.payload)
        #expect(status.last == "online", "the probe must not speak for the service: \(status)")
        #expect(metric("vlogger_output_connected{output=\"mqtt\"} 1", seconds: 1))
        // The broker goes: connected 0.
        try broker.down()
        #expect(metric("vlogger_output_connected{output=\"mqtt\"} 0", seconds: 30))
        // A refused port is said as such, not as a slow broker.
        let refused = try CLI.run(["doctor", "--config", s.config, "--no-readers"])
        #expect(
            refused.out.contains("broker mqtt") && refused.out.contains("connect: cannot connect")
                && refused.out.contains("Connection refused"), "\(refused.out)")
        try broker.up()
        #expect(metric("vlogger_output_connected{output=\"mqtt\"} 1", seconds: 90))
        // A reload without the output: its series leave /metrics.
        try base.write(toFile: s.config, atomically: true, encoding: .utf8)
        kill(gateway, SIGHUP)
        let gone = Date().addingTimeInterval(15)
        var body = ""
        repeat {
            Thread.sleep(forTimeInterval: 0.2)
            body = (try? ServiceTests.get(p, "/metrics").body) ?? ""
        } while body.contains("output=\"mqtt\"") && Date() < gone
        #expect(!body.contains("output=\"mqtt\""), "\(body.split(separator: "\n").filter { $0.contains("mqtt") })")
        kill(gateway, SIGTERM)
        #expect(Fault.wait(gateway) == 0)
        reaped = true
    }

    /// The broker restarted 20 times (a clean stop, which keeps the subscriber's session and what is queued for
    /// it) and the gateway SIGKILLed 10 times while it runs: every stored row arrives at least once, and every
    /// duplicate is the same message under the same key.
    @Test func throughTwentyBrokerRestartsAndTenKills() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "100ms", batch: 50, flush: "200ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        try Self.config(
            s,
            "url = \"mqtt://127.0.0.1:\(broker.port)\"\npublish = [\"readings\", \"events\"]\nbatch-size = 20\ninterval = \"100ms\""
        )
        let sub = try Subscriber.start(broker, topic: "vlogger/gw-demo-01/+/+", dir: s.dir, seconds: 300)
        let log = s.dir.appendingPathComponent("gateway.log").path
        func startGateway() throws -> pid_t {
            try Fault.spawn(
                #"cd "$1" && exec "$2" run --config "$3""#, [s.dir.path, try CLI.binary().path, s.config],
                stdout: "/dev/null", stderr: log)
        }
        var gateway = try startGateway()
        var restarts = 0, kills = 0
        while restarts < 20 {
            Thread.sleep(forTimeInterval: Double.random(in: 0.3...0.8))
            try broker.restart("TERM")
            restarts += 1
            if restarts % 2 == 0 {
                kill(gateway, SIGKILL)
                _ = Fault.wait(gateway)
                kills += 1
                gateway = try startGateway()
            }
        }
        // The broker stays up now: the gateway catches up, then stops cleanly (its last round sends the rest, as
        // far as 5 s allow); what a loaded machine left unsent is in the store, and goes with the one-shot send, as
        // it would with the next start.
        Thread.sleep(forTimeInterval: 3)
        kill(gateway, SIGTERM)
        #expect(Fault.wait(gateway) == 0)
        let send = try CLI.run(["outputs", "send", "--config", s.config, "mqtt"])
        #expect(send.code == 0, "\(send.out)\(send.err)")
        let stored = try Self.storedKeys(s.store, gateway: "gw-demo-01")
        var copies: [String: [String]] = [:]
        let end = Date().addingTimeInterval(20)
        repeat {
            Thread.sleep(forTimeInterval: 0.3)
            copies = [:]
            for m in sub.messages() {
                if let o = Self.object(m.payload), let k = o["key"] as? String {
                    copies[k, default: []].append(m.payload)
                }
            }
        } while !stored.isSubset(of: Set(copies.keys)) && Date() < end
        sub.stop()
        let missing = stored.subtracting(copies.keys)
        let duplicates = copies.values.reduce(0) { $0 + $1.count - 1 }
        let differing = copies.filter { Set($0.value).count > 1 }
        print(
            "MQTT faults: \(stored.count) rows stored, \(restarts) broker restarts, \(kills) gateway kills, \(missing.count) missing, \(duplicates) duplicates"
        )
        #expect(restarts == 20 && kills == 10)
        #expect(stored.count > 100)
        #expect(missing.isEmpty, "missing: \(missing.sorted().prefix(10))")
        #expect(differing.isEmpty, "a key with different messages: \(differing.keys.sorted().prefix(5))")
    }

    /// TLS with the broker's throw-away CA and a password: delivered. The other CA: a TLS failure. A wrong
    /// password: an authentication failure. The password is in no log line.
    @Test func tlsAndPasswordAndTheirTypedFailures() throws {
        let broker = try Broker.start()
        defer { broker.stop() }
        let s = try AgentCLITests.setup(interval: "200ms", batch: 50, flush: "300ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let password = try String(contentsOfFile: broker.env["VLOGGER_TEST_MQTT_PASSWORD_FILE"] ?? "", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let wrong = s.dir.appendingPathComponent("wrong-password").path
        try "not-\(password)\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        chmod(wrong, 0o600)
        let base = try String(contentsOfFile: s.config, encoding: .utf8)
        func attempt(ca: String, passwordFile: String) throws -> (code: Int32, err: String, sent: Int64) {
            try? FileManager.default.removeItem(atPath: s.store)
            try
                (base + """

                    [[output.mqtt]]
                    url = "mqtts://127.0.0.1:\(broker.tlsPort)"
                    ca-file = "\(ca)"
                    username = "vlogger"
                    password-file = "\(passwordFile)"
                    interval = "200ms"
                    """).write(toFile: s.config, atomically: true, encoding: .utf8)
            let run = try CLI.run(["run", "--config", s.config, "--duration", "3s", "--log-level", "debug"])
            let store = try Store(path: s.store, readOnly: true)
            defer { store.close() }
            return (run.code, run.err, try store.outboxCursor("mqtt", .readings))
        }
        let good = try attempt(
            ca: broker.env["VLOGGER_TEST_MQTT_CA"] ?? "",
            passwordFile: broker.env["VLOGGER_TEST_MQTT_PASSWORD_FILE"] ?? "")
        #expect(good.code == 0 && good.sent > 0, "\(good.err)")
        // `vlogger outputs status` asks the broker too: it answers with the good password (exit 0) ...
        let answers = try CLI.run(["outputs", "status", "--config", s.config])
        #expect(answers.code == 0 && answers.out.contains("destination: answers"), "\(answers.out)\(answers.err)")
        let otherCA = try attempt(
            ca: broker.env["VLOGGER_TEST_MQTT_OTHER_CA"] ?? "",
            passwordFile: broker.env["VLOGGER_TEST_MQTT_PASSWORD_FILE"] ?? "")
        #expect(
            otherCA.sent == 0
                && otherCA.err.contains("output mqtt (MQTT to mqtts://127.0.0.1:\(broker.tlsPort)) failed (tls)"),
            "\(otherCA.err)")
        let badPassword = try attempt(ca: broker.env["VLOGGER_TEST_MQTT_CA"] ?? "", passwordFile: wrong)
        // ... and refuses the wrong one (exit 1, the kind and the broker's reason, not the password).
        let refused = try CLI.run(["outputs", "status", "--config", s.config, "mqtt"])
        #expect(
            refused.code == 1 && refused.out.contains("destination: failed (auth)")
                && !refused.out.contains(password), "\(refused.out)\(refused.err)")
        #expect(badPassword.sent == 0 && badPassword.err.contains("failed (auth)"), "\(badPassword.err)")
        for r in [good, otherCA, badPassword] { #expect(!r.err.contains(password)) }
    }
}

/// Issue 46, item 15, on a real broker: two gateways configured with the same id (two stores) publish to one
/// broker. Before the fix nothing noticed (the subscriber got two different rows under each key); now each
/// gateway stores one `gateway-id-conflict` event naming the other's store and logs it, and a gateway started again
/// on its own store (the same instance) is not a conflict.
@Suite(.serialized, .enabled(if: mqttAvailable(), "no mosquitto or paho-mqtt here"))
struct MQTTInstanceTests {
    typealias CLI = CLITests
    typealias Fault = SyncFaultTests

    static func conflicts(_ store: String) throws -> [String] {
        let r = try Fault.shell(
            #"python3 -c 'import sqlite3, sys; [print(r[0]) for r in sqlite3.connect(sys.argv[1]).execute("SELECT detail FROM events WHERE name = ?", ("gateway-id-conflict",))]' "$1""#,
            [store])
        return r.out.split(separator: "\n").map(String.init)
    }

    static func instance(_ store: String) throws -> String {
        try Fault.shell(
            #"python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT instance FROM store_instance").fetchone()[0])' "$1""#,
            [store]
        ).out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func twoGatewaysWithOneIDOnOneBrokerEachReportTheOther() throws {
        let broker = try MQTTTests.Broker.start()
        defer { broker.stop() }
        let a = try AgentCLITests.setup(interval: "200ms", batch: 20, flush: "200ms")
        let b = try AgentCLITests.setup(interval: "200ms", batch: 20, flush: "200ms")
        defer {
            try? FileManager.default.removeItem(at: a.dir)
            try? FileManager.default.removeItem(at: b.dir)
        }
        for s in [a, b] {
            try MQTTTests.config(
                s,
                "url = \"mqtt://127.0.0.1:\(broker.port)\"\npublish = [\"readings\", \"events\"]\ninterval = \"200ms\"")
        }
        // Gateway A alone, twice on its own store: no conflict (its own retained announcement comes back).
        for _ in 0..<2 {
            let r = try Fault.shell(
                #"cd "$1" && "$2" run --config "$3" --duration 3s"#, [a.dir.path, try CLI.binary().path, a.config])
            #expect(r.code == 0, "\(r.err)")
        }
        #expect(try Self.conflicts(a.store).isEmpty)
        // Then both at once.
        let logA = a.dir.appendingPathComponent("a.log").path, logB = b.dir.appendingPathComponent("b.log").path
        let pa = try Fault.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --duration 8s"#, [a.dir.path, try CLI.binary().path, a.config],
            stdout: "/dev/null", stderr: logA)
        let pb = try Fault.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --duration 8s"#, [b.dir.path, try CLI.binary().path, b.config],
            stdout: "/dev/null", stderr: logB)
        _ = Fault.wait(pa)
        _ = Fault.wait(pb)
        let (ia, ib) = (try Self.instance(a.store), try Self.instance(b.store))
        #expect(ia.count == 32 && ib.count == 32 && ia != ib)
        let ca = try Self.conflicts(a.store), cb = try Self.conflicts(b.store)
        #expect(ca.count == 1 && ca.first?.contains("store \(ib)") == true, "\(ca)")
        #expect(cb.count == 1 && cb.first?.contains("store \(ia)") == true, "\(cb)")
        let la = (try? String(contentsOfFile: logA, encoding: .utf8)) ?? ""
        #expect(la.contains("another gateway publishes as 'gw-demo-01'"), "\(la.suffix(2000))")
    }
}
