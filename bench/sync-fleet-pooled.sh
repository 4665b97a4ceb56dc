#!/usr/bin/env bash
# A thousand gateways through PgBouncer in transaction mode into a Patroni cluster: what a large fleet sizes its
# pooler and central node from.
#
#   swift build -c release --product sync-fleet-bench
#   sudo bash bench/sync-fleet-pooled.sh [gateways] [seconds] [readings-per-second-each]   # default 1000 60 10
#
# bench/cluster/cluster.sh starts one etcd, three PostgreSQL nodes under Patroni (asynchronous replication, fsync
# on), HAProxy and PgBouncer (transaction pooling, a pool of 20 server connections, up to 5000 clients). The
# gateways are syncers in one process (bench/SyncFleetBench `live`), each with a store of its own, committing
# `readings-per-second-each` readings a second and syncing by the service's own job every second through
# PgBouncer, each round on a connection of its own; the maintenance connection goes through HAProxy. Prints the
# rows/s that reached the server, the delay from local commit to server commit (p50, p99, max), the leader's CPU
# (its postmaster and children, from /proc), and the rounds that failed (and how many said "too many
# connections"). Needs root and Debian's postgresql, patroni, etcd-server, haproxy and pgbouncer.
set -euo pipefail
cd "$(dirname "$0")/.."
gateways=${1:-1000}
seconds=${2:-60}
rate=${3:-10}
bin=${VLOGGER_FLEET_BENCH_BIN:-$PWD/.build/release/sync-fleet-bench}
[ -x "$bin" ] || { echo "sync-fleet-pooled: no $bin; build it first: swift build -c release --product sync-fleet-bench" >&2; exit 1; }
work=$(mktemp -d /tmp/vlogger-fleet-pooled-XXXXXX)
chmod 0755 "$work"
export VLOGGER_CLUSTER_DIR=$work/cluster VLOGGER_PG_FSYNC=${VLOGGER_PG_FSYNC:-on}
cleanup() { bash bench/cluster/cluster.sh stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
eval "$(bash bench/cluster/cluster.sh start async)"
leader=$(bash bench/cluster/cluster.sh leader)
# The bench's maintenance connection and CPU figure: HAProxy's read-write port, the leader's data folder; the
# gateways: PgBouncer.
export VLOGGER_TEST_PG_PORT=$VLOGGER_CLUSTER_RW_PORT VLOGGER_TEST_PG_PASSWORD_FILE=$VLOGGER_CLUSTER_PASSWORD_FILE
export VLOGGER_PG_DIR=$VLOGGER_CLUSTER_DIR/$leader VLOGGER_FLEET_SYNC_PORT=$VLOGGER_CLUSTER_PGBOUNCER_PORT
ulimit -n 65536 2>/dev/null || true
mkdir -p "$work/stores"
echo "cluster: leader $leader, PgBouncer transaction pooling with a pool of ${VLOGGER_POOL_SIZE:-20}, fsync $VLOGGER_PG_FSYNC"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" live "$gateways" "$seconds" "$work/stores" "$rate"
echo "PgBouncer: $(PGPASSWORD=$(cat "$VLOGGER_CLUSTER_PASSWORD_FILE") psql -X -At -h 127.0.0.1 -p "$VLOGGER_CLUSTER_PGBOUNCER_PORT" -U vlogger -d pgbouncer -c 'SHOW LISTS' 2>/dev/null | tr '\n' ' ' || echo '(no admin console)')"
