"""Before Qt starts on X11: are the system libraries its xcb plugin needs installed?

Without them Qt aborts with "Could not load the Qt platform plugin "xcb"" and a page of
advice; a fresh Debian machine lacks libxcb-cursor0, libxcb-icccm4 and libxcb-keysyms1. This
loads each library the plugin links to (as the plugin would) and names the packages to
install, in one line. No Qt import here.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Mapping

# The sonames libqxcb.so links to that are not part of PySide6 -> the Debian package.
XCB_LIBRARIES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def uses_xcb(env: Mapping[str, str] | None = None, platform: str | None = None) -> bool:
    """Whether Qt will pick its xcb plugin: Linux, and QT_QPA_PLATFORM unset or xcb (Qt
    prefers wayland only when asked, or when running in a Wayland session without DISPLAY)."""
    env = os.environ if env is None else env
    if (platform or sys.platform) != "linux":
        return False
    chosen = env.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()
    if chosen:
        return chosen == "xcb"
    return bool(env.get("DISPLAY")) or not env.get("WAYLAND_DISPLAY")


def missing_xcb_packages(loads: Callable[[str], bool] = _loads) -> list[str]:
    """Debian packages of the xcb plugin's libraries that cannot be loaded."""
    return [package for soname, package in XCB_LIBRARIES.items() if not loads(soname)]


def xcb_problem(env: Mapping[str, str] | None = None, loads: Callable[[str], bool] = _loads) -> str | None:
    """One line naming what is missing and how to install it, or None when all is there."""
    if not uses_xcb(env):
        return None
    missing = missing_xcb_packages(loads)
    if not missing:
        return None
    return (
        f"haiku-desk: Qt cannot start on X11: missing system libraries ({', '.join(missing)}). "
        f"Install them with: sudo apt install {' '.join(missing)}"
    )
