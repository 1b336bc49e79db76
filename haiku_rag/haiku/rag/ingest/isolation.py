"""Parse sources in a separate worker process, with a time bound.

A bad file may make a parser loop or crash inside C code (PyMuPDF/MuPDF), where no Python
watchdog can stop it and where a crash would take the whole app down with it. So conversion,
item extraction and chunking (``prepare_document``: pure CPU work that never touches the store)
run in one long-lived worker process per Python process:

- the worker reports progress (a page at a time for PDFs); a file that makes **no progress for
  ``processing.parse_timeout_seconds``** is stopped by killing the worker, and reported with
  the ``timeout`` category. A long document that keeps progressing is never cut short;
- a worker that dies (a crash in C code, the OS killing it for memory) is reported with the
  ``parser_failed`` category, and so is an unexpected Python exception in a parser: one bad
  file never stops a folder ingest;
- cancellation is cooperative first (the worker checks a shared flag between pages) and the
  worker is killed if it does not stop within a grace period;
- a killed or dead worker is replaced on the next parse. The worker is spawned (never forked:
  the parent runs LanceDB and ONNX threads) and exits when its parent goes away.

The worker is started lazily and shared by every client in the process, under a lock, so
parses are serialised (one extra process, not one per client).

Frozen applications (PyInstaller) must call ``multiprocessing.freeze_support()`` first thing
in their entry point, as always with the ``spawn`` start method.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import signal
import threading
import time
import traceback
from typing import Any, NoReturn

from haiku.rag.errors import (
    IngestError,
    IngestTimeoutError,
    OperationCancelled,
    ParserFailedError,
)
from haiku.rag.operations import CancelToken, Progress, ProgressCallback, report

log = logging.getLogger("haiku.rag")

CANCEL_GRACE_SECONDS = 5.0
STARTUP_TIMEOUT_SECONDS = 300.0
POLL_SECONDS = 0.05
_SAME_BYTES = "__same_bytes__"  # the stored bytes are the input bytes: not sent back


class _SharedFlagToken(CancelToken):
    """A CancelToken backed by a multiprocessing Event (set by the parent)."""

    def __init__(self, event: Any) -> None:  # noqa: D107 - no super().__init__: other event
        self._event = event


def _worker_main(conn: Any, cancel_event: Any) -> None:
    """The worker loop: one ``("prepare", kwargs)`` request at a time."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    from haiku.rag.ingest.pipeline import prepare_document

    token = _SharedFlagToken(cancel_event)
    _warm_up(prepare_document)
    conn.send(("ready", None))  # imports done: the parent starts the file's clock now

    def forward(progress: Progress) -> None:
        conn.send(("progress", progress))

    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):
            return  # the parent has gone
        if kind == "stop":
            return
        data = payload.pop("data")
        try:
            new = prepare_document(data, progress=forward, cancel=token, **payload)
            if new.source_bytes is data:
                new.source_bytes = _SAME_BYTES  # type: ignore[assignment]
            message: tuple[str, Any] = ("ok", new)
        except (IngestError, OperationCancelled) as exc:
            message = ("error", exc)
        except BaseException as exc:  # a parser bug: report it, keep serving
            message = ("bug", (type(exc).__name__, _first_line(exc), traceback.format_exc()))
        try:
            conn.send(message)
        except (EOFError, OSError):
            return


