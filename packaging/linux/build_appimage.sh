#!/usr/bin/env bash
# Package a built bundle folder as an AppImage (type 2: runtime ELF + SquashFS of the AppDir):
#   packaging/linux/build_appimage.sh BUNDLE_DIR VERSION OUT_DIR -> OUT_DIR/haiku-desk-VERSION-ARCH.AppImage
#
# Nothing is downloaded: the runtime (packaging/linux/appimage/runtime.c) is compiled here from
# Debian's libsquashfuse-dev and libfuse3-dev (linked statically, with the compression
# libraries; only libc is shared), and mksquashfs comes from squashfs-tools:
#   apt-get install squashfs-tools gcc libsquashfuse-dev libfuse3-dev liblzo2-dev liblz4-dev \
#       libzstd-dev liblzma-dev zlib1g-dev
# AppDir: AppRun (packaging/linux/appimage/AppRun), haiku-desk.desktop and haiku-desk.png at the
# top (what AppImage tools and desktop integrators read), .DirIcon, the bundle in
# usr/lib/haiku-desk, icons and the entry under usr/share. Check it with check_appimage.sh.
set -euo pipefail
bundle="$1"
version="$2"
out="$3"
here="$(cd "$(dirname "$0")" && pwd)"
arch="$(uname -m)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

runtime="$work/runtime"
cc -O2 -Wall -I/usr/include/squashfuse -I/usr/include/fuse3 -o "$runtime" "$here/appimage/runtime.c" \
    -Wl,-Bstatic -lsquashfuse_ll -lsquashfuse -lfuse3 -lzstd -lz -llzma -llz4 -llzo2 \
    -Wl,-Bdynamic -lpthread -ldl >&2
strip "$runtime"

app="$work/AppDir"
mkdir -p "$app/usr/lib" "$app/usr/share/applications" "$app/usr/share/icons/hicolor/256x256/apps" \
    "$app/usr/share/icons/hicolor/scalable/apps"
cp -a "$bundle" "$app/usr/lib/haiku-desk"
cp "$here/appimage/AppRun" "$app/AppRun"
chmod 0755 "$app/AppRun"
cp "$bundle/haiku-desk.desktop" "$app/haiku-desk.desktop"
cp "$bundle/haiku-desk.desktop" "$app/usr/share/applications/haiku-desk.desktop"
cp "$bundle/icons/haiku-desk-256.png" "$app/haiku-desk.png"
cp "$bundle/icons/haiku-desk-256.png" "$app/usr/share/icons/hicolor/256x256/apps/haiku-desk.png"
cp "$bundle/icons/haiku-desk.svg" "$app/usr/share/icons/hicolor/scalable/apps/haiku-desk.svg"
ln -s haiku-desk.png "$app/.DirIcon"
grep -q '^MimeType=.*application/pdf' "$app/haiku-desk.desktop" \
    || { echo "the desktop entry does not register application/pdf" >&2; exit 1; }

image="$work/image.squashfs"
# zstd level 8 rather than the default 15: the default took 12 min on two loaded cores (sizes in
# docs/benchmarks.md, "Release size")
mksquashfs "$app" "$image" -root-owned -noappend -comp zstd -Xcompression-level 8 -quiet -no-progress >&2
mkdir -p "$out"
appimage="$out/haiku-desk-$version-$arch.AppImage"
cat "$runtime" "$image" > "$appimage"
printf 'AI\002' | dd of="$appimage" bs=1 seek=8 conv=notrunc status=none  # type-2 magic
chmod 0755 "$appimage"
(cd "$out" && sha256sum "$(basename "$appimage")" > "$(basename "$appimage").sha256")
echo "$appimage"
