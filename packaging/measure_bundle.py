"""Measure an unpacked bundle: size per package, start time to the first window, a screenshot.

    .venv/bin/python packaging/measure_bundle.py /path/to/haiku-desk-<version> \
        [--runs 5] [--screenshot docs/screenshots/bundle-window.png] [--sizes-only] [--top 40]

Sizes: every regular file under the folder (symbolic links not counted), in MB (10^6 bytes),
grouped by the package it belongs to: the first folder under ``_internal/`` (``X.libs`` folders,
the libraries auditwheel vendors for X, count as X; ``cv2`` counts as opencv), the top-level
libraries by name, and the Python code in the executable's PYZ archive by top-level module
(read with PyInstaller's archive reader when PyInstaller is importable; else the executable
counts as one line). ``--sizes-only`` stops after the sizes (no Xvfb needed).

Offscreen runs use the app's ``--quit-after-shown`` (prints "shown" once the window has
painted). The Xvfb runs need Xvfb and xwininfo (``apt-get install -y xvfb x11-utils libxcb-icccm4 libxcb-keysyms1
libxcb-cursor0``). Each run starts ``./haiku-desk`` on a private Xvfb display with a minimal
environment (``env -i``-style: PATH=/usr/bin:/bin, HOME, DISPLAY, and empty XDG_DATA_HOME and
XDG_CONFIG_HOME, so the first run is a first start and the user's own settings are untouched) and
times it from spawn until X reports its top-level window "haiku-desk" as viewable (polled every
10 ms), then terminates it. The screenshot is taken from the X server (this script's PySide6,
platform xcb), cropped to the window, after the last run's window has painted.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DISPLAY = ":97"


# folder names that belong to one package under another name
_ALIASES = {
    "cv2": "opencv",
    "opencv_python": "opencv",
    "opencv_python_headless": "opencv",
    "pil": "pillow",
    "fitz": "pymupdf",
    "pyside6": "PySide6",
    "shiboken6": "PySide6",
    "lib-dynload": "python",
    "python3.11": "python",
    "base_library.zip": "python",
}


def package_of(relative: Path) -> str:
    """The package a file under ``_internal/`` belongs to (see the module docstring)."""
    parts = relative.parts
    if len(parts) == 1:
        name = parts[0]
        if name.startswith("libpython") or name == "base_library.zip":
            return "python"
        return f"(top-level) {name}"
    head = parts[0]
    if head.endswith(".dist-info"):
        return "(distribution metadata)"
    if head.endswith(".libs"):
        head = head[: -len(".libs")]
    return _ALIASES.get(head.lower(), _ALIASES.get(head, head))


def python_code_sizes(executable: Path) -> dict[str, int] | None:
    """Compressed bytes of the modules in the executable's PYZ archive, by top-level module."""
    try:
        from PyInstaller.archive.readers import CArchiveReader
    except ImportError:
        return None
    try:
        pkg = CArchiveReader(str(executable))
    except Exception:
        return None
    sizes: dict[str, int] = {}
    for name, entry in pkg.toc.items():
        if entry[-1] != "z":  # the PYZ archive
            continue
        pyz = pkg.open_embedded_archive(name)
        for module, (_typecode, _offset, length) in pyz.toc.items():
            top = module.split(".")[0]
            key = _ALIASES.get(top.lower(), top)
            sizes[key] = sizes.get(key, 0) + length
    return sizes


def size_table(bundle: Path) -> tuple[list[tuple[str, float, float]], float]:
    """Rows (package, files MB, Python code MB) sorted by total, and the folder's total MB."""
    files: dict[str, int] = {}
    total = 0
    internal = bundle / "_internal"
    for path in bundle.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        size = path.stat().st_size
        total += size
        if internal in path.parents:
            key = package_of(path.relative_to(internal))
        elif path.name == "haiku-desk" or path.name == "haiku-desk.exe":
            key = "(executable)"
        else:
            key = "(desktop entry, icons, docs)"
        files[key] = files.get(key, 0) + size
    code = python_code_sizes(bundle / "haiku-desk") or {}
    if code:  # the executable is its bootloader plus the PYZ: the PYZ's modules go to their package
        files["(executable)"] = files.get("(executable)", 0) - sum(code.values())
    names = set(files) | set(code)
    rows = [(n, files.get(n, 0) / 1e6, code.get(n, 0) / 1e6) for n in names]
    rows.sort(key=lambda r: r[1] + r[2], reverse=True)
    return rows, total / 1e6


def print_size_table(bundle: Path, top: int) -> None:
    rows, total = size_table(bundle)
    print(f"size unpacked: {total:.0f} MB (regular files; symbolic links not counted)")
    print("| package | files MB | Python code MB | total MB |")
    print("|---|---:|---:|---:|")
    shown = rows[:top]
    for name, files_mb, code_mb in shown:
        print(f"| {name} | {files_mb:.1f} | {code_mb:.1f} | {files_mb + code_mb:.1f} |")
    rest = rows[top:]
    if rest:
        rest_mb = sum(f + c for _, f, c in rest)
        print(f"| {len(rest)} more | | | {rest_mb:.1f} |")


