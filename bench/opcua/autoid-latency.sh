#!/usr/bin/env bash
# The AutoID benchmark (issue 50; not part of `swift test`): `vlogger run` on one simulated reader polled every
# 100 ms (departure after 2 cycles), its field a SLIX2 that stays and 5 that leave and come back, each every 2 s
# (staggered by 0.4 s); `[opcua]` and an MQTT output of the events (the store committing every 100 ms) to a local
# Mosquitto. Two subscribers on this machine's clock: asyncua on the reader's device for RfidScanEventType events
# (bench/opcua/autoid_client.py) and Paho on the MQTT events. Prints, for each, from the tag entering the simulated
# field (the scenario's time after the run's start) to the subscriber, and from the arrival event's own time, p50
# and p99; then ReadBlocks of 8 bytes (200 calls): the client's round trip against the air time the simulator's
# timing model gives for that read (each read's `access` event in the store says it).
#   bash bench/opcua/autoid-latency.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
SECS=${1:-60}
swift build -c release --product vlogger >/dev/null
BIN=$(swift build -c release --show-bin-path)
W=$(mktemp -d)
export VLOGGER_MQTT_DIR=$W/broker
SUB=""
RUN=""
cleanup() {
    [ -n "$SUB" ] && kill "$SUB" 2>/dev/null
    [ -n "$RUN" ] && kill "$RUN" 2>/dev/null
    bash bench/mqtt/broker.sh stop >/dev/null 2>&1 || true
    rm -rf "$W"
}
trap cleanup EXIT
eval "$(bash bench/mqtt/broker.sh start)"
mkdir -p "$W/field"
STATIC=E004010812345601
cp Config/demo-field/slix2-pallet-0001.json "$W/field/static.json"
MOVING=""
for t in 1 2 3 4 5; do
    uid=$(printf 'E00401081234F%03X' "$t")
    MOVING="$MOVING $uid"
    sed "s/\"uid\": \"E004010812345601\"/\"uid\": \"$uid\"/" Config/demo-field/slix2-pallet-0001.json > "$W/field/moving-$t.json"
done
python3 - "$W/field/scenario.json" "$SECS" $MOVING <<'PY'
import json, sys
out, secs, uids = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
steps = []
for k, uid in enumerate(uids):
    # Off the 100 ms poll grid (a tag enters between two cycles, as on a real field): the wait for the next poll
    # is part of the figure.
    t = 3.0 + 0.4 * k + 0.013 + 0.017 * k
    while t < secs + 20:
        steps.append({"at": round(t, 3), "do": "leave", "uid": uid})
        steps.append({"at": round(t + 1.0, 3), "do": "arrive", "uid": uid})
        t += 2.0
json.dump({"vlogger-scenario": 1, "description": "AutoID latency", "steps": sorted(steps, key=lambda s: s["at"])},
          open(out, "w"))
PY
cat > "$W/autoid.toml" <<EOF
[gateway]
id = "gw-autoid"
[[reader]]
id = "line-1"
driver = "sim"
field = "field"
interval = "100ms"
departure-cycles = 2
[store]
path = "autoid.db"
flush-interval = "100ms"
[opcua]
listen = "127.0.0.1:0"
[[output.mqtt]]
url = "mqtt://127.0.0.1:$VLOGGER_TEST_MQTT_PORT"
publish = ["events"]
EOF
python3 - "$VLOGGER_TEST_MQTT_PORT" "$W/mqtt.txt" "$((SECS + 30))" > /dev/null <<'PY' &
import json, sys, time
from datetime import datetime, timezone
import paho.mqtt.client as mqtt
port, out, seconds = int(sys.argv[1]), open(sys.argv[2], "w", buffering=1), float(sys.argv[3])
def on_message(c, u, m):
    now = time.time()
    try:
        e = json.loads(m.payload)
    except ValueError:
        return
    if e.get("kind") != "arrival":
        return
    t = datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
    out.write("%.4f %s %.4f\n" % (now, e["uid"], t))
c = mqtt.Client(client_id="autoid-latency-sub")
c.on_connect = lambda c, u, f, rc: c.subscribe("vlogger/gw-autoid/+/event", qos=1)
c.on_message = on_message
c.connect("127.0.0.1", port)
c.loop_start()
time.sleep(seconds)
PY
SUB=$!
(cd "$W" && exec "$BIN/vlogger" run --config autoid.toml --listen 127.0.0.1:0 --duration "$((SECS + 15))s" > run.out 2> run.err) &
RUN=$!
for _ in $(seq 100); do grep -q "opc.tcp://127.0.0.1:[0-9]" "$W/run.err" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o "opc.tcp://127.0.0.1:[0-9]*" "$W/run.err" | head -1)
python3 bench/opcua/autoid_client.py "$URL" line-1 "$SECS" "$STATIC" "$W/opcua.txt" "$W/calls.txt"
kill -TERM "$RUN"
wait "$RUN" || true
RUN=""
(cd "$W" && "$BIN/vlogger" export --config autoid.toml --table events --after-id 0 --format jsonl > events.jsonl 2>/dev/null)
python3 - "$W" <<'PY'
import json, sys
from datetime import datetime, timezone
w = sys.argv[1]
def ts(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
events = [json.loads(l) for l in open(w + "/events.jsonl") if l.strip()]
start = min(ts(e["time"]) for e in events if e["kind"] == "start")
steps = json.load(open(w + "/field/scenario.json"))["steps"]
entered = {}
for s in steps:
    if s["do"] == "arrive":
        entered.setdefault(s["uid"], []).append(start + s["at"])
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]
def report(name, path):
    from_entry, from_event = [], []
    for line in open(path):
        got, uid, when = line.split()
        got, when = float(got), float(when)
        times = [t for t in entered.get(uid, []) if t <= when + 0.001]
        if not times:
            continue  # the tag's first sighting at the start, not an arrival of the scenario
        from_entry.append((got - times[-1]) * 1000)
        from_event.append((got - when) * 1000)
    if not from_entry:
        print(f"{name}: no arrivals received")
        return
    print(f"{name}: {len(from_entry)} arrivals; tag entering -> subscriber p50 {pct(from_entry, .5):.1f} ms, "
          f"p99 {pct(from_entry, .99):.1f} ms; arrival event -> subscriber p50 {pct(from_event, .5):.1f} ms, "
          f"p99 {pct(from_event, .99):.1f} ms")
report("OPC UA RfidScanEventType (asyncua)", w + "/opcua.txt")
report("MQTT arrival event (Paho, QoS 1)", w + "/mqtt.txt")
calls = [float(l.split()[0]) for l in open(w + "/calls.txt") if l.split()[1] == "0"]
air = [float(e["detail"].rsplit("air ", 1)[1].split()[0]) for e in events
       if e["kind"] == "access" and "air " in e.get("detail", "")]
print(f"ReadBlocks of 8 bytes: {len(calls)} calls with status 0; client round trip p50 {pct(calls, .5):.2f} ms, "
      f"p99 {pct(calls, .99):.2f} ms; the simulator's air time for that read median {pct(air, .5):.2f} ms "
      f"(target: round trip <= air + 5 ms, {pct(air, .5) + 5:.2f} ms)")
PY
