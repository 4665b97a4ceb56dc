#!/usr/bin/env bash
# Tries the Debian package on this machine as an operator would (root; CI runs it after the tests):
# install, run with the Swift toolchain hidden from the loader, upgrade over the running service with an
# edited configuration, remove, purge. Prints ldd of the packaged binary, dpkg -I / -c and a doctor run.
#
#   sudo bash deploy/test-deb.sh dist/vlogger_<version>-<revision>_<arch>.deb
#
# Without systemd as PID 1 (containers, CI) the service is started the way its unit starts it
# (User=vlogger, the unit's ExecStart); with systemd the maintainer scripts start it themselves.
set -euo pipefail
DEB=$(realpath "${1:?usage: test-deb.sh PACKAGE.deb}")
[ "$(id -u)" -eq 0 ] || { echo "test-deb.sh: run as root (it installs the package)" >&2; exit 1; }
TOOLCHAIN=${VLOGGER_TOOLCHAIN_DIR:-/opt/swift}
fail() { echo "test-deb.sh: FAIL: $*" >&2; exit 1; }
step() { echo; echo "== $*"; }

# Runs a command with the toolchain's folder replaced by an empty one (a private mount namespace), so that
# nothing can be loaded from it.
hidden() { unshare --mount --propagation private -- sh -c 'mount -t tmpfs none "$0" && exec "$@"' "$TOOLCHAIN" "$@"; }

step "the package"
dpkg -I "$DEB"
dpkg -c "$DEB" | awk '{print $1, $3, $6}'
if dpkg -s vlogger >/dev/null 2>&1; then dpkg -P vlogger >/dev/null; fi

step "dpkg -i"
dpkg -i "$DEB"
[ -x /usr/bin/vlogger ] || fail "no /usr/bin/vlogger"
getent passwd vlogger >/dev/null || fail "no user vlogger"
[ "$(stat -c %U /var/lib/vlogger)" = vlogger ] || fail "/var/lib/vlogger is not vlogger's"
[ -f /etc/vlogger/vlogger.toml ] || fail "no /etc/vlogger/vlogger.toml"
[ -f /etc/systemd/system/vlogger.service.d/network.conf ] || fail "postinst wrote no network drop-in"
grep -q '^\[Service\]' /etc/systemd/system/vlogger.service.d/network.conf || fail "the network drop-in has no [Service] section"
man -w vlogger.doctor >/dev/null 2>&1 || [ -f /usr/share/man/man1/vlogger.doctor.1.gz ] || fail "no man page for doctor"

step "ldd /usr/bin/vlogger"
ldd /usr/bin/vlogger
if ldd /usr/bin/vlogger | grep -E "libswift|libFoundation|libdispatch|$TOOLCHAIN|not found"; then fail "the binary needs the Swift toolchain"; fi

step "with $TOOLCHAIN hidden: vlogger --version, vlogger doctor"
[ -d "$TOOLCHAIN" ] && hidden sh -c "ls -A '$TOOLCHAIN' | wc -l | grep -qx 0" || echo "(no $TOOLCHAIN here; nothing to hide)"
version=$(hidden /usr/bin/vlogger --version)
echo "$version"
case "$version" in [0-9]*"(commit "*) ;; *) fail "--version printed '$version'" ;; esac
set +e
hidden /usr/bin/vlogger doctor --config /etc/vlogger/vlogger.toml
code=$?
set -e
[ $code -eq 0 ] || [ $code -eq 1 ] || fail "doctor exited $code"
json=$(hidden /usr/bin/vlogger doctor --config /etc/vlogger/vlogger.toml --json --no-readers || true)
echo "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert {"config","clock","disk"} <= {c["name"] for c in d["checks"]}, d' || fail "doctor --json: $json"

step "the service, as its unit starts it (User=vlogger, ExecStart), with $TOOLCHAIN hidden"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$(mktemp)
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/vlogger.service | sed "s/--listen [^ ]*/--listen 127.0.0.1:$port/")
echo "ExecStart: $exec_start"
hidden runuser -u vlogger -- $exec_start 2>"$log" &
svc=$!
healthz() { python3 - "$port" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=2); print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
except Exception as e:
    print(0, e)
PY
}
for _ in $(seq 1 100); do
    answer=$(healthz)
    case "$answer" in 200*|503*) break ;; esac
    kill -0 $svc 2>/dev/null || { cat "$log"; fail "the service exited"; }
    sleep 0.2
