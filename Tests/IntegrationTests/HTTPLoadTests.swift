import Foundation
import Testing

/// The listener under hostile load, as the issue measured it on the old single-threaded listener: 20 clients
/// that send one byte a second and never finish their request, one idle client, and 200 requests to `/` at
/// once; `/healthz` must answer every probe meanwhile. The clients are Python's socket and urllib.
@Suite(.serialized) struct HTTPLoadTests {
    typealias CLI = CLITests

    @Test func healthzAnswersEveryProbeUnderSlowClientsAndAFlood() throws {
        let work = try CLI.scratch("http-load", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: work) }
        try CLI.writeOneReaderConfig(work)
        let log = work.appendingPathComponent("svc.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let p = Process()
        p.executableURL = try CLI.binary()
        p.arguments = [
            "run", "--config", "vlogger.toml", "--store", "h.db", "--listen", "127.0.0.1:0", "--interval", "200ms",
        ]
        p.currentDirectoryURL = work
        p.standardError = try FileHandle(forWritingTo: log)
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        var text = ""
        let end = Date().addingTimeInterval(10)
        while Date() < end, !text.contains("status page on http://") {
            Thread.sleep(forTimeInterval: 0.1)
            text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        }
        let port = try #require(
            text.range(of: #"127\.0\.0\.1:(\d+)/"#, options: .regularExpression).flatMap { r in
                Int(text[r].dropFirst("127.0.0.1:".count).dropLast())
            }, "\(text)")
        let r = try ServiceTests.shell(
            """
            python3 - "$1" <<'PY'
            import socket, sys, threading, time, urllib.request
            port = int(sys.argv[1])
            stop = time.time() + 8
            def slow():
                s = socket.create_connection(("127.0.0.1", port))
                for b in b"GET /healthz HTTP/1.1\\r\\nHost: x\\r\\nX-Slow: " + b"a" * 100:
                    if time.time() > stop: break
                    try: s.send(bytes([b]))
                    except OSError: break
                    time.sleep(1)
                s.close()
            idle = socket.create_connection(("127.0.0.1", port))   # connects and says nothing
            slow_threads = [threading.Thread(target=slow, daemon=True) for _ in range(20)]
            for t in slow_threads: t.start()
            time.sleep(1)
            results = []
            def page():
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=15) as r: results.append(r.status)
                except Exception as e: results.append(str(e))
            flood = [threading.Thread(target=page) for _ in range(200)]
            for t in flood: t.start()
            probes = []
            for _ in range(12):
                t0 = time.time()
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r: probes.append((r.status, time.time() - t0))
                except Exception as e: probes.append((str(e), time.time() - t0))
                time.sleep(0.5)
            for t in flood: t.join()
            ok = sum(1 for s, _ in probes if s == 200)
            print(f"probes {ok}/{len(probes)} max {max(d for _, d in probes) * 1000:.0f} ms; flood {results.count(200)}/{len(results)}")
            PY
            """, [String(port)])
        print("listener under load: \(r.out)")
        #expect(r.out.contains("probes 12/12") && r.out.contains("flood 200/200"), "\(r.out)\(r.err)")
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
    }

    @Test func ipv6LoopbackAndMethodsOtherThanGETAndHEAD() throws {
        let work = try CLI.scratch("http-v6", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: work) }
        try CLI.writeOneReaderConfig(work)
        let r = try ServiceTests.shell(
            #"""
            "$1" run --config vlogger.toml --store v6.db --listen '[::1]:0' --interval 200ms 2>svc.log >/dev/null &
            pid=$!
            for _ in $(seq 100); do grep -q 'status page on' svc.log && break; sleep 0.1; done
            port=$(grep -oE '::1\]:[0-9]+' svc.log | head -1 | sed 's/.*://')
            python3 - "$port" <<'PY'
            import sys, urllib.request, urllib.error
            base = f"http://[::1]:{sys.argv[1]}"
            with urllib.request.urlopen(base + "/healthz", timeout=5) as r: print("GET", r.status)
            with urllib.request.urlopen(urllib.request.Request(base + "/metrics", method="HEAD"), timeout=5) as r: print("HEAD", r.status, len(r.read()))
            for m in ["POST", "PUT", "DELETE"]:
                try: urllib.request.urlopen(urllib.request.Request(base + "/", data=b"x", method=m), timeout=5)
                except urllib.error.HTTPError as e: print(m, e.code, e.headers.get("Allow"))
            PY
            kill -TERM $pid; wait $pid; echo "exit $?"
            """#, [try CLI.binary().path], in: work)
        #expect(r.out.contains("GET 200") && r.out.contains("HEAD 200 0"), "\(r.out)\(r.err)")
        #expect(
            r.out.contains("POST 405 GET, HEAD") && r.out.contains("PUT 405") && r.out.contains("DELETE 405"),
            "\(r.out)")
        #expect(r.out.contains("exit 0"), "\(r.out)")
    }

    @Test func aPortInUseEndsTheRunWithAClearErrorAndKeepsWhatWasPolled() throws {
        let work = try CLI.scratch("http-busy", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: work) }
        try CLI.writeOneReaderConfig(work)
        let r = try ServiceTests.shell(
            #"""
            python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(6)' > port.txt 2>/dev/null &
            holder=$!
            for _ in $(seq 50); do [ -s port.txt ] && break; sleep 0.1; done
            "$1" run --config vlogger.toml --store busy.db --listen "127.0.0.1:$(cat port.txt)" --duration 5s 2>err.txt >/dev/null
            echo "exit $?"
            kill $holder
            tail -1 err.txt
            """#, [try CLI.binary().path], in: work)
        #expect(
            r.out.contains("exit 1") && r.out.contains("cannot serve HTTP on 127.0.0.1:")
                && r.out.contains("is another process listening there"), "\(r.out)\(r.err)")
    }

    /// The write API, with curl: no token, a wrong one, the right one; the write is then made by the service.
    @Test func writeAPIWithABearerTokenCheckedWithCurl() throws {
        let work = try CLI.scratch("api", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: work) }
        var text = try CLI.oneReaderConfig()
        text = text.replacingOccurrences(of: "[service]\n", with: "[service]\napi-token-file = \"api-token\"\n")
        try text.write(to: work.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        let secret = "s3cret-token-0123456789"
        try (secret + "\n").write(to: work.appendingPathComponent("api-token"), atomically: true, encoding: .utf8)
        let r = try ServiceTests.shell(
            #"""
            "$1" run --config vlogger.toml --store api.db --listen 127.0.0.1:0 --interval 200ms 2>svc.log >/dev/null &
            pid=$!
            for _ in $(seq 100); do grep -q 'status page on' svc.log && break; sleep 0.1; done
            base=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' svc.log | head -1)
            body='{"uid": "E008010000004212", "block": "0xF9", "data": "A1A2A3A4A5A6A7A8"}'
            echo "none $(curl -s -o /dev/null -w '%{http_code}' -X POST -d "$body" "$base/api/writes")"
            echo "wrong $(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer nope' -d "$body" "$base/api/writes")"
            echo "bad $(curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $2" -d '{"uid": "nope"}' "$base/api/writes")"
            echo "lock $(curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $2" -d '{"uid": "E008010000004212", "block": 250, "lock": true}' "$base/api/writes")"
            echo "ok $(curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $2" -d "$body" "$base/api/writes")"
            # The queue is copied every 2 s and outcomes commit with the next batch (2 s): wait up to 10 s.
            for _ in $(seq 50); do
              got=$(curl -s -w ' %{http_code}' -H "Authorization: Bearer $2" "$base/api/writes/1")
              case "$got" in *'"state":"done"'*) break ;; esac
              sleep 0.2
            done
            echo "get $got"
            echo "getnone $(curl -s -o /dev/null -w '%{http_code}' "$base/api/writes/1")"
            echo "v1 $(curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $2" -d "$body" "$base/api/v1/writes")"
            echo "v1get $(curl -s "$base/api/v1/writes/1")"
            kill -TERM $pid; wait $pid
            echo "log $(grep -c 'write API: refused' svc.log) $(grep -c "$2" svc.log)"
            echo "counted $(grep -c 'write API: refused 2 requests' svc.log)"
            """#, [try CLI.binary().path, secret], in: work)
        #expect(r.out.contains("none 401") && r.out.contains("wrong 401"), "\(r.out)\(r.err)")
        #expect(r.out.contains("bad {\"error\":\"uid: 'nope' is not a UID") && r.out.contains("} 400"), "\(r.out)")
        #expect(r.out.contains("ok {\"id\":1,\"state\":\"queued\"} 201"), "\(r.out)")
        #expect(
            r.out.contains("lock {\"error\":\"lock: a lock is irreversible") && r.out.contains("with it\"} 400"),
            "\(r.out)")
        // The service made it: the queue's copy, a cycle with the tag, and the next commit.
        #expect(
            r.out.contains("\"state\":\"done\"") && r.out.contains("\"data\":\"A1A2A3A4A5A6A7A8\"")
                && r.out.contains(" 200"), "\(r.out)")
        #expect(r.out.contains("getnone 401"), "\(r.out)")
        // Who asked (docs/json.md, origin): the queue keeps it, and the write made of it and its event carry it.
        #expect(r.out.contains(#""origin":"api""#), "\(r.out)")
        let store = work.appendingPathComponent("api.db").path
        let writes = try CLI.run(["export", "--store", store, "--since", "30d", "--table", "writes"])
        let written = writes.out.split(separator: "\r\n").dropFirst().filter { $0.contains(",E008010000004212,0xF9,") }
        #expect(!written.isEmpty && written.allSatisfy { $0.hasSuffix(",api") }, "\(writes.out)")
        let events = try CLI.run(["export", "--store", store, "--since", "30d", "--table", "events"])
        let done = events.out.split(separator: "\r\n").filter { $0.contains(",write_done,") }
        #expect(!done.isEmpty && done.allSatisfy { $0.hasSuffix(",api") }, "\(events.out)")
        // The write endpoint under v1 (the old path stays an alias), and the write read back through the read API.
        #expect(r.out.contains("v1 {\"id\":2,\"state\":\"queued\"} 201"), "\(r.out)")
        #expect(r.out.contains("v1get {\"block\":") && r.out.contains("\"id\":1,\"operation\":\"write\""), "\(r.out)")
        // Three refusals: the first logged at once, the other two counted and said in one line at shutdown (at
        // most one line a minute while running); the token never.
        #expect(r.out.contains("log 2 0") && r.out.contains("counted 1"), "\(r.out)")
    }
}

/// The live stream under clients that do not read (issue 46, item 7): on a store of 40,000 readings, a client that
/// asks for everything from `0-0` and never reads is dropped once it has not taken a write within
/// `stream-write-timeout` (here 2 s), and counted in `vlogger_stream_clients_dropped_total`; `/healthz` answers
/// meanwhile; a client beyond `stream-clients` is answered 503 with Retry-After (RFC 9110 §15.6.4, §10.2.3). Before
/// the fix, such a client held its stream for as long as it kept the connection. The clients are Python's socket.
@Suite(.serialized) struct StreamClientTests {
    typealias CLI = CLITests

    @Test func aClientThatDoesNotReadIsDroppedAndOneTooManyIsAnswered503() throws {
        let work = try CLI.scratch("stream-slow", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: work) }
        let config = try CLI.oneReaderConfig().replacingOccurrences(
            of: "\n[service]\n", with: "\n[service]\nstream-write-timeout = \"2s\"\nstream-clients = 3\n")
        try config.write(to: work.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        // A store with the demo's first readings, then 40,000 more (about 12 MB as stream events: more than the
        // kernel's socket buffers on both sides hold).
        let first = try CLI.run([
            "run", "--config", work.appendingPathComponent("vlogger.toml").path,
            "--store", work.appendingPathComponent("s.db").path, "--cycles", "2",
        ])
        #expect(first.code == 0, "\(first.err)")
        let fill = try ServiceTests.shell(
            """
            python3 - "$1" <<'PY'
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000) "
                       "INSERT INTO readings(time, gateway, uid, block, count, data, decoded, reader, location) "
                       "SELECT 1763800000000 + i, 'gw', 'E008010000004212', 248, 8, zeroblob(32), "
                       "'{\\"temperature\\":4.5,\\"humidity\\":61}', 'dock', 'Dock door 1' FROM n")
            db.commit()
            print(db.execute("SELECT count(*) FROM readings").fetchone()[0])
            PY
            """, [work.appendingPathComponent("s.db").path])
        #expect(
            fill.code == 0 && (Int(fill.out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 40_000,
            "\(fill.out)\(fill.err)")
        let log = work.appendingPathComponent("svc.log")
        let pid = try SyncFaultTests.spawn(
            #"cd "$1" && exec "$2" run --config vlogger.toml --store s.db --listen 127.0.0.1:0 --interval 500ms"#,
            [work.path, try CLI.binary().path], stdout: "/dev/null", stderr: log.path)
        defer {
            kill(pid, SIGKILL)
            _ = SyncFaultTests.wait(pid)
        }
        let port = try #require(
            ServiceTests.listenPort(log), "\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        let r = try ServiceTests.shell(
            """
            python3 - "$1" <<'PY'
            import re, socket, sys, threading, time, urllib.request, urllib.error
            port = int(sys.argv[1])
            def stream(rcvbuf=None, start=b"Last-Event-ID: 0-0\\r\\n"):
                s = socket.socket()
                if rcvbuf: s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
                s.connect(("127.0.0.1", port))
                s.sendall(b"GET /api/v1/stream HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n" + start + b"\\r\\n")
                return s
            # Two readers that keep up (from now on, reading all the time), and one that asks for everything and
            # never reads: three, the limit; a fourth is refused.
            readers = [stream(start=b"") for _ in range(2)]
            stop = [False]
            def read(s):
                s.settimeout(0.5)
                while not stop[0]:
                    try:
                        if not s.recv(65536): break
                    except socket.timeout: pass
                    except OSError: break
            threads = [threading.Thread(target=read, args=(s,), daemon=True) for s in readers]
            for t in threads: t.start()
            slow = stream(rcvbuf=4096)
            time.sleep(0.2)
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/stream", timeout=5)
                print("fourth: 200")
            except urllib.error.HTTPError as e:
                print(f"fourth: {e.code} retry-after {e.headers.get('Retry-After')}")
            # /healthz while the slow client waits for its drop.
            worst = 0
            for _ in range(10):
                t0 = time.time()
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r: r.read()
                worst = max(worst, time.time() - t0)
                time.sleep(0.3)
            print(f"healthz worst {worst * 1000:.0f} ms")
            # The server has closed the slow client's connection: reading now reaches its end within the buffers.
            slow.settimeout(10)
            got, closed = 0, False
            try:
                while True:
                    b = slow.recv(1 << 20)
                    if not b: closed = True; break
                    got += len(b)
            except ConnectionResetError: closed = True
            except socket.timeout: pass
            print(f"slow client: closed {closed} after {got} bytes")
            stop[0] = True
            for t in threads: t.join()
            for s in readers: s.close()
            # The readers' streams end when the service next writes to them (the next commit, within seconds).
            end = time.time() + 10
            while True:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r: m = r.read().decode()
                found = {}
                for name in ("vlogger_stream_clients_dropped_total", "vlogger_stream_clients"):
                    v = re.search(r"^" + name + r" ([0-9.]+)$", m, re.M)
                    found[name] = float(v.group(1)) if v else None
                if found["vlogger_stream_clients"] == 0 or time.time() > end: break
                time.sleep(0.2)
            for name, v in found.items(): print(f"{name} = {v}")
            PY
            """, [String(port)])
        print("stream clients: \(r.out)")
        #expect(r.out.contains("fourth: 503 retry-after 5"), "\(r.out)\(r.err)")
        #expect(r.out.contains("slow client: closed True"), "\(r.out)\(r.err)")
        // The slow client got far less than the store holds (about 12 MB).
        let got = r.out.components(separatedBy: "after ").last.flatMap { Int($0.prefix { $0.isNumber }) } ?? .max
        #expect(got < 8_000_000, "\(r.out)")
        #expect(r.out.contains("vlogger_stream_clients_dropped_total = 1.0"), "\(r.out)")
        #expect(r.out.contains("vlogger_stream_clients = 0.0"), "\(r.out)")
        // /healthz answered every probe within the urlopen timeout; under this light load, well within a second.
        let worst = r.out.components(separatedBy: "healthz worst ").last.flatMap { Int($0.prefix { $0.isNumber }) }
        #expect((worst ?? .max) < 1000, "\(r.out)")
        let svc = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(svc.contains("stream: dropped 1 client that did not read"), "\(svc.suffix(2000))")
    }
}
