#!/usr/bin/env bash
# Fleet-sync benchmark: how fast one gateway's store reaches the central PostgreSQL.
#
#   swift build -c release --product vlogger
#   sudo bash bench/sync-bench.sh [runs]          # default 5 runs per batch size; prints medians
#
# 1. A one-day backlog of the demo fields at a 1 s interval: `vlogger run --fast-clock --interval 1s` polls the
#    example configuration's readers (Config/vlogger.toml: cage-room on demo-field, dock-3 on demo-field-dock, both
#    set to 1 s here) for one simulated hour; that hour's readings and events are laid down 24 times, an hour apart (Python's sqlite3), so
#    the store holds a day as the agent writes it.
# 2. A throw-away PostgreSQL (bench/postgres/pg.sh in a folder of its own; loopback, fsync off as in the tests),
#    the central schema by `vlogger sync --init-schema`.
# 3. For each batch size, `runs` times on a fresh database and a fresh copy of the store: `vlogger sync` ships the
#    whole backlog; its own timing (connect to last commit) is read from what it prints. Medians and rows/s.
#
# Needs root (pg.sh runs initdb as postgres), Debian's postgresql and openssl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
bin=${VLOGGER_BIN:-$PWD/.build/release/vlogger}
[ -x "$bin" ] || { echo "sync-bench: no $bin; build it first: swift build -c release --product vlogger" >&2; exit 1; }
work=$(mktemp -d /tmp/vlogger-sync-bench-XXXXXX)
chmod 0755 "$work"
export VLOGGER_PG_DIR=$work/pg
cleanup() { bash bench/postgres/pg.sh stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

cp -r Config/. "$work/"
# Both demo readers at 1 s (the example configuration polls the dock door every 2 s).
sed -i 's/^interval = "2s" .*$/interval = "1s"/' "$work/vlogger.toml"
eval "$(bash bench/postgres/pg.sh start)"
echo "vlogger: $("$bin" --version)"
echo "PostgreSQL: $(PGPASSWORD=$(cat "$VLOGGER_TEST_PG_PASSWORD_FILE") psql -X -At -h 127.0.0.1 -p "$VLOGGER_TEST_PG_PORT" -U vlogger -d postgres -c 'SHOW server_version')"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Another job on the same cores (a build, a CI run) slows the sync 1.6-1.7x (docs/integrating.md): say so.
load=$(cut -d' ' -f1 /proc/loadavg)
if python3 -c "import sys; sys.exit(0 if float('$load') > 0.5 else 1)"; then
    echo "sync-bench: WARNING: the 1-minute load average is $load: something else uses the cores, the figures will be low" >&2
fi

# 1. One simulated hour, then the day.
t0=$(date +%s.%N)
"$bin" run --config "$work/vlogger.toml" --store "$work/hour.db" --duration 1h --fast-clock --interval 1s --log-level error > "$work/run.out"
t1=$(date +%s.%N)
echo "one simulated hour of polling (--fast-clock --interval 1s): $(python3 -c "print(f'{$t1-$t0:.1f}')") s wall"
sed 's/^/  /' "$work/run.out"
python3 - "$work/hour.db" "$work/day.db" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1])
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
src.close()
cols = {
    "readings": "time, gateway, uid, block, count, data, security, decoded, reader, location",
    "events": "time, gateway, uid, kind, name, severity, detail, reader, location",
}
hour = 3_600_000
with dst:
    for table, c in cols.items():
        last = dst.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
        rest = c.split(", ", 1)[1]
        for k in range(1, 24):
            dst.execute(f"INSERT INTO {table}({c}) SELECT time + {k * hour}, {rest} FROM {table} WHERE id <= ? ORDER BY id", (last,))
counts = {t: dst.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("readings", "events", "tags")}
span = dst.execute("SELECT (max(time) - min(time)) / 3600000.0 FROM readings").fetchone()[0]
dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
dst.close()
print(f"one-day backlog: {counts['readings']} readings, {counts['events']} events, {counts['tags']} tags over {span:.2f} h")
PY
ls -l "$work/day.db" | awk '{printf "store file: %.1f MB\n", $5 / 1e6}'