done
echo "/healthz: $answer"
case "$answer" in 200*|503*) ;; *) cat "$log"; fail "the service does not answer /healthz" ;; esac
echo "$answer" | grep -q '"store":"ok"' || { cat "$log"; fail "the service's store is not ok"; }
if ! [ -S /run/pcscd/pcscd.comm ]; then
    # No pcscd here: the service runs on, reporting its reader down (503) until the reader can be opened.
    for _ in $(seq 1 50); do answer=$(healthz); case "$answer" in 503*) break ;; esac; sleep 0.2; done
    echo "/healthz without pcscd: $answer"
    case "$answer" in 503*'"up":false'*) ;; *) cat "$log"; fail "the service does not report its unreachable reader down" ;; esac
fi

step "upgrade over the running service, with an edited configuration"
echo "# edited on site $(date -u +%FT%TZ)" >> /etc/vlogger/vlogger.toml
edited=$(sha256sum /etc/vlogger/vlogger.toml)
work=$(mktemp -d)
dpkg-deb -R "$DEB" "$work/pkg"
old=$(sed -n 's/^Version: //p' "$work/pkg/DEBIAN/control")
new="${old%-*}-$(( ${old##*-} + 1 ))"
sed -i "s/^Version: .*/Version: $new/" "$work/pkg/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$work/pkg" "$work/upgrade.deb" >/dev/null
dpkg -i "$work/upgrade.deb"
[ "$(dpkg-query -W -f='${Version}' vlogger)" = "$new" ] || fail "the upgrade did not install $new"
[ "$(sha256sum /etc/vlogger/vlogger.toml)" = "$edited" ] || fail "the edited configuration was not kept"
[ ! -e /etc/vlogger/vlogger.toml.dpkg-new ] || fail "dpkg left a .dpkg-new beside the configuration"
case "$(healthz)" in 200*|503*) echo "the running service still answers after the upgrade" ;; *) fail "the service stopped answering during the upgrade" ;; esac
# SIGTERM to vlogger itself, as systemd sends it (runuser, its parent, passes on its exit status).
descendants() { local p; for p in $(pgrep -P "$1"); do echo "$p"; descendants "$p"; done; }
vlogger_pid=""
for p in $(descendants $svc); do case "$(readlink /proc/$p/exe)" in /usr/bin/vlogger*) vlogger_pid=$p; break ;; esac; done
[ -n "$vlogger_pid" ] || fail "no vlogger process under $svc"
kill -TERM "$vlogger_pid"
set +e; wait $svc; code=$?; set -e
[ $code -eq 0 ] || { cat "$log"; fail "the service exited $code on SIGTERM"; }
grep -q "stop" "$log" || { cat "$log"; fail "no stop line in the service's log"; }
[ -s /var/lib/vlogger/vlogger.db ] || fail "no store in /var/lib/vlogger"
# Without --config, from any folder, a command finds the installed configuration (and through it the store).
events=$(cd / && hidden /usr/bin/vlogger export --table events --since 1d) || fail "cd / && vlogger export did not find /etc/vlogger/vlogger.toml"
echo "$events" | grep -q ",start," || fail "cd / && vlogger export: no start event in $events"
echo "cd / && vlogger export (no --config): $(echo "$events" | wc -l) lines from the installed gateway's store"

step "dpkg -r: the configuration and the store stay"
dpkg -r vlogger
[ ! -e /usr/bin/vlogger ] || fail "/usr/bin/vlogger still there after remove"
[ -f /etc/vlogger/vlogger.toml ] || fail "remove deleted the configuration"
[ -s /var/lib/vlogger/vlogger.db ] || fail "remove deleted the store"

step "dpkg -P: asks nothing, removes both"
dpkg -P vlogger </dev/null
[ ! -e /etc/vlogger ] || fail "/etc/vlogger still there after purge"
[ ! -e /var/lib/vlogger ] || fail "/var/lib/vlogger still there after purge"
[ ! -e /etc/systemd/system/vlogger.service.d/network.conf ] || fail "the network drop-in is still there after purge"
dpkg -s vlogger >/dev/null 2>&1 && fail "vlogger still known to dpkg"
rm -rf "$work" "$log"
echo
echo "test-deb.sh: the package installs, runs without the toolchain, upgrades keeping an edited configuration, removes and purges"
