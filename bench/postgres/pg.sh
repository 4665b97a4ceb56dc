#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the fleet-sync tests: initdb into a temporary folder, listening on
# loopback only at a free port, password (SCRAM) authentication for its superuser "vlogger".
#
#   eval "$(sudo bash bench/postgres/pg.sh start)"   # prints the export lines the tests read (VLOGGER_TEST_PG_*, VLOGGER_PG_DIR)
#   sudo bash bench/postgres/pg.sh restart           # an immediate restart (fault tests)
#   sudo bash bench/postgres/pg.sh stop              # stops the cluster it started (pg_ctl: the postmaster's PID) and removes it
#
# Needs root (initdb runs as the postgres user) and Debian's postgresql package. VLOGGER_PG_DIR picks the folder
# (default /tmp/vlogger-pg); restart and stop act on the cluster in that folder only.
set -euo pipefail
DIR=${VLOGGER_PG_DIR:-/tmp/vlogger-pg}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$BIN" ] || { echo "pg.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
as_postgres() { runuser -u postgres -- "$@"; }

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
    as_postgres "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 \
        -o "-p $port -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null \
        || { cat "$DIR/server.log" >&2; exit 1; }
    echo "export VLOGGER_PG_DIR=$DIR VLOGGER_TEST_PG_HOST=127.0.0.1 VLOGGER_TEST_PG_PORT=$port VLOGGER_TEST_PG_USER=vlogger VLOGGER_TEST_PG_PASSWORD_FILE=$DIR/password VLOGGER_TEST_PG_CTL='$(realpath "$0")'"
    ;;
restart)
    as_postgres "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w -t 30 restart \
        -o "-p $(cat "$DIR/port") -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" -l "$DIR/server.log" >/dev/null
    ;;
stop)
    if [ -f "$DIR/data/postmaster.pid" ]; then
        as_postgres "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 30 stop >/dev/null || kill "$(head -1 "$DIR/data/postmaster.pid")" 2>/dev/null || true
    fi
    rm -rf "$DIR"
    ;;
*)
    echo "usage: pg.sh start|restart|stop" >&2; exit 2 ;;
esac