# 2 and 3.
pgq() { PGPASSWORD=$(cat "$VLOGGER_TEST_PG_PASSWORD_FILE") psql -X -q -At -h 127.0.0.1 -p "$VLOGGER_TEST_PG_PORT" -U vlogger -d "$1" -c "$2"; }
# A fresh database NAME and a configuration for it at $work/NAME.toml, its central schema made; [batch-size].
fresh_db() {
    pgq postgres "CREATE DATABASE $1"
    cfg="$work/$1.toml"
    cp "$work/vlogger.toml" "$cfg"
    printf '\n[sync]\nurl = "postgresql://vlogger@127.0.0.1:%s/%s"\npassword-file = "%s"\nsslmode = "disable"\n' \
        "$VLOGGER_TEST_PG_PORT" "$1" "$VLOGGER_TEST_PG_PASSWORD_FILE" >> "$cfg"
    [ -n "${2:-}" ] && printf 'batch-size = %s\n' "$2" >> "$cfg"
    "$bin" sync --config "$cfg" --store "$work/day.db" --init-schema > /dev/null
}
for batch in 1000 5000 20000; do
    times=()
    for r in $(seq 1 "$runs"); do
        db="bench_${batch}_$r"
        fresh_db "$db" "$batch"
        cp "$work/day.db" "$work/run.db"
        out=$("$bin" sync --config "$cfg" --store "$work/run.db")
        secs=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' <<<"$out")
        times+=("$secs")
        [ "$r" -eq 1 ] && echo "batch-size $batch, run 1: $out"
        # Every row arrived once.
        central=$(pgq "$db" "SELECT count(*) FROM readings")
        local_rows=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM readings').fetchone()[0])" "$work/run.db")
        [ "$central" = "$local_rows" ] || { echo "sync-bench: $central central readings, $local_rows local" >&2; exit 1; }
        pgq postgres "DROP DATABASE $db"
    done
    rows=$(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(sum(c.execute(f'SELECT count(*) FROM {t}').fetchone()[0] for t in ('readings','events','tags')))" "$work/day.db")
    MEDIAN_FILE="$work/median-$batch" python3 - "$batch" "$rows" "${times[@]}" <<'PY'
import os, statistics, sys
batch, rows, times = int(sys.argv[1]), int(sys.argv[2]), [float(t) for t in sys.argv[3:]]
m = statistics.median(times)
open(os.environ["MEDIAN_FILE"], "w").write(str(m))
print(f"batch-size {batch}: one-day backlog ({rows} rows) caught up in median {m:.2f} s "
      f"(min {min(times):.2f}, max {max(times):.2f}, {len(times)} runs): {rows / m:,.0f} rows/s")
PY
done

# 4. The ceiling: PostgreSQL's own bulk path. The same readings, as CSV in the central table's columns (Python's
#    sqlite3 and csv), loaded by `psql \copy` into an empty table of the same shape (LIKE readings, not partitioned,
#    with its primary key and indexes), `runs` times; then the same rows in COPY's binary format (written by the
#    server from the loaded table) into another empty one: text against binary on the server's side. Medians, and
#    the sync's rows/s at batch-size 5000 (the default) and 1000 against the text ceiling.
python3 - "$work/day.db" "$work/readings.csv" <<'PY'
import csv, sqlite3, sys, datetime
db = sqlite3.connect(sys.argv[1])
utc = datetime.timezone.utc
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    for (i, t, gw, reader, loc, uid, asset, block, count, data, sec, dec) in db.execute(
            "SELECT id, time, gateway, reader, location, uid, asset_id, block, count, data, security, decoded FROM readings ORDER BY id"):
        ts = datetime.datetime.fromtimestamp(t / 1000, utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "+00"
        w.writerow([gw, i, ts, reader, loc, uid, asset, block, count, "\\x" + data.hex(),
                    None if sec is None else "\\x" + sec.hex(), dec])
PY
copy_times=()
binary_times=()
pgcopy() { PGPASSWORD=$(cat "$VLOGGER_TEST_PG_PASSWORD_FILE") psql -X -q -h 127.0.0.1 -p "$VLOGGER_TEST_PG_PORT" -U vlogger -d "$1" -c "$2"; }
cols="gateway, local_id, time, reader, location, uid, asset_id, block, count, data, security, decoded"
for r in $(seq 1 "$runs"); do
    db="bench_copy_$r"
    fresh_db "$db"
    pgq "$db" "CREATE TABLE readings_copy (LIKE readings INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)"
    pgq "$db" "CREATE TABLE readings_bin (LIKE readings INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)"
    t0=$(date +%s.%N)
    pgcopy "$db" "\\copy readings_copy($cols) FROM '$work/readings.csv' CSV"
    t1=$(date +%s.%N)
    copy_times+=("$(python3 -c "print($t1 - $t0)")")
    n=$(pgq "$db" "SELECT count(*) FROM readings_copy")
    [ "$r" -eq 1 ] && pgcopy "$db" "\\copy (SELECT $cols FROM readings_copy ORDER BY local_id) TO '$work/readings.bin' (FORMAT binary)"
    t0=$(date +%s.%N)
    pgcopy "$db" "\\copy readings_bin($cols) FROM '$work/readings.bin' (FORMAT binary)"
    t1=$(date +%s.%N)
    binary_times+=("$(python3 -c "print($t1 - $t0)")")
    nb=$(pgq "$db" "SELECT count(*) FROM readings_bin")
    pgq postgres "DROP DATABASE $db"
done
readings=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM readings').fetchone()[0])" "$work/day.db")
python3 - "$readings" "$n" "$nb" "$(cat "$work/median-5000")" "$(cat "$work/median-1000")" "$rows" "$runs" "${copy_times[@]}" "${binary_times[@]}" <<'PY'
import statistics, sys
readings, loaded, loaded_bin = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sync5000, sync1000, rows, runs = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
times = [float(t) for t in sys.argv[8:8 + runs]]
binary = [float(t) for t in sys.argv[8 + runs:]]
m, mb = statistics.median(times), statistics.median(binary)
assert loaded == readings, f"psql \\copy loaded {loaded} of {readings} readings"
assert loaded_bin == readings, f"psql \\copy (binary) loaded {loaded_bin} of {readings} readings"
print(f"psql \\copy of the {readings} readings (CSV) into an empty table of the same shape: median {m:.2f} s "
      f"({len(times)} runs): {readings / m:,.0f} rows/s")
print(f"psql \\copy of the same rows in COPY's binary format: median {mb:.2f} s ({len(binary)} runs): "
      f"{readings / mb:,.0f} rows/s, {m / mb:.2f}x the text format")
for batch, s in ((5000, sync5000), (1000, sync1000)):
    print(f"vlogger sync at batch-size {batch}{' (the default)' if batch == 5000 else ''} against the text ceiling: "
          f"{rows / s:,.0f} rows/s, ratio {(rows / s) / (readings / m):.2f}x")
PY
