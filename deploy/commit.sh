#!/usr/bin/env bash
# The commit vlogger is built from, for `vlogger --version`: writes Sources/CHost/include/vlogger_commit.h (not in
# git; CHost.h includes it) with the short id, `-modified` when tracked files differ from it, `unknown` outside a
# git checkout, and prints the id. The file is rewritten only when the id changes, so a build at the same commit
# stays incremental. Run as root in a checkout someone else owns (sudo install.sh), git refuses the repository as
# of "dubious ownership" unless it is named safe: it is, for these calls only.
repo=$(cd "$(dirname "$0")/.." && pwd)
g() { git -C "$repo" -c safe.directory="$repo" "$@"; }
commit=$(g rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
if [ "$commit" != unknown ] && [ -n "$(g status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit-modified"
fi
header="$repo/Sources/CHost/include/vlogger_commit.h"
line="#define VLOGGER_COMMIT \"$commit\""
if [ "$(cat "$header" 2>/dev/null)" != "$line" ]; then echo "$line" > "$header"; fi
echo "$commit"
