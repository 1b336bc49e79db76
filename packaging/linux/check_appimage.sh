#!/usr/bin/env bash
# The AppImage on a fresh Debian 12 userland: a debootstrap minbase chroot (no X, xcb, EGL/GL or
# fontconfig packages), in three steps:
#   1. bare:    `--version` (the runtime, the bootloader and Python start with nothing installed),
#               `--haiku-rag --version`, and which system libraries Qt still misses there;
#   2. desktop: the libraries every desktop has (the .deb's Depends: GL/EGL, fontconfig, xcb,
#               xkbcommon, wayland), then `--self-test` mounted with FUSE and again with
#               APPIMAGE_EXTRACT_AND_RUN=1 (no FUSE: containers), and `--appimage-extract`;
#   3. window:  with DISPLAY=:N (an X server of the host, e.g. Xvfb + openbox, reached through
#               the shared abstract socket), the app started on a PDF given on its command line,
#               so the caller can take a screenshot (SCREENSHOT_WAIT seconds, default 25).
# debootstrap is installed for the run and removed afterwards if it was not there before; the
# chroot is deleted.
#   sudo [PYTHON=.venv/bin/python] packaging/linux/check_appimage.sh dist/haiku-desk-VERSION-x86_64.AppImage [DISPLAY]
# (PYTHON: an interpreter with PyMuPDF, to write the PDF the window step opens)
set -uo pipefail
appimage="$(realpath "$1")"
display="${2:-}"
[[ $(id -u) == 0 ]] || { echo "check_appimage.sh builds a chroot: run it as root" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
R="$(mktemp -d /tmp/haiku-desk-appimage-debian.XXXXXX)"
had_debootstrap=0; dpkg -s debootstrap >/dev/null 2>&1 && had_debootstrap=1
cleanup() {
  # (retried: a process the check just killed, e.g. the window step's app and its FUSE
  # runtime, can hold the chroot's /dev for a moment; the chroot was once left behind so)
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    for m in "$R"/tmp/.mount_*; do mountpoint -q "$m" 2>/dev/null && umount "$m" 2>/dev/null; done
    umount "$R/dev/shm" "$R/dev/pts" "$R/proc" "$R/sys" 2>/dev/null
    umount "$R/dev" 2>/dev/null
    mount | grep -q " $R/" || break
    sleep 1
  done
  mount | grep -q " $R/" || rm -rf "$R" "$R.log" "$R.apt.log"
  [[ $had_debootstrap == 0 ]] && apt-get remove -y --purge debootstrap >/dev/null 2>&1
}
trap cleanup EXIT
trap "exit 130" INT TERM
fail() { echo "FAILED: $*" >&2; exit 1; }
t0=$SECONDS
apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1 || fail "installing debootstrap"
debootstrap --variant=minbase bookworm "$R" http://deb.debian.org/debian >"$R.log" 2>&1 || { tail -20 "$R.log" >&2; fail debootstrap; }
echo "== debootstrap minbase bookworm: $((SECONDS - t0)) s, $(du -sm "$R" | cut -f1) MB"
cp /etc/resolv.conf "$R/etc/resolv.conf"
mount --bind /dev "$R/dev"; mount -t devpts devpts "$R/dev/pts" 2>/dev/null; mount -t tmpfs tmpfs "$R/dev/shm"
mount -t proc proc "$R/proc"; mount -t sysfs sysfs "$R/sys"
cp "$appimage" "$R/tmp/haiku-desk.AppImage"
run() { chroot "$R" env -i PATH=/usr/bin:/bin HOME=/root TMPDIR=/tmp "$@"; }

echo "== 1. bare Debian 12: Qt's system libraries present (none expected):"
chroot "$R" dpkg-query -W -f='${Package}\n' | grep -E '^(libxcb1|libegl1|libgl1|libfontconfig1|libxkbcommon0|libfuse3-3|fuse3)$' || echo "  none"
run /tmp/haiku-desk.AppImage --version || fail "--version on the bare system"
run /tmp/haiku-desk.AppImage --haiku-rag --version || fail "--haiku-rag --version on the bare system"
run sh -c 'cd /tmp && ./haiku-desk.AppImage --appimage-extract >/dev/null' || fail "--appimage-extract"
echo "   libraries the bundle's Qt misses on the bare system (the desktop step installs them):"
# (with the bundle's own folders on the library path, as its bootloader sets them)
missing="$(run sh -c 'b=/tmp/squashfs-root/usr/lib/haiku-desk/_internal; for f in $b/PySide6/Qt/lib/libQt6Gui.so.6 $b/PySide6/Qt/plugins/platforms/*.so; do LD_LIBRARY_PATH=$b:$b/PySide6/Qt/lib ldd "$f"; done' 2>/dev/null | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')"
echo "   ${missing:-none}"
rm -rf "$R/tmp/squashfs-root"

echo "== 2. the libraries every desktop has (the .deb's Depends), then the self-test"
depends="$(sed -n '/^depends="/,/"$/p' "$here/build_deb.sh" | tr -d '"\\' | tr '\n' ' ' | sed 's/^depends=//')"
packages="$(tr ',' '\n' <<<"$depends" | sed 's/([^)]*)//; s/|.*//' | awk '{print $1}' | grep -v '^libc6$' | grep . | sort -u | tr '\n' ' ')"
chroot "$R" apt-get update >"$R.apt.log" 2>&1 || { tail -5 "$R.apt.log" >&2; fail "apt-get update"; }
chroot "$R" apt-get install -y --no-install-recommends $packages >>"$R.apt.log" 2>&1 \
  || { tail -20 "$R.apt.log" >&2; fail "installing $packages"; }
echo "   installed: $packages"
echo "-- mounted with FUSE (root in the chroot: libfuse mounts without fusermount3)"
run QT_QPA_PLATFORM=offscreen /tmp/haiku-desk.AppImage --self-test || fail "--self-test, mounted"
echo "-- APPIMAGE_EXTRACT_AND_RUN=1 (no FUSE)"
run APPIMAGE_EXTRACT_AND_RUN=1 QT_QPA_PLATFORM=offscreen /tmp/haiku-desk.AppImage --self-test >/tmp/haiku-desk-appimage-extract.log 2>&1 \
  || { cat /tmp/haiku-desk-appimage-extract.log >&2; fail "--self-test, extract-and-run"; }
tail -1 /tmp/haiku-desk-appimage-extract.log
leftover="$(ls -d "$R"/tmp/.mount_* "$R"/tmp/appimage_extracted_* 2>/dev/null)"
[[ -z "$leftover" ]] || fail "left behind: $leftover"
echo "   no mount point or extracted folder left in /tmp"

if [[ -n "$display" ]]; then
  echo "== 3. the window on $display, opening a PDF given on the command line"
  # a one-page PDF to open, made with PyMuPDF by $PYTHON (the chroot has no Python of its own)
  "${PYTHON:-python3}" - <<'PY' || echo "   (no PyMuPDF for $PYTHON: the app starts without a file)"
import pymupdf
doc = pymupdf.open()
page = doc.new_page()
page.insert_text((72, 100), "Field notes on the heron colony", fontname="hebo", fontsize=20)
page.insert_text((72, 140), "Fifty-seven grey herons nested in the alder carr this spring.", fontsize=12)
doc.set_metadata({"title": "Field notes on the heron colony"})
doc.save("/tmp/heron-notes.pdf")
PY
  [[ -f /tmp/heron-notes.pdf ]] && mv /tmp/heron-notes.pdf "$R/tmp/"
  args=(); [[ -f "$R/tmp/heron-notes.pdf" ]] && args=(/tmp/heron-notes.pdf)
  # chroot and env exec, so $! is the AppImage runtime itself (started through the `run`
  # function, $! was a subshell: SIGTERM never reached the runtime, and the app, its parse
  # worker and the FUSE mount outlived the check)
  chroot "$R" env -i PATH=/usr/bin:/bin HOME=/root TMPDIR=/tmp DISPLAY="$display" QT_QPA_PLATFORM=xcb \
      XDG_DATA_HOME=/tmp/xdg-data XDG_CONFIG_HOME=/tmp/xdg-config \
      /tmp/haiku-desk.AppImage "${args[@]}" >/tmp/haiku-desk-appimage-window.log 2>&1 &
  pid=$!
  sleep "${SCREENSHOT_WAIT:-25}"
  if ! kill -0 $pid 2>/dev/null; then cat /tmp/haiku-desk-appimage-window.log >&2; fail "the app exited on $display"; fi
  echo "   running on $display (take the screenshot now); stopping it with SIGTERM in 15 s"
  sleep 15
  kill -TERM $pid 2>/dev/null
  # the runtime forwards SIGTERM to the app and unmounts when it exits: within 30 s nothing of
  # it may be left in the chroot (a process whose root is $R, or the FUSE mount)
  left=""
  for _ in $(seq 30); do
    left="$(for p in /proc/[0-9]*; do [[ "$(readlink "$p/root" 2>/dev/null)" == "$R" ]] && echo "${p#/proc/}"; done)"
    [[ -z "$left" ]] && ! mount | grep -q " $R/tmp/.mount_" && break
    sleep 1
  done
  wait $pid 2>/dev/null
  if [[ -n "$left" ]] || mount | grep -q " $R/tmp/.mount_"; then
    [[ -n "$left" ]] && kill -KILL $left 2>/dev/null
    fail "SIGTERM left the app running in the chroot (processes: ${left:-none}; FUSE mount: $(mount | grep -c " $R/tmp/.mount_"))"
  fi
  echo "   SIGTERM: the app quit, its processes are gone and the image is unmounted"
fi
echo "== ok on a fresh Debian 12 ($((SECONDS - t0)) s)"
