import Foundation
import OPCUA
import Testing

/// Python with both OPC UA client stacks (asyncua and o6, from PyPI); in CI (`VLOGGER_REQUIRE_OPCUA_CLIENTS=1`)
/// their absence fails the suite instead of skipping it.
func opcuaClientsAvailable() -> Bool {
    if ProcessInfo.processInfo.environment["VLOGGER_REQUIRE_OPCUA_CLIENTS"] == "1" { return true }
    return (try? SyncFaultTests.shell("python3 -c 'import asyncua, o6'", []).code) == 0
}

/// `vlogger run` on the simulated demo field with `[opcua]`, and two OPC UA stacks nobody here wrote as its
/// clients (asyncua 2.1.0, o6 2.2.0 on open62541): a client certificate is refused until `vlogger opcua trust`
/// lets it in (no restart), a user made by `vlogger opcua user add` logs in, and each stack, for every policy and
/// mode, anonymous and as that user, browses everything, reads every attribute of every node, translates a path,
/// gets data changes and one of the gateway's events (a tag that arrived or left, an alarm), and calls a method.
@Suite(.serialized, .enabled(if: opcuaClientsAvailable(), "no Python asyncua and o6 here"))
struct OPCUAServiceTests {
    static let securities = [
        "None", "Basic256Sha256,Sign", "Basic256Sha256,SignAndEncrypt", "Aes128Sha256RsaOaep,SignAndEncrypt",
    ]
    static let password = "kalt-raum-12"

