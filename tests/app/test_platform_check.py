"""On a bare machine the app names the missing xcb libraries in one line, before Qt aborts."""

from __future__ import annotations

from haiku_desk.platform_check import XCB_LIBRARIES, uses_xcb, xcb_problem

BARE_DEBIAN = {"libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"}


def test_the_missing_xcb_libraries_are_named_with_the_install_command():
    problem = xcb_problem({"DISPLAY": ":0"}, loads=lambda soname: soname not in BARE_DEBIAN)
    assert problem is not None and "\n" not in problem
    assert "libxcb-cursor0, libxcb-icccm4, libxcb-keysyms1" in problem
    assert problem.endswith("sudo apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1")


def test_nothing_is_said_when_everything_loads_or_xcb_is_not_used():
    assert xcb_problem({"DISPLAY": ":0"}, loads=lambda soname: True) is None
    assert xcb_problem({"QT_QPA_PLATFORM": "offscreen"}, loads=lambda soname: False) is None
    assert not uses_xcb({"WAYLAND_DISPLAY": "wayland-0"})
    assert uses_xcb({"QT_QPA_PLATFORM": "xcb"})


def test_this_machine_has_every_library_the_plugin_links_to():
    """The list matches what the installed plugin links to (ldd), so none is forgotten."""
    import shutil
    import subprocess
    from pathlib import Path

    import PySide6

    plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    if shutil.which("ldd") is None or not plugin.is_file():
        return
    linked = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True).stdout
    x_libraries = {line.split()[0] for line in linked.splitlines() if "xcb" in line or "xkb" in line}
    assert x_libraries <= set(XCB_LIBRARIES), x_libraries - set(XCB_LIBRARIES)
