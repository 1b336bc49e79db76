"""packaging/linux/slim_bundle.py on a small real bundle folder: a stripped library replaces the
original only when it still loads, vendored ``X.libs`` libraries are left alone, duplicate
copies become links, and a library whose load segments lost their page alignment is detected."""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "packaging" / "linux" / "slim_bundle.py"

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("strip") is None or shutil.which("cc") is None,
    reason="ELF, strip and a C compiler (Linux build machines)",
)


def _slim():
    spec = importlib.util.spec_from_file_location("slim_bundle", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _library(path: Path) -> Path:
    """A shared library with a symbol table and ~400 kB of debug-free static data."""
    source = path.with_suffix(".c")
    functions = "\n".join(
        f"int helper_{i}(int x) {{ return x * {i} + {i % 7}; }}" for i in range(4000)
    )
    source.write_text(functions + "\nint answer(void) { return helper_41(1); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-g", "-o", str(path), str(source)], check=True)
    source.unlink()
    return path


def test_strips_libraries_links_duplicates_and_leaves_vendored_ones(tmp_path):
    slim = _slim()
    internal = tmp_path / "bundle" / "_internal"
    (internal / "pkg").mkdir(parents=True)
    (internal / "pkg.libs").mkdir()
    lib = _library(internal / "pkg" / "libthing.so.1.2")
    shutil.copy(lib, internal / "pkg" / "libthing.so.1")
    vendored = shutil.copy(lib, internal / "pkg.libs" / "libvendored.so")
    before = lib.stat().st_size

    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "bundle")], capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr
    assert lib.stat().st_size < before  # symbol table and debug sections gone
    assert ctypes.CDLL(str(lib)).answer() == 47  # still loads and runs: 1 * 41 + 41 % 7
    assert Path(vendored).stat().st_size == before  # X.libs: untouched
    duplicate = internal / "pkg" / "libthing.so.1"
    assert duplicate.is_symlink() and duplicate.resolve() == lib.resolve()
    assert slim.loadable_layout(lib)


def test_a_library_with_misaligned_load_segments_is_detected(tmp_path):
    slim = _slim()
    lib = _library(tmp_path / "libthing.so")
    assert slim.loadable_layout(lib)
    data = bytearray(lib.read_bytes())
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        at = phoff + i * phentsize
        if struct.unpack_from("<I", data, at)[0] == 1:  # the first PT_LOAD
            offset = struct.unpack_from("<Q", data, at + 8)[0]
            struct.pack_into("<Q", data, at + 8, offset + 16)  # what a bad rewrite leaves
            break
    broken = tmp_path / "libbroken.so"
    broken.write_bytes(bytes(data))
    assert not slim.loadable_layout(broken)


# --- ICU data (slim_bundle.trim_icu_data) on the system's real ICU (Debian: libicu72,
# icu-devtools), standing in for the copy PySide6 ships

_SYSTEM_ICU = sorted(Path("/usr/lib/x86_64-linux-gnu").glob("libicudata.so.[0-9]*.*"))
_needs_icu = pytest.mark.skipif(
    not _SYSTEM_ICU or shutil.which("icupkg") is None or shutil.which("readelf") is None,
    reason="the system's ICU libraries and icupkg (Debian: libicu72, icu-devtools)",
)

