"""The library service: the app's one writable ``HaikuRAG`` client, and the library's open,
shutdown and switch; it wires the parts, each in a module of its own and kept in the library's
app folder (:mod:`~haiku_desk.services.app_folder`): the document rows the views read
(:mod:`~haiku_desk.services.rows`, values in :mod:`~haiku_desk.services.entries`), the write
queue's runner (:mod:`~haiku_desk.services.queue_runner`), watch folders
(:mod:`~haiku_desk.services.watch_folders`) and the Zotero import
(:mod:`~haiku_desk.services.zotero_import`). What the chat searches is the chat's own scope,
never the library pane's selection.

Writes (ingest, embedding, delete) go through one queue and run one at a time; reads (search,
page bytes, document lists) run in parallel in worker threads. Documents are searchable by full
text as soon as they are parsed, then by hybrid search once their vectors land.

Quitting (:meth:`LibraryService.shutdown`) stops the running job, kills the parse worker and
keeps every job that was not done in the queue file; the next start runs them. Opening another
library (:meth:`LibraryService.open_library`) does the same, then emits ``library_changed``.
Views see :class:`LibraryEntry` values through Qt signals and never touch the store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from haiku_desk.services.app_folder import app_folder, is_remote
from haiku_desk.services.entries import (
    DocumentState,
    LibraryEntry,
    PendingWork,
    path_from_uri,
    uri_for,
)
from haiku_desk.services.notifications import Notifications
from haiku_desk.services.opening import describe_open_failure, open_client
from haiku_desk.services.queue_runner import QueueRunner
from haiku_desk.services.rows import DocumentRows
from haiku_desk.services.watch_folders import LEGACY_WATCH_FILE_NAME, WatchFolders
from haiku_desk.services.zotero_import import run_zotero_import, summarize

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import AppConfig
    from haiku.rag.store.models import SearchResult
    from haiku.rag.zotero import ZoteroImportReport

# The values the views and tests take from here (defined in services/entries.py, opening.py).
__all__ = ["DocumentState", "LibraryEntry", "LibraryService", "PendingWork", "path_from_uri"]
__all__ += ["uri_for"]

log = logging.getLogger("haiku_desk.library")

SHUTDOWN_TIMEOUT_S = 4.0  # how long Quit waits for the running job to roll back


class LibraryService(QObject):
    """The library's client, its rows, its queue and its watch folders (and their shutdown and
    switch)."""

    opened = Signal()  # the store is open and the documents are listed
    open_failed = Signal(object)  # the exception that kept the store from opening
    library_changed = Signal(str)  # another library is now this service's (its db path)
    entry_changed = Signal(object)  # LibraryEntry, added or updated
    entry_removed = Signal(str)  # entry key
    overall_progress = Signal(object)  # OverallStatus: the phase under way and how far (idle: phase "")
    busy_changed = Signal(bool)
    password_required = Signal(object)  # LibraryEntry of a locked PDF
    watched_folders_changed = Signal(list)  # folder paths (str)
    rescanned = Signal(str)  # a watched folder finished a scan

    def __init__(
        self, db_path: Path, config: AppConfig, notifications: Notifications, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.config = config
        self.notifications = notifications
        # The parts (each reset by _attach for the library at hand): the rows the views read,
        # the write queue's runner, the watched folders. They know each other only through the
        # few calls they make.
        self.rows = DocumentRows(notifications, self._folder_of, self)
        self.rows.entry_changed.connect(self.entry_changed)
        self.rows.entry_removed.connect(self.entry_removed)
        self.queue = QueueRunner(self.rows, notifications, self.ensure_open, self._include, self._folder_of, self)
        self.rows.paused_embeddings = lambda: self.queue.embedding_paused  # kept in rows.json
        self.watch = WatchFolders(self.rows, self.queue, self.ensure_open, notifications, self)
        self.watch.changed.connect(self.watched_folders_changed)
        self.watch.rescanned.connect(self.rescanned)
        self.queue.overall_progress.connect(self.overall_progress)
        self.queue.busy_changed.connect(self.busy_changed)
        self.queue.password_required.connect(self.password_required)
        self.queue.drained.connect(self._release_idle_memory)
        self._attach(Path(db_path))

    def _attach(self, db_path: Path) -> None:
        """Point the service at the library at ``db_path`` (nothing is opened yet)."""
        self.db_path = Path(db_path)
        self.app_folder = app_folder(self.db_path, self.config.storage.data_dir)
        self._client: HaikuRAG | None = None
        self.release_task: asyncio.Future[None] | None = None  # the last idle release (tests await it)
        self._open_task: asyncio.Future[Any] | None = None
        self.rows.attach(self.app_folder)
        self.queue.attach(self.app_folder)
        self._closed = False
        # True from the start until the documents are listed (or the open failed): the views
        # show "Opening the library…", not the empty-library hint, meanwhile
        self.is_opening = True
        # time.perf_counter() at each step of the last start (start, store_open, documents_read,
        # rows_shown, prepared, opened): the app benchmark's start-up breakdown, and the log
        self.startup_times: dict[str, float] = {}
        legacy = None if is_remote(self.db_path) else self.db_path / LEGACY_WATCH_FILE_NAME
        self.watch.attach(self.app_folder, legacy)

    # --- the client -------------------------------------------------------------------------

    @property
    def client(self) -> HaikuRAG:
        """The one writable client (opened on first use; prefer ``await ensure_open()``)."""
        if self._client is None:
            self._client = open_client(self.db_path, self.config)
        return self._client

    @property
    def is_open(self) -> bool:
        return self._client is not None

    async def ensure_open(self) -> HaikuRAG:
        """Open the store in a worker thread (LanceDB's import and open take a moment)."""
        if self._client is not None:
            return self._client
        if self._open_task is None:
            # A plain function: a worker thread must not hold a reference to this QObject.
            self._open_task = asyncio.ensure_future(asyncio.to_thread(open_client, self.db_path, self.config))
        try:
            client = await asyncio.shield(self._open_task)
        except BaseException:
            self._open_task = None  # the next call tries again
            raise
        if self._client is None:
            self._client = client
        return self._client

    def start(self) -> asyncio.Task[None]:
        """Open the library, list its documents, bring back its failed files and unfinished
        work, resume pending embeddings, start watching."""
        self.is_opening = True
        self.startup_times["start"] = time.perf_counter()
        # Rows first: the documents the last session listed, shown now; the store's listing
        # corrects them once it is open (seconds on a loaded machine).
        self.rows.show_snapshot()
        self.queue.pause_embedding(self.rows.snapshot_paused())  # a Cancel stays a Cancel
        self.startup_times["snapshot_shown"] = time.perf_counter()
        # Read now, before paths given on the command line are queued behind them.
        self.queue.load()
        return asyncio.ensure_future(self._start())

    async def _start(self) -> None:
        self.is_opening = True
        times = self.startup_times
        try:
            await self.ensure_open()
            times["store_open"] = time.perf_counter()
            client = await self.ensure_open()
            documents = await client.list_documents()
            times["documents_read"] = time.perf_counter()
            self.rows.show_stored(documents)  # the documents first: the pane shows them at once
            times["rows_shown"] = time.perf_counter()
        except Exception as exc:
            self.is_opening = False
            log.error("opening the library at %s failed", self.db_path, exc_info=exc)
            self.notifications.error(describe_open_failure(self.db_path, exc), type(exc).__name__)
            self.open_failed.emit(exc)
            return
        if self._closed:
            return
        self.rows.restore_failed()
        if resumed := self.queue.resume():
            log.info("resuming %d unfinished job(s) of %s", resumed, self.db_path)
        # Stored, failed and queued rows in the order they arrived (the views follow on opened).
        self.rows.arrange()
        self.watch.load()
        self.rows.assign_watched_folders()
        self.is_opening = False
        times["prepared"] = time.perf_counter()
        self.opened.emit()
        times["opened"] = time.perf_counter()
        log.info(
            "%s listed %d documents %.2f s after start (store open %.2f s, documents read %.2f s)",
            self.db_path, len(self.rows.entries), times["opened"] - times.get("start", times["opened"]),
            times["store_open"] - times.get("start", times["store_open"]), times["documents_read"] - times["store_open"],
        )
        self.queue.emit_overall()
        self.queue.kick()
        if self.watch:
            self.watch.rescan()

    def pending_work(self) -> PendingWork:
        return self.queue.pending_work()

    async def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT_S, *, stop_parse_worker: bool = True) -> bool:
        """Stop for quitting (or for opening another library): watching stops, the running job
        is cancelled and the parse worker killed; jobs not done stay in the queue file for the
        next start. Waits up to ``timeout`` for the running job to roll back its write, then
        closes the store. Returns whether everything stopped in time (when not, the caller
        exiting is safe: the store's recovery removes an interrupted write at the next open).
        """
        import time

        began = time.monotonic()
        log.info("shutting down %s: %s", self.db_path, self.pending_work())
        self._closed = True
        self.watch.close()
        current = self.queue.halt()
        if stop_parse_worker:  # process-wide: a test or a tool closing one library keeps it
            from haiku.rag.operations import stop_parse_workers

            await asyncio.to_thread(stop_parse_workers)
        log.info("parse worker stopped after %.2f s", time.monotonic() - began)
        stopped = await self.queue.wait_stopped(current, timeout)
        self.close()
        log.info("library closed after %.2f s (everything stopped: %s)", time.monotonic() - began, stopped)
        return stopped

    async def aclose(self) -> None:
        """Cancel running work, wait for it to roll back, then close the store (the shared
        parse worker keeps running: a cancelled parse stops it if it does not stop itself)."""
        await self.shutdown(timeout=30, stop_parse_worker=False)

    def close(self) -> None:
        """Stop the queue, cancel running work and close the store (the queue file keeps the
        jobs that were not done)."""
        self._closed = True
        self.rows.close()
        self.watch.close()
        self.queue.close()
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # closing is best effort
                log.exception("closing the library")
            self._client = None

    async def open_library(self, db_path: str | os.PathLike[str]) -> bool:
        """Make the library at ``db_path`` this service's: the current one is shut down as for
        Quit (its unfinished work kept), its rows removed, ``library_changed`` emitted, and the
        new one opened (``opened`` or ``open_failed`` follows). False when it is already open."""
        target = Path(db_path).expanduser()
        if not is_remote(target):
            target = target.resolve()
        if target == self.db_path and self._client is not None:
            return False
        await self.shutdown()
        for key in self.rows.keys():
            self.rows.remove(key)
        self._attach(target)
        self.watched_folders_changed.emit([])
        self.queue.emit_overall()
        self.busy_changed.emit(False)
        self.library_changed.emit(str(self.db_path))
        self.is_opening = True
        self.rows.show_snapshot()  # rows first, as at a start
        self.queue.pause_embedding(self.rows.snapshot_paused())
        self.queue.load()
        await self._start()
        return True

    def _release_idle_memory(self) -> None:
        """The queue drained: give back the embedder session and search caches (issue 16).
        On a worker thread (trimming a large heap takes a moment); a plain bound method of the
        client, never of this QObject. A search started meanwhile just loads them again."""
        if self._client is not None:
            self.release_task = asyncio.ensure_future(asyncio.to_thread(self._client.release_memory))

    # --- documents --------------------------------------------------------------------------

    @property
    def entries(self) -> list[LibraryEntry]:
        return self.rows.entries

    def entry(self, key: str) -> LibraryEntry | None:
        return self.rows.entry(key)

    def entry_for_document(self, document_id: str) -> LibraryEntry | None:
        return self.rows.entry_for_document(document_id)

    @property
    def busy(self) -> bool:
        return self.queue.busy

    async def refresh(self) -> None:
        """Reload the stored documents (entries of files on their way in are kept)."""
        client = await self.ensure_open()
        self.rows.show_stored(await client.list_documents())

    def delete(self, keys: list[str]) -> None:
        """Remove documents from the library, as the user asked (queued work for them is
        cancelled first). A document of a watched folder is remembered as excluded, so the next
        rescan does not bring it back. Until its delete has run, its row reads "deleting…"
        and Cancel keeps it."""
        self.watch.exclude(keys)
        self.remove_documents(keys)

    def remove_documents(self, keys: list[str]) -> None:
        """Remove documents from the library (queued work for them is cancelled first)."""
        self.queue.remove_documents(keys)

    def rename(self, key: str, title: str | None) -> None:
        """Give a stored document the user's own title (None: back to the title found in the
        file); it is kept across re-ingests. Returns at once; the row updates when stored."""
        entry = self.rows.entry(key)
        if entry is None or entry.document_id is None:
            return
        asyncio.ensure_future(self._rename(key, entry.document_id, title))

    async def _rename(self, key: str, document_id: str, title: str | None) -> None:
        entry = self.rows.entry(key)
        try:
            client = await self.ensure_open()
            document = await client.rename_document(document_id, title)
        except Exception as exc:  # a store or input error: say so, keep the old name
            log.exception("renaming %s failed", key)
            self.notifications.report_failure(f"Renaming {entry.name if entry else key} failed", exc)
            return
        if (current := self.rows.entry(key)) is not None and current.document_id == document.id:
            self.rows.update(key, name=document.display_name)

    # --- adding ----------------------------------------------------------------------------

    def add_paths(self, paths: Sequence[str | os.PathLike[str]]) -> None:
        """Queue files, and every file below folders, for ingestion (returns at once).

        This is the user adding them by hand (Add files, a drop): a file deleted earlier from
        a watched folder is welcome again, and later rescans keep it.
        """
        files: list[Path] = []
        for raw in paths:
            path = Path(raw).expanduser()
            if path.is_dir():
                asyncio.ensure_future(self._add_folder(path))
            else:
                files.append(path)
        self._add_files(files)

    async def _add_folder(self, folder: Path) -> None:
        from haiku.rag.formats import source_files

        try:
            files = await asyncio.to_thread(source_files, folder)
        except OSError as exc:
            self.notifications.error(f"Cannot read the folder {folder}: {exc.strerror or exc}")
            return
        if not files:
            self.notifications.info(f"{folder.name}: no files to add")
        self._add_files(files)

    def _add_files(self, files: list[Path]) -> None:
        for file in files:
            self._include(uri_for(file))
            self.queue.enqueue_ingest(file, by_hand=True)
        self.queue.kick()

    def import_zotero(self, source: str | os.PathLike[str] | None = None) -> asyncio.Future[Any]:
        """Import a Zotero library's PDFs with their metadata and collections (File › Import
        Zotero library…; :mod:`~haiku_desk.services.zotero_import`); vectors follow through
        the usual queue."""
        return asyncio.ensure_future(self._import_zotero(source))

    async def _import_zotero(self, source: str | os.PathLike[str] | None) -> ZoteroImportReport | None:
        client = await self.ensure_open()
        result = await run_zotero_import(client, source, self.notifications)
        if result is not None:
            await self.refresh()
            self.queue.kick()  # embed what was imported
            summarize(result, self.notifications)
        return result

    def reingest(self, keys: list[str]) -> None:
        """Run files through ingestion again, as the person asked: each file is read again even
        when it is unchanged on disk (a parser or OCR fix reaches it) and replaces its document
        in place, keeping its id (evidence-table rows, collections, citations stay attached);
        failed ones are retried, missing vectors completed."""
        for key in keys:
            entry = self.rows.entry(key)
            if entry is None or entry.state is DocumentState.DELETING:
                continue
            if entry.path is None or not Path(entry.path).is_file():
                self.notifications.error(
                    f"{entry.name}: the original file is no longer at {entry.path}; cannot re-ingest"
                )
                continue
            self.queue.enqueue_ingest(Path(entry.path), force=True)
        self.queue.kick()

    def retry_with_password(self, key: str, password: str) -> None:
        entry = self.rows.entry(key)
        if entry is None or entry.path is None:
            return
        self.queue.enqueue_ingest(Path(entry.path), password=password)
        self.queue.kick()

    def cancel(self, keys: list[str]) -> None:
        """Cancel queued or running work; a document already searchable stays searchable, and
        a document whose delete was still queued stays in the library."""
        self.queue.cancel(keys)

    # --- search ----------------------------------------------------------------------------

    async def search_passages(
        self, query: str, limit: int | None = None, document_ids: list[str] | None = None
    ) -> list[SearchResult]:
        """Best passages for ``query`` with context and boxes (search-only mode).

        ``document_ids`` None searches the whole library; an empty list, nothing.
        """
        if document_ids is not None and not document_ids:
            return []
        client = await self.ensure_open()
        results = await client.search(query, limit=limit, document_ids=document_ids)
        return await client.expand_context(results)

    # --- the watch folders' part (``self.watch``: services/watch_folders.py) -----------------

    def _folder_of(self, uri: str) -> str | None:
        return self.watch.folder_of(uri)

    def _include(self, uri: str) -> None:
        self.watch.include(uri)
