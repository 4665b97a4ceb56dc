#!/usr/bin/env bash
# Sets up vlogger on a fresh Debian machine with Swift and runs the main job on a copy of the simulated
# demo field: `vlogger run` for 15 seconds, then `vlogger export --since 1h` to CSV; then a few tag commands.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

need=()
for pkg in libnfc-dev libsqlite3-dev libpcsclite-dev libmosquitto-dev pkg-config; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

echo "Building vlogger (release). The first build fetches and compiles every dependency: about 20 minutes on a" \
    "2-core machine; later builds are incremental." >&2
# The commit goes into `vlogger --version` (deploy/commit.sh writes it where the build finds it).
bash deploy/commit.sh >/dev/null
swift build -c release --product vlogger
bin=$PWD/.build/release/vlogger
work=$(mktemp -d /tmp/vlogger-demo.XXXXXX)
cp -r Config/demo-field Config/demo-field-dock Config/vlogger.toml Config/rules.toml Config/assets.csv "$work"/
echo "scratch copy of Config/: $work (the store and the exported CSV go here too)"
cd "$work"
set -x
"$bin" config check --config vlogger.toml
# The main job: the gateway polling two simulated readers (the cage room and dock door 3) for 15 s (the field's scenario.json makes
# the cage's temperature drift past the 24 °C rule, and tags leave and come back), then a CSV export.
"$bin" run --config vlogger.toml --duration 15s --log-level info
"$bin" export --config vlogger.toml --since 1h --output readings.csv
head -n 4 readings.csv
"$bin" export --config vlogger.toml --since 1h --table events | grep -v ',arrival,'
# Tag commands on the same field: a read of block 0xF8, a write, and a traced read of it in a new process.
"$bin" read --field demo-field --uid E008010000004212 --block 0xF8
"$bin" write --field demo-field --uid E008010000004212 --block 0xF9 --data "0102030405060708"
"$bin" read --field demo-field --uid E008010000004212 --block 0xF9 --trace
# NDEF on the pallet label (ICODE SLIX2): write a Text and a URI record, read them back in a new process.
"$bin" ndef write --field demo-field --uid E004010812345601 --text "Pallet 0001" --uri https://www.example.com/p/0001
"$bin" ndef read --field demo-field --uid E004010812345601
