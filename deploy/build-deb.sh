#!/usr/bin/env bash
# Builds the Debian package of vlogger: a release binary with the Swift runtime linked statically (no
# toolchain on the gateway), the systemd unit, the service user, the example configuration as conffiles, a
# man page per command and shell completions.
#
#   bash deploy/build-deb.sh                       # build the binary and the package into dist/
#   bash deploy/build-deb.sh --binary PATH         # package a binary built before (it must not load libswift*)
#   bash deploy/build-deb.sh --revision 2          # the Debian revision (default 1): vlogger_<version>-<revision>_<arch>.deb
#   bash deploy/build-deb.sh --out DIR             # where the .deb goes (default dist/)
#
# The version is the binary's own (`vlogger --version`, Sources/vlogger/Version.swift); the commit is passed
# to the build as a C macro. Depends: lists the Debian package of every library the binary links
# (objdump's NEEDED entries, resolved with ldd and dpkg -S).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
export PATH=/opt/swift/usr/bin:$PATH

BINARY=""
REVISION=1
OUT=$REPO/dist
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) BINARY=$(realpath "$2"); shift 2 ;;
        --revision) REVISION=$2; shift 2 ;;
        --out) OUT=$(realpath -m "$2"); shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "build-deb.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
[[ "$REVISION" =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || { echo "build-deb.sh: --revision $REVISION: a Debian revision starts with a digit" >&2; exit 2; }
for tool in dpkg-deb dpkg objdump ldd gzip; do
    command -v "$tool" >/dev/null || { echo "build-deb.sh: $tool is missing (apt install dpkg-dev binutils)" >&2; exit 1; }
done

# 1. The binary, with the Swift runtime inside it.
if [ -z "$BINARY" ]; then
    COMMIT=$(bash deploy/commit.sh)
    swift build -c release --static-swift-stdlib --product vlogger
    BINARY=$(swift build -c release --static-swift-stdlib --show-bin-path)/vlogger
fi
[ -x "$BINARY" ] || { echo "build-deb.sh: $BINARY is not an executable" >&2; exit 1; }
if ldd "$BINARY" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|/opt/swift|not found'; then
    echo "build-deb.sh: $BINARY loads the libraries above from a Swift toolchain (or misses them); build it with --static-swift-stdlib" >&2
    exit 1
fi
VERSION=$("$BINARY" --version | awk '{print $1}')
[[ "$VERSION" =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || { echo "build-deb.sh: '$VERSION' from $BINARY --version is not a version" >&2; exit 1; }
ARCH=$(dpkg --print-architecture)

# 2. Depends: the package of each library the binary itself links.
deps=()
for lib in $(objdump -p "$BINARY" | awk '$1 == "NEEDED" {print $2}'); do
    path=$(ldd "$BINARY" | awk -v l="$lib" '$1 == l && $3 ~ /^\// {print $3}')
    # The dynamic loader is listed by its own path (no "=>").
    [ -n "$path" ] || path=$(ldd "$BINARY" | awk -v l="$lib" 'index($1, "/" l) {print $1}')
    [ -n "$path" ] || { echo "build-deb.sh: cannot find $lib" >&2; exit 1; }
    pkg=""
    for p in "$path" "$(realpath "$path")" "/usr$path" "${path#/usr}"; do
        pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$pkg" ] && break
    done
    [ -n "$pkg" ] || { echo "build-deb.sh: no Debian package owns $path ($lib)" >&2; exit 1; }
    deps+=("$pkg")
done
DEPENDS=$(printf '%s\n' "${deps[@]}" | sort -u | paste -sd, | sed 's/,/, /g')

# 3. The tree.
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
PKG=$STAGE/root
install -D -m 0755 "$BINARY" "$PKG/usr/bin/vlogger"
strip --strip-unneeded "$PKG/usr/bin/vlogger" 2>/dev/null || true
sed 's#/usr/local/bin/vlogger#/usr/bin/vlogger#; s#installed by deploy/install.sh#installed by the Debian package#' \
    deploy/vlogger.service | install -D -m 0644 /dev/stdin "$PKG/lib/systemd/system/vlogger.service"
install -D -m 0644 /dev/stdin "$PKG/usr/lib/sysusers.d/vlogger.conf" <<'SYSUSERS'
# vlogger service user (Debian package)
u vlogger - "vlogger tag logger" /var/lib/vlogger /usr/sbin/nologin
SYSUSERS
install -D -m 0644 /dev/stdin "$PKG/etc/polkit-1/rules.d/60-vlogger-pcscd.rules" <<'POLKIT'
// Lets the vlogger service user talk to pcscd and its readers (Debian package).
polkit.addRule(function(action, subject) {
    if ((action.id == "org.debian.pcsc-lite.access_pcsc" || action.id == "org.debian.pcsc-lite.access_card") &&
        subject.user == "vlogger") {
        return polkit.Result.YES;
    }
});
POLKIT
# The configuration of a gateway: one PC/SC reader, the store in /var/lib/vlogger (as deploy/install.sh).
install -d -m 0755 "$PKG/etc/vlogger"
bash deploy/gateway-config.sh Config/vlogger.toml > "$PKG/etc/vlogger/vlogger.toml"
install -m 0644 Config/rules.toml Config/assets.csv "$PKG/etc/vlogger/"
chmod 0644 "$PKG/etc/vlogger/vlogger.toml"
# The simulated demo field, for trying the package without a reader (`vlogger scan --field /usr/share/vlogger/demo-field`).
install -d "$PKG/usr/share/vlogger"
cp -r Config/demo-field "$PKG/usr/share/vlogger/demo-field"
find "$PKG/usr/share/vlogger" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +
install -D -m 0644 deploy/grafana-dashboard.json "$PKG/usr/share/vlogger/grafana-dashboard.json"

# Man pages (swift-argument-parser's generate-manual tool, one page per command, run on the binary just built)
# and shell completions. The package plugin of the same name would first build the whole package again in
# another configuration (12 of CI's 36 minutes); the tool itself is a small debug build.
MANDIR=$STAGE/man
mkdir -p "$MANDIR"
swift build --product generate-manual >/dev/null
"$(swift build --show-bin-path)/generate-manual" "$PKG/usr/bin/vlogger" --multi-page --section 1 --authors "vlogger developers" -o "$MANDIR" >/dev/null
src=$MANDIR
[ -f "$src/vlogger.1" ] || { echo "build-deb.sh: generate-manual wrote no vlogger.1" >&2; exit 1; }
install -d "$PKG/usr/share/man/man1"
for page in "$src"/*.1; do gzip -9n < "$page" > "$PKG/usr/share/man/man1/$(basename "$page").gz"; done
"$PKG/usr/bin/vlogger" --generate-completion-script bash | install -D -m 0644 /dev/stdin "$PKG/usr/share/bash-completion/completions/vlogger"
"$PKG/usr/bin/vlogger" --generate-completion-script zsh | install -D -m 0644 /dev/stdin "$PKG/usr/share/zsh/vendor-completions/_vlogger"
"$PKG/usr/bin/vlogger" --generate-completion-script fish | install -D -m 0644 /dev/stdin "$PKG/usr/share/fish/vendor_completions.d/vlogger.fish"

install -d "$PKG/usr/share/doc/vlogger"
install -m 0644 README.md "$PKG/usr/share/doc/vlogger/README.md"
install -d "$PKG/usr/share/doc/vlogger/docs"
install -m 0644 docs/*.md "$PKG/usr/share/doc/vlogger/docs/"
cat > "$PKG/usr/share/doc/vlogger/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: vlogger
Comment: The binary contains the Swift runtime and Foundation (Apache-2.0 with Runtime Library Exception),
 swift-argument-parser, swift-log, swift-metrics, swift-service-lifecycle, swift-nio and Hummingbird
 (Apache-2.0), swift-prometheus (Apache-2.0) and GRDB (MIT), linked statically.

Files: *
Copyright: vlogger developers
COPYRIGHT
printf 'vlogger (%s-%s) unstable; urgency=medium\n\n  * Package built from commit %s.\n\n -- vlogger developers <vlogger@localhost>  %s\n' \
    "$VERSION" "$REVISION" "$("$BINARY" --version | sed -n 's/.*commit \([^,]*\),.*/\1/p')" "$(date -R)" \
    | gzip -9n > "$PKG/usr/share/doc/vlogger/changelog.Debian.gz"

# 4. Control files.
install -d "$PKG/DEBIAN"
cat > "$PKG/DEBIAN/conffiles" <<'CONFFILES'
/etc/vlogger/vlogger.toml
/etc/vlogger/rules.toml
/etc/vlogger/assets.csv
/etc/polkit-1/rules.d/60-vlogger-pcscd.rules
CONFFILES
SIZE=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
cat > "$PKG/DEBIAN/control" <<CONTROL
Package: vlogger
Version: $VERSION-$REVISION
Architecture: $ARCH
Maintainer: vlogger developers <vlogger@localhost>
Installed-Size: $SIZE
Depends: $DEPENDS
Recommends: pcscd
Suggests: prometheus, grafana
Section: misc
Priority: optional
Homepage: https://github.com/vlogger/vlogger
Description: ISO/IEC 15693 (NFC Type 5) tag logger for Linux gateways
 A polling agent that finds the tags in a reader's field, reads and checks
 their blocks against rules, stores batched readings in SQLite and exports
 them as CSV; scheduled asset audits; a status page and Prometheus metrics.
 Runs as the systemd service vlogger; readers through pcscd (PC/SC).
CONTROL

cat > "$PKG/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
# vlogger postinst: the service user, the store folder, the unit (enabled and started on a first install,
# restarted on an upgrade when it runs).
set -e
if [ "$1" = configure ]; then
    if ! getent passwd vlogger >/dev/null; then
        if command -v systemd-sysusers >/dev/null 2>&1; then
            systemd-sysusers /usr/lib/sysusers.d/vlogger.conf
        else
            adduser --system --group --home /var/lib/vlogger --no-create-home --shell /usr/sbin/nologin vlogger >/dev/null
        fi
    fi
    if getent group plugdev >/dev/null; then usermod -a -G plugdev vlogger || true; fi
    install -d -o vlogger -g vlogger -m 0750 /var/lib/vlogger
    chgrp vlogger /etc/vlogger /etc/vlogger/vlogger.toml /etc/vlogger/rules.toml /etc/vlogger/assets.csv 2>/dev/null || true
    chmod 0750 /etc/vlogger
    chmod 0640 /etc/vlogger/vlogger.toml /etc/vlogger/rules.toml /etc/vlogger/assets.csv 2>/dev/null || true
    # The unit denies every IP address but loopback: allow the remote hosts the configuration names (fleet sync,
    # FEIG readers on the LAN) in a drop-in, written again at each upgrade.
    /usr/bin/vlogger config network --config /etc/vlogger/vlogger.toml --output /etc/systemd/system/vlogger.service.d/network.conf \
        || echo "vlogger: the network drop-in was not written; run 'vlogger config network --config /etc/vlogger/vlogger.toml --output /etc/systemd/system/vlogger.service.d/network.conf'" >&2
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload || true
        if [ -z "$2" ]; then
            systemctl enable vlogger.service || true
            systemctl start vlogger.service || echo "vlogger: the service did not start; see 'journalctl -u vlogger' and 'vlogger doctor --config /etc/vlogger/vlogger.toml'" >&2
        else
            systemctl try-restart vlogger.service || true
        fi
    fi
fi
exit 0
POSTINST
cat > "$PKG/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
# vlogger prerm: stop the service before its files go (an upgrade restarts it in postinst).
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    systemctl disable --now vlogger.service || true
fi
exit 0
PRERM
cat > "$PKG/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
# vlogger postrm: remove keeps the configuration and the store; purge removes both (dpkg removes the
# conffiles) without asking. The system user stays, as Debian leaves system users in place.
set -e
case "$1" in
    purge)
        rm -rf /var/lib/vlogger /etc/vlogger /etc/systemd/system/vlogger.service.d/network.conf
        rmdir /etc/systemd/system/vlogger.service.d 2>/dev/null || true
        ;;
esac
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
exit 0
POSTRM
chmod 0755 "$PKG/DEBIAN/postinst" "$PKG/DEBIAN/prerm" "$PKG/DEBIAN/postrm"

mkdir -p "$OUT"
DEB=$OUT/vlogger_${VERSION}-${REVISION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$DEB" >/dev/null
echo "$DEB"
