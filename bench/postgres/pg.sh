#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the fleet-sync tests: initdb into a temporary folder, listening on
# loopback only at a free port, password (SCRAM) authentication for its superuser "vlogger", TLS with a
# throw-away CA (and a role "vlogger_tls" that may connect over TLS only). Needs openssl.
#
#   eval "$(sudo bash bench/postgres/pg.sh start)"   # prints the export lines the tests read (VLOGGER_TEST_PG_*, VLOGGER_PG_DIR)
#   sudo bash bench/postgres/pg.sh restart           # an immediate restart (fault tests)
#   sudo bash bench/postgres/pg.sh outage SECONDS    # an immediate stop, SECONDS down, a start (fleet benchmark)
#   sudo bash bench/postgres/pg.sh stop              # stops the cluster it started (pg_ctl: the postmaster's PID) and removes it
#
# Needs root (initdb runs as the postgres user) and Debian's postgresql package. VLOGGER_PG_DIR picks the folder
# (default /tmp/vlogger-pg); restart and stop act on the cluster in that folder only.
set -euo pipefail
DIR=${VLOGGER_PG_DIR:-/tmp/vlogger-pg}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$BIN" ] || { echo "pg.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
as_postgres() { runuser -u postgres -- "$@"; }

# A postmaster started here outlives this script: it must not hold the caller's descriptors (a test runner
# reading a pipe to its end would wait for the postmaster's exit; a test's listening socket would stay bound).
# Close every descriptor above 2 except the one bash reads this script from.
for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done

case "${1:-}" in
start)
    [ -f "$DIR/data/postmaster.pid" ] && bash "$0" stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
    install -d -o postgres -g postgres -m 0755 "$DIR"
    head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$DIR/password"
    chmod 0644 "$DIR/password"
    as_postgres "$BIN/initdb" -D "$DIR/data" -U vlogger --auth=scram-sha-256 --pwfile="$DIR/password" -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 \
        || { cat "$DIR/initdb.log" >&2; exit 1; }
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    echo "$port" > "$DIR/port"
    # TLS: a throw-away CA and a server certificate it signs for localhost and 127.0.0.1, and a second CA the
    # server's certificate does not chain to (the TLS tests: verify-full must accept the first, refuse the second).
    (
        cd "$DIR"
        openssl req -x509 -newkey rsa:2048 -nodes -days 3 -subj "/CN=vlogger test CA" -keyout ca.key -out ca.crt
        openssl req -x509 -newkey rsa:2048 -nodes -days 3 -subj "/CN=vlogger other CA" -keyout other-ca.key -out other-ca.crt
        openssl req -new -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > server.ext
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3 -extfile server.ext -out server.crt
        chown postgres:postgres server.key server.crt && chmod 0600 server.key
        chmod 0644 ca.crt other-ca.crt
    ) >"$DIR/tls.log" 2>&1 || { cat "$DIR/tls.log" >&2; exit 1; }
    # The role vlogger_tls may connect over TLS only (first match wins in pg_hba.conf).
    { printf 'hostssl all vlogger_tls 127.0.0.1/32 scram-sha-256\nhost all vlogger_tls 127.0.0.1/32 reject\n'; cat "$DIR/data/pg_hba.conf"; } > "$DIR/pg_hba.new"
    install -o postgres -g postgres -m 0600 "$DIR/pg_hba.new" "$DIR/data/pg_hba.conf" && rm -f "$DIR/pg_hba.new"
    echo "-p $port -k $DIR -c listen_addresses=127.0.0.1 -c fsync=${VLOGGER_PG_FSYNC:-off} -c max_connections=200 -c ssl=on -c ssl_cert_file=$DIR/server.crt -c ssl_key_file=$DIR/server.key" > "$DIR/options"
    as_postgres "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 -o "$(cat "$DIR/options")" start >/dev/null \
        || { cat "$DIR/server.log" >&2; exit 1; }
    PGPASSWORD=$(cat "$DIR/password") psql -X -q -h 127.0.0.1 -p "$port" -U vlogger -d postgres \
        -c "CREATE ROLE vlogger_tls LOGIN SUPERUSER PASSWORD '$(cat "$DIR/password")'" >/dev/null
    echo "export VLOGGER_PG_DIR=$DIR VLOGGER_TEST_PG_HOST=127.0.0.1 VLOGGER_TEST_PG_PORT=$port VLOGGER_TEST_PG_USER=vlogger VLOGGER_TEST_PG_PASSWORD_FILE=$DIR/password VLOGGER_TEST_PG_CTL='$(realpath "$0")' VLOGGER_TEST_PG_TLS_USER=vlogger_tls VLOGGER_TEST_PG_CA=$DIR/ca.crt VLOGGER_TEST_PG_OTHER_CA=$DIR/other-ca.crt"
    ;;
restart)
    as_postgres "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w -t 30 restart -o "$(cat "$DIR/options")" -l "$DIR/server.log" \
        </dev/null >/dev/null 2>>"$DIR/restart.log"
    ;;
outage)
    # An immediate stop, SECONDS down, then a start on the same port and data (the fleet benchmark's outage).
    secs=${2:?usage: pg.sh outage SECONDS}
    as_postgres "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w -t 30 stop </dev/null >/dev/null 2>>"$DIR/restart.log"
    sleep "$secs"
    as_postgres "$BIN/pg_ctl" -D "$DIR/data" -w -t 30 start -o "$(cat "$DIR/options")" -l "$DIR/server.log" \
        </dev/null >/dev/null 2>>"$DIR/restart.log"
    ;;
stop)
    if [ -f "$DIR/data/postmaster.pid" ]; then
        as_postgres "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 30 stop >/dev/null || kill "$(head -1 "$DIR/data/postmaster.pid")" 2>/dev/null || true
    fi
    rm -rf "$DIR"
    ;;
*)
    echo "usage: pg.sh start|restart|outage SECONDS|stop" >&2; exit 2 ;;
esac
