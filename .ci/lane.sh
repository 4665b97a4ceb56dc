#!/usr/bin/env bash
# Runs one test lane of .ci/run with a time limit, its output line by line (a test binary writing into a pipe
# buffers 4 KiB at a time: a lane stopped from outside would lose what it printed last, and with it the name of
# the test it was in), and, when the limit comes first, names every test that started and did not end.
#
#   bash .ci/lane.sh NAME SECONDS COMMAND...
#
# The lane's exit code is the command's; a lane that ran out of time ends with 124 after the list.
set -uo pipefail
name=$1 limit=$2
shift 2
log=$(mktemp /tmp/vlogger-lane-XXXXXX)
started=$(date +%s)
# timeout signals the command's process group (the test binary with it), then SIGKILL a minute later.
timeout -k 60 "$limit" stdbuf -oL -eL "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
elapsed=$(( $(date +%s) - started ))
# 124: the limit; 137 (SIGKILL) after the limit too, or before it from elsewhere (the kernel's OOM killer).
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    if [ "$rc" -eq 124 ] || [ "$elapsed" -ge "$limit" ]; then
        echo "CI: the $name lane did not end within $limit s; these tests started and had not ended:"
    else
        echo "CI: the $name lane was killed (SIGKILL) after $elapsed s, before its limit; these tests started and had not ended:"
    fi
    python3 - "$log" <<'EOF'
import re, sys
started, ended = {}, set()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    m = re.match(r"\S+ Test (?!case )(.+?) started\.", line)
    if m:
        started.setdefault(m.group(1), line.strip())
    m = re.match(r"\S+ Test (.+?)(?: with \d+ test cases?)? (passed|failed|skipped)", line)
    if m:
        ended.add(m.group(1))
left = [t for t in started if t not in ended and t != "run"]
for t in left:
    print("  -", t)
if not left:
    print("  (none: the hang came after the last test, or before the first)")
EOF
    [ "$elapsed" -ge "$limit" ] && rc=124
fi
rm -f "$log"
exit "$rc"