def window_geometry(display: str) -> tuple[int, int, int, int] | None:
    out = subprocess.run(
        ["xwininfo", "-display", display, "-name", "haiku-desk"],
        capture_output=True,
        text=True,
    ).stdout
    if "IsViewable" not in out:
        return None
    values = {}
    for key in ("Absolute upper-left X", "Absolute upper-left Y", "Width", "Height"):
        match = re.search(rf"{key}:\s+(-?\d+)", out)
        if not match:
            return None
        values[key] = int(match.group(1))
    return tuple(values.values())  # type: ignore[return-value]


def start_once(
    bundle: Path, env: dict[str, str], timeout: float = 60
) -> tuple[float, subprocess.Popen]:
    started = time.perf_counter()
    process = subprocess.Popen(
        ["./haiku-desk"], cwd=bundle, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    while time.perf_counter() - started < timeout:
        if window_geometry(env["DISPLAY"]) is not None:
            return time.perf_counter() - started, process
        if process.poll() is not None:
            raise RuntimeError(
                f"haiku-desk exited with {process.returncode}: {process.stderr.read().decode()}"
            )
        time.sleep(0.01)
    process.kill()
    raise RuntimeError("no haiku-desk window within the timeout")


def shown_offscreen(bundle: Path, env: dict[str, str], timeout: float = 60) -> float:
    """Seconds from spawn until ``--quit-after-shown`` reports the first window painted."""
    started = time.perf_counter()
    process = subprocess.Popen(
        ["./haiku-desk", "--quit-after-shown"],
        cwd=bundle,
        env={**env, "QT_QPA_PLATFORM": "offscreen"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    elapsed = time.perf_counter() - started
    process.wait(timeout)
    if line.strip() != "shown":
        raise RuntimeError(
            f"haiku-desk --quit-after-shown printed {line!r}, exit {process.returncode}"
        )
    return elapsed


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def screenshot(display: str, geometry: tuple[int, int, int, int], out: Path) -> None:
    code = (
        "import sys\n"
        "from PySide6.QtGui import QGuiApplication\n"
        "app = QGuiApplication(sys.argv[:1])\n"
        f"x, y, w, h = {geometry}\n"
        "pixmap = app.primaryScreen().grabWindow(0, x, y, w, h)\n"
        f"sys.exit(0 if pixmap.save({str(out)!r}) else 1)\n"
    )
    env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)


def _wait_for_display(display: str, timeout: float = 15.0) -> None:
    """Until the X server answers (a fixed pause was sometimes too short)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        probe = subprocess.run(
            ["xwininfo", "-root", "-display", display], capture_output=True, check=False
        )
        if probe.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"Xvfb on {display} did not answer within {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bundle", type=Path, help="the unpacked haiku-desk-<version> folder")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--screenshot", type=Path)
    parser.add_argument("--sizes-only", action="store_true", help="only the size table")
    parser.add_argument("--top", type=int, default=40, help="rows of the size table")
    args = parser.parse_args()
    bundle = args.bundle.resolve()
    if args.sizes_only:
        print(f"bundle: {bundle}")
        print_size_table(bundle, args.top)
        return 0
    for tool in ("Xvfb", "xwininfo"):
        if shutil.which(tool) is None:
            print(f"{tool} is missing (see this script's docstring)", file=sys.stderr)
            return 2
    print(f"bundle: {bundle}")
    print_size_table(bundle, args.top)

    home = Path(tempfile.mkdtemp(prefix="haiku-desk-measure-"))
    base_env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),  # window state (QSettings) and settings
    }
    offscreen = [shown_offscreen(bundle, base_env) for _ in range(args.runs)]
    # the X runs start from a first start too: the offscreen runs saved their (small) window
    base_env["XDG_CONFIG_HOME"] = str(home / "config-x11")
    print(
        "offscreen, start to first window painted (--quit-after-shown): "
        + ", ".join(f"{t:.2f}" for t in offscreen)
        + f" s; median {statistics.median(offscreen):.2f} s"
    )

    xvfb = subprocess.Popen(
        ["Xvfb", DISPLAY, "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_display(DISPLAY)
        env = {**base_env, "DISPLAY": DISPLAY}
        times = []
        for run in range(args.runs):
            elapsed, process = start_once(bundle, env)
            times.append(elapsed)
            last = run == args.runs - 1
            if last and args.screenshot:
                time.sleep(2.0)  # let the window paint
                geometry = window_geometry(DISPLAY)
                assert geometry is not None
                args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot(DISPLAY, geometry, args.screenshot.resolve())
                print(f"screenshot: {args.screenshot} ({geometry[2]}x{geometry[3]})")
            stop(process)
            print(f"run {run + 1}: first window after {elapsed:.2f} s")
        print(
            f"Xvfb, start to first window viewable: median {statistics.median(times):.2f} s, "
            f"min {min(times):.2f} s, max {max(times):.2f} s over {len(times)} runs"
        )
    finally:
        xvfb.terminate()
        xvfb.wait()
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
