"""Make a built one-folder bundle smaller without changing what runs (packaging/build.sh):

    python packaging/linux/slim_bundle.py build/bundle/stage/haiku-desk-<version>

1. Symbol tables: every ELF shared object under ``_internal/`` is stripped of what the dynamic
   linker never reads (``strip --strip-unneeded`` to a copy), and the copy replaces it only when
   that saves at least 256 kB and its loadable segments stay page-aligned (``strip`` can break
   that on files patchelf edited: numpy's OpenBLAS then fails to load). Libraries auditwheel
   vendored (``X.libs/``) are left alone. Most wheels ship stripped already; xllamacpp (105 ->
   25 MB), libpython (23 -> 5 MB), pyarrow and tokenizers do not. The executable is never
   touched (its Python archive is appended after the ELF image), nor are files that are not
   ELF.
2. Duplicates: PyInstaller copies a library's versioned names (``libarrow_python.so``,
   ``.so.2600``, ``.so.2600.1.0``) as separate files; identical files in one folder become
   relative symbolic links to one of them.

Prints what it saved. The self-test then exercises the stripped libraries (build.sh --self-test).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

MIN_SAVING = 256 * 1024


def is_elf(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"\x7fELF"


def loadable_layout(path: Path) -> bool:
    """Whether every PT_LOAD segment keeps offset and address congruent modulo the page size.

    ``strip`` rewrites a file; on a library that patchelf edited (auditwheel's vendored
    libraries, e.g. numpy's OpenBLAS) the result can break that rule, and the dynamic linker
    then refuses it ("ELF load command address/offset not page-aligned")."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:  # 64-bit only
        return False
    endian = "<" if data[5] == 1 else ">"
    phoff, = struct.unpack_from(endian + "Q", data, 0x20)
    phentsize, phnum = struct.unpack_from(endian + "HH", data, 0x36)
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, _filesz, _memsz, p_align = struct.unpack_from(
            endian + "IIQQQQQQ", data, phoff + i * phentsize
        )
        if p_type == 1 and p_align > 1 and (p_offset - p_vaddr) % min(p_align, 4096) != 0:
            return False
    return True


def strip_all(internal: Path) -> tuple[int, int]:
    strip = shutil.which("strip")
    if strip is None:
        print("strip is missing (binutils): symbol tables kept", file=sys.stderr)
        return 0, 0
    saved = count = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stripped"
        for path in sorted(internal.rglob("*.so*")):
            if path.is_symlink() or not path.is_file() or not is_elf(path):
                continue
            if any(part.endswith(".libs") for part in path.relative_to(internal).parts):
                continue  # auditwheel's vendored libraries: patched by patchelf, shipped stripped
            done = subprocess.run(
                [strip, "--strip-unneeded", "-o", str(out), str(path)], capture_output=True
            )
            if done.returncode != 0 or not out.is_file():
                continue
            before, after = path.stat().st_size, out.stat().st_size
            if before - after >= MIN_SAVING and loadable_layout(out):
                shutil.copymode(path, out)
                os.replace(out, path)
                saved += before - after
                count += 1
    return saved, count


def link_duplicates(internal: Path) -> tuple[int, int]:
    saved = count = 0
    by_folder: dict[tuple[Path, int], list[Path]] = {}
    for path in internal.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size >= MIN_SAVING:
            by_folder.setdefault((path.parent, path.stat().st_size), []).append(path)
    for paths in by_folder.values():
        if len(paths) < 2:
            continue
        digests: dict[str, list[Path]] = {}
        for path in paths:
            digests.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), []).append(path)
        for same in digests.values():
            if len(same) < 2:
                continue
            keep = max(same, key=lambda p: len(p.name))  # the fully versioned name
            for path in same:
                if path == keep:
                    continue
                saved += path.stat().st_size
                count += 1
                path.unlink()
                path.symlink_to(keep.name)
    return saved, count


def main() -> int:
    bundle = Path(sys.argv[1])
    internal = bundle / "_internal"
    if not internal.is_dir():
        print(f"{bundle} has no _internal folder", file=sys.stderr)
        return 2
    stripped, n_stripped = strip_all(internal)
    linked, n_linked = link_duplicates(internal)
    print(
        f"stripped {n_stripped} libraries (-{stripped / 1e6:.0f} MB), "
        f"linked {n_linked} duplicate files (-{linked / 1e6:.0f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
