"""Collections in the app: the library's named sets of documents, listed with their counts,
made from documents or a folder, renamed and deleted (``haiku.rag.collections`` through the
client; stored in the library, so another session or the CLI sees the same ones).

Views call the methods and listen to ``collections_changed``; the chat listens too, so a
conversation scoped to a collection follows its membership, a rename and a delete. Every
write runs off the GUI thread through the client (``Store.write_transaction`` serialises it
with the library's other writes); a refused write (a taken name, an empty one) is reported
through the notifications with the library's own wording and changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from haiku.rag.collections import Collection
    from haiku_desk.services.library import LibraryService
    from haiku_desk.services.notifications import Notifications

log = logging.getLogger("haiku_desk.collections")


def documents_below(library: LibraryService, folder: str | os.PathLike[str]) -> list[str]:
    """The ids of the library's stored documents whose file lies below ``folder``."""
    root = Path(folder).expanduser().resolve()
    found = []
    for entry in library.entries:
        if entry.document_id is None or not entry.path:
            continue
        try:
            Path(entry.path).resolve().relative_to(root)
        except ValueError:
            continue
        found.append(entry.document_id)
    return found


class CollectionsService(QObject):
    """The open library's collections, kept listed (names, document ids, counts)."""

    collections_changed = Signal(list)  # list[Collection], sorted by name
    collection_renamed = Signal(str, str)  # old name, new name
    collection_deleted = Signal(str)  # name

    def __init__(self, library: LibraryService, notifications: Notifications, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.notifications = notifications
        self._collections: list[Collection] = []
        self.listed = False  # True once this library's collections have been read
        self._refreshing: asyncio.Future[Any] | None = None
        self._again = False  # asked to list again while a listing ran
        library.opened.connect(self.refresh)
        library.library_changed.connect(self._library_changed)
        # A deleted document leaves its collections (the library drops dead ids on reading);
        # a finished queue may have imported some (a Zotero library brings its collections).
        library.entry_removed.connect(self.refresh)
        library.busy_changed.connect(lambda busy: None if busy else self.refresh())

    @property
    def collections(self) -> list[Collection]:
        return list(self._collections)

    def find(self, name: str) -> Collection | None:
        return next((c for c in self._collections if c.name == name), None)

    # --- reads ------------------------------------------------------------------------------

    def _library_changed(self, _db_path: str) -> None:
        self.listed = False
        self._set([])  # the other library's are listed once it has opened

    def refresh(self, *_: object) -> asyncio.Future[Any]:
        """List the collections again. Calls while a listing runs share it, and it lists once
        more after them (a burst of deletes lists twice, not once per document); the future
        gives what was listed last."""
        if self._refreshing is not None and not self._refreshing.done():
            self._again = True
            return self._refreshing
        self._refreshing = asyncio.ensure_future(self._refresh())
        return self._refreshing

    async def _refresh(self) -> list[Collection]:
        while True:
            self._again = False
            found = await self._list()
            if not self._again:
                return found

    async def _list(self) -> list[Collection]:
        if not self.library.is_open:
            return self.collections
        try:
            found = await self.library.client.list_collections()
        except Exception as exc:  # a store error: say so, keep what is listed
            log.exception("listing the collections failed")
            self.notifications.report_failure("Listing the collections", exc)
            return self.collections
        self.listed = True
        self._set(found)
        return found

    def _set(self, found: list[Collection]) -> None:
        if [c.model_dump() for c in found] != [c.model_dump() for c in self._collections]:
            self._collections = list(found)
            self.collections_changed.emit(self.collections)

    # --- writes -----------------------------------------------------------------------------

    def create(self, name: str, document_ids: list[str]) -> asyncio.Future[Any]:
        """A new collection holding ``document_ids``; the future gives it (None if refused)."""
        return self._write(f"Creating the collection {name.strip()!r}", "create_collection", name, list(document_ids))

    def create_from_folder(self, name: str, folder: str | os.PathLike[str]) -> asyncio.Future[Any]:
        """A new collection of the library's documents whose files are below ``folder``."""
        return self.create(name, documents_below(self.library, folder))

    def add(self, name: str, document_ids: list[str]) -> asyncio.Future[Any]:
        return self._write(f"Adding to the collection {name!r}", "add_to_collection", name, list(document_ids))

    def remove(self, name: str, document_ids: list[str]) -> asyncio.Future[Any]:
        return self._write(f"Removing from the collection {name!r}", "remove_from_collection", name, list(document_ids))

    def rename(self, old: str, new: str) -> asyncio.Future[Any]:
        future = self._write(f"Renaming the collection {old!r}", "rename_collection", old, new)
        future.add_done_callback(
            lambda f: self.collection_renamed.emit(old, f.result().name)
            if not f.cancelled() and f.result() is not None and f.result().name != old
            else None
        )
        return future

    def delete(self, name: str) -> asyncio.Future[Any]:
        """Delete the collection; its documents stay in the library."""
        future = self._write(f"Deleting the collection {name!r}", "delete_collection", name)
        future.add_done_callback(
            lambda f: self.collection_deleted.emit(name) if not f.cancelled() and f.result() is not None else None
        )
        return future

    def _write(self, what: str, method: str, *args: Any) -> asyncio.Future[Any]:
        return asyncio.ensure_future(self._run_write(what, method, *args))

    async def _run_write(self, what: str, method: str, *args: Any) -> Collection | None:
        from haiku.rag.errors import HaikuRAGError

        try:
            client = await self.library.ensure_open()
            result = await getattr(client, method)(*args)
        except HaikuRAGError as exc:  # refused (name taken, empty, no such document): say why
            self.notifications.error(f"{what}: {exc}", type(exc).__name__)
            return None
        except Exception as exc:
            log.exception("%s failed", what)
            self.notifications.report_failure(what, exc)
            return None
        await self.refresh()
        return result
