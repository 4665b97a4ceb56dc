#!/usr/bin/env bash
# Installs vlogger as a systemd service on a gateway, or removes it.
#
#   sudo bash deploy/install.sh                  # build a release binary and install, enable and start
#   sudo bash deploy/install.sh --no-start       # install and enable, do not start
#   bash deploy/install.sh --root /tmp/gw --binary .build/debug/vlogger   # into a scratch root (no systemctl, no users)
#   sudo bash deploy/install.sh --uninstall      # stop and remove the service; keep /etc/vlogger and /var/lib/vlogger
#   sudo bash deploy/install.sh --uninstall --purge   # ... and remove the configuration, the store and the user
#
# What it installs (under --root, if given):
#   /usr/local/bin/vlogger                      the binary
#   /etc/systemd/system/vlogger.service         the unit (deploy/vlogger.service)
#   /usr/lib/sysusers.d/vlogger.conf            the system user and group "vlogger" (created with systemd-sysusers)
#   /etc/polkit-1/rules.d/60-vlogger-pcscd.rules  lets user vlogger use pcscd (Debian's pcscd asks polkit)
#   /etc/vlogger/{vlogger.toml,rules.toml,assets.csv}  configuration, rules, asset register (never overwritten:
#                                                       a changed shipped file goes next to it as *.dist)
#   /var/lib/vlogger/                           the store (owned by vlogger, mode 0750)
# Running it twice is harmless.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

ROOT=""
BINARY=""
START=1
UNINSTALL=0
PURGE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --root) ROOT=$(realpath -m "$2"); shift 2 ;;
        --binary) BINARY=$2; shift 2 ;;
        --no-start) START=0; shift ;;
        --uninstall) UNINSTALL=1; shift ;;
        --purge) PURGE=1; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
[ $PURGE -eq 1 ] && [ $UNINSTALL -eq 0 ] && { echo "install.sh: --purge goes with --uninstall" >&2; exit 2; }

