#!/usr/bin/env bash
# The PC/SC test bench: a real pcscd with vsmartcard's vpcd driver, confined to a network namespace so that
# vpcd's listening socket (it binds all interfaces) exists on that namespace's loopback only.
# The virtual card (vlogger-vcard) runs in the same namespace; vlogger talks to pcscd through its Unix
# socket (/run/pcscd/pcscd.comm), which namespaces do not separate.
#
#   bash bench/pcsc/bench.sh start    # needs root, pcscd, vsmartcard-vpcd, iproute2
#   bash bench/pcsc/bench.sh card [vlogger-vcard options]   # runs a virtual card in the namespace
#   bash bench/pcsc/bench.sh restart  # pcscd goes away and comes back
#   bash bench/pcsc/bench.sh stop
set -euo pipefail
NS=${VLOGGER_PCSC_NETNS:-vlogger-pcsc}
DIR=${VLOGGER_PCSC_DIR:-/tmp/vlogger-pcsc}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# SIGTERM, then SIGKILL: a pcscd started from a test runner may have SIGTERM blocked (inherited mask).
stop_pcscd() {
    [ -f "$DIR/pcscd.pid" ] || return 0
    local pid
    pid=$(cat "$DIR/pcscd.pid")
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

case "${1:-}" in
start)
    command -v pcscd >/dev/null || { echo "pcscd is not installed (apt-get install pcscd vsmartcard-vpcd libpcsclite-dev)" >&2; exit 1; }
    [ -e /usr/lib/pcsc/drivers/serial/libifdvpcd.so ] || { echo "vsmartcard-vpcd is not installed" >&2; exit 1; }
    if pgrep -x pcscd >/dev/null; then echo "a pcscd is already running; stop it first (the bench needs its own)" >&2; exit 1; fi
    mkdir -p "$DIR/conf"
    cat > "$DIR/conf/vpcd" <<CONF
FRIENDLYNAME "Virtual PCD"
DEVICENAME   /dev/null:0x8C7B
LIBPATH      /usr/lib/pcsc/drivers/serial/libifdvpcd.so
CHANNELID    0x8C7B
CONF
    rm -f /run/pcscd/pcscd.comm   # a stale socket from an earlier run would look like a ready daemon
    ip netns add "$NS" 2>/dev/null || true
    ip netns exec "$NS" ip link set lo up
    ip netns exec "$NS" pcscd --foreground --apdu --config "$DIR/conf" > "$DIR/pcscd.log" 2>&1 &
    echo $! > "$DIR/pcscd.pid"
    for _ in $(seq 1 50); do
        [ -S /run/pcscd/pcscd.comm ] && break
        sleep 0.1
    done
    if [ ! -S /run/pcscd/pcscd.comm ] || ! kill -0 "$(cat "$DIR/pcscd.pid")" 2>/dev/null; then
        echo "pcscd did not start; see $DIR/pcscd.log" >&2; exit 1
    fi
    echo "pcscd ready (namespace $NS, log $DIR/pcscd.log)"
    ;;
restart)
    # pcscd goes away and comes back (as after a crash or `systemctl restart pcscd`); the cards reconnect.
    stop_pcscd
    rm -f /run/pcscd/pcscd.comm
    ip netns exec "$NS" pcscd --foreground --apdu --config "$DIR/conf" >> "$DIR/pcscd.log" 2>&1 &
    echo $! > "$DIR/pcscd.pid"
    for _ in $(seq 1 50); do [ -S /run/pcscd/pcscd.comm ] && break; sleep 0.1; done
    [ -S /run/pcscd/pcscd.comm ] || { echo "pcscd did not come back" >&2; exit 1; }
    ;;
card)
    shift
    exec ip netns exec "$NS" "$ROOT/.build/debug/vlogger-vcard" "$@"
    ;;
stop)
    stop_pcscd
    rm -f "$DIR/pcscd.pid"
    pkill -f "ip netns exec $NS" 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
    ;;
*)
    echo "usage: bench.sh start|card [options]|restart|stop" >&2; exit 2
    ;;
esac
