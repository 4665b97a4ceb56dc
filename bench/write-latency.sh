#!/usr/bin/env bash
# How long a queued write waits (issue 48, item 6; not part of `swift test`): TRIALS times (default 20), a write
# to a tag that is in the demo's field is POSTed to /api/v1/writes; the bench notes when the write was made (its
# `finished` time less its `created` time, both the gateway's: the agent's when it wrote, the API's when it queued)
# and when the API shows it done (the outcome committed with the next batch). The demo's one reader polls every 1 s, stores every 2 s.
# Prints each trial and the medians. BIN=folder runs another build's vlogger (an older commit's, for a comparison).
# Usage: bash bench/write-latency.sh [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
source bench/demo-gateway.sh
# A write token.
python3 - "$W/vlogger.toml" <<'PY'
import sys
p = sys.argv[1]
t = open(p).read()
open(p, "w").write(t.replace("[service]\n", "[service]\napi-token-file = \"api-token\"\n", 1))
PY
grep -q 'api-token-file' "$W/vlogger.toml" || printf '\n[service]\napi-token-file = "api-token"\n' >>"$W/vlogger.toml"
TOKEN=bench-token-0123456789abcdef
echo "$TOKEN" >"$W/api-token"
chmod 600 "$W/api-token"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN/vlogger" run --config "$W/vlogger.toml" --store "$W/s.db" --listen "127.0.0.1:$PORT" 2>"$W/svc.log" >/dev/null &
PIDS+=("$!")
for _ in $(seq 100); do grep -q "status page on" "$W/svc.log" && break; sleep 0.1; done
grep -q "status page on" "$W/svc.log" || { echo "the gateway did not start:"; cat "$W/svc.log"; exit 1; }
sleep 3
python3 - "$PORT" "$TOKEN" "$N" <<'PY'
import datetime, json, statistics, sys, time, urllib.request
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
base = f"http://127.0.0.1:{port}"

def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=body and json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)

made, seen = [], []
for i in range(n):
    # A tag the demo's cage room always holds (an MB89R118: 8-byte blocks); new data each time, so every write is made.
    data = f"{i:04X}B0B1B2B3B4B5"[:16]
    t0 = time.time()
    w = call("POST", "/api/v1/writes", {"uid": "E008010000004212", "block": "0xF9", "data": data})
    done = None
    while time.time() - t0 < 20:
        got = call("GET", f"/api/v1/writes/{w['id']}")
        if got.get("state") == "done":
            done = time.time()
            break
        time.sleep(0.01)
    if done is None:
        sys.exit(f"write {w['id']}: not done within 20 s: {got}")
    # The write's own times, both the gateway's: queued (`created`) and made (`finished`, the agent's when it wrote).
    def at(text):
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    made.append(at(got["finished"]) - at(got["created"]))
    seen.append(done - t0)
    print(f"trial {i + 1:2}: made after {made[-1] * 1000:7.1f} ms, done in the API after {seen[-1] * 1000:7.1f} ms")
    time.sleep(0.1 + (i * 0.437) % 1.0)  # spread the POSTs over the cycle's phases (not in step with it)
print(f"median over {n}: made after {statistics.median(made) * 1000:.1f} ms, "
      f"done in the API after {statistics.median(seen) * 1000:.1f} ms")
PY
