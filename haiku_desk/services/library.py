"""The library service: the app's one writable ``HaikuRAG`` client and the documents the
library pane shows. What the chat searches is the chat's own per-conversation scope (the
library pane's check boxes), never the pane's selection. Its work queue
(:mod:`~haiku_desk.services.work_queue`), watch folders
(:mod:`~haiku_desk.services.watch_folders`) and failed files
(:mod:`~haiku_desk.services.failures`) live in modules of their own, and are kept in the
library's app folder (:mod:`~haiku_desk.services.app_folder`).

Writes (ingest, embedding, delete) go through one queue and run one at a time; reads
(search, page bytes, document lists) run in parallel in worker threads. Every file is one
:class:`~haiku_desk.bridge.Operation` with progress and cancellation. Documents have two
speeds: searchable by full text as soon as they are parsed (every queued file is parsed
before any embedding starts), then by hybrid search once their vectors land.

Quitting (:meth:`LibraryService.shutdown`) stops the running job, kills the parse worker and
keeps every job that was not done in the queue file; the next start runs them. Opening
another library (:meth:`LibraryService.open_library`) does the same, then emits
``library_changed(db_path)``.

Views see :class:`LibraryEntry` values through Qt signals and never touch the store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from haiku.rag.errors import IngestCategory
from haiku_desk.bridge import Operation
from haiku_desk.services import failures
from haiku_desk.services.app_folder import app_folder, is_remote
from haiku_desk.services.failures import FailedFile, FailedFiles, NextStep
from haiku_desk.services.notifications import Notifications
from haiku_desk.services.row_order import RowOrder
from haiku_desk.services.watch_folders import (
    LEGACY_WATCH_FILE_NAME,
    WatchFolders,
    path_from_uri,
    uri_for,
)
from haiku_desk.services.work_queue import DeleteJob, IngestJob, Job, WorkQueue

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG, IngestOutcome
    from haiku.rag.config import AppConfig
    from haiku.rag.operations import Progress
    from haiku.rag.store.models import Document, SearchResult

__all__ = ["DocumentState", "LibraryEntry", "LibraryService", "PendingWork", "path_from_uri", "uri_for"]

log = logging.getLogger("haiku_desk.library")

SHUTDOWN_TIMEOUT_S = 4.0  # how long Quit waits for the running job to roll back
ORDER_SAVE_DELAY_MS = 2000  # rows arriving in a burst write order.json once


class DocumentState(StrEnum):
    QUEUED = "queued"
    PARSING = "parsing"
    TEXT = "text"  # searchable by full text, vectors pending
    EMBEDDING = "embedding"  # searchable by full text, vectors being computed
    HYBRID = "hybrid"  # searchable by full text and by meaning
    DELETING = "deleting"  # a delete is queued or running (Cancel keeps the document)
    FAILED = "failed"
    CANCELLED = "cancelled"


STATE_LABELS = {
    DocumentState.QUEUED: "queued",
    DocumentState.PARSING: "parsing…",
    DocumentState.TEXT: "searchable (text)",
    DocumentState.EMBEDDING: "searchable (text), embedding…",
    DocumentState.HYBRID: "searchable (hybrid)",
    DocumentState.DELETING: "deleting…",
    DocumentState.FAILED: "failed",
    DocumentState.CANCELLED: "cancelled",
}

CATEGORY_LABELS = {
    IngestCategory.UNEXPECTED: "unexpected error",
    IngestCategory.STORE_LOCKED: "library locked",
    IngestCategory.DISK_FULL: "disk full",
}


@dataclass(frozen=True)
class LibraryEntry:
    """One row of the library: a stored document, or a file on its way in (or that failed).

    ``key`` is the source URI, stable across re-ingests and failures.
    """

    key: str
    name: str
    state: DocumentState
    path: str | None = None
    document_id: str | None = None
    generation: str = ""
    mime_type: str = ""
    page_count: int = 0
    chunk_count: int = 0
    category: IngestCategory | None = None
    reason: str | None = None
    stage: str = ""
    done: int = 0
    total: int = 0
    watched_folder: str | None = None

    @property
    def searchable(self) -> bool:
        return self.state in (DocumentState.TEXT, DocumentState.EMBEDDING, DocumentState.HYBRID)

    @property
    def busy(self) -> bool:
        return self.state in (
            DocumentState.QUEUED,
            DocumentState.PARSING,
            DocumentState.EMBEDDING,
            DocumentState.DELETING,
        )

    @property
    def needs_password(self) -> bool:
        return self.state is DocumentState.FAILED and self.category in (
            IngestCategory.PASSWORD_REQUIRED,
            IngestCategory.WRONG_PASSWORD,
        )

    @property
    def state_label(self) -> str:
        if self.state is DocumentState.FAILED:
            category = self.category or IngestCategory.UNEXPECTED
            return f"failed: {CATEGORY_LABELS.get(category, category.value.replace('_', ' '))}"
        return STATE_LABELS[self.state]

    @property
    def hint(self) -> str:
        return failures.hint(self.category) if self.state is DocumentState.FAILED else ""

    @property
    def next_steps(self) -> tuple[NextStep, ...]:
        """What can be done about a failed file (empty for every other state)."""
        return failures.next_steps(self.category) if self.state is DocumentState.FAILED else ()

    @property
    def fraction(self) -> float | None:
        """Progress of the current step in 0..1, None when not measurable."""
        if not self.busy or self.total <= 0:
            return None
        return min(1.0, self.done / self.total)


@dataclass(frozen=True)
class PendingWork:
    """What Quit would stop: the running job, the jobs waiting, the embeddings not done."""

    running: str | None = None  # the running job's title
    ingests: int = 0
    deletes: int = 0
    embeddings: int = 0

    @property
    def jobs(self) -> int:
        return (1 if self.running else 0) + self.ingests + self.deletes + self.embeddings

    def __bool__(self) -> bool:
        return self.jobs > 0


def _open_client(db_path: Path | str, config: AppConfig) -> HaikuRAG:
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


class LibraryService(QObject):
    """Documents, the ingest queue and watch folders (and their shutdown and switch)."""

    opened = Signal()  # the store is open and the documents are listed
    open_failed = Signal(object)  # the exception that kept the store from opening
    library_changed = Signal(str)  # another library is now this service's (its db path)
    entry_changed = Signal(object)  # LibraryEntry, added or updated
    entry_removed = Signal(str)  # entry key
    overall_progress = Signal(int, int)  # steps done, steps in this busy period (0, 0 when idle)
    busy_changed = Signal(bool)
    password_required = Signal(object)  # LibraryEntry of a locked PDF
    operation_started = Signal(object)  # Operation
    watched_folders_changed = Signal(list)  # folder paths (str)
    rescanned = Signal(str)  # a watched folder finished a scan

    def __init__(
        self, db_path: Path, config: AppConfig, notifications: Notifications, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.config = config
        self.notifications = notifications
        # Called in the worker thread with each progress report of a running ingest, and its
        # cancel token: tests hold an ingest "in progress" with it (a hook that blocks).
        self.ingest_progress_hook: Any = None
        self._watch: WatchFolders | None = None
        # Rows that come or go are written to order.json a moment later, once for a burst (a
        # folder of thousands), and at close; so a relaunch lists them in their order.
        self._order_timer = QTimer(self)
        self._order_timer.setSingleShot(True)
        self._order_timer.setInterval(ORDER_SAVE_DELAY_MS)
        self._order_timer.timeout.connect(self._save_order)
        self._attach(Path(db_path))

    def _attach(self, db_path: Path) -> None:
        """Point the service at the library at ``db_path`` (nothing is opened yet)."""
        self.db_path = Path(db_path)
        self.app_folder = app_folder(self.db_path, self.config.storage.data_dir)
        self._client: HaikuRAG | None = None
        self.release_task: asyncio.Future[None] | None = None  # the last idle release (tests await it)
        self._open_task: asyncio.Future[Any] | None = None
        self._entries: dict[str, LibraryEntry] = {}
        self._queue = WorkQueue(self.app_folder, self.notifications.error)
        self._resumable: list[Job] = []  # the jobs the last session left, read at start()
        self._failed = FailedFiles(self.app_folder, self.notifications.error)
        self._order = RowOrder(self.app_folder, self.notifications.error)
        self._order_known = False  # True once the rows are listed in their saved order
        self._worker: asyncio.Task[None] | None = None
        self._current: tuple[str, Operation] | None = None
        self._embed_paused: set[str] = set()  # keys whose embedding the user cancelled
        self._steps_done = 0
        self._steps_total = 0
        self._closed = False
        # True from the start until the documents are listed (or the open failed): the views
        # show "Opening the library…", not the empty-library hint, meanwhile
        self.is_opening = True
        legacy = None if is_remote(self.db_path) else self.db_path / LEGACY_WATCH_FILE_NAME
        self._watch = WatchFolders(self, self.app_folder, legacy)
        self._watch.changed.connect(self.watched_folders_changed)
        self._watch.rescanned.connect(self.rescanned)

    # --- the client -------------------------------------------------------------------------

    @property
    def client(self) -> HaikuRAG:
        """The one writable client (opened on first use; prefer ``await ensure_open()``)."""
        if self._client is None:
            self._client = _open_client(self.db_path, self.config)
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
            self._open_task = asyncio.ensure_future(asyncio.to_thread(_open_client, self.db_path, self.config))
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
        # Read now, before paths given on the command line are queued behind them.
        self._resumable = self._queue.load()
        return asyncio.ensure_future(self._start())

    async def _start(self) -> None:
        self.is_opening = True
        try:
            await self.ensure_open()
            await self.refresh()  # the documents first: the pane shows them at once
        except Exception as exc:
            self.is_opening = False
            log.error("opening the library at %s failed", self.db_path, exc_info=exc)
            self.notifications.error(describe_open_failure(self.db_path, exc), type(exc).__name__)
            self.open_failed.emit(exc)
            return
        if self._closed:
            return
        self._restore_failed()
        self._resume_queue()
        # Stored, failed and queued rows in the order they arrived (the views follow on opened).
        self._order.load()
        self._entries = self._order.arrange(self._entries)
        self._order_known = True
        self._order.save(self._entries)
        assert self._watch is not None
        self._watch.load()
        # The rows above were made before the watched folders were known: give each its folder
        # now, not whenever the first rescan happens to reach it.
        for key, entry in list(self._entries.items()):
            if entry.watched_folder is None and (folder := self.watch_folder_of(key)) is not None:
                self._entries[key] = replace(entry, watched_folder=folder)
        self.is_opening = False
        self.opened.emit()
        self._emit_overall()
        self._kick()
        if self._watch:
            self._watch.rescan()

    def _restore_failed(self) -> None:
        """Rows for the files that failed in an earlier session (and are still not in)."""
        for file in self._failed.load():
            if file.key in self._entries:
                self._failed.forget(file.key)  # stored since (by the CLI, another session)
                continue
            self._set_entry(
                LibraryEntry(
                    key=file.key,
                    name=file.name,
                    state=DocumentState.FAILED,
                    path=file.path,
                    category=file.category,
                    reason=file.reason,
                    watched_folder=self.watch_folder_of(file.key),
                )
            )

    def _resume_queue(self) -> None:
        """Queue again the jobs the last session did not finish, in their order."""
        jobs, self._resumable = self._resumable, []
        for job in jobs:
            if isinstance(job, IngestJob):
                self.enqueue_ingest(job.path, watched=job.watched)
            else:
                entry = self._entries.get(job.key)
                if entry is None or entry.document_id != job.document_id:
                    continue  # already gone
                self._queue_delete(entry)
        if jobs:
            log.info("resuming %d unfinished job(s) of %s", len(jobs), self.db_path)
        self._queue.save()

    def pending_work(self) -> PendingWork:
        running = self._current[1].title if self._current is not None else None
        counts = self._queue.counts()
        embeddings = len(self._embeddable())  # the one being embedded is not among them
        return PendingWork(running, counts["ingest"], counts["delete"], embeddings)

    async def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT_S, *, stop_parse_worker: bool = True) -> bool:
        """Stop for quitting (or for opening another library): watching stops, the running job
        is cancelled and the parse worker killed; jobs not done stay in the queue file for the
        next start. Waits up to ``timeout`` for the running job to roll back its write, then
        closes the store. Returns whether everything stopped in time (when not, the caller
        exiting is safe: the store's recovery removes an interrupted write at the next open).
        """
        import time

        began = time.monotonic()
        current, worker = self._current, self._worker
        log.info("shutting down %s: %s", self.db_path, self.pending_work())
        self._closed = True
        self._queue.save()  # the running job stays in it: resumed at the next start
        if self._watch is not None:
            self._watch.close()
        if current is not None:
            current[1].cancel()
        if stop_parse_worker:  # process-wide: a test or a tool closing one library keeps it
            await asyncio.to_thread(_stop_parse_worker)
        log.info("parse worker stopped after %.2f s", time.monotonic() - began)
        stopped = True
        if current is not None:
            try:
                await asyncio.wait_for(asyncio.shield(current[1].wait()), timeout)
            except TimeoutError:
                log.warning("%s did not stop within %g s", current[1].title, timeout)
                stopped = False
        if worker is not None and not worker.done():
            worker.cancel()
            done, _ = await asyncio.wait({worker}, timeout=1.0)
            stopped = stopped and bool(done)
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
        self._save_order()
        self._order_known = False  # rows removed from now on (a library switch) are not a change
        if self._watch is not None:
            self._watch.close()
        self._queue.clear()
        if self._current is not None:
            self._current[1].cancel()
        if self._worker is not None:
            self._worker.cancel()
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # closing is best effort
                log.exception("closing the library")
            self._client = None

    def _save_order(self) -> None:
        self._order_timer.stop()
        if self._order_known:
            self._order.save(self._entries)

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
        for key in list(self._entries):
            self._remove_entry(key)
        old_watch = self._watch
        self._attach(target)
        if old_watch is not None:
            old_watch.setParent(None)
            old_watch.deleteLater()
        self.watched_folders_changed.emit([])
        self._emit_overall()
        self.busy_changed.emit(False)
        self.library_changed.emit(str(self.db_path))
        self.is_opening = True
        self._resumable = self._queue.load()
        await self._start()
        return True

    # --- documents --------------------------------------------------------------------------

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

    @property
    def busy(self) -> bool:
        return self._worker is not None and not self._worker.done()

    async def refresh(self) -> None:
        """Reload the stored documents (entries of files on their way in are kept)."""
        client = await self.ensure_open()
        documents = await client.list_documents()
        stored = {d.uri: d for d in documents}
        for key, entry in list(self._entries.items()):
            if key not in stored and entry.document_id is not None and not entry.busy:
                self._remove_entry(key)
        for document in documents:
            current = self._entries.get(document.uri)
            if current is not None and current.busy:
                continue
            self._set_entry(self._entry_from_document(document, current))

    def _entry_from_document(self, document: Document, previous: LibraryEntry | None = None) -> LibraryEntry:
        path = path_from_uri(document.uri)
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
            watched_folder=previous.watched_folder if previous else self.watch_folder_of(document.uri),
        )

    def _set_entry(self, entry: LibraryEntry) -> None:
        if entry.key not in self._entries and self._order_known:
            self._order_timer.start()
        self._entries[entry.key] = entry
        if entry.state is DocumentState.FAILED and entry.category is not None:
            self._failed.record(
                FailedFile(entry.key, entry.name, entry.path, entry.category, entry.reason or "")
            )
        else:
            self._dealt_with(entry.key)
        self.entry_changed.emit(entry)

    def _dealt_with(self, key: str) -> None:
        """A failed row was dealt with (queued again, stored, removed): its record and banners go."""
        self._failed.forget(key)
        self.notifications.withdraw(key)

    def _update(self, key: str, **changes: Any) -> LibraryEntry | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        entry = replace(entry, **changes)
        self._set_entry(entry)
        return entry

    def _remove_entry(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        if self._order_known:
            self._order_timer.start()
        if not self._closed:
            self._dealt_with(key)
        self.entry_removed.emit(key)

    def set_watched_folder(self, key: str, folder: str | None) -> None:
        self._update(key, watched_folder=folder)

    # --- adding ----------------------------------------------------------------------------

    def add_paths(self, paths: list[str | os.PathLike[str]]) -> None:
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
        for file in files:
            self._include(uri_for(file))
            self.enqueue_ingest(file)
        self._kick()

    def import_zotero(self, source: str | os.PathLike[str] | None = None) -> asyncio.Future[Any]:
        """Import a Zotero library's PDFs with their metadata and collections (File › Import
        Zotero library…; ``haiku.rag.zotero``); vectors follow through the usual queue."""
        return asyncio.ensure_future(self._import_zotero(source))

    async def _import_zotero(self, source: str | os.PathLike[str] | None) -> Any:
        from haiku.rag.zotero import import_zotero

        client = await self.ensure_open()

        async def body(token: Any, report: Any) -> Any:
            return await import_zotero(client, source, progress=report, cancel=token, embed=False)

        operation = Operation("Importing the Zotero library", body)
        self.operation_started.emit(operation)
        operation.start()
        await operation.wait()
        if operation.error is not None:
            self.notifications.report_failure(operation.title, operation.error)
            return None
        result = operation.result
        if result is None:  # cancelled
            return None
        await self.refresh()
        self._kick()  # embed what was imported
        missing = [f"{o.title}: {o.reason}" for o in result.outcomes if o.status in ("missing", "failed")]
        counts = ", ".join(f"{n} {status}" for status, n in sorted(result.counts().items()))
        self.notifications.info(f"Zotero import: {counts or 'no PDF attachments'}", "\n".join(missing))
        return result

    async def _add_folder(self, folder: Path) -> None:
        from haiku.rag.formats import source_files

        try:
            files = await asyncio.to_thread(source_files, folder)
        except OSError as exc:
            self.notifications.error(f"Cannot read the folder {folder}: {exc.strerror or exc}")
            return
        if not files:
            self.notifications.info(f"{folder.name}: no files to add")
        for file in files:
            self._include(uri_for(file))
            self.enqueue_ingest(file)
        self._kick()

    def enqueue_ingest(self, path: Path, password: str | None = None, watched: str | None = None) -> None:
        key = uri_for(path)
        if self._is_pending(key):
            return
        previous = self._entries.get(key)
        if previous is not None:
            entry = replace(
                previous, state=DocumentState.QUEUED, category=None, reason=None, stage="", done=0, total=0
            )
        else:
            entry = LibraryEntry(
                key=key,
                name=path.name,
                state=DocumentState.QUEUED,
                path=str(path.resolve()),
                watched_folder=watched or self.watch_folder_of(key),
            )
        self._embed_paused.discard(key)
        self._set_entry(entry)
        self._queue.append(IngestJob(key, path.resolve(), password, watched))
        self._steps_total += 1
        self._emit_overall()

    _enqueue_ingest = enqueue_ingest

    def _is_pending(self, key: str) -> bool:
        if self._current is not None and self._current[0] == key:
            return True
        return self._queue.has(key)

    def reingest(self, keys: list[str]) -> None:
        """Run files through ingestion again: changed files are updated, failed ones retried,
        missing vectors completed."""
        for key in keys:
            entry = self._entries.get(key)
            if entry is None or entry.state is DocumentState.DELETING:
                continue
            if entry.path is None or not Path(entry.path).is_file():
                self.notifications.error(f"{entry.name}: the original file is no longer at {entry.path}; cannot re-ingest")
                continue
            self.enqueue_ingest(Path(entry.path))
        self._kick()

    def retry_with_password(self, key: str, password: str) -> None:
        entry = self._entries.get(key)
        if entry is None or entry.path is None:
            return
        self.enqueue_ingest(Path(entry.path), password=password)
        self._kick()

    def cancel(self, keys: list[str]) -> None:
        """Cancel queued or running work; a document already searchable stays searchable, and
        a document whose delete was still queued stays in the library."""
        for key in keys:
            for job in self._queue.remove(key):
                self._steps_done += 1
                if isinstance(job, DeleteJob):
                    self._include(key)  # not deleted after all: rescans may bring it again
                self._after_cancel(key)
            if self._current is not None and self._current[0] == key:
                self._current[1].cancel()
            entry = self._entries.get(key)
            if entry is not None and entry.state is DocumentState.TEXT:
                self._embed_paused.add(key)
        self._emit_overall()

    def _after_cancel(self, key: str) -> None:
        entry = self._entries.get(key)
        if entry is None:
            return
        if entry.document_id is not None:
            if entry.state is DocumentState.EMBEDDING or entry.state is DocumentState.QUEUED:
                self._embed_paused.add(key)
            asyncio.ensure_future(self._restore(key))
        else:
            self._update(key, state=DocumentState.CANCELLED, stage="", done=0, total=0)

    async def _restore(self, key: str) -> None:
        """After a cancel, show a stored document's real state again."""
        entry = self._entries.get(key)
        if entry is None or entry.document_id is None or self._closed:
            return
        try:
            document = await self.client.get_document(entry.document_id)
        except Exception:
            self._remove_entry(key)
            return
        current = self._entries.get(key)
        if current is not None and not self._is_pending(key):
            self._set_entry(self._entry_from_document(document, current))

    def delete(self, keys: list[str]) -> None:
        """Remove documents from the library, as the user asked (queued work for them is
        cancelled first). A document of a watched folder is remembered as excluded, so the next
        rescan does not bring it back. Until its delete has run, its row reads "deleting…"
        and Cancel keeps it."""
        if self._watch is not None:
            self._watch.exclude(keys)
        self.remove_documents(keys)

    def rename(self, key: str, title: str | None) -> None:
        """Give a stored document the user's own title (None: back to the title found in the
        file); it is kept across re-ingests. Returns at once; the row updates when stored."""
        entry = self._entries.get(key)
        if entry is None or entry.document_id is None:
            return
        asyncio.ensure_future(self._rename(key, entry.document_id, title))

    async def _rename(self, key: str, document_id: str, title: str | None) -> None:
        entry = self._entries.get(key)
        try:
            client = await self.ensure_open()
            document = await client.rename_document(document_id, title)
        except Exception as exc:  # a store or input error: say so, keep the old name
            log.exception("renaming %s failed", key)
            self.notifications.report_failure(f"Renaming {entry.name if entry else key} failed", exc)
            return
        if (current := self._entries.get(key)) is not None and current.document_id == document.id:
            self._update(key, name=document.display_name)

    def remove_documents(self, keys: list[str]) -> None:
        """Remove documents from the library (queued work for them is cancelled first)."""
        for key in keys:
            entry = self._entries.get(key)
            if entry is None or entry.state is DocumentState.DELETING:
                continue
            self.cancel([key])
            if entry.document_id is None:
                self._remove_entry(key)
                continue
            self._queue_delete(entry)
        self._emit_overall()
        self._kick()

    _delete = remove_documents

    def _queue_delete(self, entry: LibraryEntry) -> None:
        assert entry.document_id is not None
        self._queue.append(DeleteJob(entry.key, entry.document_id))
        self._steps_total += 1
        self._update(entry.key, state=DocumentState.DELETING, stage="", done=0, total=0)

    # --- the write queue --------------------------------------------------------------------

    def kick(self) -> None:
        """Start the queue's worker when there is work and it is idle."""
        if self._closed or (self._worker is not None and not self._worker.done()):
            return
        if not self._queue and not self._embeddable():
            return
        self._worker = asyncio.ensure_future(self._work())
        self.busy_changed.emit(True)

    _kick = kick

    def _embeddable(self) -> list[LibraryEntry]:
        return [
            e
            for e in self._entries.values()
            if e.state is DocumentState.TEXT and e.document_id and e.key not in self._embed_paused
        ]

    async def _work(self) -> None:
        try:
            await self.ensure_open()
            while not self._closed:
                job = self._queue.take()  # every queued file is parsed before any embedding starts
                if job is not None:
                    await self._run_job(job)
                    continue
                pending = self._embeddable()
                if not pending:
                    break
                self._steps_total += 1
                self._emit_overall()
                await self._run_embedding(pending[0])
                self._steps_done += 1
                self._emit_overall()
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # the queue must never die silently
            self.notifications.report_failure("Library queue", exc)
        finally:
            self._worker = None
            self._current = None
            self._steps_done = self._steps_total = 0
            if not self._closed:
                self._emit_overall()
                self.busy_changed.emit(False)
                self._release_idle_memory()

    def _release_idle_memory(self) -> None:
        """The queue drained: give back the embedder session and search caches (issue 16).
        On a worker thread (trimming a large heap takes a moment); a plain bound method of the
        client, never of this QObject. A search started meanwhile just loads them again."""
        if self._client is not None:
            self.release_task = asyncio.ensure_future(asyncio.to_thread(self._client.release_memory))

    async def _run_job(self, job: Job) -> None:
        try:
            if isinstance(job, IngestJob):
                await self._run_ingest(job)
            else:
                await self._run_delete(job)
        finally:
            if not self._closed:  # at quit the job stays in the queue file: resumed next start
                self._queue.finish(job)
                self._steps_done += 1
                self._emit_overall()

    def _emit_overall(self) -> None:
        # An embedding is counted as a step when it starts; the files still waiting for theirs
        # are counted too, so "4 of 4 steps" never shows while vectors are still to come.
        waiting = len(self._embeddable()) if self._steps_total else 0
        self.overall_progress.emit(self._steps_done, self._steps_total + waiting)

    async def _run_operation(self, key: str, operation: Operation) -> bool:
        """Run one operation to its end; False when it was cancelled."""
        cancelled: list[bool] = []
        self._current = (key, operation)
        operation.progressed.connect(self._on_progress)
        operation.cancelled.connect(lambda: cancelled.append(True))
        self.operation_started.emit(operation)
        operation.start()
        try:
            await operation.wait()
        finally:
            self._current = None
        return not cancelled and not operation.token.cancelled

    async def _run_ingest(self, job: IngestJob) -> None:
        client = self.client
        self._update(job.key, state=DocumentState.PARSING, stage="reading", done=0, total=0)
        hook = self.ingest_progress_hook

        async def body(token: Any, report: Any) -> IngestOutcome:
            progress = report
            if hook is not None:

                def progress(p: Any) -> None:  # in the worker thread
                    hook(p, token)
                    report(p)

            return await client.ingest_file(job.path, password=job.password, progress=progress, cancel=token, embed=False)

        operation = Operation(f"Adding {job.path.name}", body)  # no parent: it may outlive close()
        operation.setProperty("entry_key", job.key)
        finished = await self._run_operation(job.key, operation)
        if self._closed:
            return  # quitting: whatever happened, the job is resumed at the next start
        if not finished:
            self._after_cancel(job.key)
        elif operation.error is not None:
            exc = operation.error
            name = job.path.name
            category, reason = failures.describe_exception(exc, name)
            log.error("ingesting %s failed (%s): %s", job.path, category.value, reason, exc_info=exc)
            self._fail(job.key, category, reason)
        else:
            self._apply_outcome(job.key, operation.result)

    def _apply_outcome(self, key: str, outcome: IngestOutcome) -> None:
        previous = self._entries.get(key)
        if previous is None:  # deleted while it was being ingested
            if outcome.document is not None:
                self._queue.append(DeleteJob(key, outcome.document.id))
                self._steps_total += 1
            return
        if outcome.status == "failed" or outcome.document is None:
            category = outcome.category or IngestCategory.UNEXPECTED
            reason = failures.plain_reason(outcome.reason or "ingest failed", previous.name)
            log.info("%s failed (%s): %s", key, category.value, reason)
            self._fail(key, category, reason)
            return
        self._set_entry(self._entry_from_document(outcome.document, previous))

    def _fail(self, key: str, category: IngestCategory, reason: str) -> None:
        entry = self._entries.get(key)
        if entry is None:
            return
        password = category in (IngestCategory.PASSWORD_REQUIRED, IngestCategory.WRONG_PASSWORD)
        if entry.document_id is not None and not password:
            # The stored document is untouched by a failed re-ingest: keep showing it as searchable,
            # and say why the update failed.
            self.notifications.error(f"{entry.name} was not updated: {reason}", failures.hint(category))
            asyncio.ensure_future(self._restore(key))
            return
        entry = self._update(
            key, state=DocumentState.FAILED, category=category, reason=reason, stage="", done=0, total=0
        )
        if entry is None:
            return
        if entry.needs_password:
            self.password_required.emit(entry)
        else:
            self.notifications.error(f"{entry.name}: {reason}", entry.hint, key=key)

    async def _run_embedding(self, entry: LibraryEntry) -> None:
        client = self.client
        key, document_id = entry.key, entry.document_id
        assert document_id is not None
        self._update(key, state=DocumentState.EMBEDDING, stage="embedding", done=0, total=entry.chunk_count)

        async def body(token: Any, report: Any) -> Document:
            document = await client.get_document(document_id)
            await client.embed_pending([document], progress=report, cancel=token)
            return await client.get_document(document_id)

        operation = Operation(f"Embedding {entry.name}", body)
        operation.setProperty("entry_key", key)
        finished = await self._run_operation(key, operation)
        if self._closed:
            return  # its vectors are completed at the next start
        if not finished:
            self._embed_paused.add(key)
            await self._restore(key)
        elif operation.error is not None:
            self._embed_paused.add(key)  # do not retry in a loop; re-ingest retries
            self.notifications.report_failure(operation.title, operation.error)
            await self._restore(key)
        else:
            self._set_entry(self._entry_from_document(operation.result, self._entries.get(key)))

    async def _run_delete(self, job: DeleteJob) -> None:
        from haiku.rag.errors import DocumentNotFoundError

        try:
            await self.client.delete_document(job.document_id)
        except DocumentNotFoundError:
            pass
        except Exception as exc:
            if self._closed:
                return
            self.notifications.report_failure(f"Deleting {job.key}", exc)
            await self._restore(job.key)
            return
        if not self._closed:
            self._remove_entry(job.key)

    @Slot(object)
    def _on_progress(self, progress: Progress) -> None:
        operation = self.sender()
        key = operation.property("entry_key") if operation is not None else None
        entry = self._entries.get(key) if key else None
        if entry is None or not entry.busy:
            return
        from haiku.rag.operations import Stage

        if progress.stage is Stage.DONE:
            return
        done, total = progress.done, progress.total
        if progress.stage is Stage.EMBEDDING and not total:
            total = entry.chunk_count
        self._update(key, stage=progress.stage.value, done=done, total=total)

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

    # --- watch folders (services/watch_folders.py) -------------------------------------------

    @property
    def watched_folders(self) -> list[str]:
        return self._watch.folders if self._watch is not None else []

    def watch_folder_of(self, uri: str) -> str | None:
        return self._watch.folder_of(uri) if self._watch is not None else None

    _watching = watch_folder_of

    def excluded_files(self, folder: str) -> list[str]:
        """URIs in ``folder`` the user deleted from the library, which rescans leave out."""
        return self._watch.excluded_files(folder) if self._watch is not None else []

    def _include(self, uri: str) -> None:
        if self._watch is not None:
            self._watch.include(uri)

    def add_watched_folder(self, folder: str | os.PathLike[str]) -> asyncio.Task[None] | None:
        """Watch ``folder``: its files are added now and kept in sync on every rescan."""
        assert self._watch is not None
        return self._watch.add(folder)

    def remove_watched_folder(self, folder: str, *, delete_documents: bool = False) -> None:
        assert self._watch is not None
        key = self._watch.remove(folder)
        if key is None:
            return
        inside = [e.key for e in self._entries.values() if e.watched_folder == key]
        if delete_documents:
            self.remove_documents(inside)
        else:
            for k in inside:
                self._update(k, watched_folder=None)

    def rescan(self, folder: str | None = None) -> asyncio.Task[None] | None:
        """Re-scan one watched folder (or all); returns the scan task."""
        return self._watch.rescan(folder) if self._watch is not None else None


def _stop_parse_worker() -> None:
    """Kill the process-wide parse worker now, if one was started (the next parse, in this
    process, starts a fresh one)."""
    isolation = sys.modules.get("haiku.rag.ingest.isolation")
    worker = getattr(isolation, "_shared", None) if isolation is not None else None
    if worker is not None:
        worker.stop()
