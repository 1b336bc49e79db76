"""``Sandbox``: one pydantic-monty session for one question, with its limits.

The interpreter runs in a worker subprocess owned by a pydantic-monty pool. The session (and so
the variables a program defines) lives from the first ``execute`` until ``close``; a crashed
worker, or a program stopped by a time or memory limit (which leaves the interpreter's heap in
no known state), discards it, and the next call starts a fresh one.

Monty calls are blocking, so they run on one dedicated thread. The host functions a program
calls (``search``, ``list_documents``, file reads) run on that thread too and hand their work to
the event loop the sandbox was opened on, so store reads happen where the rest of the
capability's reads happen.

Limits:
- time per call (``analysis.code_timeout``): the interpreter stops computing at it, and corpus
  reads and searches after it fail with ``TimeoutError``;
- time per question (``analysis.total_timeout``): a call starts only while some is left, and
  its corpus reads stop when it runs out (its compute stops at the per-call limit);
- printed output (``analysis.max_output_chars``): cut with a marker; a flood is stopped; an
  error message or traceback is cut at the same size (at least ``MIN_MESSAGE_CHARS``);
- memory (``analysis.max_memory_mb``): the interpreter's heap limit;
- recursion depth, and ``time.sleep`` returns at once (there is nothing to wait for).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_monty import (
    Monty,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySession,
    MontySyntaxError,
    ResourceLimits,
)

from haiku.rag.config import AnalysisConfig
from haiku.rag.sandbox.checks import CodeRefused, check_code
from haiku.rag.sandbox.corpus import CorpusFiles
from haiku.rag.sandbox.filesystem import ReadOnlyCorpusOS
from haiku.rag.sandbox.output import OutputCollector

RESTARTED = "The interpreter restarted. Variables from earlier calls are gone."
MAX_SEARCH_LIMIT = 100
MAX_QUERY_CHARS = 2_000
MAX_RECURSION_DEPTH = 200
MAX_HOST_CALLS = 200_000  # per session: file reads, searches and name lookups
MIN_MESSAGE_CHARS = 4_000  # an error message or traceback shorter than this is never cut
WORKER_GRACE_SECONDS = 15  # past the call limit, the pool kills a worker that stopped answering

# The functions programs call; they reach the host through the two externals.
PRELUDE = """\
async def search(query, limit=10):
    return _haiku_search(query, limit)


async def list_documents():
    return _haiku_list_documents()
