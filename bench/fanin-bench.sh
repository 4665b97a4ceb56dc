#!/usr/bin/env bash
# MQTT fan-in benchmark: how fast `vlogger central ingest` takes rows from NATS JetStream into PostgreSQL, against
# `psql \copy` of the same rows in the same run.
#
#   swift build -c release --product vlogger
#   sudo bash bench/fanin-bench.sh [hours] [runs]     # default 6 simulated hours of the demo fields, 3 runs
#   VLOGGER_FANIN_MESSAGES=batch sudo bash bench/fanin-bench.sh   # one JSON array per batch of 1000 rows
#
# 1. A backlog: `vlogger run --fast-clock --interval 1s` polls the example configuration's readers for one
#    simulated hour; that hour's readings are laid down `hours` times, an hour apart (Python's sqlite3).
# 2. A throw-away PostgreSQL (bench/postgres/pg.sh) and a three-node NATS cluster with JetStream and the stream
#    VLOGGER (R3) (bench/nats/nats.sh), in folders of their own.
# 3. Each run, on a fresh database: the ingest's session is made first (`central ingest --until-idle`), the
#    gateway publishes the whole backlog with its MQTT output (`vlogger outputs send`, QoS 1, one message per row,
#    no replay bound) while the ingest is away, then `central ingest --until-idle 3s` takes it all. Its own figure
#    (first message to last acknowledged batch) is read from what it prints; every row is checked to be there once.
# 4. `psql \copy` of the same readings (CSV in the central table's columns) into an empty table of the same shape.
#    Medians and the ratio.
#
# Needs root (pg.sh runs initdb as postgres), Debian's postgresql, nats-server, openssl and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
hours=${1:-6}
runs=${2:-3}
bin=${VLOGGER_BIN:-$PWD/.build/release/vlogger}
[ -x "$bin" ] || { echo "fanin-bench: no $bin; build it first: swift build -c release --product vlogger" >&2; exit 1; }
work=$(mktemp -d /tmp/vlogger-fanin-bench-XXXXXX)
chmod 0755 "$work"
export VLOGGER_PG_DIR=$work/pg VLOGGER_NATS_DIR=$work/nats
cleanup() {
    bash bench/nats/nats.sh stop >/dev/null 2>&1 || true
    bash bench/postgres/pg.sh stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

cp -r Config/. "$work/"
sed -i 's/^interval = "2s" .*$/interval = "1s"/' "$work/vlogger.toml"
eval "$(bash bench/postgres/pg.sh start)"
eval "$(bash bench/nats/nats.sh start)"
mqtt=${VLOGGER_NATS_MQTT_PORTS%%,*}
messages=${VLOGGER_FANIN_MESSAGES:-row}
case "$messages" in row) per_batch=5000 ;; batch) per_batch=1000 ;; *) echo "fanin-bench: VLOGGER_FANIN_MESSAGES is row or batch" >&2; exit 2 ;; esac
echo "vlogger: $("$bin" --version)"
echo "nats-server: $(/usr/sbin/nats-server --version)"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

"$bin" run --config "$work/vlogger.toml" --store "$work/hour.db" --duration 1h --fast-clock --interval 1s --log-level error > /dev/null 2>&1
python3 - "$work/hour.db" "$work/backlog.db" "$hours" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1]); dst = sqlite3.connect(sys.argv[2]); src.backup(dst); src.close()
c = "time, gateway, uid, block, count, data, security, decoded, reader, location"
rest = c.split(", ", 1)[1]
with dst:
    last = dst.execute("SELECT coalesce(max(id), 0) FROM readings").fetchone()[0]
    for k in range(1, int(sys.argv[3])):
        dst.execute(f"INSERT INTO readings({c}) SELECT time + {k * 3_600_000}, {rest} FROM readings WHERE id <= ? ORDER BY id", (last,))
n = dst.execute("SELECT count(*) FROM readings").fetchone()[0]
dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print(f"backlog: {n} readings over {sys.argv[3]} simulated hours")
PY
readings=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM readings').fetchone()[0])" "$work/backlog.db")

pgq() { PGPASSWORD=$(cat "$VLOGGER_TEST_PG_PASSWORD_FILE") psql -X -q -At -h 127.0.0.1 -p "$VLOGGER_TEST_PG_PORT" -U vlogger -d "$1" -c "$2"; }
central() { echo "postgresql://vlogger@127.0.0.1:$VLOGGER_TEST_PG_PORT/$1?sslmode=disable"; }
cat >> "$work/vlogger.toml" <<TOML

