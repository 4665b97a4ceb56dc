#!/usr/bin/env bash
# Sets up vlogger on a fresh Debian machine with Swift and runs it on a copy of the simulated demo field:
# scan, info, read of block 0xF8, a write, and a read of that write in a new process.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

need=()
for pkg in libnfc-dev libsqlite3-dev pkg-config; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

swift build -c release --product vlogger
bin=.build/release/vlogger
field=$(mktemp -d /tmp/vlogger-demo-field.XXXXXX)
cp Config/demo-field/* "$field"/
echo "simulated field: $field (a copy of Config/demo-field)"
set -x
"$bin" scan --field "$field"
"$bin" info --field "$field" --uid E008010000004212
"$bin" read --field "$field" --uid E008010000004212 --block 0xF8
"$bin" read --field "$field" --uid E004010812345601 --block 0 --count 8 --security
"$bin" write --field "$field" --uid E008010000004212 --block 0xF9 --data "0102030405060708"
"$bin" read --field "$field" --uid E008010000004212 --block 0xF9 --trace
