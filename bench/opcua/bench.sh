#!/usr/bin/env bash
# The OPC UA server's benchmark (issue 49): 2 sessions x 100 monitored items sampled every 100 ms, publishing
# interval 50 ms, over the gateway's namespace of a field state whose 100 values change every 100 ms. Prints the
# server's CPU share and Publish latency (opcua-bench) and the time from a value changing in the field state to
# the notification reaching an asyncua subscriber (subscriber.py), p50/p99. Needs Python asyncua.
#   bash bench/opcua/bench.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-40}
swift build -c release --product opcua-bench >/dev/null
bin=$(swift build -c release --show-bin-path)/opcua-bench
out=$(mktemp)
"$bin" "$seconds" >"$out" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q '^nodes ' "$out" && break; sleep 0.1; done
port=$(sed -n 's/^port //p' "$out")
nodes=$(sed -n 's/^nodes //p' "$out")
python3 bench/opcua/subscriber.py "opc.tcp://127.0.0.1:$port" "$nodes" 2 "$((seconds - 8))"
wait "$pid"
grep '^server' "$out"
