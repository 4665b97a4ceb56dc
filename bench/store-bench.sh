#!/usr/bin/env bash
# Store benchmarks (not part of `swift test`). Prints medians and ratios:
#  1. ingest: vlogger's store writer (its own thread, durable batches) vs a C program with sqlite3 prepared
#     statements committing the same batch sizes with the same open flags, same schema, same rows, same
#     machine, alternating runs.
#  2. export: `vlogger export --since` of 1,000,000 readings to CSV vs `sqlite3 -csv` running the same
#     query on the same file; time ratio and peak memory (max RSS). vlogger runs with --lf because
#     sqlite3 3.40 ends CSV rows with LF, so the two outputs can be compared byte for byte.
# Usage: bash bench/store-bench.sh [INGEST_N] [EXPORT_N] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
N=${1:-200000}
EN=${2:-1000000}
RUNS=${3:-5}
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 command (apt-get install sqlite3)"; exit 1; }
swift build -c release --product vlogger >/dev/null
swift build -c release --product store-bench >/dev/null
BIN=$(swift build -c release --show-bin-path)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
gcc -O2 -o "$W/ingest" bench/ingest.c -lsqlite3

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "== ingest: $N readings, $RUNS runs each (store on $(df -P "$W" | awk 'NR==2{print $1}'))"
for BATCH in 1000 5000; do
  : > "$W/swift.txt"; : > "$W/c.txt"; : > "$W/thread.txt"; : > "$W/grdb.txt"
  for i in $(seq "$RUNS"); do
    rm -f "$W"/s.db*; "$BIN/store-bench" ingest "$N" "$BATCH" "$W/s.db" >> "$W/swift.txt"
    rm -f "$W"/c.db*; "$BIN/store-bench" schema "$W/c.db"; "$W/ingest" "$N" "$BATCH" "$W/c.db" >> "$W/c.txt"
    rm -f "$W"/t.db*; "$BIN/store-bench" ingest-writer "$N" "$BATCH" "$W/t.db" >> "$W/thread.txt"
    rm -f "$W"/g.db*; "$BIN/store-bench" ingest-grdb "$N" "$BATCH" "$W/g.db" >> "$W/grdb.txt"
  done
  G=$(cut -d' ' -f1 "$W/grdb.txt" | median)
  S=$(cut -d' ' -f1 "$W/swift.txt" | median); C=$(median < "$W/c.txt"); T=$(cut -d' ' -f1 "$W/thread.txt" | median)
  echo "batch $BATCH: vlogger store writer median $S readings/s in $(head -1 "$W/swift.txt" | cut -d' ' -f2) commits (runs: $(cut -d' ' -f1 "$W/swift.txt" | tr '\n' ' ')); C in batches of $BATCH median $C readings/s (runs: $(tr '\n' ' ' < "$W/c.txt")); ratio $(awk -v s="$S" -v c="$C" 'BEGIN{printf "%.2f", s/c}')"
  echo "  the writer on its own thread (commits take all that is queued): median $T readings/s in $(head -1 "$W/thread.txt" | cut -d' ' -f2) commits"
  echo "  GRDB's own statement API in the same batches: median $G readings/s (runs: $(cut -d' ' -f1 "$W/grdb.txt" | tr '\n' ' ')); hand-bound/GRDB API $(awk -v s="$S" -v g="$G" 'BEGIN{printf "%.2f", s/g}')"
done

echo "== export: $EN readings to CSV, $RUNS runs each"
rm -f "$W"/e.db*
"$BIN/store-bench" fill "$EN" "$W/e.db" >/dev/null
Q=$("$BIN/store-bench" query "$W/e.db")
: > "$W/vt.txt"; : > "$W/qt.txt"; : > "$W/vm.txt"; : > "$W/qm.txt"
timed() { # prints "seconds maxrss_kB" of a command, output to $OUT
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
out = open(sys.argv[1], 'wb')
t = time.perf_counter()
subprocess.run(sys.argv[2:], stdout=out, check=True)
dt = time.perf_counter() - t
print(f"{dt:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
PY
}
for i in $(seq "$RUNS"); do
  read -r t m < <(timed "$W/v.csv" "$BIN/vlogger" export --store "$W/e.db" --since 2000-01-01T00:00:00Z --lf)
  echo "$t" >> "$W/vt.txt"; echo "$m" >> "$W/vm.txt"
  read -r t m < <(timed "$W/q.csv" sqlite3 -csv -header "$W/e.db" "$Q")
  echo "$t" >> "$W/qt.txt"; echo "$m" >> "$W/qm.txt"
done
VT=$(median < "$W/vt.txt"); QT=$(median < "$W/qt.txt")
echo "vlogger export median ${VT}s (runs: $(tr '\n' ' ' < "$W/vt.txt")), peak RSS $(sort -n "$W/vm.txt" | tail -1) kB"
echo "sqlite3 -csv   median ${QT}s (runs: $(tr '\n' ' ' < "$W/qt.txt")), peak RSS $(sort -n "$W/qm.txt" | tail -1) kB"
echo "time ratio vlogger/sqlite3: $(awk -v a="$VT" -v b="$QT" 'BEGIN{printf "%.2f", a/b}')"
echo "rows: $(($(wc -l < "$W/v.csv") - 1)) exported; outputs identical: $(cmp -s "$W/v.csv" "$W/q.csv" && echo yes || echo no)"
