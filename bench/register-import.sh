#!/usr/bin/env bash
# Memory of `vlogger assets import` against the register's size (issue "Nothing lost, nobody in", item 7: the
# service imports the register at every start and SIGHUP, so its peak must stay flat in the row count).
#   bash bench/register-import.sh [BIN=.build/release/vlogger] [ROWS="100000 1000000"]
# Prints, per size: the file's size, the peak resident set of the import (the kernel's ru_maxrss of the child,
# read by Python's resource module) and its time. Target: under 64 MB, flat in the row count.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-.build/release/vlogger}
[ -x "$bin" ] || { echo "register-import: no $bin; build it first (swift build -c release --product vlogger)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for rows in ${ROWS:-100000 1000000}; do
    csv="$work/assets-$rows.csv"
    python3 - "$rows" "$csv" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write("uid,asset_id,description,location,model,block_0x100,locked_0x00\n")
    for i in range(n):
        # E0 04 (NXP) and a 48-bit serial: every UID distinct, as in a real register.
        f.write(f"E004{i:012X},AS-{i:07d},Asset {i} on line {i % 40},\"Hall {i % 7}, bay {i % 90}\",ICODE SLIX2,{i:016X},{'yes' if i % 3 == 0 else ''}\n")
PY
    python3 - "$bin" "$csv" "$work/store-$rows.db" "$rows" <<'PY'
import os, resource, subprocess, sys, time
binary, csv, store, rows = sys.argv[1:5]
t = time.monotonic()
r = subprocess.run([binary, "assets", "import", "--store", store, csv], capture_output=True, text=True)
dt = time.monotonic() - t
if r.returncode != 0:
    sys.exit(f"register-import: {rows} rows: exit {r.returncode}: {r.stderr.strip()}")
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"{int(rows):>9,} rows, file {os.path.getsize(csv) / 1e6:.1f} MB: peak RSS {peak_kb / 1024:.1f} MB, {dt:.1f} s")
PY
done
