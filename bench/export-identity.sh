#!/usr/bin/env bash
# Exports of the demo store by two builds, compared byte for byte (issue 48's check "exports of the demo store
# byte-identical before and after except the new column"). The store is made by the OLD build (the demo field
# polled with a simulated clock, an audit, a direct write, a queued write): a newer build migrates a copy of it,
# an older one refuses a store a newer one has opened. Each of the 7 tables is exported in CSV and JSON lines,
# plain and with --labels, --local-time and --plain-hex, by both; the columns the NEW build adds (DROP, comma
# separated) are taken out of its output first.
#
#   bash bench/export-identity.sh OLD_BIN_DIR NEW_BIN_DIR [DROP]
#   e.g. bash bench/export-identity.sh /tmp/old/.build/debug .build/debug origin
set -euo pipefail
old=$(realpath "$1")/vlogger new=$(realpath "$2")/vlogger drop=${3:-}
cd "$(dirname "$0")/.."
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp -r Config/* "$W"/
cd "$W"
"$old" run --config vlogger.toml --store demo.db --duration 30s --fast-clock >/dev/null 2>&1
"$old" audit run --config vlogger.toml --store demo.db --fast-clock >/dev/null 2>&1
"$old" write --field demo-field --uid E008010000004212 --block 0xF9 --data 0102030405060708 --store demo.db >/dev/null 2>&1 || true
"$old" write --when-seen --config vlogger.toml --store demo.db --uid E008010000004212 --block 0xF9 --data 0506070805060708 >/dev/null
"$old" run --config vlogger.toml --store demo.db --duration 5s --fast-clock >/dev/null 2>&1
cp demo.db new.db
[ -f demo.db-wal ] && cp demo.db-wal new.db-wal
# The new build migrates its copy once (a read-only export would not): a writing command that changes nothing.
"$new" writes cancel 999999 --store new.db >/dev/null 2>&1 || true
tables="readings events tags writes audits audit_results assets"
n=0 same=0
for t in $tables; do
  for f in csv jsonl; do
    for opt in "" --labels --local-time --plain-hex; do
      [ "$f" = jsonl ] && { [ "$opt" = --labels ] || [ "$opt" = --plain-hex ]; } && continue
      "$old" export --config vlogger.toml --store demo.db --since 3650d --table "$t" --format "$f" $opt >a.out
      "$new" export --config vlogger.toml --store new.db --since 3650d --table "$t" --format "$f" $opt >b.out
      python3 - b.out "$f" "$drop" <<'PY'
import re, sys
path, fmt, drop = sys.argv[1], sys.argv[2], [c for c in sys.argv[3].split(",") if c]
text = open(path, encoding="utf-8", newline="").read()
if drop and fmt == "csv":
    # Records end at CRLF outside quotes, fields at commas outside quotes: each record loses the dropped
    # columns' fields and the comma before each, byte for byte (no re-quoting).
    records, fields, start, quoted = [], [], 0, False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == ",":
            fields.append((start, i))
            start = i + 1
        elif not quoted and text.startswith("\r\n", i):
            fields.append((start, i))
            records.append(fields)
            fields, start = [], i + 2
            i += 1
        i += 1
    header = [text[s:e] for s, e in records[0]] if records else []
    gone = {k for k, name in enumerate(header) if name in drop}
    text = "".join(",".join(text[s:e] for k, (s, e) in enumerate(r) if k not in gone) + "\r\n" for r in records)
else:
    for c in drop:
        text = re.sub(r',"' + re.escape(c) + r'":("(?:[^"\\]|\\.)*"|null|-?[0-9.]+)', "", text)
open(path, "w", encoding="utf-8", newline="").write(text)
PY
      n=$((n + 1))
      if cmp -s a.out b.out; then
        same=$((same + 1))
      else
        echo "differs: $t $f $opt"; diff <(head -c 2000 a.out) <(head -c 2000 b.out) | head -8 || true
      fi
      echo "$t $f ${opt:-plain}: $(wc -l <a.out) lines, $(wc -c <a.out) bytes"
    done
  done
done
echo "export identity: $same of $n exports identical (old $old, new $new${drop:+, without $drop})"
[ "$same" -eq "$n" ]
