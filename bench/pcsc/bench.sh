#!/usr/bin/env bash
# The PC/SC test bench: a real pcscd with vsmartcard's vpcd driver, confined to a network namespace so that
# vpcd's listening socket (it binds all interfaces) exists on that namespace's loopback only.
# The virtual card (vlogger-vcard) runs in the same namespace; vlogger talks to pcscd through its Unix
# socket (/run/pcscd/pcscd.comm), which namespaces do not separate.
#
#   bash bench/pcsc/bench.sh start    # needs root, pcscd, vsmartcard-vpcd, iproute2
#   bash bench/pcsc/bench.sh card [vlogger-vcard options]   # runs a virtual card in the namespace
#   bash bench/pcsc/bench.sh stop
set -euo pipefail
NS=${VLOGGER_PCSC_NETNS:-vlogger-pcsc}
DIR=${VLOGGER_PCSC_DIR:-/tmp/vlogger-pcsc}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

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
card)
    shift
    exec ip netns exec "$NS" "$ROOT/.build/debug/vlogger-vcard" "$@"
    ;;
stop)
    if [ -f "$DIR/pcscd.pid" ]; then kill "$(cat "$DIR/pcscd.pid")" 2>/dev/null || true; rm -f "$DIR/pcscd.pid"; fi
    pkill -f "ip netns exec $NS" 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
    ;;
*)
    echo "usage: bench.sh start|card [options]|stop" >&2; exit 2
    ;;
esac
