#!/usr/bin/env bash
# Many gateways into one central PostgreSQL: what a plant sizes its central node from.
#
#   swift build -c release --product sync-fleet-bench
#   sudo bash bench/sync-fleet-bench.sh [seconds]     # live phases of `seconds` each (default 20)
#
# A throw-away PostgreSQL (bench/postgres/pg.sh in a folder of its own, loopback), durable as a central node
# would be (fsync on; VLOGGER_PG_FSYNC=off for the tests' setting). Gateways are syncers in one process
# (bench/SyncFleetBench), each with a store and a gateway id of its own, on the same cores as the server:
#   1. throughput: N = 1, 10, 50 gateways with 1,000,000 readings between them, all syncing at once;
#   2. live: N = 1, 10, 50 gateways committing 160 readings a second each (8 readers × 20 tags at 1 s), synced
#      by the service's own job at a 1 s interval: delay from local commit to server commit, server CPU;
#   3. catch-up: one gateway with a one-million-reading backlog that goes on committing meanwhile;
#   4. reconnect: 50 gateways, the server stopped (immediate) for 10 s and started: when each syncs again.
# Needs root (pg.sh runs initdb as postgres), Debian's postgresql and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
bin=${VLOGGER_FLEET_BENCH_BIN:-$PWD/.build/release/sync-fleet-bench}
[ -x "$bin" ] || { echo "sync-fleet-bench: no $bin; build it first: swift build -c release --product sync-fleet-bench" >&2; exit 1; }
work=$(mktemp -d /tmp/vlogger-fleet-bench-XXXXXX)
chmod 0755 "$work"
export VLOGGER_PG_DIR=$work/pg VLOGGER_PG_FSYNC=${VLOGGER_PG_FSYNC:-on}
cleanup() { bash bench/postgres/pg.sh stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
eval "$(bash bench/postgres/pg.sh start)"
mkdir -p "$work/stores"
echo "PostgreSQL: $(PGPASSWORD=$(cat "$VLOGGER_TEST_PG_PASSWORD_FILE") psql -X -At -h 127.0.0.1 -p "$VLOGGER_TEST_PG_PORT" -U vlogger -d postgres -c 'SHOW server_version'), fsync $VLOGGER_PG_FSYNC"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
load=$(cut -d' ' -f1 /proc/loadavg)
if python3 -c "import sys; sys.exit(0 if float('$load') > 0.5 else 1)"; then
    echo "sync-fleet-bench: WARNING: the 1-minute load average is $load: something else uses the cores, the figures will be low" >&2
fi

for n in 1 10 50; do "$bin" throughput "$n" $((1000000 / n)) "$work/stores"; rm -f "$work"/stores/*; done
for n in 1 10 50; do "$bin" live "$n" "$seconds" "$work/stores"; rm -f "$work"/stores/*; done
"$bin" catchup 1000000 "$work/stores"
rm -f "$work"/stores/*
"$bin" reconnect 50 10 "$work/stores"
