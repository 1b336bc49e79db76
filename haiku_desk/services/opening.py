"""Opening a library's store for the app, and saying why it could not be opened."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from haiku.rag.errors import IngestCategory
from haiku_desk.services import failures

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import AppConfig

__all__ = ["describe_open_failure", "open_client"]


def open_client(db_path: Path | str, config: AppConfig) -> HaikuRAG:
    from haiku.rag.client import HaikuRAG

    client = HaikuRAG(db_path, config, create=True)
    try:
        client.store.acquire_writer_lock()  # a second writer learns it now, not at its first write
    except BaseException:
        client.close()
        raise
    client.warm_up_search()  # a large library's indexes load while the user types
    return client


def describe_open_failure(db_path: Path, exc: BaseException) -> str:
    """Why a library could not be opened, in words that name the real cause."""
    from haiku.rag.errors import StoreLockedError

    category = failures.categorize(exc)
    if isinstance(exc, StoreLockedError):
        holder = f" (pid {exc.holder_pid})" if exc.holder_pid else ""
        return (
            f"The library at {db_path} is in use by another program{holder}, so it was not opened. "
            "Quit that program (another haiku-desk?), then open the library again."
        )
    if category is IngestCategory.PERMISSION_DENIED:
        return f"The library at {db_path} cannot be opened: permission denied ({exc})."
    if category is IngestCategory.DISK_FULL:
        return f"The library at {db_path} cannot be opened: the disk is full."
    if category is IngestCategory.UNEXPECTED:
        return f"The library at {db_path} could not be opened: unexpected error: {type(exc).__name__} ({exc})"
    return f"The library at {db_path} could not be opened: {exc}"
