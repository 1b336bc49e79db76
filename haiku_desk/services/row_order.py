"""The order the library's rows arrived in, kept in ``<library>/haiku-desk/order.json`` so a
relaunch lists them as the last session did.

The store alone cannot say it: a document's ``created_at`` has one-second resolution (files
ingested in the same second come back sorted by URI), and a file that failed or was still
queued at quit has no document at all, so those rows used to come back after every stored
one. Keys not in the file (documents the CLI added, a library from before this file) follow
in the store's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from haiku_desk.services.app_folder import AppFile

ORDER_FILE = "order.json"
VERSION = 1

T = TypeVar("T")


class RowOrder:
    def __init__(self, folder: Path | None, on_error: Callable[[str], object]) -> None:
        self._file = AppFile(folder, ORDER_FILE, on_error, reading="the library's row order")
        self._saved: list[str] = []

    def load(self) -> list[str]:
        data = self._file.read()
        if data is None:
            return []
        keys = data.get("keys", []) if isinstance(data, dict) else []
        self._saved = [k for k in keys if isinstance(k, str)]
        return list(self._saved)

    def save(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        if keys != self._saved and self._file.write({"version": VERSION, "keys": keys}):
            self._saved = keys

    def arrange(self, items: dict[str, T]) -> dict[str, T]:
        """``items`` (key -> row) in the saved order; keys it does not know keep their order
        after the known ones."""
        rank = {key: i for i, key in enumerate(self._saved)}
        known = sorted((k for k in items if k in rank), key=rank.__getitem__)
        return {k: items[k] for k in [*known, *(k for k in items if k not in rank)]}
