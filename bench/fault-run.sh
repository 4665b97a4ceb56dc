#!/usr/bin/env bash
# The fault run of issue 46 (not part of `swift test`): one simulated hour (--clock-rate 60: a minute of wall time
# per hour) of the demo's gateway with an MQTT output (Eclipse Mosquitto, bench/mqtt/broker.sh) and a webhook
# output (a receiver written here on Python's http.server, checking each body's HMAC), while the broker is restarted
# 20 times, the receiver 20 times and the service SIGKILLed 10 times. Then the gateway runs once more to the end,
# `vlogger outputs send` flushes what a last kill left, and every stored row is looked for: each reading and event
# must have reached the MQTT subscriber (Eclipse Paho, persistent session) and each event the webhook, at least
# once, and every copy of a key must be the same message (exactly once after de-duplication by key). Prints counts.
# BIN=folder runs another build's vlogger. Usage: bash bench/fault-run.sh [WALL_SECONDS, default 60]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
SECS=${1:-60}
if [ -z "${BIN:-}" ]; then
  swift build -c release --product vlogger >/dev/null
  BIN=$(swift build -c release --show-bin-path)
fi
W=$(mktemp -d)
export VLOGGER_MQTT_DIR="$W/broker"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  bash bench/mqtt/broker.sh stop >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
eval "$(bash bench/mqtt/broker.sh start 2>/dev/null)"
MPORT=$VLOGGER_TEST_MQTT_PORT
WPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cp -r Config/* "$W"/
head -c 24 /dev/urandom | base64 >"$W/hook-secret"
chmod 600 "$W/hook-secret"
cat >>"$W/vlogger.toml" <<TOML

[[output.mqtt]]
url = "mqtt://127.0.0.1:$MPORT"
publish = ["readings", "events"]
interval = "200ms"

[[output.webhook]]
url = "http://127.0.0.1:$WPORT/hook"
secret-file = "hook-secret"
events = ["start", "stop", "arrival", "departure", "violation", "violation_ended", "error"]
interval = "200ms"
TOML

cat >"$W/receiver.py" <<'PY'
import hashlib, hmac, json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port, out, secret = int(sys.argv[1]), sys.argv[2], open(sys.argv[3]).read().split()[0].encode()
log = open(out, "a", buffering=1)
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ok = hmac.compare_digest("sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest(),
                                 self.headers.get("X-Vlogger-Signature", ""))
        if ok: log.write(json.dumps({"key": json.loads(body).get("key"), "body": body.decode()}) + "\n")
        self.send_response(200 if ok else 401); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
ThreadingHTTPServer.allow_reuse_address = True
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
receiver() { python3 "$W/receiver.py" "$WPORT" "$W/hook.jsonl" "$W/hook-secret" & RPID=$!; PIDS+=("$RPID"); }
# Each run's fast clock goes on from where the simulated hour stands (wall time since the start × 60), so that the
# readings of the runs follow each other rather than overlap.
T0=$(date +%s)
gateway() {
  local at
  at=$(python3 -c "import datetime, time; print(datetime.datetime.fromtimestamp($T0 + (time.time() - $T0) * 60, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'))")
  "$BIN/vlogger" run --config "$W/vlogger.toml" --store "$W/s.db" --clock-rate 60 --clock-start "$at" "$@" \
    2>>"$W/svc.log" >/dev/null &
  GPID=$!
  PIDS+=("$GPID")
}
python3 Tests/IntegrationTests/Support/mqtt_subscriber.py 127.0.0.1 "$MPORT" "vlogger/gw-demo-01/+/+" "$W/sub.jsonl" \
  $((SECS * 3 + 120)) --persistent 1 >/dev/null 2>"$W/sub.err" &
SUB=$!
PIDS+=("$SUB")
for _ in $(seq 150); do [ -f "$W/sub.jsonl.ready" ] && break; sleep 0.1; done
receiver
gateway
start=$(date +%s.%N)
broker=0; hooks=0; kills=0
# 40 faults spread over the run: broker and receiver in turn, a SIGKILL of the service every fourth.
step=$(python3 -c "print($SECS / 40)")
for i in $(seq 40); do
  sleep "$step"
  if [ $((i % 2)) -eq 1 ]; then bash bench/mqtt/broker.sh restart TERM >/dev/null 2>&1; broker=$((broker + 1))
  else kill -9 "$RPID"; wait "$RPID" 2>/dev/null || true; sleep 0.3; receiver; hooks=$((hooks + 1)); fi
  if [ $((i % 4)) -eq 0 ]; then kill -9 "$GPID"; wait "$GPID" 2>/dev/null || true; kills=$((kills + 1)); gateway; fi
done
# The last run to its end: it catches up and stops cleanly; what is left goes with the one-shot send.
sleep 5
kill -TERM "$GPID"; wait "$GPID" 2>/dev/null || true
wall=$(python3 -c "import time; print(f'{time.time() - $start:.0f}')")
"$BIN/vlogger" outputs send --config "$W/vlogger.toml" --store "$W/s.db" mqtt >>"$W/send.log" 2>&1 || true
"$BIN/vlogger" outputs send --config "$W/vlogger.toml" --store "$W/s.db" webhook >>"$W/send.log" 2>&1 || true
sleep 3
touch "$W/sub.jsonl.stop"; wait "$SUB" 2>/dev/null || true
python3 - "$W" "$broker" "$hooks" "$kills" "$wall" <<'PY'
import collections, json, sqlite3, sys
w, broker, hooks, kills, wall = sys.argv[1:6]
db = sqlite3.connect(f"{w}/s.db")
kinds = {"start", "stop", "arrival", "departure", "violation", "violation_ended", "error"}
readings = [f"gw-demo-01/readings/{r[0]}" for r in db.execute("SELECT id FROM readings")]
events = [(f"gw-demo-01/events/{r[0]}", r[1]) for r in db.execute("SELECT id, kind FROM events")]
span = db.execute("SELECT (max(time) - min(time)) / 60000.0 FROM readings").fetchone()[0]
def tally(name, expected, lines, key, text):
    copies = collections.defaultdict(list)
    for line in lines:
        o = json.loads(line)
        k = key(o)
        if k: copies[k].append(text(o))
    missing = set(expected) - set(copies)
    dup = sum(len(v) - 1 for v in copies.values())
    differ = sum(1 for v in copies.values() if len(set(v)) > 1)
    print(f"{name}: {len(expected)} stored, {len(set(expected) & set(copies))} delivered, {len(missing)} missing, "
          f"{dup} duplicates ({sum(len(v) for v in copies.values())} messages), {differ} keys with differing copies")
    return not missing and not differ
def mqtt_key(o):
    try: return json.loads(o["payload"]).get("key")
    except Exception: return None
ok = tally("MQTT", readings + [k for k, _ in events], open(f"{w}/sub.jsonl"), mqtt_key, lambda o: o["payload"])
ok &= tally("webhook", [k for k, kind in events if kind in kinds], open(f"{w}/hook.jsonl"), lambda o: o["key"],
            lambda o: o["body"])
print(f"faults: {broker} broker restarts, {hooks} receiver restarts, {kills} service SIGKILLs; "
      f"{float(wall):.0f} s of wall time, readings spanning {span:.0f} simulated minutes")
sys.exit(0 if ok else 1)
PY