def _warm_up(prepare_document: Any) -> None:
    """Load the chunker's tokenizer and lazy imports now, outside any file's clock."""
    try:
        from haiku.rag.config import AppConfig

        prepare_document(b"# Warm-up\n\nA short paragraph.", filename="warm-up.md", uri="warm-up", config=AppConfig())
    except Exception:  # the real parse will report whatever is wrong
        log.debug("parser warm-up failed", exc_info=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""


class ParseWorker:
    """One worker process, replaced whenever it has to be killed or dies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: Any = None
        self._conn: Any = None
        self._cancel: Any = None

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before the first parse)."""
        return self._process.pid if self._process is not None and self._process.is_alive() else None

    def _ensure_started(self) -> None:
        if self._process is not None and self._process.is_alive():
            return
        self._discard()
        context = multiprocessing.get_context("spawn")
        parent_end, child_end = context.Pipe()
        cancel = context.Event()
        process = context.Process(
            target=_worker_main, args=(child_end, cancel), name="haiku-rag-parser", daemon=True
        )
        process.start()
        child_end.close()
        self._process, self._conn, self._cancel = process, parent_end, cancel
        # Imports (PyMuPDF, docling-core) take seconds on a busy machine: not the file's time.
        try:
            ready = parent_end.poll(STARTUP_TIMEOUT_SECONDS) and parent_end.recv()[0] == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            self._discard()
            raise ParserFailedError(
                "the parser process could not be started; see the log for details"
            )

    def _discard(self) -> None:
        """Kill the worker (if any) and forget it."""
        process, conn = self._process, self._conn
        self._process = self._conn = self._cancel = None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()
        if process is not None:
            if process.is_alive():
                process.kill()
            process.join(timeout=10)
            with contextlib.suppress(ValueError):
                process.close()

    def stop(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(OSError):
                    self._conn.send(("stop", None))
            self._discard()

    def prepare(
        self,
        data: bytes,
        *,
        timeout: float,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
        **kwargs: Any,
    ) -> Any:
        """``prepare_document(data, **kwargs)`` in the worker; see the module docstring."""
        source = kwargs.get("uri") or kwargs.get("filename") or "source"
        with self._lock:
            self._ensure_started()
            self._cancel.clear()
            try:
                self._conn.send(("prepare", {"data": data, **kwargs}))
            except (OSError, EOFError):  # died between two parses: start afresh once
                self._discard()
                self._ensure_started()
                self._conn.send(("prepare", {"data": data, **kwargs}))
            result = self._wait(source, timeout, progress, cancel)
        if result.source_bytes == _SAME_BYTES:
            result.source_bytes = data
        return result

    def _wait(
        self,
        source: str,
        timeout: float,
        progress: ProgressCallback | None,
        cancel: CancelToken | None,
    ) -> Any:
        deadline = time.monotonic() + timeout
        cancel_deadline: float | None = None
        while True:
            now = time.monotonic()
            if cancel is not None and cancel.cancelled and cancel_deadline is None:
                self._cancel.set()
                cancel_deadline = now + CANCEL_GRACE_SECONDS
            if cancel_deadline is not None and now >= cancel_deadline:
                self._discard()
                raise OperationCancelled("operation cancelled")
            if cancel_deadline is None and now >= deadline:
                self._discard()
                raise IngestTimeoutError(
                    f"{_name(source)}: parsing made no progress for {timeout:g} s and was "
                    "stopped (processing.parse_timeout_seconds)",
                    source=source,
                )
            try:
                ready = self._conn.poll(POLL_SECONDS)
                message = self._conn.recv() if ready else None
            except (EOFError, OSError):
                message = None
                ready = True
            if not ready:
                if not self._process.is_alive() and not self._conn.poll(0):
                    self._raise_died(source)
                continue
            if message is None:
                self._raise_died(source)
            kind, payload = message
            if kind == "progress":
                deadline = time.monotonic() + timeout
                report(progress, payload)
            elif kind == "ok":
                return payload
            elif kind == "error":
                raise payload
            else:  # "bug"
                name, text, trace = payload
                log.warning("parser error on %s:\n%s", source, trace)
                raise ParserFailedError(
                    f"{_name(source)}: the parser failed on this file ({name}: {text})",
                    source=source,
                )

    def _raise_died(self, source: str) -> NoReturn:
        process = self._process
        process.join(timeout=5)
        code = process.exitcode
        self._discard()
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        raise ParserFailedError(
            f"{_name(source)}: the parser process stopped while reading this file ({how}); "
            "the file is probably damaged",
            source=source,
        )


def _name(source: str) -> str:
    return source.rsplit("/", 1)[-1] or source


_shared: ParseWorker | None = None
_shared_lock = threading.Lock()


def shared_worker() -> ParseWorker:
    """The process-wide parse worker (created on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ParseWorker()
        return _shared
