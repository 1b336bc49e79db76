#!/usr/bin/env bash
# Package a built bundle folder as a Debian package (dpkg-deb, no debhelper needed):
#   packaging/linux/build_deb.sh BUNDLE_DIR VERSION OUT_DIR   -> OUT_DIR/haiku-desk_VERSION_ARCH.deb
#
# Layout: /opt/haiku-desk (the bundle), /usr/bin/haiku-desk and /usr/bin/haiku-rag (launchers),
# /usr/share/applications/haiku-desk.desktop, /usr/share/icons/hicolor/{48,128,256,scalable}.
# Depends lists the system libraries the bundled Qt (xcb platform plugin) loads but does not ship;
# packaging/linux/check_deb.sh installs, self-tests and removes the package.
set -euo pipefail
bundle="$1"
version="$2"
out="$3"
here="$(cd "$(dirname "$0")" && pwd)"
arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
root="$(mktemp -d)"
chmod 0755 "$root"  # the archive's ./ entry: never a 0700 root directory
trap 'rm -rf "$root"' EXIT

mkdir -p "$root/opt" "$root/usr/bin" "$root/usr/share/applications" "$root/DEBIAN"
cp -a "$bundle" "$root/opt/haiku-desk"
# desktop integration comes from the package's own folders, not from a per-user install
rm -f "$root/opt/haiku-desk/install-desktop-entry.sh"
cat > "$root/usr/bin/haiku-desk" <<'SH'
#!/bin/sh
exec /opt/haiku-desk/haiku-desk "$@"
SH
chmod 0755 "$root/usr/bin/haiku-desk"
cat > "$root/usr/bin/haiku-rag" <<'SH'
#!/bin/sh
exec /opt/haiku-desk/haiku-desk --haiku-rag "$@"
SH
chmod 0755 "$root/usr/bin/haiku-rag"
cp "$bundle/haiku-desk.desktop" "$root/usr/share/applications/haiku-desk.desktop"
for size in 48 128 256; do
    mkdir -p "$root/usr/share/icons/hicolor/${size}x${size}/apps"
    cp "$bundle/icons/haiku-desk-$size.png" "$root/usr/share/icons/hicolor/${size}x${size}/apps/haiku-desk.png"
done
mkdir -p "$root/usr/share/icons/hicolor/scalable/apps"
cp "$bundle/icons/haiku-desk.svg" "$root/usr/share/icons/hicolor/scalable/apps/haiku-desk.svg"
mkdir -p "$root/usr/share/doc/haiku-desk"
cp "$bundle/LICENSE" "$root/usr/share/doc/haiku-desk/copyright"

installed_kb=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
# What the bundle links against but does not ship (libc, GL/EGL, xcb, wayland: checked by
# check_deb.sh), and the X11 libraries Qt's xcb platform plugin needs on a fresh system; fontconfig
# brings /etc/fonts for the bundled fontconfig. (libsm6/libice6 were for opencv-python's own xcb
# plugin; the bundle's OpenCV is the headless build now.)
depends="libc6 (>= 2.31), libegl1, libgl1, libfontconfig1, libfreetype6, libdbus-1-3, libglib2.0-0 | libglib2.0-0t64, \
libx11-6, libx11-xcb1, libxcb1, libxcb-cursor0, libxcb-icccm4, libxcb-image0, libxcb-keysyms1, \
libxcb-randr0, libxcb-render-util0, libxcb-render0, libxcb-shape0, libxcb-shm0, libxcb-sync1, \
libxcb-xfixes0, libxcb-xinerama0, libxcb-xkb1, libxkbcommon0, libxkbcommon-x11-0, libxrender1, \
libwayland-client0, libwayland-cursor0, libwayland-egl1"
cat > "$root/DEBIAN/control" <<CONTROL
Package: haiku-desk
Version: $version
Architecture: $arch
Maintainer: haiku-desk developers <haiku-desk@localhost>
Installed-Size: $installed_kb
Depends: $depends
Section: science
Priority: optional
Homepage: https://github.com/haiku-desk/haiku-desk
Description: desktop research assistant with page-exact citations
 Drop PDFs and other documents into a window, ask questions of a local or hosted
 chat model, and get answers whose citations open the cited page with the passage
 highlighted. Fully offline on first run.
CONTROL
# dpkg's triggers (desktop-file-utils, hicolor-icon-theme) refresh the menu and icon caches.
mkdir -p "$out"
deb="$out/haiku-desk_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zgzip -z6 --build "$root" "$deb" >/dev/null
echo "$deb"
