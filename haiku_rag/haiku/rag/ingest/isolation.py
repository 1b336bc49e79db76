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
- a parse is bounded in memory (``processing.parse_memory_limit_mb`` on top of what the
  worker holds when it starts the file); a file that needs more is reported with the
  ``too_large`` category and the worker is replaced. Two lines of defence: where the OS
  enforces it (Linux), an address-space limit (``RLIMIT_AS``) in the worker makes the
  allocation fail; everywhere, the parent watches the worker's resident memory while it
  waits (``_MemoryWatch``, psutil) and kills a worker that goes over. macOS does not enforce
  ``RLIMIT_AS`` and Windows has none, so there the watchdog is the bound; setting
  ``HAIKU_RAG_PARSE_RLIMIT=off`` in the environment skips the rlimit on Linux too (how the
  watchdog is tested here). The setting bounds the ingest, not each worker: when up to
  ``workers`` parses may run at once, each gets its share (two decompression bombs in one
  folder took 6.8 GB with a 3 GB setting when each worker had the whole of it);
- cancellation is cooperative first (the parent writes "cancel N" on the worker's stdin; the
  worker checks the flag between pages) and the worker is killed if it does not stop within
  a grace period;
- a killed or dead worker is replaced on the next parse. The worker is a fresh interpreter
  started with ``python -c`` (``child_process``: the same start and channels on every OS), not
  through ``multiprocessing``, so scripts using the library need no ``__main__`` guard; it
  exits when its parent goes away (its stdin ends).

The workers form one pool shared by every client in the process (``shared_pool``): a parse
takes an idle worker, so two parses at once (a batch parsing ahead, ``parse_ahead``) run in two
processes on two cores, each with all of the above; a single parse only ever uses the first
worker, started lazily, and the extra workers are stopped when the library goes idle
(``release_extra_workers``, from ``HaikuRAG.release_memory``), so an idle app holds one worker
process.

Frozen applications (PyInstaller), where ``sys.executable`` is the application itself, must
call ``run_worker_if_requested()`` first thing in their entry point: the worker is started as
``<app> --haiku-rag-parse-worker``.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterable, Iterator, Sized
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from haiku.rag.child_process import (
    ChildStartError,
    child_command,
    connect_to_parent,
    kill,
    send_line,
    serve_if_requested,
    start_child,
)
from haiku.rag.errors import (
    IngestError,
    IngestTimeoutError,
    OperationCancelled,
    ParserFailedError,
    SourceTooLargeError,
)
from haiku.rag.ingest.gc_pause import cyclic_gc_paused
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    on_stop_parse_workers,
    report,
)

if TYPE_CHECKING:
    from haiku.rag.config import AppConfig
    from haiku.rag.ingest.records import NewDocument

log = logging.getLogger("haiku.rag")

CANCEL_GRACE_SECONDS = 5.0
STARTUP_TIMEOUT_SECONDS = 300.0
POLL_SECONDS = 0.05
# how often the parent samples a parsing worker's resident memory (``_MemoryWatch``)
MEMORY_POLL_SECONDS = 0.05
# ``HAIKU_RAG_PARSE_RLIMIT=off``: no address-space limit in the worker, the watchdog alone
RLIMIT_ENV = "HAIKU_RAG_PARSE_RLIMIT"
_SAME_BYTES = "__same_bytes__"  # the stored bytes are the input bytes: not sent back


SourceT = TypeVar("SourceT")
ResultT = TypeVar("ResultT")

WORKER_FLAG = "--haiku-rag-parse-worker"


def parse_document(
    data: bytes,
    *,
    filename: str,
    uri: str,
    config: AppConfig,
    title: str | None = None,
    metadata: dict[str, Any] | None = None,
    password: str | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    bibliographic: bool = False,
) -> NewDocument:
    """``pipeline.prepare_document``, in the parse worker process with a time bound unless
    ``processing.parse_isolation`` is ``"none"`` (see above). ``bibliographic``: read a PDF's
    bibliographic record there too, in the same open of the file."""
    kwargs: dict[str, Any] = {
        "filename": filename,
        "uri": uri,
        "config": config,
        "title": title,
        "metadata": metadata,
        "password": password,
        "bibliographic": bibliographic,
    }
    if config.processing.parse_isolation == "none" or not data:
        from haiku.rag.ingest.pipeline import prepare_document

        return prepare_document(data, progress=progress, cancel=cancel, **kwargs)
    return shared_pool().prepare(
        data,
        workers=parse_workers(config.processing),
        timeout=config.processing.parse_timeout_seconds,
        progress=progress,
        cancel=cancel,
        **kwargs,
    )


