#!/usr/bin/env bash
# HTTP listener benchmark (not part of `swift test`). Prints p50/p99 latency and requests/s of /healthz,
# /metrics and / while the listener carries the load the issue describes: 20 clients sending one byte a
# second (never finishing their request), one idle connection, and 200 concurrent connections requesting
# `/` as fast as they are answered (wrk). Then the status page on a store with 1,000,000 readings in the
# last hour. The gateway polls the demo's two simulated readers at 200 ms meanwhile.
# Usage: bash bench/http-load.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
SECS=${1:-10}
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null 2>&1 || { echo "needs wrk (apt-get install wrk)"; exit 1; }; }
swift build -c release --product vlogger >/dev/null
swift build -c release --product store-bench >/dev/null
BIN=$(swift build -c release --show-bin-path)
W=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT
cp -r Config/* "$W"/
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start() { # start STORE: runs the gateway on a free port, sets PORT
  PORT=$(free_port)
  "$BIN/vlogger" run --config "$W/vlogger.toml" --store "$1" --listen "127.0.0.1:$PORT" --interval 200ms 2>"$W/svc.log" >/dev/null &
  VPID=$!
  PIDS+=("$VPID")
  for _ in $(seq 100); do grep -q "status page on" "$W/svc.log" && return 0; sleep 0.1; done
  echo "the gateway did not start:"; cat "$W/svc.log"; exit 1
}
stop() { kill -TERM "$VPID"; wait "$VPID" >/dev/null || true; }
latency() { # latency PATH CONNECTIONS: "p50 p99 req/s" from wrk --latency
  wrk -t1 -c"$2" -d"${SECS}s" --latency "http://127.0.0.1:$PORT$1" | awk '
    /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /^Requests\/sec/ {rps=$2} /Non-2xx|Socket errors/ {err=err $0 " "}
    END {printf "p50 %s p99 %s, %s req/s %s\n", p50, p99, rps, err}'
}
slow_clients() { # 20 one-byte-a-second clients and an idle one, for SECONDS+5
  python3 - "$PORT" "$((SECS + 5))" <<'PY' &
import socket, sys, threading, time
port, secs = int(sys.argv[1]), int(sys.argv[2])
stop = time.time() + secs
idle = socket.create_connection(("127.0.0.1", port))
def slow():
    s = socket.create_connection(("127.0.0.1", port))
    for b in b"GET / HTTP/1.1\r\nX: " + b"a" * 1000:
        if time.time() > stop: break
        try: s.send(bytes([b]))
        except OSError as e: print(f"slow client: {e} after {int(time.time() - stop + secs)} s", file=sys.stderr); return
        time.sleep(1)
ts = [threading.Thread(target=slow) for _ in range(20)]
for t in ts: t.start()
for t in ts: t.join()
PY
  PIDS+=("$!")
}

echo "== listener under load ($SECS s each): 20 slow clients, 1 idle, 200 connections flooding /"
start "$W/load.db"
sleep 2
for path in /healthz /metrics /; do
  slow_clients
  wrk -t1 -c200 -d"$((SECS + 2))s" "http://127.0.0.1:$PORT/" >"$W/flood.txt" &
  FLOOD=$!
  sleep 1
  echo "$path (4 connections, measured): $(latency "$path" 4)"
  wait "$FLOOD"
  echo "  the flood on / (200 connections): $(awk '/Requests\/sec/ {print $2 " req/s"} /Latency/ {print "avg " $2 ", max " $4}' "$W/flood.txt" | tr '\n' ' ')"
done
stop

echo "== status page on a store with 1,000,000 readings in the last hour"
"$BIN/store-bench" fill-recent 1000000 "$W/big.db"
start "$W/big.db"
sleep 2
echo "/ (4 connections): $(latency / 4)"
stop
