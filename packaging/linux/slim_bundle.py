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
3. ICU data: Qt's ``libicudata.so.NN`` (32 MB) is one symbol, ``icudtNN_dat``, holding ICU's
   data package. The only bundled libraries that link ICU are Qt's own, and the ICU functions
   they import (their undefined dynamic symbols) are converters (``ucnv_*``, QStringConverter),
   collation (``ucol_*``, QCollator), calendars and time-zone names (``ucal_*``, QTimeZone) and
   case mapping (``u_strToUpper``/``u_strToLower``). No bundled library calls ICU's break
   iterators, number/unit/currency formatting, language names, transliterators, rule-based
   number formats or character names, so their data (``brkitr/``, ``unit/``, ``curr/``,
   ``lang/``, ``translit/``, ``rbnf/``, ``unames.icu``: 14 MB) is removed from the package with
   ICU's own ``icupkg`` (Debian: icu-devtools) and the library is rebuilt around the rest (the
   same symbol and SONAME, with a C compiler). When any linking library imports an ICU function
   outside that list, or a tool is missing, the data is left whole and the reason printed.

Prints what it saved. The self-test then exercises the stripped libraries (build.sh --self-test).
"""

from __future__ import annotations

import hashlib
import os
import re
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
    (phoff,) = struct.unpack_from(endian + "Q", data, 0x20)
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


# The ICU functions Qt's libraries import, as prefixes: what the kept data serves (module
# docstring, 3.). An import outside these means a library may need data this step removes.
ICU_SERVICES_KEPT = ("ucnv_", "UCNV_", "ucol_", "ucal_", "u_strToUpper", "u_strToLower")
# ICU data items only unused services read: break iterators, units, currencies, language
# names, transliterators, rule-based number formats, Unicode character names
ICU_ITEMS_REMOVED = ("brkitr/", "unit/", "curr/", "lang/", "translit/", "rbnf/", "unames.icu")


def _dynamic_symbols(path: Path) -> list[tuple[str, str, int, int]]:
    """(name, section index, value, size) of an ELF file's dynamic symbols (readelf)."""
    out = subprocess.run(
        ["readelf", "--dyn-syms", "-W", str(path)], capture_output=True, text=True
    ).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[0].endswith(":") and parts[0][:-1].isdigit():
            size = int(parts[2], 16) if parts[2].startswith("0x") else int(parts[2])
            symbols.append((parts[7].split("@")[0], parts[6], int(parts[1], 16), size))
    return symbols


def icu_imports(internal: Path, version: str) -> dict[str, set[str]]:
    """The ICU functions (versioned ``name_NN`` symbols) each bundled library imports, for every
    library outside ICU itself that imports any."""
    suffix = f"_{version}"
    found: dict[str, set[str]] = {}
    for path in sorted(internal.rglob("*.so*")):
        if (
            path.is_symlink()
            or not path.is_file()
            or path.name.startswith("libicu")
            or not is_elf(path)
        ):
            continue
        names = {
            n[: -len(suffix)]
            for n, ndx, _v, _s in _dynamic_symbols(path)
            if ndx == "UND" and n.endswith(suffix)
        }
        if names:
            found[str(path.relative_to(internal))] = names
    return found


def _file_offset(path: Path, address: int) -> int:
    """The file offset of a virtual address, from the ELF file's PT_LOAD segments."""
    data = path.read_bytes()[:4096]
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _f, p_offset, p_vaddr, _p, p_filesz, _m, _a = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize
        )
        if p_type == 1 and p_vaddr <= address < p_vaddr + p_filesz:
            return p_offset + address - p_vaddr
    raise ValueError(f"{path.name}: address {address:#x} is in no loaded segment")


