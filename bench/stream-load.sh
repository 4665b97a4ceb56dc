#!/usr/bin/env bash
# The listener under hostile clients (issue 46, item 7; not part of `swift test`): /healthz latency (p50, p99, max
# of one probe every 50 ms, over SECONDS) while 500 live-stream clients replay the store from `0-0` (half read as
# fast as they can, half never read, with a 4 KiB receive buffer) and 200 clients ask for the status page with
# 200 distinct query strings, again and again; on a store of READINGS readings (default 100,000: about 30 MB as
# stream events), while the gateway polls the demo's simulated reader at 200 ms. Then the same probe with no load.
# BIN=folder runs another build's vlogger (an older commit's, for a comparison).
# Usage: bash bench/stream-load.sh [SECONDS] [READINGS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-20}
N=${2:-100000}
source bench/demo-gateway.sh
"$BIN/vlogger" run --config "$W/vlogger.toml" --store "$W/s.db" --cycles 2 >/dev/null 2>&1
python3 - "$W/s.db" "$N" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
           "INSERT INTO readings(time, gateway, uid, block, count, data, decoded, reader, location) "
           "SELECT 1795800000000 + i * 1000, 'gw-demo-01', 'E008010000004212', 248, 8, zeroblob(32), "
           "'{\"temperature\":4.5,\"humidity\":61}', 'dock-3', 'Dock door 3' FROM n", (int(sys.argv[2]),))
db.commit()
PY
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN/vlogger" run --config "$W/vlogger.toml" --store "$W/s.db" --listen "127.0.0.1:$PORT" --interval 200ms \
  2>"$W/svc.log" >/dev/null &
VPID=$!
PIDS+=("$VPID")
for _ in $(seq 100); do grep -q "status page on" "$W/svc.log" && break; sleep 0.1; done
grep -q "status page on" "$W/svc.log" || { echo "the gateway did not start:"; cat "$W/svc.log"; exit 1; }
sleep 1

probe() { # probe SECONDS LABEL: one /healthz every 50 ms, from a process of its own
  python3 - "$PORT" "$1" "$2" <<'PY'
import socket, sys, time
port, secs, label = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
lat, errors, end = [], 0, time.time() + secs
while time.time() < end:
    t0 = time.perf_counter()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b: break
            data += b
        s.close()
        if not data.startswith(b"HTTP/1.1 200"): errors += 1
    except OSError: errors += 1
    lat.append((time.perf_counter() - t0) * 1000)
    time.sleep(0.05)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print(f"{label}: {len(lat)} probes, p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, max {lat[-1]:.1f} ms, {errors} not 200")
PY
}

echo "== /healthz, no load ($SECS s)"
probe "$SECS" "no load"

echo "== /healthz under 500 stream clients from 0-0 (250 reading, 250 not) and 200 distinct page queries ($SECS s)"
python3 - "$PORT" "$((SECS + 5))" >"$W/load.txt" 2>&1 <<'PY' &
import socket, sys, threading, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + secs
got, pages, refused = [0], [0], [0]
lock = threading.Lock()
def stream(reads):
    try:
        s = socket.socket()
        if not reads: s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(secs)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0-0\r\n\r\n")
        if not reads:
            time.sleep(max(0, end - time.time()))
            return
        n = 0
        while time.time() < end:
            b = s.recv(1 << 20)
            if not b: break
            n += len(b)
        with lock: got[0] += n
    except OSError:
        with lock: refused[0] += 1
def page(i):
    k = 0
    while time.time() < end:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            q = f"/?field=f{i}-{k}&range=r{k}" if k % 2 else f"/tags/E008010000004212?range=x{i}-{k}"
            s.sendall(f"GET {q} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            while s.recv(65536): pass
            s.close()
            with lock: pages[0] += 1
        except OSError:
            with lock: refused[0] += 1
        k += 1
ts = [threading.Thread(target=stream, args=(i % 2 == 0,), daemon=True) for i in range(500)]
ts += [threading.Thread(target=page, args=(i,), daemon=True) for i in range(200)]
for t in ts: t.start()
for t in ts: t.join(secs + 5)
print(f"load: {got[0] / 1e6:.0f} MB streamed to the reading clients, {pages[0]} pages, {refused[0]} connection errors")
PY
LOAD=$!
PIDS+=("$LOAD")
sleep 3
probe "$SECS" "under load"
wait "$LOAD" || true
cat "$W/load.txt"
RSS=$(awk '/VmHWM/ {print $2}' "/proc/$VPID/status")
echo "service: peak RSS $((RSS / 1024)) MiB; $(grep -c "stream: dropped" "$W/svc.log" || true) drop lines in its log"