LIVE=0   # act on the running system (users, systemctl) only without --root
[ -z "$ROOT" ] && LIVE=1
if [ $LIVE -eq 1 ] && [ "$(id -u)" -ne 0 ]; then echo "install.sh: run as root (or use --root DIR)" >&2; exit 1; fi
have_systemd() { [ $LIVE -eq 1 ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null; }

if [ $UNINSTALL -eq 1 ]; then
    if have_systemd; then
        systemctl disable --now vlogger.service 2>/dev/null || true
    fi
    rm -rf "$ROOT/etc/systemd/system/vlogger.service.d"
    rm -f "$ROOT/usr/local/bin/vlogger" "$ROOT/etc/systemd/system/vlogger.service" \
          "$ROOT/usr/lib/sysusers.d/vlogger.conf" "$ROOT/etc/polkit-1/rules.d/60-vlogger-pcscd.rules"
    have_systemd && systemctl daemon-reload
    if [ $PURGE -eq 1 ]; then
        rm -rf "$ROOT/etc/vlogger" "$ROOT/var/lib/vlogger"
        if [ $LIVE -eq 1 ] && id vlogger >/dev/null 2>&1; then userdel vlogger 2>/dev/null || true; fi
        echo "vlogger removed, with its configuration, store and user"
    else
        echo "vlogger removed; kept $ROOT/etc/vlogger and $ROOT/var/lib/vlogger (add --purge to remove them)"
    fi
    exit 0
fi

# 1. The binary.
if [ -z "$BINARY" ]; then
    export PATH=/opt/swift/usr/bin:$PATH
    # The commit goes into `vlogger --version` (deploy/commit.sh writes it where the build finds it).
    bash "$REPO/deploy/commit.sh" >/dev/null
    swift build -c release --product vlogger
    BINARY=$REPO/.build/release/vlogger
fi
[ -x "$BINARY" ] || { echo "install.sh: $BINARY is not an executable" >&2; exit 1; }
install -D -m 0755 "$BINARY" "$ROOT/usr/local/bin/vlogger"

# 2. The user: sysusers.d, so systemd-sysusers (or the next boot) creates it; useradd where sysusers is missing.
install -D -m 0644 /dev/stdin "$ROOT/usr/lib/sysusers.d/vlogger.conf" <<'SYSUSERS'
# vlogger service user (deploy/install.sh)
u vlogger - "vlogger tag logger" /var/lib/vlogger /usr/sbin/nologin
SYSUSERS
if [ $LIVE -eq 1 ] && ! id vlogger >/dev/null 2>&1; then
    if command -v systemd-sysusers >/dev/null; then systemd-sysusers /usr/lib/sysusers.d/vlogger.conf
    else useradd --system --home-dir /var/lib/vlogger --shell /usr/sbin/nologin --user-group vlogger; fi
fi
# USB readers driven directly need the plugdev group (Debian's udev rules give it the USB device nodes).
if [ $LIVE -eq 1 ] && getent group plugdev >/dev/null; then usermod -a -G plugdev vlogger; fi

# 3. pcscd access: Debian's pcscd authorises clients through polkit; a system user has no session.
install -D -m 0644 /dev/stdin "$ROOT/etc/polkit-1/rules.d/60-vlogger-pcscd.rules" <<'POLKIT'
// Lets the vlogger service user talk to pcscd and its readers (deploy/install.sh).
polkit.addRule(function(action, subject) {
    if ((action.id == "org.debian.pcsc-lite.access_pcsc" || action.id == "org.debian.pcsc-lite.access_card") &&
        subject.user == "vlogger") {
        return polkit.Result.YES;
    }
});
POLKIT

# 4. Configuration: shipped files are installed once; a later, different shipped file goes next to it as .dist.
install -d -m 0750 "$ROOT/etc/vlogger"
for f in vlogger.toml rules.toml assets.csv; do
    src=$REPO/Config/$f
    tmp=$(mktemp)
    if [ "$f" = vlogger.toml ]; then
        # A gateway polls a real reader through pcscd; the store path is the unit's --store.
        bash "$REPO/deploy/gateway-config.sh" "$src" > "$tmp"
    else
        cp "$src" "$tmp"
    fi
    dst=$ROOT/etc/vlogger/$f
    if [ ! -e "$dst" ]; then
        install -m 0640 "$tmp" "$dst"
    elif ! cmp -s "$tmp" "$dst"; then
        install -m 0640 "$tmp" "$dst.dist"
        echo "kept your $dst; the shipped version is $dst.dist"
    fi
    rm -f "$tmp"
done
install -d -m 0750 "$ROOT/var/lib/vlogger"
if [ $LIVE -eq 1 ]; then
    chown -R root:vlogger "$ROOT/etc/vlogger"
    chown vlogger:vlogger "$ROOT/var/lib/vlogger"
fi

# 5. The unit.
install -D -m 0644 "$REPO/deploy/vlogger.service" "$ROOT/etc/systemd/system/vlogger.service"
# The unit denies every IP address but loopback: the remote hosts the configuration names get a drop-in.
"$ROOT/usr/local/bin/vlogger" config network --config "$ROOT/etc/vlogger/vlogger.toml" \
    --output "$ROOT/etc/systemd/system/vlogger.service.d/network.conf" >/dev/null \
    || echo "the network drop-in was not written: run 'vlogger config network --config /etc/vlogger/vlogger.toml --output /etc/systemd/system/vlogger.service.d/network.conf'" >&2
if have_systemd; then
    systemctl daemon-reload
    systemctl enable vlogger.service
    if [ $START -eq 1 ]; then systemctl restart vlogger.service; systemctl --no-pager status vlogger.service || true; fi
    echo "vlogger installed; status page and metrics at http://127.0.0.1:9715/"
else
    echo "vlogger installed under ${ROOT:-/} (systemd not running here: enable with 'systemctl enable --now vlogger')"
fi
