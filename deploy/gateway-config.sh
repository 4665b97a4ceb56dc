#!/usr/bin/env bash
# Prints the gateway form of a configuration (default Config/vlogger.toml): one reader, through pcscd (the
# demo's second, simulated dock door left out), the store in /var/lib/vlogger. deploy/install.sh and
# deploy/build-deb.sh both install what this prints.
set -euo pipefail
sed -e '/^# --- second reader/,/^# --- end of second reader ---/d' -e 's/^driver = "sim" /driver = "pcsc"/' -e 's/^field = "demo-field" /# field = "demo-field"/' \
    -e 's#^path = "vlogger.db"#path = "/var/lib/vlogger/vlogger.db"#' "${1:-$(dirname "$0")/../Config/vlogger.toml}"
