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
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=1))