"""

StoppedBy = Literal[
    "refused", "error", "time limit", "total time limit", "memory limit", "recursion limit",
    "output limit", "crash",
]
SearchFunction = Callable[[str, int], Coroutine[Any, Any, list[dict[str, Any]]]]


@dataclass(frozen=True)
class SandboxLimits:
    call_seconds: float
    total_seconds: float
    max_output_chars: int
    max_memory_bytes: int
    max_recursion_depth: int = MAX_RECURSION_DEPTH

    @classmethod
    def from_config(cls, analysis: AnalysisConfig) -> SandboxLimits:
        total = analysis.total_timeout or analysis.code_timeout * analysis.max_executions
        return cls(
            call_seconds=analysis.code_timeout,
            total_seconds=total,
            max_output_chars=analysis.max_output_chars,
            max_memory_bytes=analysis.max_memory_mb * 1024 * 1024,
        )


@dataclass(frozen=True)
class ExecutionResult:
    stdout: str
    stderr: str = ""
    success: bool = True
    stopped_by: StoppedBy | None = None
    restarted: bool = False  # the session was discarded: earlier variables are gone
    seconds: float = 0.0
    output_truncated: bool = False


class Sandbox:
    """Runs programs over the filter-scoped corpus; open lazily, ``close`` when the run ends."""

    def __init__(self, files: CorpusFiles, search: SearchFunction, limits: SandboxLimits) -> None:
        self.files = files
        self._search = search
        self.limits = limits
        self.seconds_used = 0.0
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="haiku-sandbox")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: Monty | None = None
        self._session: MontySession | None = None
        self._os: ReadOnlyCorpusOS | None = None
        self._os_deadline = 0.0
        self._busy = False
        self.closed = False

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    @property
    def has_session(self) -> bool:
        return self._session is not None

    @property
    def worker_pid(self) -> int | None:
        """The process id of the interpreter's worker (diagnostics and tests)."""
        return self._session.worker_pid if self._session is not None else None

    # --- running code -------------------------------------------------------------------

    async def execute(self, code: str) -> ExecutionResult:
        if self.closed:
            raise RuntimeError("the sandbox is closed")
        try:
            check_code(code)
        except CodeRefused as exc:
            return ExecutionResult(stdout="", stderr=f"Refused: {exc}", success=False, stopped_by="refused")
        remaining = self.limits.total_seconds - self.seconds_used
        if remaining <= 0:
            return ExecutionResult(
                stdout="",
                stderr=(
                    f"Refused: the code of this question has used its total time of "
                    f"{self.limits.total_seconds:g} seconds. Answer from the results you have."
                ),
                success=False,
                stopped_by="total time limit",
            )
        await self._open()
        loop = asyncio.get_running_loop()
        seconds = min(self.limits.call_seconds, remaining)
        started = time.monotonic()
        self._busy = True
        try:
            result = await loop.run_in_executor(self._executor, self._run, code, seconds)
        finally:
            self._busy = False
            self.seconds_used += time.monotonic() - started
        return result

    async def _open(self) -> None:
        if self._pool is not None:
            return
        self._loop = asyncio.get_running_loop()
        await self.files.load()
        self._os = ReadOnlyCorpusOS(list(self.files.documents), self._read_file)
        pool = Monty(
            min_processes=1,
            max_processes=1,
            request_timeout=self.limits.call_seconds + WORKER_GRACE_SECONDS,
        )
        await self._loop.run_in_executor(self._executor, pool.__enter__)
        self._pool = pool

    def _new_session(self) -> MontySession:
        assert self._pool is not None
        limits: ResourceLimits = {
            "max_feed_duration_secs": self.limits.call_seconds,
            "max_memory": self.limits.max_memory_bytes,
            "max_recursion_depth": self.limits.max_recursion_depth,
            "max_suspensions": MAX_HOST_CALLS,
        }
        session = self._pool.checkout(
            script_name="analysis.py", limits=limits, os_policy={"sleep": "zero"}
        )
        session.__enter__()
        session.feed_run(PRELUDE)
        return session

    def _discard_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            try:
                session.__exit__(None, None, None)
            except MontyError:
                pass  # the worker is already gone; the pool replaces it

    def _run(self, code: str, seconds: float) -> ExecutionResult:
        """On the sandbox thread: one program, start to finish."""
        started = time.monotonic()
        deadline = started + seconds
        output = OutputCollector(self.limits.max_output_chars)
        stopped_by: StoppedBy | None = None
        try:
            if self._session is None:
                self._session = self._new_session()
            value = self._session.feed_run(
                code,
                external_lookup=self._externals(deadline),
                print_callback=output,
                os=self._os_for(deadline),
            )
            if value is not None:  # the value of a trailing expression, as a REPL shows it
                output.add(("\n" if output.total and not output.text().endswith("\n") else "") + repr(value))
            return ExecutionResult(
                stdout=output.text(),
                seconds=time.monotonic() - started,
                output_truncated=output.truncated,
            )
        except MontyCrashedError as exc:
            stopped_by = "crash"
            stderr = f"The interpreter stopped ({exc})."
            self._discard_session()
        except MontyRuntimeError as exc:
            stopped_by, stderr = self._classify(exc, output, seconds)
        except MontySyntaxError as exc:
            stopped_by, stderr = "error", exc.display("traceback")
        except MontyError as exc:
            stopped_by, stderr = "error", f"{type(exc).__name__}: {exc}"
        # a traceback quotes the exception's message, which a program controls: bounded like
        # printed output, so a huge message reaches neither the model nor the saved conversation
        stderr = cut_message(stderr, max(self.limits.max_output_chars, MIN_MESSAGE_CHARS))
        restarted = self._session is None
        if restarted:
            stderr = f"{stderr}\n{RESTARTED}"
        return ExecutionResult(
            stdout=output.text(),
            stderr=stderr,
            success=False,
            stopped_by=stopped_by,
            restarted=restarted,
            seconds=time.monotonic() - started,
            output_truncated=output.truncated,
        )

    def _classify(
        self, exc: MontyRuntimeError, output: OutputCollector, seconds: float
    ) -> tuple[StoppedBy, str]:
        inner = exc.exception()
        message = exc.display("traceback")
        if output.flooded:
            return "output limit", f"Stopped: {output.flood_chars} characters of output were exceeded.\n{message}"
        if isinstance(inner, TimeoutError) and "limit exceeded" in str(inner):
            # A limit stops the interpreter mid-operation: its heap is in no known state.
            self._discard_session()
            return "time limit", f"Stopped: the time limit of {seconds:g} seconds per call was reached.\n{message}"
        if isinstance(inner, MemoryError):
            self._discard_session()
            return "memory limit", (
                f"Stopped: the memory limit of {self.limits.max_memory_bytes // (1024 * 1024)} MiB "
                f"was reached.\n{message}"
            )
        if isinstance(inner, RecursionError):
            return "recursion limit", (
                f"Stopped: the recursion depth limit of {self.limits.max_recursion_depth} was "
                f"reached.\n{message}"
            )
        if isinstance(inner, TimeoutError):
            return "time limit", message
        return "error", message

    # --- host functions -----------------------------------------------------------------

    def _externals(self, deadline: float) -> dict[str, Any]:
        def haiku_search(query: Any, limit: Any = 10) -> list[dict[str, Any]]:
            if not isinstance(query, str) or not query.strip():
                raise TypeError("search(query, limit): query must be a non-empty string")
            if len(query) > MAX_QUERY_CHARS:
                raise ValueError(f"search(query, limit): query is longer than {MAX_QUERY_CHARS} characters")
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
                raise ValueError(f"search(query, limit): limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
            return self._call_loop(self._search(query, limit), deadline)

        def haiku_list_documents() -> list[dict[str, Any]]:
            return self.files.summaries()

        return {"_haiku_search": haiku_search, "_haiku_list_documents": haiku_list_documents}

    def _os_for(self, deadline: float) -> ReadOnlyCorpusOS:
        assert self._os is not None
        self._os_deadline = deadline
        return self._os

    def _read_file(self, document_id: str, name: str) -> str:
        return self._call_loop(self.files.read(document_id, name), self._os_deadline)

    def _call_loop(self, coroutine: Coroutine[Any, Any, Any], deadline: float) -> Any:
        """Run a coroutine on the sandbox's event loop from the sandbox thread, within the call's time."""
        remaining = deadline - time.monotonic()
        if remaining <= 0 or self._loop is None or self._loop.is_closed():
            coroutine.close()
            raise TimeoutError("the time limit of this call was reached; the corpus is no longer answering")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout=remaining)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError("the time limit of this call was reached while reading the corpus") from None
        except (OSError, ValueError, TypeError, KeyError, LookupError, TimeoutError):
            raise
        except Exception as exc:  # store errors and the like reach the program as plain errors
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None

    # --- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Release the session and the worker pool; a call still running finishes first."""
        if self.closed:
            return
        self.closed = True
        future = self._executor.submit(self._shutdown)
        self._executor.shutdown(wait=False)
        if not self._busy:
            try:
                future.result(timeout=WORKER_GRACE_SECONDS)
            except concurrent.futures.TimeoutError:
                pass

    def _shutdown(self) -> None:
        self._discard_session()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.__exit__(None, None, None)


def cut_message(text: str, max_chars: int) -> str:
    """``text`` kept to its first ``max_chars`` characters and its last line (the exception), cut
    in the middle with a note saying how much was left out."""
    if len(text) <= max_chars:
        return text
    tail_room = max_chars // 4
    head = text[: max_chars - tail_room]
    tail = text[-tail_room:]
    omitted = len(text) - len(head) - len(tail)
    return f"{head}\n... ({omitted:,} characters of this message not shown) ...\n{tail}"