def trim_icu_data(internal: Path) -> tuple[int, str]:
    """Remove the ICU data no bundled library can reach (module docstring, 3.): (bytes saved,
    what was done or why not)."""
    libraries = [p for p in internal.rglob("libicudata.so.*") if p.is_file() and not p.is_symlink()]
    if not libraries:
        return 0, "no libicudata in the bundle"
    library = libraries[0]
    match = re.fullmatch(r"libicudata\.so\.(\d+)", library.name)
    tools = {name: shutil.which(name) for name in ("icupkg", "readelf", "cc")}
    if not match or not all(tools.values()):
        missing = [n for n, t in tools.items() if not t]
        return (
            0,
            f"ICU data kept whole ({library.name}; missing: {', '.join(missing) or 'a plain soname'})",
        )
    version = match.group(1)
    imports = icu_imports(internal, version)
    outside = {
        f"{lib}: {name}"
        for lib, names in imports.items()
        for name in names
        if not name.startswith(ICU_SERVICES_KEPT)
    }
    if outside:
        return (
            0,
            "ICU data kept whole: ICU functions outside the kept services are imported: "
            + ", ".join(sorted(outside)),
        )
    symbol = f"icudt{version}_dat"
    entries = [
        (v, size) for n, ndx, v, size in _dynamic_symbols(library) if n == symbol and ndx != "UND"
    ]
    if not entries:
        return 0, f"ICU data kept whole: {library.name} has no {symbol}"
    address, size = entries[0]
    offset = _file_offset(library, address)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        package = work / f"icudt{version}l.dat"
        with library.open("rb") as handle:
            handle.seek(offset)
            package.write_bytes(handle.read(size))
        listed = subprocess.run(
            [tools["icupkg"], "-l", str(package)], capture_output=True, text=True
        )
        if listed.returncode != 0:
            return 0, f"ICU data kept whole: icupkg cannot read it ({listed.stderr.strip()[:200]})"
        items = listed.stdout.split()
        removed = [i for i in items if i.startswith(ICU_ITEMS_REMOVED)]
        if not removed:
            return 0, "ICU data: nothing to remove"
        (work / "remove.txt").write_text("\n".join(removed) + "\n")
        (work / "out").mkdir()
        trimmed = work / "out" / package.name
        done = subprocess.run(
            [tools["icupkg"], "-r", str(work / "remove.txt"), str(package), str(trimmed)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not trimmed.is_file():
            return 0, f"ICU data kept whole: icupkg -r failed ({done.stderr.strip()[:200]})"
        source = work / "icudata.s"
        source.write_text(
            "    .section .rodata\n"
            f"    .globl {symbol}\n    .type {symbol}, @object\n    .balign 16\n{symbol}:\n"
            f'    .incbin "{trimmed}"\n    .size {symbol}, .-{symbol}\n'
            '    .section .note.GNU-stack,"",@progbits\n'
        )
        rebuilt = work / library.name
        built = subprocess.run(
            [
                tools["cc"],
                "-shared",
                "-nostdlib",
                f"-Wl,-soname,{library.name}",
                "-o",
                str(rebuilt),
                str(source),
            ],
            capture_output=True,
            text=True,
        )
        if built.returncode != 0 or not any(
            n == symbol and ndx != "UND" for n, ndx, _v, _s in _dynamic_symbols(rebuilt)
        ):
            return (
                0,
                f"ICU data kept whole: rebuilding {library.name} failed ({built.stderr.strip()[:200]})",
            )
        saved = library.stat().st_size - rebuilt.stat().st_size
        shutil.copymode(library, rebuilt)
        os.replace(rebuilt, library)
    services = sorted({n.split("_")[0] + "_" for names in imports.values() for n in names})
    return saved, (
        f"ICU data: removed {len(removed)} of {len(items)} items ({', '.join(ICU_ITEMS_REMOVED)}); "
        f"Qt imports only {' '.join(services)}"
    )


def main() -> int:
    bundle = Path(sys.argv[1])
    internal = bundle / "_internal"
    if not internal.is_dir():
        print(f"{bundle} has no _internal folder", file=sys.stderr)
        return 2
    stripped, n_stripped = strip_all(internal)
    linked, n_linked = link_duplicates(internal)
    icu_saved, icu_note = trim_icu_data(internal)
    print(
        f"stripped {n_stripped} libraries (-{stripped / 1e6:.0f} MB), "
        f"linked {n_linked} duplicate files (-{linked / 1e6:.0f} MB), "
        f"{icu_note} (-{icu_saved / 1e6:.0f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
