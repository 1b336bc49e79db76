#!/usr/bin/env bash
# Install the .deb, run the installed app's self-test, remove it, and check nothing is left.
#   sudo packaging/linux/check_deb.sh dist/haiku-desk_VERSION_ARCH.deb
# Also checks that every library the bundle links against is in the bundle or provided by a
# package in the Depends: line (so a fresh system with only those packages can start it).
set -euo pipefail
# set -e ends the script without a word when a command fails, inside $(...) too: say where.
trap 'echo "check_deb.sh: failed (status $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
deb="$(realpath "$1")"
[[ $(id -u) == 0 ]] || { echo "check_deb.sh installs a package: run it as root" >&2; exit 2; }
if dpkg -s haiku-desk >/dev/null 2>&1; then
    echo "haiku-desk is already installed here; remove it first" >&2
    exit 2
fi
paths=(/opt/haiku-desk /usr/bin/haiku-desk /usr/bin/haiku-rag /usr/share/applications/haiku-desk.desktop
       /usr/share/icons/hicolor/48x48/apps/haiku-desk.png /usr/share/icons/hicolor/scalable/apps/haiku-desk.svg
       /usr/share/doc/haiku-desk)

echo "== dependencies named by the package"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "$depends"

echo "== apt-get install $deb (dependencies from the system's sources)"
started=$SECONDS
apt-get install -y --no-install-recommends "$deb" >/tmp/haiku-desk-deb-install.log 2>&1 || {
    cat /tmp/haiku-desk-deb-install.log >&2; exit 1; }
echo "installed in $((SECONDS - started)) s"
for path in "${paths[@]}"; do [[ -e "$path" ]] || { echo "missing after install: $path" >&2; exit 1; }; done
grep -q '^Exec=haiku-desk' /usr/share/applications/haiku-desk.desktop
grep -q '^MimeType=.*application/pdf' /usr/share/applications/haiku-desk.desktop  # "Open with" for PDFs

echo "== system libraries the bundle loads"
command -v objdump >/dev/null || { echo "objdump is needed (Debian package binutils)" >&2; exit 1; }
# Direct NEEDED entries of every bundled library that the bundle does not ship itself: those come
# from the system at run time, so their packages must be in Depends (libraries shipped in the
# bundle win at run time: the bootloader puts _internal first on the library path).
missing=0
bundled="$(find /opt/haiku-desk/_internal -name '*.so*' -printf '%f\n' | sort -u)"
needed="$(find /opt/haiku-desk/_internal -type f -name '*.so*' -print0 | xargs -0 objdump -p 2>/dev/null \
    | awk '/NEEDED/ {print $2}' | sort -u)"
packages=""
for lib in $needed; do
    grep -qxF "$lib" <<<"$bundled" && continue
    # (awk reads to the end: stopping early would SIGPIPE ldconfig, a failure under pipefail)
    path="$(ldconfig -p | awk -v l="$lib" '$1 == l && !found {print $NF; found = 1}')"
    if [[ -z "$path" ]]; then echo "  not found on this system: $lib" >&2; missing=1; continue; fi
    pkg="$( (dpkg -S "$path" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null) | awk -F: 'NR == 1 {print $1}')"
    packages+="$pkg "
done
packages="$(tr ' ' '\n' <<<"$packages" | sort -u | tr '\n' ' ')"
for pkg in $packages; do
    if ! grep -qE "(^|[ ,|])$pkg([ ,(|]|$)" <<<"$depends"; then
        echo "  not in Depends: $pkg" >&2
        missing=1
    fi
done
echo "system packages the bundle links against: $packages"

echo "== haiku-desk --self-test (installed, from /usr/bin, empty HOME)"
home="$(mktemp -d)"
(cd / && env -i PATH=/usr/bin:/bin HOME="$home" QT_QPA_PLATFORM=offscreen haiku-desk --self-test)

echo "== haiku-rag --version (the library's command line from the bundle)"
(cd / && env -i PATH=/usr/bin:/bin HOME="$home" haiku-rag --version)
rm -rf "$home"

echo "== apt-get remove haiku-desk"
apt-get remove -y haiku-desk >/dev/null 2>&1
left=0
for path in "${paths[@]}"; do
    if [[ -e "$path" ]]; then echo "left after remove: $path" >&2; left=1; fi
done
dpkg -s haiku-desk >/dev/null 2>&1 && { echo "still registered with dpkg" >&2; left=1; }
[[ $left == 0 && $missing == 0 ]] || exit 1
echo "== ok: installs, self-tests and removes cleanly"
