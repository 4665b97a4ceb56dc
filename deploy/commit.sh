#!/usr/bin/env bash
# Prints the commit vlogger is built from, for `vlogger --version`: the short id, `-modified` when tracked files
# differ from it, `unknown` outside a git checkout. Run as root in a checkout someone else owns (sudo install.sh),
# git refuses the repository as of "dubious ownership" unless it is named safe: it is, for this one call only.
repo=$(cd "$(dirname "$0")/.." && pwd)
g() { git -C "$repo" -c safe.directory="$repo" "$@"; }
commit=$(g rev-parse --short=12 HEAD 2>/dev/null) || { echo unknown; exit 0; }
if [ -n "$(g status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-modified"; fi
echo "$commit"
