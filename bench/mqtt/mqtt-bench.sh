#!/usr/bin/env bash
# MQTT output benchmark (not part of `swift test`). Prints medians and the ratio:
#   a backlog of N readings (default 1,000,000) replayed at QoS 1 into a local Mosquitto broker by
#   `vlogger outputs send` (the output's own path: rows read from the store, formatted as JSON, published, every
#   batch acknowledged before the cursor moves), against a C program that publishes the same messages (the same
#   JSON, one per line) with libmosquitto at QoS 1 with as many in flight, in the same run, alternating.
# Usage: bash bench/mqtt/mqtt-bench.sh [N] [RUNS] [BATCH]
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
N=${1:-1000000}
RUNS=${2:-3}
BATCH=${3:-5000}
swift build -c release --product vlogger >/dev/null
swift build -c release --product store-bench >/dev/null
BIN=$(swift build -c release --show-bin-path)
W=$(mktemp -d)
export VLOGGER_MQTT_DIR=$W/broker
cleanup() { bash bench/mqtt/broker.sh stop >/dev/null 2>&1 || true; rm -rf "$W"; }
trap cleanup EXIT
eval "$(bash bench/mqtt/broker.sh start)"
gcc -O2 -o "$W/publish" bench/mqtt/publish.c -lmosquitto -lpthread
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

"$BIN/store-bench" fill "$N" "$W/backlog.db" >/dev/null
cat > "$W/bench.toml" <<TOML
[gateway]
id = "gw-bench"
[store]
path = "run.db"
[[output.mqtt]]
url = "mqtt://127.0.0.1:$VLOGGER_TEST_MQTT_PORT"
publish = ["readings"]
batch-size = $BATCH
TOML
# The C program's messages: the same JSON the output sends (the export's line with the key and table in front).
"$BIN/vlogger" export --store "$W/backlog.db" --since 2000-01-01 --format jsonl \
    | python3 -c 'import sys
out = sys.stdout
for n, line in enumerate(sys.stdin, 1):
    out.write("{\"key\":\"gw-bench/readings/%d\",\"table\":\"readings\"," % n + line[1:])' > "$W/payloads.jsonl"
TOPIC="vlogger/gw-bench/dock-1/reading"
: > "$W/v.txt"; : > "$W/c.txt"
for i in $(seq "$RUNS"); do
    cp "$W/backlog.db" "$W/run.db"
    out=$("$BIN/vlogger" outputs send --config "$W/bench.toml" mqtt)
    echo "$out" | sed -E 's/.*\(([0-9]+) rows\/s\).*/\1/' >> "$W/v.txt"
    echo "  vlogger run $i: $out"
    read -r rate n secs < <("$W/publish" 127.0.0.1 "$VLOGGER_TEST_MQTT_PORT" "$TOPIC" "$W/payloads.jsonl" "$BATCH")
    echo "$rate" >> "$W/c.txt"
    echo "  C run $i: $n messages in $secs s, $rate messages/s"
done
V=$(median < "$W/v.txt"); C=$(median < "$W/c.txt")
echo "backlog of $N readings replayed at QoS 1, $BATCH in flight: vlogger median $V messages/s (runs: $(tr '\n' ' ' < "$W/v.txt")); C libmosquitto median $C messages/s (runs: $(tr '\n' ' ' < "$W/c.txt")); ratio $(awk -v v="$V" -v c="$C" 'BEGIN{printf "%.2f", v/c}')"