# What the bundle's Qt asks ICU for, run in a child process against a bundle's ICU libraries:
# collation (QCollator), a converter (QStringConverter), a time zone's name (QTimeZone), and a
# break iterator, which Qt never asks for.
_ICU_PROBE = r"""
import ctypes, json, sys
d, v = sys.argv[1], sys.argv[2]
ctypes.CDLL(f"{d}/libicudata.so.{v}", mode=ctypes.RTLD_GLOBAL)
uc = ctypes.CDLL(f"{d}/libicuuc.so.{v}", mode=ctypes.RTLD_GLOBAL)
i18n = ctypes.CDLL(f"{d}/libicui18n.so.{v}", mode=ctypes.RTLD_GLOBAL)
f = lambda lib, name: getattr(lib, f"{name}_{v}")
out = {}
s = ctypes.c_int(0)
f(i18n, "ucol_open").restype = ctypes.c_void_p
coll = f(i18n, "ucol_open")(b"sv_SE", ctypes.byref(s))
a, z = "\u00e4".encode("utf-16-le"), "z".encode("utf-16-le")
out["collation"] = [s.value, f(i18n, "ucol_strcoll")(ctypes.c_void_p(coll), a, 1, z, 1)]  # sv: ä after z
s = ctypes.c_int(0)
f(uc, "ucnv_open").restype = ctypes.c_void_p
f(uc, "ucnv_open")(b"Shift_JIS", ctypes.byref(s))
out["converter"] = s.value
s = ctypes.c_int(0)
f(i18n, "ucal_open").restype = ctypes.c_void_p
cal = f(i18n, "ucal_open")("Europe/Berlin".encode("utf-16-le") + b"\0\0", -1, b"de_DE", 0, ctypes.byref(s))
buf = (ctypes.c_uint16 * 128)()
n = f(i18n, "ucal_getTimeZoneDisplayName")(ctypes.c_void_p(cal), 0, b"de_DE", buf, 128, ctypes.byref(s))
out["zone name"] = [s.value, bytes(buf)[: 2 * n].decode("utf-16-le")]
s = ctypes.c_int(0)
f(uc, "ubrk_open")(1, b"th_TH", None, 0, ctypes.byref(s))
out["break iterator"] = s.value
print(json.dumps(out))
"""


def _icu_bundle(tmp_path: Path, qt_calls: list[str]) -> tuple[Path, Path, str]:
    """A bundle folder holding the system's ICU libraries where PySide6 keeps its own, and a
    stand-in for Qt Core that imports ``qt_calls`` (undefined, versioned like Qt's)."""
    real = _SYSTEM_ICU[0]
    version = real.name.split(".so.")[1].split(".")[0]
    lib = tmp_path / "bundle" / "_internal" / "PySide6" / "Qt" / "lib"
    lib.mkdir(parents=True)
    for name in ("libicudata", "libicuuc", "libicui18n"):
        source = next(real.parent.glob(f"{name}.so.{version}.*"))
        shutil.copy(source, lib / f"{name}.so.{version}")
    source = tmp_path / "qtcore.c"
    declarations = "\n".join(f"extern void {c}_{version}(void);" for c in qt_calls)
    calls = " ".join(f"{c}_{version}();" for c in qt_calls)
    source.write_text(f"{declarations}\nvoid qt_uses_icu(void) {{ {calls} }}\n")
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(lib / "libQt6Core.so.6"), str(source)], check=True
    )
    return tmp_path / "bundle", lib, version


def _probe(lib: Path, version: str) -> dict:
    import json

    done = subprocess.run(
        [sys.executable, "-c", _ICU_PROBE, str(lib), version],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@_needs_icu
def test_icu_data_loses_only_what_qt_cannot_ask_for(tmp_path):
    bundle, lib, version = _icu_bundle(
        tmp_path, ["ucol_open", "ucol_strcoll", "ucnv_open", "ucal_open", "u_strToUpper"]
    )
    data = lib / f"libicudata.so.{version}"
    before_size = data.stat().st_size
    before = _probe(lib, version)
    assert before["break iterator"] <= 0  # ICU's status codes: <= 0 is success

    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(bundle)], capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr
    assert "ICU data: removed" in result.stdout, result.stdout
    assert data.stat().st_size < before_size * 0.75  # break iterators, units, currencies, ... gone
    after = _probe(lib, version)
    # what Qt asks for answers exactly as before: collation order, converter, zone name
    assert after["collation"] == before["collation"] and before["collation"][1] == 1
    assert after["converter"] == before["converter"] and after["converter"] <= 0
    assert after["zone name"] == before["zone name"] and before["zone name"][1]
    assert after["break iterator"] > 0  # U_MISSING_RESOURCE_ERROR: its data is gone


@_needs_icu
def test_icu_data_kept_whole_when_qt_asks_for_more(tmp_path):
    bundle, lib, version = _icu_bundle(tmp_path, ["ucol_open", "ubrk_open"])
    data = lib / f"libicudata.so.{version}"
    before = data.read_bytes()

    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(bundle)], capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr
    assert "ICU data kept whole" in result.stdout and "ubrk_open" in result.stdout, result.stdout
    assert data.read_bytes() == before