    @Test func twoClientStacksAgainstTheRunningGateway() throws {
        let s = try AgentCLITests.setup(interval: "200ms", batch: 20, flush: "200ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let bin = try CLITests.binary().path
        try
            (try String(contentsOfFile: s.config, encoding: .utf8)
            + "\n[opcua]\nlisten = \"127.0.0.1:0\"\nusers-file = \"opcua-users\"\nhosts = [\"127.0.0.1\"]\n")
            .write(toFile: s.config, atomically: true, encoding: .utf8)
        let add = try SyncFaultTests.shell(
            #"printf '%s\n' "$3" | "$1" opcua user add operator --config "$2""#, [bin, s.config, Self.password])
        #expect(add.code == 0, "\(add.err)")
        // The client's certificate and key, test-only, made here.
        let key = try RSAKeyPair(bits: 2048)
        let cert = try ApplicationCertificate.make(
            key: key, applicationUri: "urn:vlogger:test:client", applicationName: "test client", hosts: ["localhost"],
            notBefore: Date().addingTimeInterval(-3600))
        let certFile = s.dir.appendingPathComponent("client.der").path
        let keyFile = s.dir.appendingPathComponent("client-key.pem").path
        try Data(cert.der).write(to: URL(fileURLWithPath: certFile))
        try key.pem.write(toFile: keyFile, atomically: true, encoding: .utf8)

        // A field where the Tag-it tool leaves and comes back every 2 s for 10 minutes: each client sees an
        // arrival or a departure soon after it subscribes.
        let steps = stride(from: 4, to: 600, by: 2).map { t in
            #"{ "at": "\#(t)s", "do": "\#(t % 4 == 0 ? "leave" : "arrive")", "uid": "E007800000007777" }"#
        }
        try #"{ "vlogger-scenario": 1, "description": "OPC UA events", "steps": [\#(steps.joined(separator: ", "))] }"#
            .write(to: s.dir.appendingPathComponent("field/scenario.json"), atomically: true, encoding: .utf8)
        let log = s.dir.appendingPathComponent("gw.log")
        let gateway = try SyncFaultTests.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --listen 127.0.0.1:0 --duration 600s"#,
            [s.dir.path, bin, s.config],
            stdout: "/dev/null", stderr: log.path)
        defer {
            kill(gateway, SIGTERM)
            _ = SyncFaultTests.wait(gateway)
        }
        let port = try #require(Self.opcuaPort(log), "\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        let url = "opc.tcp://127.0.0.1:\(port)"
        let clients = CLITests.root.appendingPathComponent("Tests/OPCUAServerTests/Clients").path
        func client(_ name: String, _ security: String, user: Bool, refusal: Bool = false) throws -> [String: Any] {
            var args = [
                "\(clients)/\(name)_client.py", url, security, "--cert", certFile, "--key", keyFile, "--wait", "30",
            ]
            if user { args += ["--user", "operator", "--password", Self.password] }
            if refusal { args.append("--expect-refusal") }
            let r = try SyncFaultTests.shell(#"exec python3 "$@""#, args)
            let line = r.out.split(separator: "\n").last.map(String.init) ?? ""
            guard r.code == 0, let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { throw CLITests.CLIFailure("\(name) \(security): exit \(r.code)\n\(r.out)\n\(r.err)") }
            return json
        }

        // Refused until trusted; kept as rejected; `vlogger opcua trust` lets it in while the service runs.
        let refused = try client("asyncua", "Basic256Sha256,SignAndEncrypt", user: false, refusal: true)
        #expect(refused["refused"] is String, "\(refused)")
        let listed = try SyncFaultTests.shell(#""$1" opcua certificates --config "$2""#, [bin, s.config])
        #expect(listed.out.contains("rejected  \(cert.fingerprint)"), "\(listed.out)")
        let trust = try SyncFaultTests.shell(
            #""$1" opcua trust "$3" --config "$2""#, [bin, s.config, String(cert.fingerprint.prefix(12))])
        #expect(trust.code == 0, "\(trust.err)")

        for name in ["asyncua", "o6"] {
            for security in Self.securities {
                for user in [false, true] {
                    let out = try client(name, security, user: user)
                    print(
                        "vlogger run, \(name) \(security) \(user ? "operator" : "anonymous"): nodes \(out["nodes"] ?? "") reads \(out["attributeReads"] ?? "") changes \(out["changes"] ?? "") events \(out["events"] ?? "")"
                    )
                    let nodes = try #require(out["nodes"] as? Int)
                    #expect(nodes >= 190, "\(name) \(security): the gateway's nodes besides namespace 0's 177")
                    // The moving tag's nodes go when it leaves: a read between its browse and its leaving finds
                    // them gone (Bad_NodeIdUnknown), the only Bad answer allowed here.
                    let bad = (out["badReads"] as? [String] ?? []).filter {
                        !($0.contains("E007800000007777") && $0.contains("BadNodeIdUnknown"))
                            && !($0.contains("E007800000007777") && $0.contains("BAD_NODE_ID_UNKNOWN"))
                    }
                    #expect(bad.isEmpty, "\(name) \(security): \(bad)")
                    #expect(out["badReadCount"] as? Int ?? 0 <= 1000)
                    #expect(out["translated"] as? String == "i=2258")
                    #expect((out["changes"] as? Int ?? 0) >= 3)
                    #expect((out["events"] as? [Any])?.isEmpty == false, "\(name) \(security): no event in 15 s")
                    #expect(out["monitoredItems"] as? Int == 2)
                    #expect((out["namespaces"] as? [String] ?? []).contains { $0.hasPrefix("urn:vlogger:gateway:") })
                    if name == "asyncua" {
                        // The demo's readers as AutoID RfidReaderDeviceTypes under DeviceSet, Idle (0).
                        let devices = out["devices"] as? [String: Int] ?? [:]
                        #expect(!devices.isEmpty && devices.values.allSatisfy { $0 == 0 }, "\(devices)")
                    }
                    #expect(out["closed"] as? Bool == true)
                }
            }
        }
        let wrong = try SyncFaultTests.shell(
            #"exec python3 "$1" "$2" None --cert "$3" --key "$4" --user operator --password wrong --expect-refusal"#,
            ["\(clients)/o6_client.py", url, certFile, keyFile])
        #expect(wrong.out.contains("BadUserAccessDenied"), "\(wrong.out)")

        // The server in /healthz and /metrics: where it listens, what it holds, what it refused (the certificate
        // before `trust`, the wrong password).
        let http = try #require(ServiceTests.listenPort(log))
        let health = try ServiceTests.get(http, "/healthz")
        let json = try JSONSerialization.jsonObject(with: Data(health.body.utf8)) as? [String: Any]
        let opcua = try #require((json?["outputs"] as? [String: Any])?["opcua"] as? [String: Any], "\(health.body)")
        #expect(opcua["status"] as? String == "ok")
        #expect(opcua["listening"] as? String == url)
        #expect((opcua["refused_certificates"] as? Int ?? 0) >= 1, "\(opcua)")
        #expect((opcua["failed_activations"] as? Int ?? 0) >= 1, "\(opcua)")
        for key in ["connections", "sessions", "subscriptions", "monitored_items"] {
            #expect(opcua[key] is Int, "\(key): \(opcua)")
        }
        let metrics = try ServiceTests.get(http, "/metrics").body
        #expect(metrics.contains("# HELP vlogger_output_sessions "), "\(metrics)")
        let failed = metrics.split(separator: "\n").first {
            $0.hasPrefix(#"vlogger_output_failed_activations_total{output="opcua"} "#)
        }
        #expect((failed?.split(separator: " ").last.flatMap { Double($0) } ?? 0) >= 1, "\(metrics)")
    }

    /// AutoID's methods on the running gateway, called by both stacks (Tests/OPCUAServerTests/Clients/autoid_*.py):
    /// Scan finds the demo field's tags as RfidScanResults (code type UID, the reader as antenna 1); ReadTag,
    /// WriteTag and ReadBlocks/WriteBlocks read and write the SLIX2's blocks through the polling agent; a UID not in
    /// the field is AutoID status 8 (no_identifier), a read past the end 7 (out_of_range_error), an argument of
    /// another type Bad_InvalidArgument (OPC 30010 §9.1.1; OPC 10000-4 §5.11.2.2). The store has each access with the
    /// client as its origin, and one write event per write: asyncua's WriteBlocks retried with the same arguments is
    /// answered from the first call, not written again.
    @Test func autoIdMethodsFromBothStacks() throws {
        let s = try AgentCLITests.setup(interval: "200ms", batch: 20, flush: "200ms")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let gateway = try OPCUAGateway(s)
        defer { gateway.stop() }
        let port = gateway.port
        let clients = CLITests.root.appendingPathComponent("Tests/OPCUAServerTests/Clients").path
        let slix2 = "E004010812345601"
        func client(_ name: String) throws -> [String: Any] {
            try Self.script("\(clients)/autoid_\(name).py", ["opc.tcp://127.0.0.1:\(port)", "cage-room", slix2])
        }
        for name in ["asyncua", "o6"] {
            let out = try client(name)
            print("AutoID, \(name): \(out)")
            #expect(out["scanStatus"] as? Int == 0)
            #expect((out["scanned"] as? [String] ?? []).contains(slix2), "\(name): \(out)")
            #expect(out["scanCodeTypes"] as? [String] == ["UID"])
            #expect((out["sighting"] as? [String: Int])?["antenna"] == 1)
            let readTag = out["readTag"] as? [String: Any]
            // Bytes 4…11 of the SLIX2's image: its blocks 1 and 2 (Config/demo-field/slix2-pallet-0001.json).
            #expect(readTag?["status"] as? Int == 0 && readTag?["data"] as? String == "0313D1010F540265", "\(out)")
            #expect(out["writeTag"] as? Int == 0)
            let back = out["readBack"] as? [String: Any]
            #expect(back?["data"] as? String == (name == "asyncua" ? "CAFEF00D" : "BEEF0001"), "\(out)")
            #expect(out["writeBlocks"] as? Int == 0)
            let blocks = out["readBlocks"] as? [String: Any]
            #expect(
                blocks?["data"] as? String == (name == "asyncua" ? "1011121314151617" : "2021222324252627"), "\(out)")
            #expect(out["absent"] as? Int == 8)
            // LastScanData: the UID of the last tag to arrive at the reader, 8 bytes, E0 first (OPC 30010 §6.2).
            let last = out["lastScanData"] as? String ?? ""
            #expect(last.count == 16 && last.hasPrefix("E0"), "\(name): \(out)")
            // ScanStart: RfidScanEventType events from the device, every field decoded by the client.
            #expect(out["scanStart"] as? Int == 0)
            let event = out["scanEvent"] as? [String: Any] ?? [:]
            #expect(event["DeviceName"] as? String == "cage-room" && event["SourceName"] as? String == "cage-room")
            #expect(event["CodeType"] as? String == "UID" && event["Antenna"] as? Int == 1, "\(name): \(event)")
            #expect((event["ScanData"] as? String ?? "").hasPrefix("E0"), "\(name): \(event)")
            #expect(out["wrongType"] as? String == "BadInvalidArgument")
            if name == "asyncua" {
                #expect(out["writeBlocksAgain"] as? Int == 0)
                #expect(out["pastTheEnd"] as? Int == 7)
                #expect(out["readTagEpc"] as? Int == 13)  // code_not_supported
                #expect(out["scanActiveWhileScanning"] as? Bool == true && out["scanActiveAfterStop"] as? Bool == false)
                // An RfidAccessEventType event per access, and LastAccess: the last one (ReadBlocks past the end, 7).
                #expect(
                    out["accessCommands"] as? [String]
                        == ["ReadTag", "WriteTag", "ReadTag", "WriteBlocks", "ReadBlocks", "ReadBlocks", "ReadBlocks"],
                    "\(out)")
                let access = out["accessEvent"] as? [String: Any] ?? [:]
                #expect(access["Client"] as? String == "opcua:urn:vlogger:test:autoid-asyncua")
                #expect(access["Identifier"] as? String == slix2 && access["CodeType"] as? String == "UID")
                let last = out["lastAccess"] as? [String: Any] ?? [:]
                #expect(last["Command"] as? String == "ReadBlocks" && last["Status"] as? Int == 7, "\(last)")
                #expect(last["Identifier"] as? String == slix2 && last["Timestamp"] is String)
                // The cage's temperature (Config/vlogger.toml: unit = "°C") with UNECE's CEL (OPC 10000-8 §5.6.3).
                let units = out["temperatureUnits"] as? [String: Any] ?? [:]
                #expect(units["UnitId"] as? Int == 4_408_652 && units["DisplayName"] as? String == "°C", "\(out)")
                #expect(
                    (out["scanFields"] as? [[String]])?.first?.contains("Sighting") == true, "\(out)")
            } else {
                #expect(out["scanTypes"] as? [String] == ["RfidScanResult"])
            }
        }
        gateway.stop()
        let export = try CLITests.run([
            "export", "--config", s.config, "--table", "events", "--after-id", "0", "--format", "jsonl",
        ])
        #expect(export.code == 0, "\(export.err)")
        let events = export.out.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let fromClients = events.filter { ($0["origin"] as? String ?? "").hasPrefix("opcua:urn:vlogger:test:autoid-") }
        let writes = fromClients.filter { $0["kind"] as? String == "write_done" }
        // WriteTag and WriteBlocks from each client; asyncua's retried WriteBlocks is not a third write.
        #expect(writes.count == 4, "\(writes)")
        let accesses = fromClients.filter { $0["kind"] as? String == "access" }
        #expect(
            accesses.contains { $0["name"] as? String == "Scan" }
                && accesses.contains { $0["name"] as? String == "Read" })
    }

    /// Alarms as conditions (OPC 10000-9; docs/reference/opcua.md, "Alarms and conditions"), from both stacks: asyncua
    /// builds its filter by browsing the server's AlarmConditionType and LimitAlarmType, o6 sends one written out;
    /// each calls ConditionRefresh (RefreshStart, the retained conditions, RefreshEnd), acknowledges a condition of
    /// its rule with the EventId it got (the next event has AckedState/Id true), is refused a second time
    /// (Bad_ConditionBranchAlreadyAcked) and with an unknown EventId (Bad_EventIdUnknown), and floods the server with
    /// 200 ConditionRefresh calls (each Good). The status page shows the alarm acknowledged by the client with its
    /// comment, and the store has one `acknowledged` event per client with the client as origin.
    @Test func alarmsFromBothStacks() throws {
        // The store commits its batches only every minute here (or at 100,000 readings): an acknowledgement is in it
        // after the kill below only because it was committed on its own before its client was answered.
        let s = try AgentCLITests.setup(interval: "200ms", batch: 100_000, flush: "60s")
        defer { try? FileManager.default.removeItem(at: s.dir) }
        // Two rules that the demo field violates from its first readings: a range on the cage's temperature (a
        // LimitAlarmType) and a manufacturer rule (AlarmConditionType, on the tags not made by Fujitsu).
        let rules = s.dir.appendingPathComponent("rules.toml").path
        try
            (try String(contentsOfFile: rules, encoding: .utf8) + """

                [[rule]]
                name = "test: cage at most 10 °C"
                kind = "range"
                field = "temperature"
                max = 10.0
                severity = "critical"

                [[rule]]
                name = "test: Fujitsu only"
                kind = "manufacturer"
                allow = ["Fujitsu"]
                severity = "warning"

                """).write(toFile: rules, atomically: true, encoding: .utf8)
        let gateway = try OPCUAGateway(s)
        defer { gateway.stop() }
        let (log, port) = (gateway.log, gateway.port)
        let http = try #require(ServiceTests.listenPort(log))
        // Both rules violated (the service logs each violation).
        let end = Date().addingTimeInterval(60)
        var text = ""
        while Date() < end {
            text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if text.contains("rule 'test: cage at most 10 °C' violated"),
                text.contains("rule 'test: Fujitsu only' violated")
            {
                break
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(text.contains("rule 'test: cage at most 10 °C' violated"), "\(text)")
        #expect(text.contains("rule 'test: Fujitsu only' violated"), "\(text)")
        let clients = CLITests.root.appendingPathComponent("Tests/OPCUAServerTests/Clients").path
        func client(_ name: String, _ rule: String) throws -> [String: Any] {
            try Self.script("\(clients)/alarms_\(name).py", ["opc.tcp://127.0.0.1:\(port)", rule])
        }
        for (name, rule) in [("asyncua", "test: cage at most 10 °C"), ("o6", "test: Fujitsu only")] {
            let out = try client(name, rule)
            print("Alarms, \(name): \(out)")
            let refreshed = out["refreshed"] as? [[String: Any]] ?? []
            #expect(refreshed.contains { $0["ConditionName"] as? String == rule }, "\(name): \(out)")
            #expect(out["acknowledge"] as? String == "Good")
            let acked = out["ackedEvent"] as? [String: Any] ?? [:]
            #expect(acked["AckedState/Id"] as? Bool == true && acked["Retain"] as? Bool == true, "\(name): \(acked)")
            #expect(acked["Comment"] as? String == "checked by \(name)")
            #expect(acked["ClientUserId"] as? String == "opcua:urn:vlogger:test:alarms-\(name)")
            #expect(out["again"] as? String == "BadConditionBranchAlreadyAcked")
            #expect(out["unknownEventId"] as? String == "BadEventIdUnknown")
            // A flood of refreshes: each answered, Good or (while the last one is still queued for the client)
            // Bad_RefreshInProgress; nothing else, and the server answers on.
            let flood = out["flood"] as? [String: Int] ?? [:]
            #expect(flood.values.reduce(0, +) == 200 && (flood["Good"] ?? 0) >= 1, "\(name): \(flood)")
            #expect(Set(flood.keys).isSubset(of: ["Good", "BadRefreshInProgress"]), "\(name): \(flood)")
            if name == "asyncua" {
                // The range rule: a LimitAlarmType (i=2955) with its HighLimit; asyncua found the fields by browsing.
                let limit = refreshed.first { $0["ConditionName"] as? String == rule } ?? [:]
                #expect(limit["EventType"] as? String == "i=2955" && limit["HighLimit"] as? Double == 10)
                #expect(limit["Severity"] as? Int == 900)
                let fields = out["fieldNames"] as? [String] ?? []
                #expect(
                    fields.contains("AckedState/Id") && fields.contains("ActiveState/Id") && fields.contains("NodeId"))
                #expect(out["ackedStateRead"] as? Bool == true)
                #expect(out["afterFlood"] as? String == "0")  // ServerState Running (OPC 10000-5 §12.6)
                // The plant's view: the cage's temperature under its asset, °C, the range rule's 2…24 as EURange
                // (Config/rules.toml's "cold room temperature"; the test's own rule has no low limit), Good while read.
                let asset = out["assetValue"] as? [String: Any] ?? [:]
                #expect(asset["name"] as? String == "Cold cage 12" && asset["unit"] as? String == "°C", "\(asset)")
                #expect(asset["range"] as? [Double] == [2, 24] && asset["status"] as? Int == 0, "\(asset)")
                #expect(asset["value"] is Double)
            } else {
                let other = refreshed.first { $0["ConditionName"] as? String == rule } ?? [:]
                #expect(other["EventType"] as? String == "i=2915" && other["Severity"] as? Int == 600, "\(other)")
            }
        }
        // The operator's page: the alarm acknowledged from OPC UA, by whom, with the comment.
        let page = try ServiceTests.get(http, "/")
        #expect(page.status == 200)
        #expect(
            page.body.contains("by opcua:urn:vlogger:test:alarms-asyncua: checked by asyncua"),
            "\(page.body.prefix(3000))")
        if let r = page.body.range(
            of: "acknowledged [^<]* by opcua:urn:vlogger:test:alarms-asyncua[^<]*", options: .regularExpression)
        {
            print("Status page: \(page.body[r])")
        }
        // Killed, not stopped: each acknowledgement was committed before its client was answered.
        gateway.stop(signal: SIGKILL)
        let export = try CLITests.run([
            "export", "--config", s.config, "--table", "events", "--after-id", "0", "--format", "jsonl",
        ])
        #expect(export.code == 0, "\(export.err)")
        let acks = export.out.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["kind"] as? String == "acknowledged" }
        #expect(
            Set(acks.compactMap { $0["origin"] as? String })
                == ["opcua:urn:vlogger:test:alarms-asyncua", "opcua:urn:vlogger:test:alarms-o6"], "\(acks)")
        #expect(
            acks.contains {
                $0["name"] as? String == "test: cage at most 10 °C" && $0["detail"] as? String == "checked by asyncua"
            })
    }

    /// A client script's JSON, the last line it prints (a non-zero exit throws with what it said).
    static func script(_ path: String, _ args: [String]) throws -> [String: Any] {
        let r = try SyncFaultTests.shell(#"exec python3 "$@""#, [path] + args)
        let line = r.out.split(separator: "\n").last.map(String.init) ?? ""
        guard r.code == 0, let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw CLITests.CLIFailure("\(path): exit \(r.code)\n\(r.out)\n\(r.err)")
        }
        return json
    }

    /// The port of `opcua: listening on opc.tcp://127.0.0.1:PORT` in the service's log.
    static func opcuaPort(_ log: URL, seconds: Double = 30) -> Int? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let r = text.range(of: #"opc\.tcp://127\.0\.0\.1:(\d+) "#, options: .regularExpression),
                let port = Int(text[r].dropFirst("opc.tcp://127.0.0.1:".count).dropLast())
            {
                return port
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return nil
    }
}

