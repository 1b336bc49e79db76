"""Which library the app opens, and where its log folder is: ``--db``, else ``$HAIKU_RAG_DB``,
else the last library used that still exists (the recent list, in QSettings), else the
default library in the data dir. File › New/Open/Recent library (``views/library_menu``) reads
and grows the same list."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings

if TYPE_CHECKING:
    from haiku.rag.config import AppConfig

__all__ = [
    "MAX_RECENT",
    "RECENT_KEY",
    "STORE_MARKER",
    "initial_library",
    "is_library_folder",
    "is_store",
    "log_folder",
    "normal_path",
    "recent_libraries",
    "remember_library",
]

RECENT_KEY = "libraries/recent"
MAX_RECENT = 8
STORE_MARKER = "settings.lance"  # every haiku.rag store has this table


def recent_libraries() -> list[str]:
    value = QSettings().value(RECENT_KEY, [])
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else []
    return [str(p) for p in items if p]


def remember_library(db_path: str | os.PathLike[str]) -> None:
    path = str(db_path)
    items = [path] + [p for p in recent_libraries() if p != path]
    settings = QSettings()
    settings.setValue(RECENT_KEY, items[:MAX_RECENT])
    settings.sync()


def initial_library(db_arg: str | None, config: AppConfig) -> Path | str:
    """``--db``, else ``$HAIKU_RAG_DB``, else the last library used that still exists, else
    the default library in the data dir."""
    from haiku.rag.config import resolve_db_path

    if db_arg or os.environ.get("HAIKU_RAG_DB") or config.lancedb.uri:
        return normal_path(resolve_db_path(db_arg, config))
    for path in recent_libraries():
        if "://" in path or is_store(Path(path)):
            return normal_path(path)
    return normal_path(resolve_db_path(None, config))


def normal_path(path: str | os.PathLike[str]) -> Path | str:
    """A local library's absolute path (a remote one's URI as it is)."""
    text = str(path)
    return text if "://" in text else Path(text).expanduser().resolve()


def is_store(path: Path) -> bool:
    """A haiku.rag store."""
    return (path / STORE_MARKER).is_dir()


def is_library_folder(path: Path) -> bool:
    """A haiku.rag store, or an empty folder (which becomes one)."""
    return is_store(path) or (path.is_dir() and not any(path.iterdir()))


def log_folder(config: AppConfig) -> Path:
    """The folder of the log file (Help › Open log folder)."""
    from haiku.rag.logs import log_folder as folder

    return folder(config.storage.data_dir)
