"""The library's write queue and its runner: ingests, embeddings and deletes, one at a time.

Jobs are kept in the library's queue file (:mod:`~haiku_desk.services.work_queue`) until
done, so work that Quit interrupts is resumed at the next start. Every queued file is parsed
before any embedding starts: documents are searchable by full text first, then by meaning.
Each job is one :class:`~haiku_desk.bridge.Operation`; the runner reports its progress with
``progressed(key, Progress)`` (the row's key, not the operation's identity) and keeps the rows
(:class:`~haiku_desk.services.rows.DocumentRows`) in step with what each job did.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from haiku.rag.errors import IngestCategory
from haiku_desk.bridge import Operation
from haiku_desk.services import failures
from haiku_desk.services.entries import (
    DocumentState,
    LibraryEntry,
    OverallStatus,
    PendingWork,
    uri_for,
)
from haiku_desk.services.jobs import ProgressHook, embedding_operation, ingest_operation
from haiku_desk.services.notifications import FAILED_FILES, Notifications
from haiku_desk.services.rows import DocumentRows
from haiku_desk.services.work_queue import DeleteJob, IngestJob, Job, WorkQueue

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG, IngestOutcome
    from haiku.rag.operations import Progress
    from haiku.rag.store.models import Document

__all__ = ["QueueRunner"]

log = logging.getLogger("haiku_desk.library")

CANCELLED_REASON = "cancelled before it was added: it is not in the library"

# The overall bar follows the work, not the number of jobs: a page parsed and a chunk embedded
# are its units, weighed by what each costs on a laptop (docs/benchmarks.md: parse + chunk runs
# at ~50-230 pages/s, the offline embedder at ~18 chunks/s, so a chunk costs about five pages).
PAGE_COST = 1
CHUNK_COST = 5
DELETE_COST = 1
# A page read by text recognition (OCR): ~1-3 s on a laptop, against ~10 ms for a page with a
# text layer (docs/benchmarks.md); weighed lower than that ratio, as its count is learnt late.
OCR_PAGE_COST = 50
# A file's last steps once its pages are read (chunking, storing): so the bar reads full only
# when the last file is in, not when its last page was parsed.
STORE_COST = 1
# Until a file's parse reports its pages, and its ingest its chunks, they are estimated:
ESTIMATED_PAGES = 10  # a file not seen before
CHUNKS_PER_PAGE = 2.5  # the real-world PDFs' average (2,775 chunks over 1,144 pages)


@dataclass
class _Work:
    """One file's (or delete's) part of the overall bar, in cost units: its parse and its
    embedding, each estimated until the work reports its real size."""

    parse_total: float = 0.0
    parse_done: float = 0.0
    ocr_total: float = 0.0  # its pages read by text recognition, once the parse finds them
    ocr_done: float = 0.0
    embed_total: float = 0.0
    embed_done: float = 0.0
    stopped: bool = False  # ended: late reports change nothing
    parsed: bool = False  # its ingest ended (read, or failed)
    failed: bool = False  # its ingest ended without a searchable document
    embedded: bool = False  # its vectors were all made
    reading_round: int = 0  # the reading phase it was read in (see QueueRunner._reading_round)
    delete: bool = False

    @property
    def reads(self) -> bool:
        """A file read in this busy period (its parse done or to come)."""
        return not self.delete and (self.parsed or (not self.stopped and self.parse_total > 0))

    @property
    def reading_left(self) -> bool:
        return self.reads and not self.parsed and not self.stopped

    @property
    def embeds(self) -> bool:
        """A file embedded in this busy period (its vectors made or to come)."""
        return not self.delete and (self.embedded or (not self.stopped and self.embed_total > 0))

    @property
    def read_total(self) -> float:
        store = STORE_COST if self.reads else 0
        return self.parse_total + self.ocr_total + store

    @property
    def read_done(self) -> float:
        store = STORE_COST if self.reads and self.parsed else 0
        return min(self.parse_done, self.parse_total) + min(self.ocr_done, self.ocr_total) + store

    @property
    def total(self) -> float:
        return self.read_total + self.embed_total

    @property
    def done(self) -> float:
        return self.read_done + min(self.embed_done, self.embed_total)

    def stop(self) -> None:
        """Nothing more will be done: what remains leaves the total."""
        self.parse_total = min(self.parse_done, self.parse_total)
        self.ocr_total = min(self.ocr_done, self.ocr_total)
        self.embed_total = min(self.embed_done, self.embed_total)
        self.stopped = True


class QueueRunner(QObject):
    """Runs one library's queued writes in order, one at a time (:meth:`attach` starts over)."""

    # the phase under way and how far it is (OverallStatus: reading files, then embedding
    # them; units are pages parsed or chunks embedded, weighed: see PAGE_COST); idle: phase ""
    overall_progress = Signal(object)
    busy_changed = Signal(bool)
    password_required = Signal(object)  # LibraryEntry of a locked PDF
    progressed = Signal(str, object)  # the row's key, haiku.rag.operations.Progress
    drained = Signal()  # the queue ran dry (not at close)

    def __init__(
        self,
        rows: DocumentRows,
        notifications: Notifications,
        open_client: Callable[[], Awaitable[HaikuRAG]],
        include: Callable[[str], None],
        folder_of: Callable[[str], str | None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._rows = rows
        self._notifications = notifications
        self._open_client = open_client
        self._include = include  # a watched folder's file is welcome again (its delete was cancelled)
        self._folder_of = folder_of
        self.ingest_progress_hook: ProgressHook | None = None  # see jobs.ProgressHook
        self.progressed.connect(rows.show_progress)
        self._queue = WorkQueue(None, notifications.error)
        self.attach(None)

    def attach(self, app_folder: Path | None) -> None:
        """Start over with the queue file of the library whose app folder is ``app_folder``."""
        self._queue = WorkQueue(app_folder, self._notifications.error)
        self._resumable: list[Job] = []  # the jobs the last session left, read by load()
        self._worker: asyncio.Task[None] | None = None
        self._current: tuple[str, Operation] | None = None
        self._embed_paused: set[str] = set()  # keys whose embedding the user cancelled
        self._work_items: dict[str, _Work] = {}  # this busy period's work, by row key ("delete:" + key)
        self._shown = 0.0  # the fraction the bar shows (it never goes back within a phase)
        self._counted = 0.0  # the phase's work done when the bar last moved
        self._phase = ""
        self._detail = ""  # the running file's heavy step ("text recognition 2 of 4 pages")  # the phase the bar shows
        self._reading_round = 0  # a reading phase after an embedding one counts its own files
        self._closed = False

    @property
    def busy(self) -> bool:
        return self._worker is not None and not self._worker.done()

    @property
    def embedding_paused(self) -> frozenset[str]:
        """Rows whose embedding the user cancelled (kept across starts in rows.json)."""
        return frozenset(self._embed_paused)

    def pause_embedding(self, keys: set[str] | frozenset[str]) -> None:
        """Embeddings the user cancelled in an earlier session: not resumed (Re-ingest does)."""
        self._embed_paused |= set(keys)

    def load(self) -> None:
        """Read the jobs the last session did not finish (queued again by :meth:`resume`)."""
        self._resumable = self._queue.load()

    def resume(self) -> int:
        """Queue again the jobs the last session did not finish, in their order."""
        jobs, self._resumable = self._resumable, []
        for job in jobs:
            if isinstance(job, IngestJob):
                self.enqueue_ingest(job.path, watched=job.watched, force=job.force)
            else:
                entry = self._rows.entry(job.key)
                if entry is None or entry.document_id != job.document_id:
                    continue  # already gone
                self._queue_delete(entry)
        self._queue.save()
        return len(jobs)

    def pending_work(self) -> PendingWork:
        running = self._current[1].title if self._current is not None else None
        counts = self._queue.counts()
        embeddings = len(self._embeddable())  # the one being embedded is not among them
        return PendingWork(running, counts["ingest"], counts["delete"], embeddings)

    # --- queueing ---------------------------------------------------------------------------

    def enqueue_ingest(
        self,
        path: Path,
        password: str | None = None,
        watched: str | None = None,
        *,
        force: bool = False,
        by_hand: bool = False,
    ) -> None:
        """Queue ``path``'s ingest. ``force`` (the person's Re-ingest) reads it again even when
        it is stored unchanged, and makes a waiting plain add of it a forced one; ``by_hand``
        (Add files, a drop) says so when it is unchanged."""
        key = uri_for(path)
        if self._is_pending(key):
            if force:
                self._queue.force(key)
            return
        previous = self._rows.entry(key)
        if previous is not None:
            entry = replace(previous, state=DocumentState.QUEUED, category=None, reason=None, stage="", done=0, total=0)
        else:
            entry = LibraryEntry(
                key=key,
                name=path.name,
                state=DocumentState.QUEUED,
                path=str(path.resolve()),
                watched_folder=watched or self._folder_of(key),
            )
        self._embed_paused.discard(key)
        self._rows.set(entry)
        self._queue.append(IngestJob(key, path.resolve(), password, watched, force=force, by_hand=by_hand))
        pages = previous.page_count if previous is not None and previous.page_count else ESTIMATED_PAGES
        self._work_items[key] = _Work(
            parse_total=pages * PAGE_COST,
            embed_total=pages * CHUNKS_PER_PAGE * CHUNK_COST,
            reading_round=self._reading_round,
        )
        self.emit_overall()

    def remove_documents(self, keys: list[str]) -> None:
        """Remove documents from the library (queued work for them is cancelled first)."""
        for key in keys:
            entry = self._rows.entry(key)
            if entry is None or entry.state is DocumentState.DELETING:
                continue
            self.cancel([key])
            if entry.document_id is None:
                self._rows.remove(key)
                continue
            self._queue_delete(entry)
        self.emit_overall()
        self.kick()

    def _queue_delete(self, entry: LibraryEntry) -> None:
        assert entry.document_id is not None
        self._queue.append(DeleteJob(entry.key, entry.document_id))
        self._work_items["delete:" + entry.key] = _Work(parse_total=DELETE_COST, delete=True)
        self._rows.update(entry.key, state=DocumentState.DELETING, stage="", done=0, total=0)

    def _is_pending(self, key: str) -> bool:
        if self._current is not None and self._current[0] == key:
            return True
        return self._queue.has(key)

    def cancel(self, keys: list[str]) -> None:
        """Cancel queued or running work; a document already searchable stays searchable, and
        a document whose delete was still queued stays in the library."""
        for key in keys:
            for job in self._queue.remove(key):
                self._stop_work(job.key if isinstance(job, IngestJob) else "delete:" + job.key)
                if isinstance(job, DeleteJob):
                    self._include(key)  # not deleted after all: rescans may bring it again
                self._after_cancel(key)
            if self._current is not None and self._current[0] == key:
                self._current[1].cancel()
            entry = self._rows.entry(key)
            if entry is not None and entry.state is DocumentState.TEXT:
                self._embed_paused.add(key)
        self.emit_overall()

    def _after_cancel(self, key: str) -> None:
        entry = self._rows.entry(key)
        if entry is None:
            return
        if entry.document_id is not None:
            if entry.state is DocumentState.EMBEDDING or entry.state is DocumentState.QUEUED:
                self._embed_paused.add(key)
            asyncio.ensure_future(self.restore(key))
        else:
            # The row stays (and is kept across starts) saying so, with Re-ingest and Remove.
            self._rows.update(
                key,
                state=DocumentState.CANCELLED,
                category=IngestCategory.CANCELLED,
                reason=CANCELLED_REASON,
                stage="",
                done=0,
                total=0,
            )

    async def restore(self, key: str) -> None:
        """After a cancel or a failed update, show a stored document's real state again."""
        entry = self._rows.entry(key)
        if entry is None or entry.document_id is None or self._closed:
            return
        try:
            client = await self._open_client()
            document = await client.get_document(entry.document_id)
        except Exception:
            self._rows.remove(key)
            return
        current = self._rows.entry(key)
        if current is not None and not self._is_pending(key):
            self._rows.set(self._rows.from_document(document, current))

    # --- running ----------------------------------------------------------------------------

    def kick(self) -> None:
        """Start the worker when there is work and it is idle."""
        if self._closed or (self._worker is not None and not self._worker.done()):
            return
        if not self._queue and not self._embeddable():
            return
        self._worker = asyncio.ensure_future(self._work())
        self.busy_changed.emit(True)

    def _embeddable(self) -> list[LibraryEntry]:
        return [
            e
            for e in self._rows.entries
            if e.state is DocumentState.TEXT and e.document_id and e.key not in self._embed_paused
        ]

    async def _work(self) -> None:
        try:
            await self._open_client()
            while not self._closed:
                job = self._queue.take()  # every queued file is parsed before any embedding starts
                if job is not None:
                    await self._run_job(job)
                    continue
                pending = self._embeddable()
                if not pending:
                    break
                self.emit_overall()  # the bar shows the embeddings to come (those resumed at a start too)
                await self._run_embedding(pending[0])
                self.emit_overall()
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # the queue must never die silently
            self._notifications.report_failure("Library queue", exc)
        finally:
            self._worker = None
            self._current = None
            self._work_items = {}
            self._shown = 0.0
            self._counted = 0.0
            self._phase = ""
            self._detail = ""
            if not self._closed:
                self.emit_overall()
                self.busy_changed.emit(False)
                self.drained.emit()

    async def _run_job(self, job: Job) -> None:
        try:
            if isinstance(job, IngestJob):
                await self._run_ingest(job)
            else:
                await self._run_delete(job)
        finally:
            if not self._closed:  # at quit the job stays in the queue file: resumed next start
                self._queue.finish(job)
                if isinstance(job, DeleteJob):
                    self._stop_work("delete:" + job.key, done=True)
                self.emit_overall()

    # --- the overall bar: the work done of the work in this busy period ---------------------

    def _stop_work(self, key: str, *, done: bool = False) -> None:
        work = self._work_items.get(key)
        if work is None:
            return
        if done:
            work.parse_done = work.parse_total
        work.stop()

    def _note_progress(self, key: str, progress: Progress) -> None:
        """A running job's report: the work it has done, and its real size once known."""
        from haiku.rag.operations import Stage

        work = self._work_items.setdefault(key, _Work())
        if work.stopped:
            return
        if progress.stage is Stage.EMBEDDING:
            if progress.total:
                work.embed_total = progress.total * CHUNK_COST
            work.embed_done = progress.done * CHUNK_COST
        elif progress.stage is Stage.RECOGNISING and progress.total:
            work.ocr_total = progress.total * OCR_PAGE_COST
            work.ocr_done = progress.done * OCR_PAGE_COST
        elif progress.stage is Stage.PARSING and progress.total:
            pages = progress.total * PAGE_COST
            if pages != work.parse_total:
                # the real page count: its chunks are estimated from it until the ingest ends
                work.embed_total = max(work.embed_done, progress.total * CHUNKS_PER_PAGE * CHUNK_COST)
            work.parse_total = pages
            work.parse_done = progress.done * PAGE_COST
        recognising = progress.stage is Stage.RECOGNISING and progress.total and progress.done < progress.total
        noun = "pages" if progress.total != 1 else "page"
        self._detail = f"text recognition {progress.done} of {progress.total} {noun}" if recognising else ""
        self.emit_overall()

    def _parsed(self, key: str, document: Document | None) -> None:
        """An ingest ended: its parse is done, and its embedding is as large as its chunks
        (nothing, when it left no document or its vectors are already there)."""
        work = self._work_items.setdefault(key, _Work(reading_round=self._reading_round))
        work.parse_done = work.parse_total
        work.ocr_done = work.ocr_total
        work.parsed = True
        self._detail = ""
        work.failed = document is None
        if document is None or document.index_state == "hybrid" or key in self._embed_paused:
            work.stop()
        else:
            work.embed_total = max(work.embed_done, document.chunk_count * CHUNK_COST)

    def emit_overall(self) -> None:
        self.overall_progress.emit(self.overall_status())

    def overall_status(self) -> OverallStatus:
        """The phase under way and how far it is: files are read first (and deletes run), then
        embedded; the bar measures that phase alone, so with every file searchable it says so
        and moves with the chunks embedded instead of crawling along a total that was mostly
        embedding. Within a phase it never goes back (an estimate corrected upwards holds it
        still until the work catches up)."""
        # Files whose vectors are still to come are counted too (text-searchable documents of
        # an earlier session among them), so the bar never reads full before the last vector.
        if not self._work_items:
            waiting = self._embeddable() if self.busy else []
        else:
            waiting = [e for e in self._embeddable() if e.key not in self._work_items]
        for entry in waiting:
            self._work_items[entry.key] = _Work(embed_total=max(1, entry.chunk_count) * CHUNK_COST)
        items = list(self._work_items.values())
        deletes = [w for w in items if w.delete]
        removing = sum(1 for w in deletes if not w.stopped and w.done < w.total)
        if any(w.reading_left for w in items) or removing:
            if self._phase == "embedding":  # files added while others embed: a reading of their own
                self._reading_round += 1
                for work in items:
                    if work.reading_left:
                        work.reading_round = self._reading_round
            reading = [w for w in items if w.reads and w.reading_round == self._reading_round]
            phase = "reading" if reading else "removing"
            counted = reading + deletes
            done = sum(w.read_done for w in counted)
            total = sum(w.read_total for w in counted)
            files_done = sum(1 for w in reading if w.parsed)
            files_total = len(reading)
        else:
            embedding = [w for w in items if w.embeds]
            phase = "embedding" if any(not w.stopped and w.embed_done < w.embed_total for w in embedding) else ""
            done = sum(min(w.embed_done, w.embed_total) for w in embedding)
            total = sum(w.embed_total for w in embedding)
            files_done = sum(1 for w in embedding if w.embedded)
            files_total = len(embedding)
        if not phase or not total:
            self._shown, self._counted, self._phase = 0.0, 0.0, ""
            return OverallStatus()
        if phase != self._phase:
            self._shown, self._phase = min(1.0, done / total), phase
        elif done >= total:
            self._shown = 1.0
        elif done > self._counted:
            # what is left of the bar shares out what is left of the work: the work done since
            # the bar last moved moves it by its share of the work that was left then. A total
            # found larger than estimated (a long file, pages needing OCR) never stalls the bar
            # nor moves it back; with the total known it is simply done / total.
            self._shown += (1.0 - self._shown) * (done - self._counted) / (total - self._counted)
        self._counted = done
        total_units = max(1, round(total))
        return OverallStatus(
            phase=phase,
            done=min(total_units, math.ceil(self._shown * total_units - 1e-9)),
            total=total_units,
            files_done=files_done,
            files_total=files_total,
            removing=removing,
            all_searchable=not any(w.failed for w in items),
            detail=self._detail if phase == "reading" else "",
        )

    async def _run_operation(self, key: str, operation: Operation) -> bool:
        """Run one operation to its end; False when it was cancelled."""
        cancelled: list[bool] = []
        self._current = (key, operation)
        operation.progressed.connect(lambda progress: self._note_progress(key, progress))
        operation.progressed.connect(lambda progress: self.progressed.emit(key, progress))
        operation.cancelled.connect(lambda: cancelled.append(True))
        operation.start()
        try:
            await operation.wait()
        finally:
            self._current = None
        return not cancelled and not operation.token.cancelled

    async def _run_ingest(self, job: IngestJob) -> None:
        client = await self._open_client()
        self._rows.update(job.key, state=DocumentState.PARSING, stage="reading", done=0, total=0)
        operation = ingest_operation(client, job, self.ingest_progress_hook)
        finished = await self._run_operation(job.key, operation)
        if self._closed:
            return  # quitting: whatever happened, the job is resumed at the next start
        outcome = operation.result if finished and operation.error is None else None
        self._parsed(job.key, outcome.document if outcome is not None and outcome.status != "failed" else None)
        if not finished:
            self._after_cancel(job.key)
        elif operation.error is not None:
            exc = operation.error
            category, reason = failures.describe_exception(exc, job.path.name)
            log.error("ingesting %s failed (%s): %s", job.path, category.value, reason, exc_info=exc)
            self._fail(job.key, category, reason)
        else:
            self._apply_outcome(job.key, operation.result)
            if operation.result.status == "unchanged" and job.by_hand and (entry := self._rows.entry(job.key)):
                self._notifications.info(f"{entry.name}: unchanged — already in the library", key=job.key)
            same = operation.result.same_as
            if same is not None and (entry := self._rows.entry(job.key)):
                other = self._rows.entry_for_document(same.id)
                # named by their files: a copy has its original's title
                this_file = _file_label(entry) or entry.name
                other_file = (_file_label(other) if other else "") or same.uri
                titled = "" if entry.name in (Path(this_file).stem, Path(other_file).stem) else f" (“{entry.name}”)"
                self._notifications.info(
                    f"{this_file} is the same file as {other_file}{titled}, already in the library",
                    "Both are searched, so an answer can cite the same passage twice: delete one of them.",
                    key=f"same:{job.key}",
                    lasting=True,
                )

    def _apply_outcome(self, key: str, outcome: IngestOutcome) -> None:
        previous = self._rows.entry(key)
        if previous is None:  # deleted while it was being ingested
            if outcome.document is not None:
                self._queue.append(DeleteJob(key, outcome.document.id))
                self._work_items["delete:" + key] = _Work(parse_total=DELETE_COST, delete=True)
            return
        if outcome.status == "failed" or outcome.document is None:
            category = outcome.category or IngestCategory.UNEXPECTED
            reason = failures.plain_reason(outcome.reason or "ingest failed", previous.name)
            log.info("%s failed (%s): %s", key, category.value, reason)
            self._fail(key, category, reason)
            return
        self._rows.set(self._rows.from_document(outcome.document, previous))

    def _fail(self, key: str, category: IngestCategory, reason: str) -> None:
        entry = self._rows.entry(key)
        if entry is None:
            return
        password = category in (IngestCategory.PASSWORD_REQUIRED, IngestCategory.WRONG_PASSWORD)
        if entry.document_id is not None and not password:
            # The stored document is untouched by a failed re-ingest: keep showing it as searchable,
            # and say why the update failed.
            self._notifications.error(f"{entry.name} was not updated: {reason}", failures.hint(category))
            asyncio.ensure_future(self.restore(key))
            return
        entry = self._rows.update(
            key, state=DocumentState.FAILED, category=category, reason=reason, stage="", done=0, total=0
        )
        if entry is None:
            return
        if entry.needs_password:
            self.password_required.emit(entry)
        else:
            self._notifications.error(f"{entry.name}: {reason}", entry.hint, key=key, group=FAILED_FILES)

    async def _run_embedding(self, entry: LibraryEntry) -> None:
        client = await self._open_client()
        key = entry.key
        self._rows.update(key, state=DocumentState.EMBEDDING, stage="embedding", done=0, total=entry.chunk_count)
        operation = embedding_operation(client, entry)
        finished = await self._run_operation(key, operation)
        if self._closed:
            return  # its vectors are completed at the next start
        work = self._work_items.get(key)
        if work is not None and finished and operation.error is None:
            work.embed_done = work.embed_total
            work.embedded = True
        self._stop_work(key)  # its vectors are all there, or none more will be made now
        if not finished:
            self._embed_paused.add(key)
            await self.restore(key)
        elif operation.error is not None:
            self._embed_paused.add(key)  # do not retry in a loop; re-ingest retries
            self._notifications.report_failure(operation.title, operation.error)
            await self.restore(key)
        else:
            self._rows.set(self._rows.from_document(operation.result, self._rows.entry(key)))

    async def _run_delete(self, job: DeleteJob) -> None:
        from haiku.rag.errors import DocumentNotFoundError

        try:
            client = await self._open_client()
            await client.delete_document(job.document_id)
        except DocumentNotFoundError:
            pass
        except Exception as exc:
            if self._closed:
                return
            self._notifications.report_failure(f"Deleting {job.key}", exc)
            await self.restore(job.key)
            return
        if not self._closed:
            self._rows.remove(job.key)

    # --- stopping ---------------------------------------------------------------------------

    def halt(self) -> Operation | None:
        """Stop taking jobs and cancel the running one (returned, to wait for); every job not
        done stays in the queue file, resumed at the next start."""
        self._closed = True
        self._queue.save()  # the running job stays in it: resumed at the next start
        current = self._current[1] if self._current is not None else None
        if current is not None:
            current.cancel()
        return current

    async def wait_stopped(self, current: Operation | None, timeout: float) -> bool:
        """Wait up to ``timeout`` for ``current`` (from :meth:`halt`) to roll back, then end the
        worker; whether both stopped in time."""
        worker = self._worker
        stopped = True
        if current is not None:
            try:
                await asyncio.wait_for(asyncio.shield(current.wait()), timeout)
            except TimeoutError:
                log.warning("%s did not stop within %g s", current.title, timeout)
                stopped = False
        if worker is not None and not worker.done():
            worker.cancel()
            done, _ = await asyncio.wait({worker}, timeout=1.0)
            stopped = stopped and bool(done)
        return stopped

    def close(self) -> None:
        """Stop now: cancel running work, forget the in-memory queue (its file keeps the jobs)."""
        self._closed = True
        self._queue.clear()
        if self._current is not None:
            self._current[1].cancel()
        if self._worker is not None:
            self._worker.cancel()


def _file_label(entry: LibraryEntry) -> str:
    """A row's file name, as a person recognises it ("copy.pdf")."""
    return entry.file_name or (Path(entry.path).name if entry.path else "")
