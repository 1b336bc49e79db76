"""The library's stored rows as the last session left them, kept in
``<library>/haiku-desk/rows.json``, so a start lists them at once: rows first, while the store
opens (LanceDB's import and open, reading the documents table take seconds on a loaded
machine), then the store's own listing corrects them (rows of documents gone since go, the
others are updated).

Only stored documents are kept (failed files have failed.json, queued work queue.json); a row
being worked on is kept as what the store holds (searchable by full text, or hybrid).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from haiku_desk.services.app_folder import AppFile
from haiku_desk.services.entries import DocumentState, LibraryEntry

__all__ = ["SNAPSHOT_FILE", "RowSnapshot"]

SNAPSHOT_FILE = "rows.json"
VERSION = 1
_KEPT = (
    "key", "name", "path", "document_id", "generation", "mime_type", "page_count", "chunk_count",
    "watched_folder", "authors", "year", "file_name", "recognised_pages",
)


class RowSnapshot:
    def __init__(self, folder: Path | None, on_error: Callable[[str], object]) -> None:
        self._file = AppFile(folder, SNAPSHOT_FILE, on_error, reading="the library's list of documents")
        self._saved: list[dict[str, Any]] | None = None
        self.paused: set[str] = set()  # rows whose embedding the user cancelled, as loaded

    def load(self) -> list[LibraryEntry]:
        """The stored rows of the last session, in their order (none when there is no file,
        or it cannot be read: the store's listing follows anyway)."""
        data = self._file.read(quiet=True)  # a cache: the store's listing follows in a moment
        if data is None:
            return []
        rows = data.get("rows", []) if isinstance(data, dict) and data.get("version") == VERSION else []
        known = {f.name for f in fields(LibraryEntry)}
        entries = []
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("key"), str) or not row.get("document_id"):
                continue
            values = {k: v for k, v in row.items() if k in known and k in _KEPT}
            state = DocumentState.HYBRID if row.get("hybrid") else DocumentState.TEXT
            try:
                entries.append(LibraryEntry(state=state, **values))
            except TypeError:
                continue
            if row.get("embedding_paused") and state is DocumentState.TEXT:
                self.paused.add(row["key"])
        self._saved = rows
        return entries

    def save(self, entries: Iterable[LibraryEntry], paused: Iterable[str] = ()) -> None:
        """Write the stored rows (``paused``: those whose embedding the user cancelled)."""
        if self._file.path is None:
            return
        paused = set(paused)
        rows = []
        for entry in entries:
            if entry.document_id is None:
                continue
            row = {k: v for k, v in asdict(entry).items() if k in _KEPT}
            row["hybrid"] = entry.state is DocumentState.HYBRID
            if entry.key in paused and entry.state is not DocumentState.HYBRID:
                row["embedding_paused"] = True
            rows.append(row)
        if rows == self._saved:
            return
        if self._file.write({"version": VERSION, "rows": rows}):
            self._saved = rows
