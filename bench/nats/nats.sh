#!/usr/bin/env bash
# A throw-away three-node NATS cluster with JetStream and the MQTT listener on each node, on loopback only, for
# the MQTT fan-in tests and benchmark: gateways publish into it over MQTT (QoS 1), JetStream keeps the messages
# replicated three times, and `vlogger central ingest` takes them on to PostgreSQL. Every port is a free one,
# everything lives in one folder, and every process is stopped by the PID recorded here (never by name).
#
#   eval "$(bash bench/nats/nats.sh start)"     # prints the export lines the tests read
#   bash bench/nats/nats.sh kill NODE            # SIGKILL to one node (n1, n2 or n3)
#   bash bench/nats/nats.sh restart NODE         # starts a killed node again (same ports, same store)
#   bash bench/nats/nats.sh wait-ready [SECS]    # waits until the stream VLOGGER answers with three replicas current
#   bash bench/nats/nats.sh stream               # the stream VLOGGER's state (JSON: messages, bytes, …)
#   bash bench/nats/nats.sh stop
#
# The stream VLOGGER (subjects `vlogger.>`, file storage, three replicas) captures every message the gateways
# publish under `vlogger/…` (an MQTT topic's `/` is a NATS subject's `.`). NATS's MQTT listener keeps its own
# streams for sessions, QoS 1 delivery and retained messages ($MQTT_sess, $MQTT_msgs, $MQTT_rmsgs), replicated
# over the cluster too (docs/reference/fleet-engines.md §5–6). Needs Debian's nats-server (2.9) and python3.
# VLOGGER_NATS_DIR picks the folder (default /tmp/vlogger-nats).
set -euo pipefail
DIR=${VLOGGER_NATS_DIR:-/tmp/vlogger-nats}
HERE=$(cd "$(dirname "$0")" && pwd)
NATS=${NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}

. "$HERE/../lib/procs.sh"
# A node's client port that answers (the first live node's).
live_port() {
    for n in n1 n2 n3; do
        if alive "$(pid_of "$n")"; then port_of "client-$n"; return 0; fi
    done
    return 1
}

node_config() {
    local n=$1 routes=""
    for m in n1 n2 n3; do
        [ "$m" = "$n" ] && continue
        routes="$routes${routes:+, }nats-route://127.0.0.1:$(port_of "route-$m")"
    done
    cat > "$DIR/$n.conf" <<CONF
server_name: $n
listen: 127.0.0.1:$(port_of "client-$n")
http: 127.0.0.1:$(port_of "http-$n")
jetstream { store_dir: "$DIR/$n/js" }
cluster {
  name: vlogger
  listen: 127.0.0.1:$(port_of "route-$n")
  routes: [ $routes ]
}
mqtt { host: 127.0.0.1, port: $(port_of "mqtt-$n"), max_ack_pending: 10000 }
CONF
}

start_node() {
    local n=$1
    mkdir -p "$DIR/$n/js"
    launch "$n" "$NATS" -c "$DIR/$n.conf"
}

# Waits until a node's monitoring port says JetStream runs there (`/healthz?js-enabled-only=true`). The plain
# `/healthz` also waits for every stream and consumer to be current, which after a kill under load took more than
# 30 s here; `wait-ready` checks the stream VLOGGER itself.
wait_node() {
    local n=$1 secs=${2:-30}
    for _ in $(seq 1 $((secs * 10))); do
        if curl -sf --max-time 1 "http://127.0.0.1:$(port_of "http-$n")/healthz?js-enabled-only=true" >/dev/null 2>&1; then return 0; fi
        alive "$(pid_of "$n")" || { echo "nats.sh: $n died (log: $DIR/logs/$n.log)" >&2; tail -5 "$DIR/logs/$n.log" >&2; return 1; }
        sleep 0.1
    done
    echo "nats.sh: $n has no JetStream after $secs s (log: $DIR/logs/$n.log)" >&2
    tail -5 "$DIR/logs/$n.log" >&2
    return 1
}

STREAM='{"name":"VLOGGER","subjects":["vlogger.>"],"storage":"file","num_replicas":3,"retention":"limits","duplicate_window":120000000000}'

create_stream() {
    local secs=${1:-60} out=""
    for _ in $(seq 1 $((secs * 4))); do
        out=$(python3 "$HERE/js.py" "$(live_port)" '$JS.API.STREAM.CREATE.VLOGGER' "$STREAM" 2>&1) && return 0
        # An existing stream of the same configuration is not an error in 2.9, but say so if it ever is.
        case "$out" in *"already in use"*) return 0 ;; esac
        sleep 0.25
    done
    echo "nats.sh: the stream VLOGGER was not created in $secs s: $out" >&2
    return 1
}

# Waits until the stream answers with its leader and both replicas current.
wait_ready() {
    local secs=${1:-60} out=""
    for _ in $(seq 1 $((secs * 4))); do
        out=$(python3 "$HERE/js.py" "$(live_port)" '$JS.API.STREAM.INFO.VLOGGER' 2>/dev/null || true)
        if [ -n "$out" ] && python3 -c '
import json, sys
d = json.loads(sys.argv[1]); c = d.get("cluster") or {}
ok = "error" not in d and c.get("leader") and len([r for r in c.get("replicas") or [] if r.get("current")]) == 2
sys.exit(0 if ok else 1)' "$out"; then return 0; fi
        sleep 0.25
    done
    echo "nats.sh: the stream VLOGGER has no leader with two current replicas after $secs s: $out" >&2
    return 1
}

case "${1:-}" in
start)
    command -v "$NATS" >/dev/null 2>&1 || [ -x "$NATS" ] || { echo "nats.sh: nats-server is not installed (apt-get install nats-server)" >&2; exit 1; }
    if [ -d "$DIR/pids" ]; then "$0" stop >/dev/null 2>&1 || true; fi
    rm -rf "$DIR"
    mkdir -p "$DIR/pids" "$DIR/ports" "$DIR/logs"
    for n in n1 n2 n3; do
        for p in client route http mqtt; do free_port > "$DIR/ports/$p-$n"; done
    done
    for n in n1 n2 n3; do node_config "$n"; done
    for n in n1 n2 n3; do start_node "$n"; done
    for n in n1 n2 n3; do wait_node "$n" 30; done
    create_stream 60
    wait_ready 60
    clients=""; mqtt=""
    for n in n1 n2 n3; do
        clients="$clients${clients:+,}$(port_of "client-$n")"
        mqtt="$mqtt${mqtt:+,}$(port_of "mqtt-$n")"
    done
    echo "export VLOGGER_NATS_DIR=$DIR"
    echo "export VLOGGER_NATS_PORTS=$clients"
    echo "export VLOGGER_NATS_MQTT_PORTS=$mqtt"
    echo "export VLOGGER_NATS_CTL=$HERE/nats.sh"
    ;;
kill)
    n=${2:?nats.sh kill NODE}
    stop_pid "$(pid_of "$n")" KILL
    echo "$n"
    ;;
restart)
    n=${2:?nats.sh restart NODE}
    alive "$(pid_of "$n")" && { echo "nats.sh: $n is running" >&2; exit 1; }
    start_node "$n"
    wait_node "$n" 60
    ;;
wait-ready) wait_ready "${2:-60}" ;;
stream) python3 "$HERE/js.py" "$(live_port)" '$JS.API.STREAM.INFO.VLOGGER' ;;
stop)
    for n in n1 n2 n3; do stop_pid "$(pid_of "$n")" TERM; done
    rm -rf "$DIR"
    ;;
*)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
