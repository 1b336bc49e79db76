#!/usr/bin/env bash
# The .deb on a fresh Debian 12 with none of Qt's system libraries: a debootstrap minbase chroot
# (no X, xcb, EGL/GL or fontconfig packages), then check_deb.sh inside it (apt installs the
# Depends from Debian's mirror, the installed app self-tests, apt remove leaves nothing), then the
# xcb platform plugin's libraries are resolved with ldd. debootstrap is installed for the run and
# removed afterwards if it was not there before; the chroot is deleted.
#   sudo flock /work/coord/heavy.lock packaging/linux/check_deb_fresh.sh dist/haiku-desk_VERSION_ARCH.deb
set -uo pipefail
deb="$(realpath "$1")"
[[ $(id -u) == 0 ]] || { echo "check_deb_fresh.sh builds a chroot: run it as root" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
R="$(mktemp -d /tmp/haiku-desk-fresh-debian.XXXXXX)"
had_debootstrap=0; dpkg -s debootstrap >/dev/null 2>&1 && had_debootstrap=1
cleanup() {
  # (retried: a process the check just killed, e.g. the window step's app and its FUSE
  # runtime, can hold the chroot's /dev for a moment; the chroot was once left behind so)
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    umount "$R/dev/shm" "$R/dev/pts" "$R/proc" "$R/sys" 2>/dev/null
    umount "$R/dev" 2>/dev/null
    mount | grep -q " $R/" || break
    sleep 1
  done
  mount | grep -q " $R/" || rm -rf "$R" "$R.log" "$R.apt.log"  # never delete through a mount still in place
  [[ $had_debootstrap == 0 ]] && apt-get remove -y --purge debootstrap >/dev/null 2>&1
}
trap cleanup EXIT
trap "exit 130" INT TERM
t0=$SECONDS
apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1 || { echo "installing debootstrap failed" >&2; exit 1; }
debootstrap --variant=minbase bookworm "$R" http://deb.debian.org/debian >"$R.log" 2>&1 || { tail -20 "$R.log" >&2; exit 1; }
echo "== debootstrap minbase bookworm: $((SECONDS - t0)) s, $(du -sm "$R" | cut -f1) MB"
cp /etc/resolv.conf "$R/etc/resolv.conf"
mount --bind /dev "$R/dev"; mount -t devpts devpts "$R/dev/pts" 2>/dev/null; mount -t tmpfs tmpfs "$R/dev/shm"
mount -t proc proc "$R/proc"; mount -t sysfs sysfs "$R/sys"
echo "== Qt's system libraries on the fresh system (none expected):"
chroot "$R" dpkg-query -W -f='${Package}\n' | grep -E '^(libxcb-cursor0|libxcb-icccm4|libxcb-keysyms1|libxcb-image0|libxcb-render-util0|libxkbcommon-x11-0|libegl1|libgl1|libfontconfig1|libxcb1)$' || echo "  none"
# apt's output goes to a log shown on failure (a failed binutils install once ended the
# check with no reason: check_deb.sh needs its objdump)
chroot "$R" apt-get update >"$R.apt.log" 2>&1 || { tail -20 "$R.apt.log" >&2; exit 1; }
chroot "$R" apt-get install -y --no-install-recommends binutils >>"$R.apt.log" 2>&1 \
  || { tail -20 "$R.apt.log" >&2; echo "installing binutils in the chroot failed" >&2; exit 1; }
cp "$deb" "$R/tmp/"
cp "$here/check_deb.sh" "$R/tmp/check_deb.sh"
t1=$SECONDS
chroot "$R" bash /tmp/check_deb.sh "/tmp/$(basename "$deb")" || { echo "check_deb.sh failed in the chroot" >&2; exit 1; }
echo "== check_deb.sh in the chroot: $((SECONDS - t1)) s"
chroot "$R" apt-get install -y --no-install-recommends "/tmp/$(basename "$deb")" >/dev/null 2>&1
# Every xcb plugin in the bundle (PySide6's; opencv-python's own copy under cv2/qt, which needed
# libSM/libICE, is gone with the headless OpenCV), and no cv2 Qt left.
for plugin in $(chroot "$R" find /opt/haiku-desk -name libqxcb.so); do
  if chroot "$R" ldd "$plugin" | grep -i "not found"; then echo "$plugin misses libraries" >&2; exit 1; fi
  echo "== $plugin: every library it needs resolves"
done
chroot "$R" apt-get remove -y haiku-desk >/dev/null 2>&1
echo "== ok on a fresh Debian 12"