/// `vlogger run` on a setup's config with `[opcua]` added, the OPC UA server and the HTTP listener on free loopback
/// ports; stopped by its PID (SIGTERM, then waited for), once.
final class OPCUAGateway {
    let pid: pid_t
    let log: URL
    let port: Int
    private var stopped = false

    init(_ s: (dir: URL, config: String, store: String)) throws {
        let bin = try CLITests.binary().path
        try (try String(contentsOfFile: s.config, encoding: .utf8) + "\n[opcua]\nlisten = \"127.0.0.1:0\"\n")
            .write(toFile: s.config, atomically: true, encoding: .utf8)
        log = s.dir.appendingPathComponent("gw.log")
        pid = try SyncFaultTests.spawn(
            #"cd "$1" && exec "$2" run --config "$3" --listen 127.0.0.1:0 --duration 300s"#,
            [s.dir.path, bin, s.config], stdout: "/dev/null", stderr: log.path)
        guard let port = OPCUAServiceTests.opcuaPort(log) else {
            kill(pid, SIGTERM)
            _ = SyncFaultTests.wait(pid)
            throw CLITests.CLIFailure(
                "no OPC UA port in the log: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        self.port = port
    }

    func stop(signal: Int32 = SIGTERM) {
        if !stopped {
            stopped = true
            kill(pid, signal)
            _ = SyncFaultTests.wait(pid)
        }
    }
}
