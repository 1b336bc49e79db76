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
    functions = "\n".join(f"int helper_{i}(int x) {{ return x * {i} + {i % 7}; }}" for i in range(4000))
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

    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "bundle")], capture_output=True, text=True)

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
