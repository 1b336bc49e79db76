"""The app's own folder inside a library: ``<library>/haiku-desk/``.

What the app keeps about a library lives with the library, so a library that is moved, synced
or opened from another machine carries it: its watch folders, the work queue that was not
done at quit, the files that failed with their reasons (and, for the chat, its
conversations). LanceDB ignores a folder that is not a ``.lance`` table. A library on object
storage cannot hold it: its folder is ``<data dir>/haiku-desk-libraries/<digest of the URI>/``.

Files are written whole (temporary file, then rename), so a crash leaves the old or the new
version, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haiku.rag.files import write_text_atomic

log = logging.getLogger("haiku_desk.library")

APP_FOLDER_NAME = "haiku-desk"
REMOTE_FOLDERS = "haiku-desk-libraries"


def is_remote(db_path: str | os.PathLike[str]) -> bool:
    return "://" in str(db_path)


def app_folder(db_path: str | os.PathLike[str], data_dir: Path) -> Path:
    """The folder where the app keeps what it knows about the library at ``db_path``."""
    if not is_remote(db_path):
        return Path(db_path) / APP_FOLDER_NAME
    digest = hashlib.sha1(str(db_path).encode()).hexdigest()[:12]
    return Path(data_dir) / REMOTE_FOLDERS / digest


def read_json(path: Path) -> Any:
    """The JSON in ``path``; None when there is no such file. Raises OSError / ValueError."""
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` atomically. Raises OSError."""
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=1), private=True)


class AppFile:
    """One JSON file of a library's app folder (``folder`` None: the library has none, and
    nothing is kept), read and written whole. A failure is said through ``on_error`` as
    "Cannot read <reading> (<path>): <why>" or "Cannot save <saving> (…)", never raised."""

    def __init__(
        self,
        folder: Path | None,
        name: str,
        on_error: Callable[[str], object],
        *,
        reading: str,
        saving: str = "",
    ) -> None:
        self.path = folder / name if folder is not None else None
        self._on_error = on_error
        self._reading = reading
        self._saving = saving or reading

    def read(self, *, quiet: bool = False) -> Any:
        """What the file holds (``{}`` when there is no file yet); None without a folder or
        when it cannot be read (said unless ``quiet``: a cache whose loss is no news)."""
        if self.path is None:
            return None
        try:
            return read_json(self.path) or {}
        except (OSError, ValueError) as exc:
            if not quiet:
                self._on_error(f"Cannot read {self._reading} ({self.path}): {exc}")
            return None

    def write(self, data: Any) -> bool:
        """Whether ``data`` was written (not without a folder, nor when it failed: said)."""
        if self.path is None:
            return False
        try:
            write_json(self.path, data)
        except OSError as exc:
            self._on_error(f"Cannot save {self._saving} ({self.path}): {exc}")
            return False
        return True
