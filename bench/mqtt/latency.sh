#!/usr/bin/env bash
# MQTT output latency (not part of `swift test`): 8 simulated readers with 20 tags each, polled every second, the
# store committing every 100 ms, published at QoS 1 to a local Mosquitto broker; an independent subscriber (Paho)
# takes each reading's own time (when the tag was read) from its message and its arrival time, on the same
# clock. Prints the median, p99 and maximum of arrival minus reading time.
# Usage: bash bench/mqtt/latency.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
SECS=${1:-30}
swift build -c release --product vlogger >/dev/null
BIN=$(swift build -c release --show-bin-path)
W=$(mktemp -d)
export VLOGGER_MQTT_DIR=$W/broker
SUB=""
cleanup() { [ -n "$SUB" ] && kill "$SUB" 2>/dev/null; bash bench/mqtt/broker.sh stop >/dev/null 2>&1 || true; rm -rf "$W"; }
trap cleanup EXIT
eval "$(bash bench/mqtt/broker.sh start)"
{
    echo '[gateway]'; echo 'id = "gw-latency"'
    echo '[store]'; echo 'path = "latency.db"'; echo 'flush-interval = "100ms"'
    for r in $(seq 8); do
        mkdir -p "$W/field-$r"
        for t in $(seq 20); do
            uid=$(printf 'E0040108%04X%04X' "$r" "$t")
            sed "s/\"uid\": \"E004010812345601\"/\"uid\": \"$uid\"/" Config/demo-field/slix2-pallet-0001.json > "$W/field-$r/tag-$t.json"
        done
        printf '[[reader]]\nid = "reader-%d"\ndriver = "sim"\nfield = "field-%d"\nlocation = "line %d"\ninterval = "1s"\n' "$r" "$r" "$r"
    done
    printf '[[plan]]\nname = "pallet label"\n  [[plan.read]]\n  first = 0x00\n  count = 2\n'
    printf '[[output.mqtt]]\nurl = "mqtt://127.0.0.1:%s"\npublish = ["readings"]\n' "$VLOGGER_TEST_MQTT_PORT"
} > "$W/latency.toml"
python3 - "$VLOGGER_TEST_MQTT_PORT" "$W/arrivals.txt" "$((SECS + 10))" > /dev/null <<'PY' &
import json, sys, time
from datetime import datetime
import paho.mqtt.client as mqtt
port, out, seconds = int(sys.argv[1]), open(sys.argv[2], "w", buffering=1), float(sys.argv[3])
def on_message(c, u, m):
    now = time.time()
    t = json.loads(m.payload)["time"]
    taken = datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=__import__("datetime").timezone.utc).timestamp()
    out.write("%.1f\n" % ((now - taken) * 1000))
c = mqtt.Client(client_id="latency-sub")
c.on_connect = lambda c, u, f, rc: c.subscribe("vlogger/gw-latency/+/reading", qos=1)
c.on_message = on_message
c.connect("127.0.0.1", port)
c.loop_start()
time.sleep(seconds)
PY
SUB=$!
sleep 1
"$BIN/vlogger" run --config "$W/latency.toml" --duration "${SECS}s" > "$W/run.out" 2> "$W/run.err"
sleep 2
python3 - "$W/arrivals.txt" <<'PY'
import sys
v = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
if not v: sys.exit("no messages arrived")
p = lambda q: v[min(len(v) - 1, int(q * len(v)))]
print(f"{len(v)} readings from 8 readers x 20 tags at 1 s: reading to subscriber median {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, max {v[-1]:.1f} ms")
PY
