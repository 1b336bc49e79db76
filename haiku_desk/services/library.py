"""The library service: the app's one writable ``HaikuRAG`` client, its ingest queue, the
documents the library pane shows and watch folders. What the chat searches is the chat's own
per-conversation scope (the library pane's check boxes), never the pane's selection.

Writes (ingest, embedding, delete) go through one queue and run one at a time; reads
(search, page bytes, document lists) run in parallel in worker threads. Every file is one
:class:`~haiku_desk.bridge.Operation` with progress and cancellation. Documents have two
speeds: searchable by full text as soon as they are parsed (every queued file is parsed
before any embedding starts), then by hybrid search once their vectors land.

Views see :class:`LibraryEntry` values through Qt signals and never touch the store.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections import deque
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal, Slot

from haiku_desk.bridge import Operation
from haiku_desk.services.notifications import Notifications

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG, IngestOutcome
    from haiku.rag.config import AppConfig
    from haiku.rag.operations import Progress
    from haiku.rag.store.models import Document, SearchResult

log = logging.getLogger("haiku_desk.library")

WATCH_FILE_NAME = "haiku-desk-watched.json"
WATCH_DEBOUNCE_MS = 1500  # a copy into a watched folder fires many change events
WATCH_POLL_MS = 5 * 60 * 1000  # catches edits the file-system watcher cannot see
MAX_WATCHED_PATHS = 4000  # inotify watches are a shared, limited resource


class DocumentState(StrEnum):
    QUEUED = "queued"
    PARSING = "parsing"
    TEXT = "text"  # searchable by full text, vectors pending
    EMBEDDING = "embedding"  # searchable by full text, vectors being computed
    HYBRID = "hybrid"  # searchable by full text and by meaning
    FAILED = "failed"
    CANCELLED = "cancelled"


STATE_LABELS = {
    DocumentState.QUEUED: "queued",
    DocumentState.PARSING: "parsing…",
    DocumentState.TEXT: "searchable (text)",
    DocumentState.EMBEDDING: "searchable (text), embedding…",
    DocumentState.HYBRID: "searchable (hybrid)",
    DocumentState.FAILED: "failed",
    DocumentState.CANCELLED: "cancelled",
}

# What a person can do about each failure category.
FAILURE_HINTS = {
    "password_required": "Enter its password to index it.",
    "wrong_password": "That password did not open it; try again.",
    "needs_ocr": "It has no text layer. Run OCR on it (for example `ocrmypdf in.pdf out.pdf`) and add the result.",
    "damaged": "The file is damaged or not what its name says. Re-download or re-export it.",
    "empty": "There is no text in it to index.",
    "unsupported_type": "This file type cannot be indexed. PDF, Markdown, text and source code work out of the box.",
    "extra_missing": "Install the docling extra (pip install 'haiku-desk[docling]') to index Office and HTML files.",
    "too_large": "Raise processing.max_file_mb in the configuration to index larger files.",
    "timeout": "Parsing took too long; try again or split the file.",
    "not_found": "The file is gone or unreadable.",
    "parser_failed": "The parser crashed on this file; the rest of the library is unaffected. Re-export the file and add it again.",
    "cancelled": "Ingestion was cancelled; re-ingest to try again.",
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
    category: str | None = None
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
        return self.state in (DocumentState.QUEUED, DocumentState.PARSING, DocumentState.EMBEDDING)

    @property
    def needs_password(self) -> bool:
        return self.state is DocumentState.FAILED and self.category in ("password_required", "wrong_password")

    @property
    def state_label(self) -> str:
        if self.state is DocumentState.FAILED:
            return f"failed: {(self.category or 'error').replace('_', ' ')}"
        return STATE_LABELS[self.state]

    @property
    def hint(self) -> str:
        return FAILURE_HINTS.get(self.category or "", "") if self.state is DocumentState.FAILED else ""

    @property
    def fraction(self) -> float | None:
        """Progress of the current step in 0..1, None when not measurable."""
        if not self.busy or self.total <= 0:
            return None
        return min(1.0, self.done / self.total)


@dataclass
class _IngestJob:
    key: str
    path: Path
    password: str | None = None


@dataclass
class _DeleteJob:
    key: str
    document_id: str


def path_from_uri(uri: str) -> str | None:
    if not uri.startswith("file://"):
        return None
    return unquote(urlparse(uri).path)


def uri_for(path: Path) -> str:
    return path.resolve().as_uri()


def _open_client(db_path: Path | str, config: AppConfig) -> HaikuRAG:
    from haiku.rag.client import HaikuRAG

    return HaikuRAG(db_path, config, create=True)


class LibraryService(QObject):
    """Documents, the ingest queue, watch folders and the selection."""

    opened = Signal()  # the store is open and the documents are listed
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
        self.db_path = Path(db_path)
        self.config = config
        self.notifications = notifications
        self._client: HaikuRAG | None = None
        self._open_task: asyncio.Future[Any] | None = None
        self._entries: dict[str, LibraryEntry] = {}
        self._jobs: deque[_IngestJob | _DeleteJob] = deque()
        self._worker: asyncio.Task[None] | None = None
        self._current: tuple[str, Operation] | None = None
        self._embed_paused: set[str] = set()  # keys whose embedding the user cancelled
        self._steps_done = 0
        self._steps_total = 0
        self._closed = False
        self._watch: dict[str, dict[str, list[int]]] = {}  # folder -> {uri: [mtime_ns, size]}
        # folder -> URIs the user deleted from the library: a rescan leaves them out, even when
        # they change, until the user adds them again by hand
        self._excluded: dict[str, set[str]] = {}
        self._scans: dict[str, asyncio.Task[None]] = {}
        self._fs_watcher: QFileSystemWatcher | None = None
        self._watch_debounce = QTimer(self)
        self._watch_debounce.setSingleShot(True)
        self._watch_debounce.setInterval(WATCH_DEBOUNCE_MS)
        self._watch_debounce.timeout.connect(self._rescan_all)
        self._watch_poll = QTimer(self)
        self._watch_poll.setInterval(WATCH_POLL_MS)
        self._watch_poll.timeout.connect(self._rescan_all)

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
        client = await asyncio.shield(self._open_task)
        if self._client is None:
            self._client = client
        return self._client

    def start(self) -> asyncio.Task[None]:
        """Open the library, list its documents, resume pending embeddings, start watching."""
        return asyncio.ensure_future(self._start())

    async def _start(self) -> None:
        try:
            await self.ensure_open()
            self._load_watched()
            await self.refresh()
        except Exception as exc:
            self.notifications.report_failure(f"Opening the library at {self.db_path}", exc)
            return
        self.opened.emit()
        self._kick()
        if self._watch:
            self._rescan_all()

    async def aclose(self) -> None:
        """Cancel running work, wait for it to roll back, then close the store."""
        worker, current = self._worker, self._current
        self._closed = True
        if current is not None:
            current[1].cancel()
            try:
                await asyncio.wait_for(current[1].wait(), 30)
            except TimeoutError:
                log.warning("%s did not stop within 30 s", current[1].title)
        if worker is not None and not worker.done():
            worker.cancel()
            await asyncio.wait({worker}, timeout=30)
        self.close()

    def close(self) -> None:
        """Stop the queue, cancel running work and close the store."""
        self._closed = True
        self._watch_debounce.stop()
        self._watch_poll.stop()
        self._stop_fs_watcher()
        self._jobs.clear()
        for task in self._scans.values():
            task.cancel()
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
            watched_folder=previous.watched_folder if previous else self._watching(document.uri),
        )

    def _set_entry(self, entry: LibraryEntry) -> None:
        self._entries[entry.key] = entry
        self.entry_changed.emit(entry)

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
        self.entry_removed.emit(key)

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
            self._enqueue_ingest(file)
        self._kick()

    async def _add_folder(self, folder: Path) -> None:
        from haiku.rag.ingest.pipeline import iter_source_files

        try:
            files = await asyncio.to_thread(iter_source_files, folder)
        except OSError as exc:
            self.notifications.error(f"Cannot read the folder {folder}: {exc.strerror or exc}")
            return
        if not files:
            self.notifications.info(f"{folder.name}: no files to add")
        for file in files:
            self._include(uri_for(file))
            self._enqueue_ingest(file)
        self._kick()

    def _enqueue_ingest(self, path: Path, password: str | None = None, watched: str | None = None) -> None:
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
                watched_folder=watched or self._watching(key),
            )
        self._embed_paused.discard(key)
        self._set_entry(entry)
        self._jobs.append(_IngestJob(key, path, password))
        self._steps_total += 1
        self._emit_overall()

    def _is_pending(self, key: str) -> bool:
        if self._current is not None and self._current[0] == key:
            return True
        return any(job.key == key for job in self._jobs)

    def reingest(self, keys: list[str]) -> None:
        """Run files through ingestion again: changed files are updated, failed ones retried,
        missing vectors completed."""
        for key in keys:
            entry = self._entries.get(key)
            if entry is None:
                continue
            if entry.path is None or not Path(entry.path).is_file():
                self.notifications.error(f"{entry.name}: the original file is no longer at {entry.path}; cannot re-ingest")
                continue
            self._enqueue_ingest(Path(entry.path))
        self._kick()

    def retry_with_password(self, key: str, password: str) -> None:
        entry = self._entries.get(key)
        if entry is None or entry.path is None:
            return
        self._enqueue_ingest(Path(entry.path), password=password)
        self._kick()

    def cancel(self, keys: list[str]) -> None:
        """Cancel queued or running work; a document already searchable stays searchable."""
        for key in keys:
            queued = [job for job in self._jobs if job.key == key]
            for job in queued:
                self._jobs.remove(job)
                self._steps_done += 1
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
        if entry is None or entry.document_id is None:
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
        rescan does not bring it back."""
        excluded = False
        for key in keys:
            folder = self._watching(key)
            if folder is not None and key not in self._excluded.setdefault(folder, set()):
                self._excluded[folder].add(key)
                excluded = True
        if excluded:
            self._save_watched()
        self._delete(keys)

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

    def _delete(self, keys: list[str]) -> None:
        """Remove documents from the library (queued work for them is cancelled first)."""
        for key in keys:
            entry = self._entries.get(key)
            if entry is None:
                continue
            self.cancel([key])
            if entry.document_id is None:
                self._remove_entry(key)
                continue
            self._jobs.append(_DeleteJob(key, entry.document_id))
            self._steps_total += 1
        self._emit_overall()
        self._kick()

    # --- the write queue --------------------------------------------------------------------

    def _kick(self) -> None:
        if self._closed or (self._worker is not None and not self._worker.done()):
            return
        if not self._jobs and not self._embeddable():
            return
        self._worker = asyncio.ensure_future(self._work())
        self.busy_changed.emit(True)

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
                if self._jobs:  # every queued file is parsed before any embedding starts
                    job = self._jobs.popleft()
                    if isinstance(job, _IngestJob):
                        await self._run_ingest(job)
                    else:
                        await self._run_delete(job)
                    self._steps_done += 1
                    self._emit_overall()
                    continue
                pending = self._embeddable()
                if not pending:
                    break
                self._steps_total += 1
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
            self._emit_overall()
            if not self._closed:
                self.busy_changed.emit(False)

    def _emit_overall(self) -> None:
        self.overall_progress.emit(self._steps_done, self._steps_total)

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

    async def _run_ingest(self, job: _IngestJob) -> None:
        client = self.client
        self._update(job.key, state=DocumentState.PARSING, stage="reading", done=0, total=0)

        async def body(token: Any, report: Any) -> IngestOutcome:
            return await client.ingest_file(job.path, password=job.password, progress=report, cancel=token, embed=False)

        operation = Operation(f"Adding {job.path.name}", body)  # no parent: it may outlive close()
        operation.setProperty("entry_key", job.key)
        finished = await self._run_operation(job.key, operation)
        if not finished:
            self._after_cancel(job.key)
        elif operation.error is not None:
            self._fail(job.key, "damaged", str(operation.error))
            self.notifications.report_failure(operation.title, operation.error)
        else:
            self._apply_outcome(job.key, operation.result)

    def _apply_outcome(self, key: str, outcome: IngestOutcome) -> None:
        previous = self._entries.get(key)
        if previous is None:  # deleted while it was being ingested
            if outcome.document is not None:
                self._jobs.append(_DeleteJob(key, outcome.document.id))
                self._steps_total += 1
            return
        if outcome.status == "failed" or outcome.document is None:
            self._fail(key, outcome.category or "damaged", outcome.reason or "ingest failed")
            entry = self._entries.get(key)
            if entry is not None and entry.needs_password:
                self.password_required.emit(entry)
            else:
                name = entry.name if entry else key
                self.notifications.error(f"{name}: {outcome.reason}", (entry.hint if entry else ""))
            return
        self._set_entry(self._entry_from_document(outcome.document, previous))

    def _fail(self, key: str, category: str, reason: str) -> None:
        entry = self._entries.get(key)
        if entry is None:
            return
        if entry.document_id is not None and category not in ("password_required", "wrong_password"):
            # The stored document is untouched by a failed re-ingest: keep showing it as searchable,
            # and say why the update failed.
            self.notifications.error(f"{entry.name} was not updated: {reason}")
            asyncio.ensure_future(self._restore(key))
            return
        self._update(key, state=DocumentState.FAILED, category=category, reason=reason, stage="", done=0, total=0)

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
        if not finished:
            self._embed_paused.add(key)
            await self._restore(key)
        elif operation.error is not None:
            self._embed_paused.add(key)  # do not retry in a loop; re-ingest retries
            self.notifications.report_failure(operation.title, operation.error)
            await self._restore(key)
        else:
            self._set_entry(self._entry_from_document(operation.result, self._entries.get(key)))

    async def _run_delete(self, job: _DeleteJob) -> None:
        from haiku.rag.errors import DocumentNotFoundError

        try:
            await self.client.delete_document(job.document_id)
        except DocumentNotFoundError:
            pass
        except Exception as exc:
            self.notifications.report_failure(f"Deleting {job.key}", exc)
            return
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
        from haiku.rag.store.engine import sql_in

        if document_ids is not None and not document_ids:
            return []
        client = await self.ensure_open()
        filter = sql_in("id", document_ids) if document_ids is not None else None
        results = await client.search(query, limit=limit, filter=filter)
        return await client.expand_context(results)

    # --- watch folders ----------------------------------------------------------------------

    @property
    def watched_folders(self) -> list[str]:
        return sorted(self._watch)

    def _watch_file(self) -> Path:
        if "://" not in str(self.db_path):
            return self.db_path / WATCH_FILE_NAME
        digest = hashlib.sha1(str(self.db_path).encode()).hexdigest()[:12]
        return self.config.storage.data_dir / f"haiku-desk-watched-{digest}.json"

    def _load_watched(self) -> None:
        path = self._watch_file()
        try:
            data = json.loads(path.read_text()) if path.is_file() else {}
        except (OSError, ValueError) as exc:
            self.notifications.error(f"Cannot read the watched folders list {path}: {exc}")
            data = {}
        folders = data.get("folders", {})
        self._watch = {folder: dict(info.get("files", {})) for folder, info in folders.items()}
        self._excluded = {
            folder: set(info.get("excluded", [])) for folder, info in folders.items() if info.get("excluded")
        }
        self._rewatch()
        self.watched_folders_changed.emit(self.watched_folders)

    def excluded_files(self, folder: str) -> list[str]:
        """URIs in ``folder`` the user deleted from the library, which rescans leave out."""
        return sorted(self._excluded.get(str(Path(folder).expanduser().resolve()), ()))

    def _include(self, uri: str) -> None:
        """The user added ``uri`` by hand: it is no longer excluded from its watched folder."""
        changed = False
        for uris in self._excluded.values():
            if uri in uris:
                uris.discard(uri)
                changed = True
        if changed:
            self._save_watched()

    def _save_watched(self) -> None:
        path = self._watch_file()
        folders: dict[str, dict[str, Any]] = {}
        for folder, files in self._watch.items():
            folders[folder] = {"files": files}
            if self._excluded.get(folder):
                folders[folder]["excluded"] = sorted(self._excluded[folder])
        data = {"version": 1, "folders": folders}  # "excluded" is optional: still version 1
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data))
            tmp.replace(path)
        except OSError as exc:
            self.notifications.error(f"Cannot save the watched folders list {path}: {exc}")

    def add_watched_folder(self, folder: str | os.PathLike[str]) -> asyncio.Task[None] | None:
        """Watch ``folder``: its files are added now and kept in sync on every rescan."""
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            self.notifications.error(f"{path} is not a folder")
            return None
        key = str(path)
        if key not in self._watch:
            self._watch[key] = {}
            self._save_watched()
            self._rewatch()
            self.watched_folders_changed.emit(self.watched_folders)
        return self.rescan(key)

    def remove_watched_folder(self, folder: str, *, delete_documents: bool = False) -> None:
        key = str(Path(folder).expanduser().resolve())
        if self._watch.pop(key, None) is None:
            return
        self._excluded.pop(key, None)  # its exclusions meant "not from this folder"
        self._save_watched()
        self._rewatch()
        self.watched_folders_changed.emit(self.watched_folders)
        inside = [e.key for e in self._entries.values() if e.watched_folder == key]
        if delete_documents:
            self._delete(inside)
        else:
            for k in inside:
                self._update(k, watched_folder=None)

    def _watching(self, uri: str) -> str | None:
        path = path_from_uri(uri)
        if path is None:
            return None
        for folder in self._watch:
            if path.startswith(folder.rstrip("/") + "/"):
                return folder
        return None

    def rescan(self, folder: str | None = None) -> asyncio.Task[None] | None:
        """Re-scan one watched folder (or all): new and changed files are queued, documents of
        removed files deleted. Returns the scan task (the last one when scanning all)."""
        task = None
        for key in [folder] if folder else list(self._watch):
            if key not in self._watch:
                continue
            running = self._scans.get(key)
            if running is not None and not running.done():
                task = running
                continue
            task = asyncio.ensure_future(self._scan(key))
            self._scans[key] = task
        return task

    @Slot()
    def _rescan_all(self) -> None:
        if not self._closed:
            self.rescan()

    async def _scan(self, folder: str) -> None:
        from haiku.rag.ingest.pipeline import iter_source_files

        root = Path(folder)

        def walk() -> dict[str, tuple[Path, list[int]]] | None:
            if not root.is_dir():
                return None
            found = {}
            for file in iter_source_files(root):
                try:
                    st = file.stat()
                except OSError:
                    continue
                found[uri_for(file)] = (file, [st.st_mtime_ns, st.st_size])
            return found

        try:
            await self.ensure_open()
            found = await asyncio.to_thread(walk)
        except Exception as exc:
            self.notifications.report_failure(f"Scanning {folder}", exc)
            return
        if folder not in self._watch:
            return
        if found is None:
            self.notifications.error(f"The watched folder {folder} is missing; its documents are kept")
            self.rescanned.emit(folder)
            return
        known = self._watch[folder]
        excluded = self._excluded.get(folder, set())
        prefix = folder.rstrip("/") + "/"
        stored_here = {
            e.key for e in self._entries.values() if e.path and e.path.startswith(prefix) and e.document_id
        }
        for uri, (file, stat) in found.items():
            if uri in excluded:  # deleted by the user: stays out, changed or not
                continue
            entry = self._entries.get(uri)
            is_new = entry is None or (entry.document_id is None and entry.state is DocumentState.CANCELLED)
            if is_new or known.get(uri) != stat:
                self._enqueue_ingest(file, watched=folder)
            elif entry is not None and entry.watched_folder != folder:
                self._update(uri, watched_folder=folder)
        removed = (set(known) | stored_here) - set(found)
        to_delete = [k for k in removed if k in self._entries]
        if to_delete:
            self._delete(to_delete)  # the file is gone: not an exclusion
        self._watch[folder] = {uri: stat for uri, (_, stat) in found.items()}
        self._save_watched()
        self._rewatch()
        self._kick()
        self.rescanned.emit(folder)

    def _rewatch(self) -> None:
        """Point the file-system watcher at the watched folders, their subfolders and files."""
        if self._closed:
            return
        if self._fs_watcher is None:
            self._fs_watcher = QFileSystemWatcher(self)
            self._fs_watcher.directoryChanged.connect(self._on_fs_change)
            self._fs_watcher.fileChanged.connect(self._on_fs_change)
        watcher = self._fs_watcher
        wanted: list[str] = []
        for folder, files in self._watch.items():
            wanted.append(folder)
            for dirpath, dirnames, _ in os.walk(folder):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                wanted.extend(os.path.join(dirpath, d) for d in dirnames)
                if len(wanted) > MAX_WATCHED_PATHS:
                    break
            wanted.extend(p for p in (path_from_uri(u) for u in files) if p)
        wanted = wanted[:MAX_WATCHED_PATHS]
        current = set(watcher.directories()) | set(watcher.files())
        stale = [p for p in current if p not in set(wanted)]
        if stale:
            watcher.removePaths(stale)
        new = [p for p in wanted if p not in current and os.path.exists(p)]
        if new:
            watcher.addPaths(new)
        if self._watch:
            self._watch_poll.start()
        else:
            self._watch_poll.stop()

    def _stop_fs_watcher(self) -> None:
        """Delete the watcher now, on this (the GUI) thread: it owns an inotify descriptor
        registered with the GUI event loop, which must not be left to whichever thread later
        frees this service."""
        watcher, self._fs_watcher = self._fs_watcher, None
        if watcher is not None:
            import shiboken6

            shiboken6.delete(watcher)  # also drops its connections

    @Slot(str)
    def _on_fs_change(self, _path: str) -> None:
        self._watch_debounce.start()