def run_worker_if_requested(argv: list[str] | None = None) -> None:
    """In a frozen application's entry point: serve as the parse worker if asked to, then exit."""
    serve_if_requested(WORKER_FLAG, _worker_main, argv)


def _worker_main() -> None:
    """The worker loop: one ``("prepare", kwargs)`` request at a time."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    token = CancelToken()
    # the parse in progress and the last one the parent cancelled (their numbers): a late
    # cancel hits no other parse, and one that comes before its parse is set up is not lost
    # (each side writes its number, then reads the other's)
    state = {"current": 0, "cancelled": -1}

    def command(line: str) -> None:
        # The parent asks for a cooperative stop on the control pipe ("cancel N"); the
        # converter checks the token between pages.
        kind, _, number = line.partition(" ")
        if kind == "cancel" and number.isdigit():
            state["cancelled"] = int(number)
            if state["current"] == int(number):
                token.cancel()

    _stdout_to_stderr()
    conn = connect_to_parent(command)
    from haiku.rag.ingest.pipeline import prepare_document

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
        token._event.clear()
        state["current"] = payload.pop("parse_number", 0)
        if state["cancelled"] == state["current"]:
            token.cancel()
        total_mb = payload["config"].processing.parse_memory_limit_mb
        limit_mb = payload.pop("memory_share_mb", None) or total_mb
        try:
            with _memory_limit(limit_mb):
                new = prepare_document(data, progress=forward, cancel=token, **payload)
            if new.source_bytes is data:
                new.source_bytes = _SAME_BYTES  # type: ignore[assignment]
            message: tuple[str, Any] = ("ok", new)
        except BaseException as exc:
            message = _failure_message(exc, payload.get("uri") or payload.get("filename"), limit_mb, total_mb)
        try:
            # Pickling a long document's records allocates a tuple per box: with the collector
            # running, its collections rescanned the worker's whole heap again and again.
            with cyclic_gc_paused():
                conn.send(message)
        except (EOFError, OSError):
            return


# How an allocation refused under the limit shows: MemoryError in Python, a message from
# MuPDF ("code=2: calloc (4104 x 1 bytes) failed"), std::bad_alloc, Rust's alloc error.
_ALLOCATION_FAILED = re.compile(
    r"\b(malloc|calloc|realloc)\b.*\bfailed|out of memory|bad_alloc|memory allocation", re.IGNORECASE
)


@contextlib.contextmanager
def _memory_limit(limit_mb: int) -> Iterator[None]:
    """Bound the address space for one parse: what the worker maps now plus ``limit_mb``.

    Only the soft limit moves, so it is lifted again afterwards (sending the result back
    needs memory too). Linux only: macOS does not enforce RLIMIT_AS, Windows has no rlimit;
    there (and with ``HAIKU_RAG_PARSE_RLIMIT=off``) the parent's watchdog is the bound."""
    if not limit_mb or not rlimit_enforced():
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    bound = mapped + (limit_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (bound if hard == resource.RLIM_INFINITY else min(bound, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def rlimit_enforced() -> bool:
    """Whether a parse's memory bound includes ``RLIMIT_AS`` here (Linux, not turned off)."""
    off = os.environ.get(RLIMIT_ENV, "").strip().lower() in {"0", "off", "false", "no"}
    return sys.platform.startswith("linux") and not off


def too_large_error(source: str | None, limit_mb: int, total_mb: int | None, seen: str = "") -> SourceTooLargeError:
    """The ``too_large`` error of a parse over its memory bound (``seen``: what the watchdog saw)."""
    name = _name(source or "source")
    bound = (
        f"its {limit_mb} MB share of the {total_mb} MB memory limit (parses running at once share it)"
        if total_mb and total_mb != limit_mb
        else f"the {limit_mb} MB memory limit"
    )
    return SourceTooLargeError(
        f"{name}: parsing it needed more than {bound}{seen} and was stopped "
        "(processing.parse_memory_limit_mb); a file this small that needs this much is often a "
        "decompression bomb",
        source=source,
    )


def _failure_message(exc: BaseException, source: str | None, limit_mb: int, total_mb: int | None = None) -> tuple[str, Any]:
    """What the worker sends back for a parse that raised: a refused allocation under the
    limit becomes ``too_large`` (whatever the parser wrapped it in), typed errors pass, any
    other exception is a parser bug."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain and len(chain) < 10:
        chain.append(link)
        link = link.__cause__ or link.__context__
    if limit_mb and any(isinstance(e, MemoryError) or _ALLOCATION_FAILED.search(str(e)) for e in chain):
        return "error", too_large_error(source, limit_mb, total_mb)
    if isinstance(exc, IngestError | OperationCancelled):
        return "error", exc
    return "bug", (type(exc).__name__, _first_line(exc), traceback.format_exc())


def _stdout_to_stderr() -> None:
    """Send what anything in the worker prints to the parent's stderr, not its stdout.

    The worker inherits the parent's standard streams, and the parent's stdout may be a
    result others read (``haiku-rag add-src --json``): a parser library's print, or C code
    writing to fd 1, landed in the middle of the JSON. Both the file descriptor and
    ``sys.stdout`` move, so nothing printed is lost, only kept out of the way. A worker
    without a usable fd 2 (a windowed app on Windows) keeps its streams."""
    try:
        sys.stdout.flush()
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        return
    sys.stdout = sys.stderr


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


class _MemoryWatch:
    """The parent's watch on one parse's memory: the worker's resident set size, sampled while
    the parent waits, against what it held when the parse began plus the parse's share of
    ``processing.parse_memory_limit_mb``. Works on every OS psutil supports: where RLIMIT_AS is
    not enforced it is the only bound; on Linux whichever trips first refuses the file (on the
    flate bomb the two trip within the same 50 ms: address space and resident memory grow
    together while it inflates). The baseline is read once the request is sent, when the
    worker holds the file's bytes, as the rlimit's is."""

    def __init__(self, pid: int, limit_mb: int) -> None:
        self.limit_mb = limit_mb
        self._process: Any = None
        self.baseline = 0
        self.peak = 0
        self._next = 0.0
        if not limit_mb:
            return
        try:
            import psutil

            self._process = psutil.Process(pid)
            self.baseline = self._used()
        except Exception as exc:  # no psutil, or the worker just died: its end is reported
            log.debug("parse memory watch unavailable: %s", exc)
            self._process = None

    @property
    def bound(self) -> int:
        return self.baseline + (self.limit_mb << 20)

    def over(self) -> bool:
        """Whether the worker is over its bound now (sampled at most every MEMORY_POLL_SECONDS)."""
        if self._process is None:
            return False
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + MEMORY_POLL_SECONDS
        try:
            used = self._used()
        except Exception:  # the worker is gone: the caller sees it end
            return False
        self.peak = max(self.peak, used)
        return used > self.bound

    def _used(self) -> int:
        """Resident memory; on Windows at least the private committed bytes too (Windows may
        trim a process's working set, so resident memory alone could stay under the bound
        while the commit charge grows)."""
        info = self._process.memory_info()
        return max(int(info.rss), int(getattr(info, "private", 0)))


class ParseWorker:
    """One worker process, replaced whenever it has to be killed or dies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Any = None
        self._parses = 0  # numbers the parses, so that a cancel names the one it is for

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before the first parse)."""
        return self._process.pid if self._alive() else None

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _command(self) -> list[str]:
        return child_command(WORKER_FLAG, "haiku.rag.ingest.isolation")

    def _ensure_started(self) -> None:
        if self._alive():
            return
        self._discard()
        try:
            process, conn = start_child(self._command(), connect_timeout=STARTUP_TIMEOUT_SECONDS)
        except (ChildStartError, OSError) as exc:
            log.warning("parse worker did not start: %s", exc)
            raise ParserFailedError(
                "the parser process could not be started; see the log for details"
            ) from exc
        self._process, self._conn = process, conn
        # Imports (PyMuPDF, docling-core) take seconds on a busy machine: not the file's time.
        try:
            ready = conn.poll(STARTUP_TIMEOUT_SECONDS) and conn.recv()[0] == "ready"
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
        self._process = self._conn = None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()
        if process is not None:
            kill(process)

    def stop(self) -> None:
        """Stop the worker (also at interpreter exit, even while a parse holds the lock)."""
        locked = self._lock.acquire(timeout=1.0)
        try:
            if locked and self._conn is not None:
                with contextlib.suppress(OSError):
                    self._conn.send(("stop", None))
            self._discard()
        finally:
            if locked:
                self._lock.release()

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
        config = kwargs.get("config")
        total_mb = getattr(getattr(config, "processing", None), "parse_memory_limit_mb", 0) or 0
        limit_mb = kwargs.get("memory_share_mb") or total_mb
        with self._lock:
            self._ensure_started()
            self._parses += 1
            request = ("prepare", {"data": data, "parse_number": self._parses, **kwargs})
            try:
                self._conn.send(request)
            except (OSError, EOFError):  # died between two parses: start afresh once
                self._discard()
                self._ensure_started()
                self._conn.send(request)
            assert self._process is not None
            watch = _MemoryWatch(self._process.pid, limit_mb)
            result = self._wait(source, timeout, progress, cancel, watch, total_mb)
        if result.source_bytes == _SAME_BYTES:
            result.source_bytes = data
        return result

    def _wait(
        self,
        source: str,
        timeout: float,
        progress: ProgressCallback | None,
        cancel: CancelToken | None,
        watch: _MemoryWatch | None = None,
        total_mb: int = 0,
    ) -> Any:
        deadline = time.monotonic() + timeout
        cancel_deadline: float | None = None
        while True:
            now = time.monotonic()
            if cancel is not None and cancel.cancelled and cancel_deadline is None:
                send_line(self._process, f"cancel {self._parses}")
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
            if watch is not None and watch.over():
                self._discard()  # killed at once: a bomb inflating does not wait
                seen = f" ({watch.peak >> 20} MB resident against a bound of {watch.bound >> 20} MB)"
                raise too_large_error(source, watch.limit_mb, total_mb or watch.limit_mb, seen)
            try:
                ready = self._conn.poll(POLL_SECONDS)
                # Unpickling a parsed document makes ~100k objects; with the collector
                # running, their number set off full collections that rescanned this
                # process's heap (LanceDB, the app, the results before it) during each one:
                # 2-3 full collections per pass over the real PDFs, 0-1 paused (the one left
                # comes at the next allocation after the pause; docs/benchmarks.md).
                with cyclic_gc_paused():
                    message = self._conn.recv() if ready else None
            except (EOFError, OSError):
                message = None
                ready = True
            if not ready:
                if self._process.poll() is not None and not self._conn.poll(0):
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
                if isinstance(payload, SourceTooLargeError):  # over the memory limit
                    self._discard()  # its heap is fragmented and may still hold the bomb
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
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        code = process.returncode
        self._discard()
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        raise ParserFailedError(
            f"{_name(source)}: the parser process stopped while reading this file ({how}); "
            "the file is probably damaged",
            source=source,
        )


def _name(source: str) -> str:
    return source.rsplit("/", 1)[-1] or source


class ParsePool:
    """Parse workers handed out one parse at a time: the lowest idle one first, so a lone
    caller always reuses the first worker and a second process exists only while two parses
    overlap. Grows up to the ``workers`` a caller asks for."""

    def __init__(self, worker: Callable[[], ParseWorker] = ParseWorker) -> None:
        self._new_worker = worker
        self._workers: list[ParseWorker] = [worker()]
        self._busy: set[int] = set()
        self._changed = threading.Condition()

    @property
    def first(self) -> ParseWorker:
        return self._workers[0]

    @property
    def pids(self) -> list[int]:
        """The running workers' process ids."""
        return [pid for pid in (w.pid for w in self._workers) if pid is not None]

    def prepare(self, data: bytes, *, workers: int = 1, **kwargs: Any) -> Any:
        """``ParseWorker.prepare`` on an idle worker among the first ``workers`` (waiting for
        one if they are all busy)."""
        workers = max(1, workers)
        config = kwargs.get("config")
        total_mb = getattr(getattr(config, "processing", None), "parse_memory_limit_mb", 0)
        if total_mb and workers > 1:
            # the limit holds for the ingest: up to ``workers`` parses at once share it
            kwargs["memory_share_mb"] = max(total_mb // workers, 1)
        index = self._acquire(workers)
        try:
            return self._workers[index].prepare(data, **kwargs)
        finally:
            with self._changed:
                self._busy.discard(index)
                self._changed.notify_all()

    def _acquire(self, workers: int) -> int:
        with self._changed:
            while True:
                while len(self._workers) < workers:
                    self._workers.append(self._new_worker())
                idle = [i for i in range(workers) if i not in self._busy]
                if idle:
                    self._busy.add(idle[0])
                    return idle[0]
                self._changed.wait()

    def shrink(self, keep: int = 1) -> None:
        """Stop the idle workers beyond the first ``keep`` (memory back after a batch)."""
        with self._changed:
            extra = [w for i, w in enumerate(self._workers) if i >= keep and i not in self._busy]
        for worker in extra:
            worker.stop()

    def stop(self) -> None:
        for worker in self._workers:
            worker.stop()


_shared: ParsePool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> ParsePool:
    """The process-wide pool of parse workers (created on first use; stopped at interpreter exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ParsePool()
            atexit.register(_shared.stop)
        return _shared


def shared_worker() -> ParseWorker:
    """The pool's first worker: the one every parse uses when parses do not overlap."""
    return shared_pool().first


def parse_workers(processing: Any) -> int:
    """How many parses may run at once: ``processing.parse_workers``, at most one per core,
    and one when parsing is not isolated (in-process parses share one interpreter lock)."""
    if processing.parse_isolation == "none":
        return 1
    return max(1, min(processing.parse_workers, os.cpu_count() or 1))


def largest_first(sources: Iterable[SourceT], size: Callable[[SourceT], int]) -> Iterable[tuple[int, SourceT]]:
    """``enumerate(sources)``, largest first when ``sources`` is a sized collection.

    With two workers in order of arrival, a long file that comes last (a 400-page book after
    thirty papers) is parsed alone while the other worker idles; starting the longest ones
    first keeps both busy to the end (longest-processing-time-first scheduling). A generator is
    left in its order (sorting it would read it whole)."""
    if not isinstance(sources, Sized):
        return enumerate(sources)
    return sorted(enumerate(sources), key=lambda pair: -size(pair[1]))


def parse_ahead(
    sources: Iterable[SourceT],
    parse: Callable[[SourceT], ResultT],
    workers: int,
    *,
    window: int | None = None,
) -> Generator[ResultT, None, None]:
    """``map(parse, sources)`` in order, with up to ``workers`` parses running at once.

    A batch's next files are parsed while the caller writes the last one: with ``parse``
    calling ``parse_document``, each runs in its own worker process (``shared_pool``). At most
    ``window`` parses (default ``4 * workers``) are submitted ahead of the caller, running,
    queued or done and waiting to be yielded in order, so memory stays flat on a long
    generator. The window is wider than the workers so that a long file at the head does not
    idle the other workers: they go on with the files behind it (session 8 held only
    ``workers + 1``, and a 400-page file left the second worker waiting for it). Closing the
    iterator early (an error, a cancellation) lets the parses in flight end (their cancel
    token and time bound still apply) and starts no others. The extra workers stay for the
    next batch until ``release_extra_workers``."""
    if workers <= 1:
        yield from map(parse, sources)
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    window = max(window or 4 * workers, workers + 1)
    pending: collections.deque[Future[ResultT]] = collections.deque()
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="parse-ahead")
    try:
        for source in sources:
            pending.append(executor.submit(parse, source))
            # in order: the head as soon as it is done, and always when the window is full
            while pending and (len(pending) >= window or pending[0].done()):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        executor.shutdown(wait=True)


def release_extra_workers() -> None:
    """Stop the idle parse workers beyond the first (``HaikuRAG.release_memory``, when the
    app's queue drains). Not at the end of each batch: a fresh worker takes seconds to start
    (imports, tokenizer), and batches come in runs (a drop, then a rescan)."""
    if _shared is not None:
        _shared.shrink(1)


def stop_all_workers() -> None:
    """Kill every parse worker now, busy or not (quitting: a parse in progress is abandoned and
    its caller sees the worker end). The pool stays usable: the next parse starts a fresh one."""
    if _shared is not None:
        _shared.stop()


on_stop_parse_workers(stop_all_workers)  # ``operations.stop_parse_workers``, the public way in
