#!/usr/bin/env bash
# A throw-away central PostgreSQL cluster for the fleet tests and benchmarks, on loopback only: one etcd, three
# PostgreSQL nodes run by Patroni (etcd3 as its store), HAProxy with a read-write port routed to the leader by
# Patroni's REST check (and a read-only port over the replicas), and PgBouncer in transaction mode in front of the
# read-write port. Every port is a free one, everything lives in one temporary folder, and every process is
# stopped by the PID this script recorded for it (never by name).
#
#   eval "$(bash bench/cluster/cluster.sh start [sync|async])"   # prints the export lines the tests read
#   bash bench/cluster/cluster.sh leader               # the leader's node name (pg1, pg2 or pg3)
#   bash bench/cluster/cluster.sh kill-leader          # SIGKILL to the leader's Patroni and its postmaster; prints the node
#   bash bench/cluster/cluster.sh kill-postmaster      # SIGKILL to the leader's postmaster only (Patroni restarts it)
#   bash bench/cluster/cluster.sh rejoin NODE          # starts a killed node's Patroni again (pg_rewind, then a replica)
#   bash bench/cluster/cluster.sh wait-leader [SECS]   # waits until a leader answers on HAProxy's read-write port
#   bash bench/cluster/cluster.sh wait-replicas [SECS] # waits until the leader streams to both replicas
#   bash bench/cluster/cluster.sh cut | uncut          # stops (SIGSTOP) / resumes the leader's WAL senders: with async
#                                                        replication, cut, commit, kill-leader, and the new leader
#                                                        lacks those commits (a lost tail)
#   bash bench/cluster/cluster.sh stop
#
# sync: Patroni's synchronous_mode (a commit returns once a standby has it; a failover promotes only that standby);
# async (the default): a commit returns at once, and a failover can lose what the new leader had not received.
# Needs root (PostgreSQL runs as the postgres user) and Debian's postgresql, patroni, etcd-server, haproxy and
# pgbouncer. VLOGGER_CLUSTER_DIR picks the folder (default /tmp/vlogger-cluster).
set -euo pipefail
DIR=${VLOGGER_CLUSTER_DIR:-/tmp/vlogger-cluster}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
need() { command -v "$1" >/dev/null 2>&1 || { echo "cluster.sh: $1 is not installed (apt-get install $2)" >&2; exit 1; }; }

. "$(cd "$(dirname "$0")/.." && pwd)/lib/procs.sh"
# The node whose Patroni REST answers /primary with 200 (none: empty).
leader() {
    for n in pg1 pg2 pg3; do
        alive "$(pid_of "patroni-$n")" || continue
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$(port_of "rest-$n")/primary" || true)
        [ "$code" = 200 ] && { echo "$n"; return 0; }
    done
    return 0
}
postmaster_of() { [ -f "$DIR/$1/data/postmaster.pid" ] && head -1 "$DIR/$1/data/postmaster.pid" || true; }
psql_rw() {
    # Bounded: the wait loops below must go round, whatever the node behind the port does.
    PGPASSWORD=$(cat "$DIR/password") PGCONNECT_TIMEOUT=5 timeout 30 psql -X -At -h 127.0.0.1 -p "$(port_of haproxy-rw)" -U vlogger -d postgres \
        -v ON_ERROR_STOP=1 "$@"
}
wait_leader() {
    local secs=${1:-60}
    for _ in $(seq 1 $((secs * 5))); do
        if [ "$(psql_rw -c 'SELECT NOT pg_is_in_recovery()' 2>/dev/null || true)" = t ]; then return 0; fi
        sleep 0.2
    done
    echo "cluster.sh: no leader on the read-write port after $secs s" >&2
    return 1
}