[[output.mqtt]]
url = "mqtt://127.0.0.1:$mqtt"
qos = 1
publish = ["readings"]
replay-rate = 0
messages = "$messages"
batch-size = $per_batch
tag-state = false
nats-topics = true
TOML
ingest_times=(); publish_times=()
for r in $(seq 1 "$runs"); do
    db="fanin_$r"
    pgq postgres "CREATE DATABASE $db"
    ingest() { "$bin" central ingest --central "$(central "$db")" --central-password-file "$VLOGGER_TEST_PG_PASSWORD_FILE" \
        --broker "mqtt://127.0.0.1:$mqtt" --client-id "fanin-bench-$r" "$@" 2>>"$work/ingest.log"; }
    ingest --init-schema --until-idle 500ms > /dev/null
    cp "$work/backlog.db" "$work/run.db"
    t0=$(date +%s.%N)
    "$bin" outputs send --config "$work/vlogger.toml" --store "$work/run.db" > "$work/send.out"
    t1=$(date +%s.%N)
    publish_times+=("$(python3 -c "print($t1 - $t0)")")
    out=$(ingest --batch-size 5000 --until-idle 3s)
    busy=$(sed -n 's/.*(busy \([0-9.]*\) s:.*/\1/p' <<<"$out")
    ingest_times+=("$busy")
    [ "$r" -eq 1 ] && { echo "run 1: outputs send: $(tr '\n' ' ' < "$work/send.out")"; echo "run 1: $out"; }
    got=$(pgq "$db" "SELECT count(*) || ' ' || count(DISTINCT local_id) FROM readings")
    [ "$got" = "$readings $readings" ] || { echo "fanin-bench: the central has $got readings (count, distinct), the store $readings; the ingest's log:" >&2; tail -20 "$work/ingest.log" >&2; exit 1; }
    [ "$r" -eq 1 ] && pgq "$db" "\\copy (SELECT gateway, local_id, time, reader, location, uid, asset_id, block, count, data, security, decoded FROM readings ORDER BY local_id) TO '$work/readings.csv' CSV"
    [ "$r" -lt "$runs" ] && pgq postgres "DROP DATABASE $db"
done
db="fanin_$runs"
copy_times=()
cols="gateway, local_id, time, reader, location, uid, asset_id, block, count, data, security, decoded"
for r in $(seq 1 "$runs"); do
    pgq "$db" "CREATE TABLE readings_copy_$r (LIKE readings INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)"
    t0=$(date +%s.%N)
    pgq "$db" "\\copy readings_copy_$r($cols) FROM '$work/readings.csv' CSV"
    t1=$(date +%s.%N)
    copy_times+=("$(python3 -c "print($t1 - $t0)")")
    n=$(pgq "$db" "SELECT count(*) FROM readings_copy_$r")
    [ "$n" = "$readings" ] || { echo "fanin-bench: \\copy loaded $n of $readings" >&2; exit 1; }
done
python3 - "$readings" "$runs" "${ingest_times[@]}" "${publish_times[@]}" "${copy_times[@]}" "$messages" <<'PY'
import statistics, sys
n, runs = int(sys.argv[1]), int(sys.argv[2])
ingest = [float(t) for t in sys.argv[3:3 + runs]]
publish = [float(t) for t in sys.argv[3 + runs:3 + 2 * runs]]
copy = [float(t) for t in sys.argv[3 + 2 * runs:-1]]
mi, mp, mc = statistics.median(ingest), statistics.median(publish), statistics.median(copy)
print(f"gateway publishing {n} readings to NATS (QoS 1, messages = \"{sys.argv[-1]}\"): median {mp:.2f} s: {n / mp:,.0f} rows/s")
print(f"central ingest of them (first message to last acknowledged batch): median {mi:.2f} s "
      f"(min {min(ingest):.2f}, max {max(ingest):.2f}, {runs} runs): {n / mi:,.0f} rows/s")
print(f"psql \\copy of the same rows (CSV) into an empty table of the same shape: median {mc:.2f} s: {n / mc:,.0f} rows/s")
print(f"ingest against \\copy: {(n / mi) / (n / mc):.2f}x")
PY
