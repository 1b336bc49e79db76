"""Progress reporting and cooperative cancellation shared by long library operations.

Long work (parsing, chunking, embedding, folder ingest) takes an optional ``progress``
callback and an optional ``CancelToken``. Workers call ``token.raise_if_cancelled()`` between
pages and batches; the app's operation objects and the CLI's Ctrl-C set the token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from haiku.rag.errors import OperationCancelled


class Stage(StrEnum):
    READING = "reading"
    PARSING = "parsing"
    # OCR of the pages without a usable text layer: done/total count those pages
    RECOGNISING = "recognising text"
    CHUNKING = "chunking"
    STORING = "storing"
    EMBEDDING = "embedding"
    # filling an evidence table (haiku.rag.extraction): done/total count cells
    EXTRACTING = "extracting"
    # fetching a model file (haiku.rag.local_models.download): done/total count bytes
    DOWNLOADING = "downloading"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress report. ``done``/``total`` count pages while parsing, chunks while embedding."""

    stage: Stage
    source: str = ""
    done: int = 0
    total: int = 0
    message: str = ""


ProgressCallback = Callable[[Progress], None]


def report(callback: ProgressCallback | None, progress: Progress) -> None:
    if callback is not None:
        callback(progress)


class CancelToken:
    """A thread-safe flag checked cooperatively by workers."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise OperationCancelled("operation cancelled")


def check_cancelled(token: CancelToken | None) -> None:
    if token is not None:
        token.raise_if_cancelled()


# What stops the parse workers, registered by ``ingest.isolation`` when it is imported: this
# module is imported by all of ingestion, so it names none of it (no import cycle).
_PARSE_WORKER_STOPPERS: list[Callable[[], None]] = []


def on_stop_parse_workers(stop: Callable[[], None]) -> None:
    """Register ``stop`` for ``stop_parse_workers`` (``ingest.isolation`` does, on import)."""
    _PARSE_WORKER_STOPPERS.append(stop)


def stop_parse_workers() -> None:
    """Kill the process-wide parse workers now, if any were started: what a program quitting
    in the middle of an ingest calls, so no child process outlives it (the app's Quit, before it
    waits for the running ingest to roll back). The next parse in this process starts a fresh
    worker. When nothing was ever parsed, the ingest machinery is not even imported."""
    for stop in list(_PARSE_WORKER_STOPPERS):
        stop()