# Waits until the leader streams to both replicas (and, in sync mode, one of them is its synchronous standby).
wait_replicas() {
    local secs=${1:-60} mode
    mode=$(cat "$DIR/mode")
    for _ in $(seq 1 $((secs * 5))); do
        if [ "$(psql_rw -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null || echo 0)" = 2 ]; then
            [ "$mode" = async ] && return 0
            # Sync mode: a standby is synchronous in PostgreSQL and Patroni's DCS names it (its REST /sync answers
            # 200): only that standby may be promoted, so a failover before the DCS knows it would find none.
            if [ "$(psql_rw -c "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'" 2>/dev/null || echo 0)" = 1 ]; then
                for n in pg1 pg2 pg3; do
                    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$(port_of "rest-$n")/sync" || true)
                    [ "$code" = 200 ] && return 0
                done
            fi
        fi
        sleep 0.2
    done
    echo "cluster.sh: the replicas are not streaming after $secs s (see $DIR/logs)" >&2
    return 1
}

node_config() {
    local n=$1 mode=$2
    cat <<EOF
scope: vlogger
namespace: /service/
name: $n
restapi: {listen: "127.0.0.1:$(port_of "rest-$n")", connect_address: "127.0.0.1:$(port_of "rest-$n")"}
etcd3: {hosts: "127.0.0.1:$(port_of etcd)"}
log: {dir: "$DIR/logs/$n", level: INFO}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    synchronous_mode: $([ "$mode" = sync ] && echo true || echo false)
    postgresql:
      use_pg_rewind: true
      parameters: {wal_level: replica, hot_standby: "on", max_wal_senders: 10, max_replication_slots: 10,
                   wal_log_hints: "on", max_connections: 300, fsync: "${VLOGGER_PG_FSYNC:-off}"}
  initdb: [{encoding: UTF8}, {locale: C.UTF-8}]
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
postgresql:
  listen: "127.0.0.1:$(port_of "pg-$n")"
  connect_address: "127.0.0.1:$(port_of "pg-$n")"
  data_dir: "$DIR/$n/data"
  bin_dir: "$BIN"
  pgpass: "$DIR/$n/pgpass"
  parameters: {unix_socket_directories: "$DIR/$n"}
  authentication:
    superuser: {username: vlogger, password: "$(cat "$DIR/password")"}
    replication: {username: replicator, password: "$(cat "$DIR/password")"}
    rewind: {username: vlogger, password: "$(cat "$DIR/password")"}
EOF
}

start_patroni() {
    local n=$1
    install -d -o postgres -g postgres -m 0700 "$DIR/$n" "$DIR/logs/$n"
    # setpriv changes user and execs (runuser would stay as the parent: its PID would not be Patroni's).
    launch "patroni-$n" env HOME="$DIR/$n" setpriv --reuid=postgres --regid=postgres --init-groups patroni "$DIR/$n.yml"
}

case "${1:-}" in
start)
    mode=${2:-async}
    case "$mode" in sync|async) ;; *) echo "cluster.sh: start sync|async" >&2; exit 2 ;; esac
    [ -n "$BIN" ] || { echo "cluster.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
    need patroni patroni; need etcd etcd-server; need haproxy haproxy; need pgbouncer pgbouncer; need curl curl
    [ -d "$DIR" ] && bash "$0" stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
    install -d -m 0755 "$DIR" "$DIR/pids" "$DIR/ports" "$DIR/logs"
    chmod 0777 "$DIR/logs"
    head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$DIR/password"
    chmod 0644 "$DIR/password"
    echo "$mode" > "$DIR/mode"
    for p in etcd etcd-peer rest-pg1 rest-pg2 rest-pg3 pg-pg1 pg-pg2 pg-pg3 haproxy-rw haproxy-ro pgbouncer; do
        free_port > "$DIR/ports/$p"
    done
    # etcd, one member, data in the folder.
    launch etcd etcd --name vlogger-etcd --data-dir "$DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$(port_of etcd)" --advertise-client-urls "http://127.0.0.1:$(port_of etcd)" \
        --listen-peer-urls "http://127.0.0.1:$(port_of etcd-peer)" --initial-advertise-peer-urls "http://127.0.0.1:$(port_of etcd-peer)" \
        --initial-cluster "vlogger-etcd=http://127.0.0.1:$(port_of etcd-peer)"
    for _ in $(seq 1 100); do
        curl -s --max-time 1 "http://127.0.0.1:$(port_of etcd)/health" | grep -q true && break
        sleep 0.1
    done
    for n in pg1 pg2 pg3; do
        node_config "$n" "$mode" > "$DIR/$n.yml"
        chown postgres:postgres "$DIR/$n.yml"; chmod 0600 "$DIR/$n.yml"
    done
    # The first node bootstraps (initdb, the users); the others then copy it (pg_basebackup) as replicas.
    start_patroni pg1
    wait_leader_rest() {
        for _ in $(seq 1 300); do [ -n "$(leader)" ] && return 0; sleep 0.2; done
        echo "cluster.sh: pg1 did not become the leader (see $DIR/logs)" >&2; tail -20 "$DIR/logs/patroni-pg1.log" >&2; exit 1
    }
    wait_leader_rest
    start_patroni pg2
    start_patroni pg3
    # HAProxy: the read-write port goes to the node whose REST says it is the primary; sessions on a node that
    # stops being it are cut (the client reconnects and finds the new one).
    cat > "$DIR/haproxy.cfg" <<EOF
global
    maxconn 4000
    pidfile $DIR/pids/haproxy.pidfile
defaults
    mode tcp
    timeout client 30m
    timeout server 30m
    timeout connect 4s
    timeout check 2s
listen primary
    bind 127.0.0.1:$(port_of haproxy-rw)
    option httpchk OPTIONS /primary
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
    server pg1 127.0.0.1:$(port_of pg-pg1) maxconn 300 check port $(port_of rest-pg1)
    server pg2 127.0.0.1:$(port_of pg-pg2) maxconn 300 check port $(port_of rest-pg2)
    server pg3 127.0.0.1:$(port_of pg-pg3) maxconn 300 check port $(port_of rest-pg3)
listen replicas
    bind 127.0.0.1:$(port_of haproxy-ro)
    balance roundrobin
    option httpchk OPTIONS /replica
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
    server pg1 127.0.0.1:$(port_of pg-pg1) maxconn 300 check port $(port_of rest-pg1)
    server pg2 127.0.0.1:$(port_of pg-pg2) maxconn 300 check port $(port_of rest-pg2)
    server pg3 127.0.0.1:$(port_of pg-pg3) maxconn 300 check port $(port_of rest-pg3)
EOF
    launch haproxy haproxy -db -f "$DIR/haproxy.cfg"
    # PgBouncer, transaction pooling, 20 server connections, in front of HAProxy's read-write port.
    install -d -o postgres -g postgres -m 0755 "$DIR/pgbouncer"
    printf '"vlogger" "%s"\n' "$(cat "$DIR/password")" > "$DIR/pgbouncer/users.txt"
    cat > "$DIR/pgbouncer/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$(port_of haproxy-rw)
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $(port_of pgbouncer)
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $DIR/pgbouncer/users.txt
admin_users = vlogger
pool_mode = transaction
default_pool_size = ${VLOGGER_POOL_SIZE:-20}
max_client_conn = 5000
max_db_connections = ${VLOGGER_POOL_SIZE:-20}
server_login_retry = 1
server_connect_timeout = 5
query_wait_timeout = 120
ignore_startup_parameters = extra_float_digits
EOF
    chown -R postgres:postgres "$DIR/pgbouncer"; chmod 0600 "$DIR/pgbouncer/users.txt"
    launch pgbouncer bash -c "ulimit -n 16384 2>/dev/null || ulimit -n 4096; exec setpriv --reuid=postgres --regid=postgres --init-groups pgbouncer $DIR/pgbouncer/pgbouncer.ini"
    wait_leader 60 || { tail -20 "$DIR"/logs/*.log >&2; exit 1; }
    # Both replicas streaming before the cluster counts as up (a failover then has somewhere to go).
    wait_replicas 120
    echo "export VLOGGER_CLUSTER_DIR=$DIR VLOGGER_CLUSTER_CTL='$(realpath "$0")' VLOGGER_CLUSTER_MODE=$mode VLOGGER_CLUSTER_USER=vlogger VLOGGER_CLUSTER_PASSWORD_FILE=$DIR/password VLOGGER_CLUSTER_RW_PORT=$(port_of haproxy-rw) VLOGGER_CLUSTER_RO_PORT=$(port_of haproxy-ro) VLOGGER_CLUSTER_PGBOUNCER_PORT=$(port_of pgbouncer) VLOGGER_CLUSTER_NODE_PORTS=$(port_of pg-pg1),$(port_of pg-pg2),$(port_of pg-pg3)"
    ;;
leader)
    leader
    ;;
wait-leader)
    wait_leader "${2:-60}"
    ;;
wait-replicas)
    wait_replicas "${2:-60}"
    ;;
kill-leader)
    n=$(leader)
    [ -n "$n" ] || { echo "cluster.sh: no leader to kill" >&2; exit 1; }
    pm=$(postmaster_of "$n")
    kill -KILL "$(pid_of "patroni-$n")" 2>/dev/null || true
    [ -n "$pm" ] && kill -KILL "$pm" 2>/dev/null || true
    # WAL senders a cut stopped die with their node (stopped, they would never notice).
    if [ -f "$DIR/pids/walsenders" ]; then
        while read -r w; do alive "$w" && kill -KILL "$w" 2>/dev/null || true; done < "$DIR/pids/walsenders"
        rm -f "$DIR/pids/walsenders"
    fi
    echo "$n"
    ;;
kill-postmaster)
    n=$(leader)
    [ -n "$n" ] || { echo "cluster.sh: no leader" >&2; exit 1; }
    kill -KILL "$(postmaster_of "$n")"
    echo "$n"
    ;;
rejoin)
    n=${2:?usage: cluster.sh rejoin pg1|pg2|pg3}
    # The killed postmaster's children die with their parent's socket; wait until none holds the data folder.
    for _ in $(seq 1 100); do
        pm=$(postmaster_of "$n")
        alive "$pm" || break
        sleep 0.1
    done
    start_patroni "$n"
    ;;
cut)
    # The leader's WAL senders stopped (SIGSTOP): nothing it commits from now on leaves it (a replica's receiver
    # would still take what is already in its socket). Their PIDs are kept: uncut resumes them, kill-leader and
    # stop kill them.
    n=$(leader)
    [ -n "$n" ] || { echo "cluster.sh: no leader" >&2; exit 1; }
    pm=$(postmaster_of "$n")
    ws=$(ps -o pid=,args= --ppid "$pm" | awk '/walsender/ {print $1}')
    [ -n "$ws" ] || { echo "cluster.sh: $n has no WAL sender" >&2; exit 1; }
    for w in $ws; do kill -STOP "$w"; echo "$w" >> "$DIR/pids/walsenders"; done
    echo "$n"
    ;;
uncut)
    if [ -f "$DIR/pids/walsenders" ]; then
        while read -r w; do alive "$w" && kill -CONT "$w" 2>/dev/null || true; done < "$DIR/pids/walsenders"
        rm -f "$DIR/pids/walsenders"
    fi
    ;;
stop)
    [ -d "$DIR" ] || exit 0
    for p in pgbouncer haproxy; do stop_pid "$(pid_of "$p")"; done
    # Stopped WAL senders would hold their node's shutdown.
    if [ -f "$DIR/pids/walsenders" ]; then
        while read -r w; do alive "$w" && kill -KILL "$w" 2>/dev/null || true; done < "$DIR/pids/walsenders"
    fi
    for n in pg1 pg2 pg3; do stop_pid "$(pid_of "patroni-$n")"; done
    for n in pg1 pg2 pg3; do
        pm=$(postmaster_of "$n")
        if alive "$pm"; then
            [ -n "$BIN" ] && runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/$n/data" -m immediate -w -t 20 stop >/dev/null 2>&1 || true
            stop_pid "$pm" KILL
        fi
    done
    stop_pid "$(pid_of etcd)"
    rm -rf "$DIR"
    ;;
*)
    echo "usage: cluster.sh start [sync|async] | leader | wait-leader [SECS] | wait-replicas [SECS] | kill-leader | kill-postmaster | rejoin NODE | cut | uncut | stop" >&2
    exit 2
    ;;
esac
