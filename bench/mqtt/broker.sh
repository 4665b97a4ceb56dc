#!/usr/bin/env bash
# A throw-away Mosquitto broker for the MQTT output's tests and benchmark: loopback only, a free port with
# anonymous access, one with anonymous access under an ACL (vlogger/# only), and one with TLS (a throw-away CA signs the server's certificate for localhost
# and 127.0.0.1) and password authentication (user "vlogger"). Needs Debian's mosquitto and openssl.
#
#   eval "$(bash bench/mqtt/broker.sh start)"   # prints the export lines the tests read (VLOGGER_TEST_MQTT_*)
#   bash bench/mqtt/broker.sh restart [TERM]    # SIGKILL (or SIGTERM: a clean stop that saves its sessions and queued
#                                               # messages) and start again on the same ports (fault tests)
#   bash bench/mqtt/broker.sh down [KILL] / up   # stops it (SIGTERM) and, later, starts it again on the same ports
#   bash bench/mqtt/broker.sh stop              # stops the broker it started (by the PID in its pid file), removes the folder
#
# VLOGGER_MQTT_DIR picks the folder (default /tmp/vlogger-mqtt); restart and stop act on that folder's broker only.
set -euo pipefail
DIR=${VLOGGER_MQTT_DIR:-/tmp/vlogger-mqtt}
BROKER=$(command -v mosquitto || echo /usr/sbin/mosquitto)
[ -x "$BROKER" ] || { echo "broker.sh: mosquitto is not installed (apt-get install mosquitto)" >&2; exit 1; }

# The broker outlives this script: it must not hold the caller's descriptors (see bench/postgres/pg.sh).
for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done

launch() {
    rm -f "$DIR/mosquitto.pid"
    # With SIGTERM and SIGINT at their defaults and nothing blocked: a caller that ignores them (a test process
    # running a service group) would otherwise pass that on, and the broker would not stop on `restart TERM`.
    python3 -c 'import os, signal, sys
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.execv(sys.argv[1], sys.argv[1:])' "$BROKER" -c "$DIR/mosquitto.conf" -d
    for _ in $(seq 100); do
        [ -s "$DIR/mosquitto.pid" ] && python3 - "$(cat "$DIR/port")" <<'PY' && return 0
import socket, sys
s = socket.socket(); s.settimeout(0.2)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)
PY
        sleep 0.05
    done
    echo "broker.sh: mosquitto did not start; its log:" >&2; cat "$DIR/mosquitto.log" >&2; exit 1
}

kill_broker() {
    [ -s "$DIR/mosquitto.pid" ] || return 0
    pid=$(cat "$DIR/mosquitto.pid")
    kill -"${1:-TERM}" "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$DIR/mosquitto.pid"
}

case "${1:-}" in
start)
    [ -f "$DIR/mosquitto.pid" ] && bash "$0" stop >/dev/null 2>&1 || true
    rm -rf "$DIR" && mkdir -p "$DIR" && chmod 0755 "$DIR"
    free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
    port=$(free_port); tls_port=$(free_port); acl_port=$(free_port)
    echo "$port" > "$DIR/port"
    head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$DIR/password"
    chmod 0600 "$DIR/password"
    mosquitto_passwd -b -c "$DIR/passwd" vlogger "$(cat "$DIR/password")" >/dev/null 2>&1
    (
        cd "$DIR"
        openssl req -x509 -newkey rsa:2048 -nodes -days 3 -subj "/CN=vlogger MQTT test CA" -keyout ca.key -out ca.crt
        openssl req -x509 -newkey rsa:2048 -nodes -days 3 -subj "/CN=vlogger other CA" -keyout other-ca.key -out other-ca.crt
        openssl req -new -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > server.ext
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3 -extfile server.ext -out server.crt
        chmod 0644 ca.crt other-ca.crt server.crt server.key passwd
    ) >"$DIR/tls.log" 2>&1 || { cat "$DIR/tls.log" >&2; exit 1; }
    # A third listener where anonymous clients may publish and subscribe under vlogger/ only (and read \$SYS): a
    # message to another topic is refused, which an MQTT 5 client hears as PUBACK reason code 0x87 (the refusal
    # test). Not on the first listener: with an ACL there, messages queued for a persistent subscriber across
    # restarts went missing in the fault test.
    printf 'topic readwrite vlogger/#\ntopic read $SYS/#\n' > "$DIR/acl"
    chmod 0644 "$DIR/acl"
    # `user root`: started as root, mosquitto would otherwise switch to the user "mosquitto" (no effect otherwise).
    cat > "$DIR/mosquitto.conf" <<CONF
user root
pid_file $DIR/mosquitto.pid
log_dest file $DIR/mosquitto.log
persistence true
persistence_location $DIR/
autosave_interval 3600
per_listener_settings true
max_inflight_messages 0
max_queued_messages 0
listener $port 127.0.0.1
allow_anonymous true
listener $acl_port 127.0.0.1
allow_anonymous true
acl_file $DIR/acl
listener $tls_port 127.0.0.1
allow_anonymous false
password_file $DIR/passwd
cafile $DIR/ca.crt
certfile $DIR/server.crt
keyfile $DIR/server.key
CONF
    launch
    echo "export VLOGGER_MQTT_DIR=$DIR VLOGGER_TEST_MQTT_PORT=$port VLOGGER_TEST_MQTT_TLS_PORT=$tls_port VLOGGER_TEST_MQTT_ACL_PORT=$acl_port VLOGGER_TEST_MQTT_USER=vlogger VLOGGER_TEST_MQTT_PASSWORD_FILE=$DIR/password VLOGGER_TEST_MQTT_CA=$DIR/ca.crt VLOGGER_TEST_MQTT_OTHER_CA=$DIR/other-ca.crt VLOGGER_TEST_MQTT_CTL='$(realpath "$0")'"
    ;;
restart)
    kill_broker "${2:-KILL}"
    launch
    ;;
down)
    kill_broker "${2:-TERM}"
    ;;
up)
    launch
    ;;
stop)
    kill_broker TERM
    rm -rf "$DIR"
    ;;
*)
    echo "usage: $0 start|restart|down|up|stop" >&2; exit 2
    ;;
esac
