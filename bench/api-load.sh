#!/usr/bin/env bash
# Read API benchmark (not part of `swift test`): p50/p99 latency and requests/s of /api/v1/readings?uid=…&since=1h
# and /api/v1/tags under 200 concurrent connections (wrk), on a store with N readings (default 10,000,000) of 64
# tags in the last hour, while the gateway polls the demo's two simulated readers; and the service's resident
# memory (VmRSS, sampled every 100 ms) during the load.
# Usage: bash bench/api-load.sh [READINGS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
N=${1:-10000000}
SECS=${2:-10}
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null 2>&1 || { echo "needs wrk (apt-get install wrk)"; exit 1; }; }
swift build -c release --product vlogger >/dev/null
swift build -c release --product store-bench >/dev/null
BIN=$(swift build -c release --show-bin-path)
W=$(mktemp -d)
VPID=""
cleanup() { if [ -n "$VPID" ]; then kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; fi; rm -rf "$W"; }
trap cleanup EXIT
cp -r Config/* "$W"/
echo "== filling a store with $N readings in the last hour"
start=$(date +%s)
"$BIN/store-bench" fill-recent "$N" "$W/big.db"
echo "   filled in $(( $(date +%s) - start )) s, $(du -h "$W/big.db" | cut -f1)"
UID_=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select uid from readings limit 1").fetchone()[0])' "$W/big.db")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN/vlogger" run --config "$W/vlogger.toml" --store "$W/big.db" --listen "127.0.0.1:$PORT" --interval 200ms \
    2>"$W/svc.log" >/dev/null &
VPID=$!
# The first start of a new vlogger on an older store migrates it (building an index over every reading).
start=$(date +%s.%N)
for _ in $(seq 1200); do grep -q "status page on" "$W/svc.log" && break; sleep 0.1; done
echo "   the service answered after $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s (store migrations included)"
grep -q "status page on" "$W/svc.log" || { echo "the gateway did not start:"; cat "$W/svc.log"; exit 1; }
sleep 2
rss_during() { # rss_during SECONDS: the highest VmRSS of the service, in MiB
  python3 - "$VPID" "$1" <<'PY'
import sys, time
pid, secs = sys.argv[1], float(sys.argv[2])
top, end = 0, time.time() + secs
while time.time() < end:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"): top = max(top, int(line.split()[1]))
    except OSError: break
    time.sleep(0.1)
print(f"{top / 1024:.1f} MiB")
PY
}
for path in "/api/v1/readings?uid=$UID_&since=1h" "/api/v1/tags"; do
  rss_during "$((SECS + 1))" >"$W/rss.txt" &
  RSS=$!
  wrk -t2 -c200 -d"${SECS}s" --latency "http://127.0.0.1:$PORT$path" >"$W/wrk.txt"
  wait "$RSS"
  p50=$(awk '$1 == "50%" {print $2}' "$W/wrk.txt"); p99=$(awk '$1 == "99%" {print $2}' "$W/wrk.txt")
  rps=$(awk '/Requests\/sec/ {print $2}' "$W/wrk.txt"); errs=$(grep -E "Non-2xx|Socket errors" "$W/wrk.txt" | tr '\n' ' ' || true)
  echo "$path, 200 connections, $SECS s: p50 $p50, p99 $p99, $rps req/s, service RSS max $(cat "$W/rss.txt") ${errs}"
done
