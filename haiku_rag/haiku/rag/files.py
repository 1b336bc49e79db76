"""Small file helpers shared by the library and the app (a public module)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` so that readers and a crash see the old file or the new one,
    never a mix: a uniquely named temporary file in the same folder, flushed to disk, then
    renamed over ``path``. Concurrent writers never share a temporary file. Raises OSError."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target


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
