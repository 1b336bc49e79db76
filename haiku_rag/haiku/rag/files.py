"""Small file helpers shared by the library and the app (a public module)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_text_atomic(path: str | os.PathLike[str], text: str, *, private: bool = False) -> Path:
    """``write_atomic`` of ``text`` in UTF-8."""
    return write_atomic(path, text.encode("utf-8"), private=private)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, private: bool = False) -> Path:
    """Write ``data`` to ``path`` so that readers and a crash see the old file or the new one,
    never a mix: a uniquely named temporary file in the same folder, flushed to disk, then
    renamed over ``path``. Concurrent writers never share a temporary file. The file gets the
    permissions a plain write would give it (an existing file's, else what the umask allows:
    an exported table was left 0600, the temporary file's mode), or owner-only when
    ``private`` (conversations, settings). Raises OSError."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            if hasattr(os, "fchmod"):  # POSIX; on Windows the mode bits mean nothing here
                os.fchmod(handle.fileno(), 0o600 if private else _mode_for(target))
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target


def _mode_for(target: Path) -> int:
    """The permission bits of ``target`` if it exists, else those a new file gets."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    # read, not set and restored: os.umask changes it for every thread of the process
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def path_from_file_uri(uri: str, *, windows: bool | None = None) -> str:
    """The local path a ``file://`` URI names (what ``Path.as_uri()`` made), on this OS.

    Percent-escapes are decoded; on Windows the drive letter comes back (``file:///C:/a%20b``
    -> ``C:\\a b``, not ``/C:/a b``) and a host names a UNC share (``file://server/share/x`` ->
    ``\\\\server\\share\\x``). ``windows`` forces either convention (tests); raises ValueError
    for a URI that is not ``file:``."""
    from urllib.parse import urlparse

    parts = urlparse(uri)
    if parts.scheme != "file":
        raise ValueError(f"not a file URI: {uri}")
    path = parts.path
    if parts.netloc and parts.netloc != "localhost":
        path = f"//{parts.netloc}{path}"
    if windows if windows is not None else os.name == "nt":
        import nturl2path

        return nturl2path.url2pathname(path)
    from urllib.parse import unquote

    return unquote(path)
