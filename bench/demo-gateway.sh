# Sourced by the benchmarks that run the demo gateway (bench/stream-load.sh, bench/write-latency.sh): the build to
# run (BIN=folder for another build's vlogger, else this tree's release build), a scratch folder `$W` with a copy of
# Config/ whose vlogger.toml has the demo's first reader only (as the tests run it), and the processes in `PIDS`
# stopped and waited for, and `$W` removed, when the script ends.
export PATH=/opt/swift/usr/bin:$PATH
if [ -z "${BIN:-}" ]; then
  swift build -c release --product vlogger >/dev/null
  BIN=$(swift build -c release --show-bin-path)
fi
W=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT
cp -r Config/* "$W"/
python3 - "$W/vlogger.toml" <<'PY'
import sys
p = sys.argv[1]
t = open(p).read()
a, b = t.index("# --- second reader"), t.index("# --- end of second reader ---\n")
open(p, "w").write(t[:a] + t[b + len("# --- end of second reader ---\n"):])
PY
