import Foundation
import Testing
import ISO15693
import VLoggerStore
import VLoggerModel

/// The gateway under abuse as an operator or a client could cause it (issue "Nothing lost, nobody in"): the
/// store's files removed or replaced under a running service, a second service on one store, schedules that
/// never fire, the write API's token rotated, bodies that are not what they seem.
@Suite(.serialized) struct HardeningServiceTests {
    typealias CLI = CLITests
    /// Waits (at most 20 s) until the gateway has committed a batch, so the fault hits a store in use.
    static func waitForFirstCommit(_ store: String) {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let db = try? Store(path: store, readOnly: true) {
                let n = (try? db.count("readings")) ?? 0
                db.close()
                if n > 0 { return }
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    static func readings(_ store: String) throws -> Int {
        let db = try Store(path: store, readOnly: true)
        defer { db.close() }
        return try db.count("readings")
    }

    @Test func aRemovedWALEndsTheRunWithAnErrorAndItsCommitsStayInTheStore() throws {
        let s = try StoreFaultTests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let r = try StoreFaultTests.run(config: s.config, store: s.store, seconds: 20) {
            Self.waitForFirstCommit(s.store)
            try FileManager.default.removeItem(atPath: s.store + "-wal")
        }
        #expect(r.code == 1, "\(r.out)\(r.err)")
        #expect(
            r.err.contains("-wal (the commits not yet merged into") && r.err.contains("was removed")
                && r.err.contains("merged into"), "\(r.err)")
        // It stopped at once, not after its 20 s, and what it had committed is in the .db file itself.
        let n = try Self.readings(s.store)
        #expect(n > 0, "\(r.out)")
        let committed = StoreFaultTests.summary(r.out)?.readings ?? -1
        #expect(committed >= n - 1, "\(r.out)")
        // The next run goes on with the same store.
        let again = try CLITests.run([
            "run", "--config", s.config, "--store", s.store, "--cycles", "2", "--fast-clock", "--listen", "",
        ])
        #expect(again.code == 0, "\(again.err)")
        #expect(try Self.readings(s.store) > n)
    }

    @Test func aStoreReplacedUnderTheServiceIsLeftAsItWasPut() throws {
        let s = try StoreFaultTests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let backup = s.dir.appendingPathComponent("backup.db").path
        do {
            let b = try Store(path: backup)
            var batch = Batch()
            batch.events = (0..<42).map {
                Event(
                    time: Millis($0), gateway: "old", uid: nil, kind: .start, name: "n", severity: .info,
                    detail: "restored")
            }
            try b.write(batch)
            b.close()
        }
        let r = try StoreFaultTests.run(config: s.config, store: s.store, seconds: 20) {
            Self.waitForFirstCommit(s.store)
            #expect(rename(backup, s.store) == 0)
        }
        #expect(r.code == 1 && r.err.contains("was removed or replaced") && r.err.contains(".orphaned-"), "\(r.err)")
        let db = try Store(path: s.store, readOnly: true)
        #expect(try db.count("events") == 42 && db.count("readings") == 0)
        #expect(try db.integrityCheck() == "ok")
        db.close()
        let orphan = try FileManager.default.contentsOfDirectory(atPath: s.dir.path).first { $0.contains(".orphaned-") }
        #expect(orphan != nil)
        if let orphan { #expect(try Self.readings(s.dir.appendingPathComponent(orphan).path) > 0) }
    }

    @Test func aSecondRunOnTheSameStoreIsRefusedWithThePID() throws {
        let s = try AgentCLITests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        var second: (code: Int32, out: String, err: String) = (0, "", "")
        var firstPID: Int32 = 0
        let first = try StoreFaultTests.run(config: s.config, store: s.store, seconds: 8) {
            Self.waitForFirstCommit(s.store)
            firstPID =
                Int32(
                    (try? String(contentsOfFile: s.store + ".lock", encoding: .utf8))?.trimmingCharacters(
                        in: .whitespacesAndNewlines) ?? "") ?? 0
            second = try CLITests.run([
                "run", "--config", s.config, "--store", s.store, "--cycles", "1", "--listen", "",
            ])
        }
        #expect(first.code == 0, "\(first.err)")
        #expect(firstPID > 0)
        #expect(
            second.code == 1 && second.err.contains("another vlogger run (pid \(firstPID)) uses the store"),
            "\(second.err)")
    }

    @Test func schedulesThatNeverFireAreRefusedAndNoneToRunIsNoFault() throws {
        let s = try AgentCLITests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        var text = try String(contentsOfFile: s.config, encoding: .utf8)
        let good = text
        text += "\n[[audit.schedule]]\nname = \"never\"\ncron = \"0 0 30 2 *\"\n"
        try text.write(toFile: s.config, atomically: true, encoding: .utf8)
        let check = try CLITests.run(["config", "check", "--config", s.config])
        #expect(check.code == 1 && check.err.contains("schedule 'never' never fires"), "\(check.out)\(check.err)")
        // A configuration without schedules: the scheduler waits for a reload or the shutdown, the run goes on.
        try good.write(toFile: s.config, atomically: true, encoding: .utf8)
        let run = try CLITests.run([
            "run", "--config", s.config, "--store", s.store, "--duration", "3s", "--listen", "",
        ])
        #expect(run.code == 0 && !run.err.contains("ServiceGroupError"), "\(run.err)")
    }

    /// RFC 7235 §2.1: the auth-scheme is case-insensitive. SIGHUP rotates the token: the old one stops working.
    @Test func theWriteAPIUnderRotationAndOddBodies() throws {
        let work = try CLI.scratch("api-hard", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: work) }
        var text = try CLI.oneReaderConfig()
        text = text.replacingOccurrences(of: "[service]\n", with: "[service]\napi-token-file = \"api-token\"\n")
        try text.write(to: work.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        try "old-token-0123456789\n".write(
            to: work.appendingPathComponent("api-token"), atomically: true, encoding: .utf8)
        let r = try ServiceTests.shell(
            #"""
            "$1" run --config vlogger.toml --store api.db --listen 127.0.0.1:0 --interval 200ms 2>svc.log >/dev/null &
            pid=$!
            for _ in $(seq 100); do grep -q 'status page on' svc.log && break; sleep 0.1; done
            base=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' svc.log | head -1)
            post() { curl -s -w ' %{http_code}' -X POST -H "authorization: bearer $1" "${@:3}" -d "$2" "$base/api/writes"; echo; }
            echo "lower $(post old-token-0123456789 '{"uid": "E008010000004212", "block": 249, "data": "A1A2A3A4A5A6A7A8"}')"
            echo "false $(post old-token-0123456789 '{"uid": "E008010000004212", "block": false, "data": "A1A2A3A4A5A6A7A8"}')"
            echo "dup $(post old-token-0123456789 '{"uid": "E008010000004212", "block": 250, "lock": false, "lock": true, "yes": true}')"
            echo "reader $(post old-token-0123456789 '{"uid": "E008010000004212", "block": 249, "data": "A1A2A3A4A5A6A7A8", "reader": "nowhere"}')"
            echo "key1 $(post old-token-0123456789 '{"uid": "E008010000004212", "block": 249, "data": "B1B2B3B4B5B6B7B8"}' -H 'Idempotency-Key: order-77')"
            echo "key2 $(post old-token-0123456789 '{"uid": "E008010000004212", "block": 249, "data": "B1B2B3B4B5B6B7B8"}' -H 'Idempotency-Key: order-77')"
            # The store refuses a reused key for another write: 422 with its reason, not a 503 to retry.
            echo "key3 $(post old-token-0123456789 '{"uid": "E008010000004212", "block": 249, "data": "D1D2D3D4D5D6D7D8"}' -H 'Idempotency-Key: order-77')"
            # Two writes for a tag that is not in the field stay queued: /healthz counts them.
            echo "absent1 $(post old-token-0123456789 '{"uid": "E00401000000BEEF", "block": 1, "data": "11223344"}')"
            echo "absent2 $(post old-token-0123456789 '{"uid": "E00401000000BEEF", "block": 2, "data": "11223344"}')"
            for _ in $(seq 100); do
                n=$(curl -s "$base/healthz" | grep -oE '"writes_queued":[0-9]+' | cut -d: -f2)
                [ "${n:-0}" -ge 2 ] && break; sleep 0.1
            done
            echo "health $(curl -s "$base/healthz")"
            echo "rebind $(curl -s -o /dev/null -w '%{http_code}' -H 'Host: attacker.example:9715' "$base/healthz")"
            printf 'new-token-9876543210\n' > api-token
            kill -HUP $pid
            for _ in $(seq 50); do grep -q 'SIGHUP: reloaded' svc.log && break; sleep 0.1; done
            echo "oldafter $(post old-token-0123456789 '{"uid": "E008010000004212", "block": 249, "data": "A1A2A3A4A5A6A7A8"}')"
            echo "newafter $(post new-token-9876543210 '{"uid": "E008010000004212", "block": 249, "data": "C1C2C3C4C5C6C7C8"}')"
            sed -i '/api-token-file/d' vlogger.toml
            kill -HUP $pid
            for _ in $(seq 50); do [ "$(grep -c 'SIGHUP: reloaded' svc.log)" -ge 2 ] && break; sleep 0.1; done
            echo "removed $(post new-token-9876543210 '{"uid": "E008010000004212", "block": 249, "data": "A1A2A3A4A5A6A7A8"}')"
            kill -TERM $pid; wait $pid
            echo "reloadlog $(grep 'SIGHUP: reloaded' svc.log | tr '\n' '|')"
            """#, [try CLI.binary().path], in: work)
        let out = r.out
        #expect(out.contains("lower {\"id\":1,\"state\":\"queued\"} 201"), "\(out)")
        #expect(
            out.contains(
                "false {\"error\":\"block: a block number as an integer (249) or a string (\\\"0xF9\\\"), not a boolean\"} 400"
            ), "\(out)")
        #expect(
            out.contains("dup {\"error\":\"not valid JSON at byte")
                && out.contains("the key 'lock' appears twice in one object\"} 400"), "\(out)")
        #expect(
            out.contains("reader {\"error\":\"reader: this gateway has no reader 'nowhere'") && out.contains("} 422"),
            "\(out)")
        #expect(
            out.contains("key1 {\"id\":2,\"state\":\"queued\"} 201")
                && out.contains("key2 {\"id\":2,\"replayed\":true,\"state\":\"queued\"} 200"), "\(out)")
        #expect(
            out.contains("key3 {\"error\":") && out.contains("order-77") && out.contains("} 422"), "\(out)")
        #expect(out.contains("absent1 {\"id\":") && out.contains("absent2 {\"id\":"), "\(out)")
        // The two writes for the absent tag never run; the others may have been made already.
        let queued = out.firstMatch(of: /"writes_queued":([0-9]+)/).flatMap { Int($0.1) }
        #expect(queued.map { (2...4).contains($0) } == true, "writes_queued \(String(describing: queued)): \(out)")
        // DNS rebinding: a page on attacker.example pointed at 127.0.0.1 is answered 421 Misdirected Request.
        #expect(out.contains("rebind 421"), "\(out)")
        #expect(
            out.contains("oldafter {\"error\":\"unauthorized\"} 401")
                && out.contains("newafter {\"id\":5,\"state\":\"queued\"} 201"), "\(out)")
        #expect(out.contains("removed no write API") && out.contains(" 404"), "\(out)")
        #expect(
            out.contains("write API token read again from") && out.contains("write API off (no api-token-file)"),
            "\(out)")
    }

    /// On an address other machines reach, the bearer token would cross the network in clear: the write API is
    /// off (404 with the reason) and the log says why; reading /healthz goes on.
    @Test func theWriteAPIIsNotServedOnANetworkAddress() throws {
        let work = try CLI.scratch("api-net", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: work) }
        var text = try CLI.oneReaderConfig()
        text = text.replacingOccurrences(of: "[service]\n", with: "[service]\napi-token-file = \"api-token\"\n")
        try text.write(to: work.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        try "net-token-0123456789\n".write(
            to: work.appendingPathComponent("api-token"), atomically: true, encoding: .utf8)
        let r = try ServiceTests.shell(
            #"""
            "$1" run --config vlogger.toml --store net.db --listen 0.0.0.0:0 --interval 200ms 2>svc.log >/dev/null &
            pid=$!
            for _ in $(seq 100); do grep -q 'status page on' svc.log && break; sleep 0.1; done
            port=$(grep -oE 'http://0\.0\.0\.0:[0-9]+' svc.log | head -1 | sed 's/.*://')
            echo "post $(curl -s -w ' %{http_code}' -X POST -H 'Authorization: Bearer net-token-0123456789' -d '{}' "http://127.0.0.1:$port/api/writes")"
            echo "health $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")"
            kill -TERM $pid; wait $pid
            grep -c 'the write API is off' svc.log
            """#, [try CLI.binary().path], in: work)
        #expect(
            r.out.contains("post no write API") && r.out.contains(" 404") && r.out.contains("health 200"),
            "\(r.out)\(r.err)")
        #expect(r.out.hasSuffix("1\n"), "\(r.out)")
    }

    /// The read API on a network address: without read-token-file it is closed (403); with it, a request needs
    /// the read token (401 without it, and the write API's token is not one), SIGHUP rotates it (the old one stops
    /// working at once), and /healthz stays open.
    @Test func theReadAPIOnANetworkAddressNeedsTheReadToken() throws {
        let work = try CLI.scratch("read-net", copying: ["rules.toml", "assets.csv", "demo-field"])
        defer { try? FileManager.default.removeItem(at: work) }
        let base = try CLI.oneReaderConfig()
        try base.write(to: work.appendingPathComponent("closed.toml"), atomically: true, encoding: .utf8)
        try base.replacingOccurrences(
            of: "[service]\n", with: "[service]\nread-token-file = \"read-token\"\napi-token-file = \"api-token\"\n"
        ).write(to: work.appendingPathComponent("vlogger.toml"), atomically: true, encoding: .utf8)
        try "read-token-0123456789\n".write(
            to: work.appendingPathComponent("read-token"), atomically: true, encoding: .utf8)
        try "write-token-0123456789\n".write(
            to: work.appendingPathComponent("api-token"), atomically: true, encoding: .utf8)
        let r = try ServiceTests.shell(
            #"""
            code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
            start() {
              rm -f svc.log
              "$1" run --config "$2" --store net.db --listen 0.0.0.0:0 --interval 200ms 2>svc.log >/dev/null &
              pid=$!
              for _ in $(seq 100); do grep -q 'status page on' svc.log && break; sleep 0.1; done
              port=$(grep -oE 'http://0\.0\.0\.0:[0-9]+' svc.log | head -1 | sed 's/.*://')
            }
            start "$1" closed.toml
            echo "closed $(code "http://127.0.0.1:$port/api/v1/tags")"
            kill -TERM $pid; wait $pid
            start "$1" vlogger.toml
            u="http://127.0.0.1:$port/api/v1/readings?limit=1"
            echo "none $(code "$u")"
            echo "write $(code -H 'Authorization: Bearer write-token-0123456789' "$u")"
            echo "read $(code -H 'Authorization: Bearer read-token-0123456789' "$u")"
            echo "scheme $(code -H 'authorization: bearer read-token-0123456789' "$u")"
            echo "rotated-token-98765432" > read-token
            kill -HUP $pid
            for _ in $(seq 50); do grep -q 'read API token read again' svc.log && break; sleep 0.1; done
            echo "old $(code -H 'Authorization: Bearer read-token-0123456789' "$u")"
            echo "new $(code -H 'Authorization: Bearer rotated-token-98765432' "$u")"
            echo "health $(code "http://127.0.0.1:$port/healthz")"
            echo "www $(curl -s -D - -o /dev/null "$u" | grep -ci '^www-authenticate: bearer')"
            # Issue 46, item 13: the token covers the pages and /metrics too (served to anyone on 6b52d4c).
            for p in / /index.html /metrics /tags/E008010000004212 /audits/1; do
              echo "cover $p $(code "http://127.0.0.1:$port$p") $(code -H 'Authorization: Bearer rotated-token-98765432' "http://127.0.0.1:$port$p")"
            done
            kill -TERM $pid; wait $pid
            grep -c 'takes its bearer token over plain HTTP' svc.log
            """#, [try CLI.binary().path], in: work)
        for line in [
            "closed 403", "none 401", "write 401", "read 200", "scheme 200", "old 401", "new 200", "health 200",
            "www 1", "cover / 401 200", "cover /index.html 401 200", "cover /metrics 401 200",
            "cover /tags/E008010000004212 401 200", "cover /audits/1 401 404",
        ] {
            #expect(r.out.contains(line + "\n"), "\(line): \(r.out)\(r.err)")
        }
        #expect(r.out.hasSuffix("1\n"), "the warning about plain HTTP: \(r.out)")
    }

    /// The rescue a damaged store's message names is one that works: a truncated file (its last fifth gone)
    /// refuses a plain export ("database disk image is malformed", SQLite code 11), and `store salvage` saves the
    /// rows before the damage, which then export.
    @Test func theRescueOfATruncatedStoreWorksAsTheMessageSays() throws {
        let s = try AgentCLITests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let first = try CLITests.run([
            "run", "--config", s.config, "--store", s.store, "--cycles", "40", "--fast-clock", "--listen", "",
        ])
        #expect(first.code == 0, "\(first.err)")
        let whole = try Self.readings(s.store)
        let size = (try FileManager.default.attributesOfItem(atPath: s.store)[.size] as? Int) ?? 0
        #expect(truncate(s.store, off_t(size * 4 / 5 / 4096 * 4096)) == 0)
        let refused = try CLITests.run([
            "run", "--config", s.config, "--store", s.store, "--cycles", "1", "--listen", "",
        ])
        #expect(refused.code == 1 && refused.err.contains("is damaged"), "\(refused.err)")
        let plain = try CLITests.run(["export", "--store", s.store, "--since", "2000-01-01T00:00:00Z"])
        #expect(plain.code == 1, "\(plain.out)")
        // The commands the message gives, as an operator would copy them.
        let saved = s.store + ".salvaged.db"
        #expect(
            refused.err.contains("vlogger store salvage --store \(s.store) --to \(saved)")
                && refused.err.contains("vlogger export --store \(saved)"), "\(refused.err)")
        let salvage = try CLITests.run(["store", "salvage", "--store", s.store, "--to", saved])
        #expect(salvage.code == 0 && salvage.out.contains("rows saved in"), "\(salvage.out)\(salvage.err)")
        // The lost tail of the readings is said, not passed over in silence.
        #expect(
            salvage.out.split(separator: "\n").first { $0.hasPrefix("readings:") }?.contains("to the end") == true,
            "\(salvage.out)")
        let kept = try Self.readings(saved)
        #expect(kept > 0 && kept < whole, "\(kept) of \(whole): \(salvage.out)")
        let export = try CLITests.run(["export", "--store", saved, "--since", "2000-01-01T00:00:00Z"])
        #expect(export.code == 0 && export.out.split(separator: "\r\n").count == kept + 1, "\(export.err)")
        // And the salvaged store takes the service again.
        let again = try CLITests.run([
            "run", "--config", s.config, "--store", saved, "--cycles", "1", "--fast-clock", "--listen", "",
        ])
        #expect(again.code == 0, "\(again.err)")
    }

    /// A store on a read-only mount (a backup, a mounted image) is read as it is when its -wal is absent or empty
    /// (a clean shutdown checkpoints it); with commits still in its -wal the message says what to do.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs read-only needs root")) func aStoreOnAReadOnlyMount() throws {
        let s = try AgentCLITests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let run = try CLITests.run([
            "run", "--config", s.config, "--store", s.store, "--cycles", "3", "--fast-clock", "--listen", "",
        ])
        #expect(run.code == 0, "\(run.err)")
        let mnt = s.dir.appendingPathComponent("ro").path
        let r = try ServiceTests.shell(
            #"""
            set -e
            mkdir -p "$2"; mount -t tmpfs tmpfs "$2"
            trap 'umount "$2"' EXIT
            cp "$3" "$2/s.db"; : > "$2/s.db-wal"
            mount -o remount,ro "$2"
            for c in "export --since 2000-01-01" "writes list" "assets list" "audit list"; do
              "$1" $c --store "$2/s.db" >/dev/null 2>err.txt && echo "ok $c" || echo "failed $c: $(cat err.txt)"
            done
            mount -o remount,rw "$2"; printf 'x%.0s' $(seq 100) > "$2/s.db-wal"; mount -o remount,ro "$2"
            "$1" export --since 2000-01-01 --store "$2/s.db" 2>&1 >/dev/null || true
            """#, [try CLITests.binary().path, mnt, s.store], in: s.dir)
        for c in ["export --since 2000-01-01", "writes list", "assets list", "audit list"] {
            #expect(r.out.contains("ok \(c)"), "\(r.out)\(r.err)")
        }
        #expect(
            r.out.contains("holds 100 bytes of commits not merged") && r.out.contains("to a writable folder"),
            "\(r.out)\(r.err)")
    }

    /// A tag's NDEF Text record carrying ECMA-48 sequences (OSC 0 sets the terminal's title, SGR 31 turns text
    /// red) is printed with them made visible, never obeyed; so is a register name with a forged line.
    @Test func textFromOutsideNeverDrivesTheTerminal() throws {
        // Text record "T ESC]0;owned BEL ESC[31mred", language "en" (NFC Forum Text RTD: status byte 02, then "en").
        let hex = "D1 01 16 54 02 65 6E 54 1B 5D 30 3B 6F 77 6E 65 64 07 1B 5B 33 31 6D 72 65 64"
        let d = try CLITests.run(["ndef", "decode", hex])
        #expect(
            d.code == 0 && !d.out.contains("\u{1B}") && !d.out.contains("\u{07}")
                && d.out.contains("\\x1B]0;owned\\x07\\x1B[31mred"), "\(d.out)")
        let s = try AgentCLITests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let csv = s.dir.appendingPathComponent("forged.csv").path
        try "uid,asset_id,name\nE008010000004212,A1,\"Cage\r\n2026-01-01 forged line\"\n".write(
            toFile: csv, atomically: true, encoding: .utf8)
        // a CR or LF in a cell is refused at import
        #expect(try CLITests.run(["assets", "import", "--store", s.store, csv]).code == 1)
        // A reader id with ESC [2J (erase the screen) in a queued write of an older release's store.
        let unknown = try CLITests.run([
            "write", "--when-seen", "--config", s.config, "--store", s.store, "--uid", "E008010000004212", "--block",
            "1",
            "--data", "01020304", "--only-reader", "dock\u{1B}[2J",
        ])
        #expect(unknown.code != 0 && unknown.err.contains("no reader"), "\(unknown.err)")
        do {
            let db = try Store(path: s.store)
            try db.enqueue(
                QueuedWrite(
                    created: 0, uid: try UID(parsing: "E008010000004212"), first: 1, data: [1, 2, 3, 4],
                    reader: "dock\u{1B}[2J"))
            db.close()
        }
        let list = try CLITests.run(["writes", "list", "--store", s.store])
        #expect(list.out.contains("\\x1B[2J") && !list.out.contains("\u{1B}"), "\(list.out)")
    }

    /// Schedules are planned again on SIGHUP: a service started without any runs the one a reload brings (a fast
    /// clock, 60 times real time, so a cron firing every minute fires within a second).
    @Test func aScheduleAddedByAReloadRuns() throws {
        let s = try AgentCLITests.setup()
        defer { try? FileManager.default.removeItem(at: s.dir) }
        let r = try ServiceTests.shell(
            #"""
            "$1" run --config "$2" --store "$3" --clock-rate 60 --listen "" --log-level info 2>svc.log >/dev/null &
            pid=$!
            for _ in $(seq 100); do grep -q 'cycle\|committed\|polling' svc.log && break; sleep 0.1; done
            sleep 1
            printf '\n[[audit.schedule]]\nname = "every-minute"\ncron = "* * * * *"\n' >> "$2"
            kill -HUP $pid
            for _ in $(seq 100); do grep -q "audit .* 'every-minute' of" svc.log && break; sleep 0.1; done
            kill -TERM $pid; wait $pid; echo "exit $?"
            grep -o "1 audit schedule (changed: planned again)" svc.log | head -1
            grep -c "'every-minute' of" svc.log
            """#, [try CLITests.binary().path, s.config, s.store], in: s.dir)
        #expect(
            r.out.contains("exit 0") && r.out.contains("1 audit schedule (changed: planned again)"), "\(r.out)\(r.err)")
        let audits = Int(r.out.split(separator: "\n").last ?? "") ?? 0
        #expect(audits >= 1, "\(r.out)")
    }
}
