#!/usr/bin/env bash
# Checks of the repository that need no build (run by .ci/run before the tests):
#  - no test returns early without recording an issue (a test that cannot fail passes silently);
#  - every docs/reference/ path cited in Sources/ and Tests/ exists, and no file cites a path outside the
#    repository (../shared/…).
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
# A bare `else { return }` in a test: use try #require, Issue.record, or .enabled(if:) instead.
if grep -rn --include='*.swift' -E 'else \{ return \}' Tests; then
    echo "lint: a test returns early without recording an issue (above)" >&2; fail=1
fi
# Cited reference pages exist.
while IFS= read -r cited; do
    [ -f "$cited" ] || { echo "lint: $cited is cited but does not exist" >&2; fail=1; }
done < <(grep -rhoE --include='*.swift' --include='*.md' 'docs/reference/[A-Za-z0-9_.-]+\.md' Sources Tests docs README.md | sort -u)
# Nothing cites a path outside the repository.
if grep -rn --include='*.swift' --include='*.md' -E '(\.\./)?shared/reference' Sources Tests docs README.md; then
    echo "lint: a file cites a path outside the repository (above); cite docs/reference/ instead" >&2; fail=1
fi
[ $fail -eq 0 ] && echo "lint: ok (no early returns in tests, every cited reference page exists, nothing cites outside the repository)"
exit $fail
