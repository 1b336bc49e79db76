"""The library's document rows: one :class:`~haiku_desk.services.entries.LibraryEntry` per
stored document, file on its way in, or failed file, keyed by the source URI.

:class:`DocumentRows` is what the views read (``entries``, ``entry``, and the signals
``entry_changed`` / ``entry_removed``). It keeps the rows' arrival order
(:mod:`~haiku_desk.services.row_order`, written a moment after a burst of changes) and the
failed files (:mod:`~haiku_desk.services.failures`) in the library's app folder. It never
touches the store: the service and the queue runner give it documents and states.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from haiku_desk.services.entries import DocumentState, LibraryEntry, path_from_uri
from haiku_desk.services.failures import FailedFile, FailedFiles
from haiku_desk.services.notifications import Notifications
from haiku_desk.services.row_order import RowOrder
from haiku_desk.services.row_snapshot import RowSnapshot

if TYPE_CHECKING:
    from haiku.rag.operations import Progress
    from haiku.rag.store.models import Document

__all__ = ["ORDER_SAVE_DELAY_MS", "DocumentRows"]

ORDER_SAVE_DELAY_MS = 2000  # rows arriving in a burst write order.json once


class DocumentRows(QObject):
    """The rows of one library at a time (:meth:`attach` points them at another)."""

    entry_changed = Signal(object)  # LibraryEntry, added or updated
    entry_removed = Signal(str)  # entry key

    def __init__(
        self, notifications: Notifications, folder_of: Callable[[str], str | None], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._notifications = notifications
        self._folder_of = folder_of  # the watched folder a URI is in
        self._entries: dict[str, LibraryEntry] = {}
        # Rows that come or go are written to order.json a moment later, once for a burst (a
        # folder of thousands), and at close; so a relaunch lists them in their order.
        self._order_timer = QTimer(self)
        self._order_timer.setSingleShot(True)
        self._order_timer.setInterval(ORDER_SAVE_DELAY_MS)
        self._order_timer.timeout.connect(self.save_order)
        self._order_known = False
        self._closed = False
        self.paused_embeddings: Callable[[], frozenset[str]] = frozenset  # set by the service (the queue's)
        self._failed = FailedFiles(None, notifications.error)
        self._order = RowOrder(None, notifications.error)
        self._snapshot = RowSnapshot(None, notifications.error)

    def attach(self, app_folder: Path) -> None:
        """Start over for the library whose app folder is ``app_folder`` (no rows yet)."""
        self._entries = {}
        self._failed = FailedFiles(app_folder, self._notifications.error)
        self._order = RowOrder(app_folder, self._notifications.error)
        self._snapshot = RowSnapshot(app_folder, self._notifications.error)
        self._order_known = False  # True once the rows are listed in their saved order
        self._closed = False

    # --- reading ------------------------------------------------------------------------------

    @property
    def entries(self) -> list[LibraryEntry]:
        return list(self._entries.values())

    def entry(self, key: str) -> LibraryEntry | None:
        return self._entries.get(key)

    def entry_for_document(self, document_id: str) -> LibraryEntry | None:
        for entry in self._entries.values():
            if entry.document_id == document_id:
                return entry
        return None

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> list[str]:
        return list(self._entries)

    # --- writing ------------------------------------------------------------------------------

    def from_document(self, document: Document, previous: LibraryEntry | None = None) -> LibraryEntry:
        """The row of a stored document (its watched folder kept from ``previous``)."""
        from haiku.rag.bibliography import bibliographic

        record = bibliographic(document.metadata)
        path = path_from_uri(document.uri)
        stored_name = document.metadata.get("filename") if path is None else None
        return LibraryEntry(
            key=document.uri,
            name=document.display_name,
            state=DocumentState.HYBRID if document.index_state == "hybrid" else DocumentState.TEXT,
            path=path,
            document_id=document.id,
            generation=document.generation,
            mime_type=document.mime_type,
            page_count=document.page_count,
            chunk_count=document.chunk_count,
            watched_folder=previous.watched_folder if previous else self._folder_of(document.uri),
            authors=", ".join(c.display for c in record.authors) if record else "",
            year=record.year if record else None,
            recognised_pages=len(document.metadata.get("pages_recognised") or ()),
            file_name=stored_name if isinstance(stored_name, str) else "",
        )

    def show_stored(self, documents: list[Document]) -> None:
        """The store's documents, listed again: rows of documents gone go, the others are
        updated (rows of files on their way in, or being worked on, are kept)."""
        stored = {d.uri for d in documents}
        for entry in self.entries:
            if entry.key not in stored and entry.document_id is not None and not entry.busy:
                self.remove(entry.key)
        for document in documents:
            current = self._entries.get(document.uri)
            if current is not None and current.busy:
                continue
            self.set(self.from_document(document, current))

    def set(self, entry: LibraryEntry) -> None:
        if self._order_known and (entry.key not in self._entries or not entry.busy):
            self._order_timer.start()  # the order, and the rows' snapshot, a moment later
        self._entries[entry.key] = entry
        if entry.category is not None and (
            entry.state is DocumentState.FAILED or (entry.state is DocumentState.CANCELLED and entry.document_id is None)
        ):  # kept across starts: a failed file, and a file cancelled before it was added
            self._failed.record(FailedFile(entry.key, entry.name, entry.path, entry.category, entry.reason or ""))
        else:
            self._dealt_with(entry.key)
        self.entry_changed.emit(entry)

    def update(self, key: str, **changes: Any) -> LibraryEntry | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        entry = replace(entry, **changes)
        self.set(entry)
        return entry

    def remove(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        if self._order_known:
            self._order_timer.start()
        if not self._closed:
            self._dealt_with(key)
        self.entry_removed.emit(key)

    @Slot(str, object)
    def show_progress(self, key: str, progress: Progress) -> None:
        """A running job's progress, on its row (the queue runner's ``progressed``)."""
        entry = self._entries.get(key)
        if entry is None or not entry.busy:
            return
        from haiku.rag.operations import Stage

        if progress.stage is Stage.DONE:
            return
        done, total = progress.done, progress.total
        if progress.stage is Stage.EMBEDDING and not total:
            total = entry.chunk_count
        self.update(key, stage=progress.stage.value, done=done, total=total)

    def _dealt_with(self, key: str) -> None:
        """A failed row was dealt with (queued again, stored, removed): its record and banners go."""
        self._failed.forget(key)
        self._notifications.withdraw(key)

    # --- what the app folder keeps ------------------------------------------------------------

    def restore_failed(self) -> None:
        """Rows for the files that failed, or were cancelled, in an earlier session (and are
        still not in)."""
        from haiku.rag.errors import IngestCategory

        for file in self._failed.load():
            if file.key in self._entries:
                self._failed.forget(file.key)  # stored since (by the CLI, another session)
                continue
            self.set(
                LibraryEntry(
                    key=file.key,
                    name=file.name,
                    state=DocumentState.CANCELLED if file.category is IngestCategory.CANCELLED else DocumentState.FAILED,
                    path=file.path,
                    category=file.category,
                    reason=file.reason,
                    watched_folder=self._folder_of(file.key),
                )
            )

    def arrange(self) -> None:
        """Put the rows in the order they arrived (kept in order.json), and keep it from now on."""
        self._order.load()
        self._entries = self._order.arrange(self._entries)
        self._order_known = True
        self._order.save(self._entries)

    def assign_watched_folders(self) -> None:
        """Rows made before the watched folders were known get their folder (not whenever the
        first rescan happens to reach them)."""
        for key, entry in list(self._entries.items()):
            if entry.watched_folder is None and (folder := self._folder_of(key)) is not None:
                self._entries[key] = replace(entry, watched_folder=folder)

    def save_order(self) -> None:
        self._order_timer.stop()
        if self._order_known:
            self._order.save(self._entries)
            self._snapshot.save(self._entries.values(), self.paused_embeddings())

    def snapshot_paused(self) -> frozenset[str]:
        """The rows whose embedding the user cancelled, as the last session left them."""
        return frozenset(self._snapshot.paused)

    def show_snapshot(self) -> int:
        """List the stored rows the last session left (rows.json) before the store is open:
        the window shows them at once; :meth:`show_stored` then corrects them."""
        count = 0
        for entry in self._snapshot.load():
            if entry.key not in self._entries:
                entry = replace(entry, watched_folder=entry.watched_folder or self._folder_of(entry.key))
                self._entries[entry.key] = entry
                self.entry_changed.emit(entry)
                count += 1
        return count

    def close(self) -> None:
        """Write the order now; rows removed from now on (a library switch) are not a change."""
        self._closed = True
        self.save_order()
        self._order_known = False
