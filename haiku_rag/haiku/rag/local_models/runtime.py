"""llama.cpp's OpenAI-compatible server for one model file, in a child process.

The child is a fresh interpreter (``python -c``, never a fork: the parent runs LanceDB and ONNX
threads; started and talked to the same way on every OS: ``haiku.rag.child_process``) that loads the model with xllamacpp and serves on 127.0.0.1, on a port the system
picks, accepting only this session's random API key. So:

- a crash in llama.cpp or the OS killing the child for memory never takes the caller down:
  the request in flight fails with ``ModelProcessDied`` (what happened, in one sentence) and
  the next request starts a new child;
- memory is returned to the system when the model unloads (the process ends);
- it starts on first use (``ensure_started``, called by the HTTP transport in ``provider``),
  stops after ``idle_seconds`` without a request in flight (``check_idle``, run by a watcher
  thread), and on ``stop()`` (the app's quit; ``atexit`` as a last resort). The child also
  exits by itself when its parent dies.

Frozen applications (PyInstaller) must call ``run_worker_if_requested()`` first thing in their
entry point, as for the parse worker: the child is started as ``<app> --haiku-rag-model-worker``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import secrets
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from haiku.rag.child_process import (
    ChildStartError,
    child_command,
    connect_to_parent,
    kill,
    serve_if_requested,
    start_child,
)
from haiku.rag.errors import ChatModelError

log = logging.getLogger("haiku.rag")

WORKER_FLAG = "--haiku-rag-model-worker"
STARTUP_TIMEOUT_SECONDS = 300.0  # a large model from a slow disk on a busy machine
IDLE_SECONDS = 600.0
WATCH_INTERVAL_SECONDS = 15.0
STOP_GRACE_SECONDS = 5.0
FAILED_EXIT_SECONDS = 60.0  # a child whose load failed ends by itself; bounded all the same
INSTALL_HINT = (
    "the built-in model runtime (xllamacpp) is not installed: "
    "pip install 'xllamacpp==2026.10.11549' (prebuilt for Linux x86-64), "
    "or use a model server (Ollama, LM Studio, llama.cpp) as an openai-compatible provider"
)


class RuntimeMissingError(ChatModelError):
    """xllamacpp is not installed (the provider says so, with how to add it)."""


class ModelLoadError(ChatModelError):
    """The model file could not be loaded (damaged, unsupported architecture, no memory)."""


class ModelProcessDied(ChatModelError):
    """The model's process ended while it was in use (a crash, or killed for memory)."""


def runtime_available() -> bool:
    """Whether xllamacpp is installed (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("xllamacpp") is not None


@dataclass(frozen=True)
class RuntimeSettings:
    path: Path
    context: int
    threads: int
    embedding: bool = False
    parallel: int = 1


def run_worker_if_requested(argv: list[str] | None = None) -> None:
    """In a frozen application's entry point: serve as the model worker if asked to, then exit."""
    serve_if_requested(WORKER_FLAG, _worker_main, argv)


def _worker_main() -> None:
    """The child: load, serve, report the address, then wait for "stop" (or the parent's end)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    conn = connect_to_parent()  # and exit when the parent's end of stdin closes
    settings, key = conn.recv()
    try:
        import xllamacpp
    except ImportError:
        conn.send(("missing", INSTALL_HINT))
        return
    try:
        params = xllamacpp.CommonParams()
        params.model.path = str(settings.path)
        params.n_ctx = settings.context
        params.n_parallel = settings.parallel
        params.cpuparams.n_threads = settings.threads
        params.cpuparams_batch.n_threads = settings.threads
        params.n_threads_http = 2
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the system picks a free one
        params.api_keys = [key]
        params.use_jinja = True  # the model's own chat template, tools included
        params.endpoint_slots = False
        params.endpoint_metrics = False
        params.ui = False
        params.warmup = False
        if settings.embedding:
            params.embedding = True
            # an encoder sees a whole input in one micro-batch: as large as the context, so
            # an input up to the context is embedded rather than refused
            params.n_batch = settings.context
            params.n_ubatch = settings.context
        server = xllamacpp.Server(params)
    except Exception as exc:  # xllamacpp raises RuntimeError("failed to load model") and kin
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", server.listening_address))
    try:
        while conn.recv() != "stop":
            pass
    except (EOFError, OSError):
        # The parent is gone (killed, or ended with os._exit): end now, without unloading.
        # Nobody waits for ``del server`` (it joins llama.cpp's threads), and in one loaded CI
        # run a child outlived its parent by more than a minute (the stdin watch thread should
        # have ended it; why it did not is not known). The OS frees the model either way.
        os._exit(1)
    del server  # joins llama.cpp's loop: the model is freed before the process ends
    os._exit(0)


class ModelRuntime:
    """One model file served by a child process, started on first use."""

    def __init__(
        self,
        settings: RuntimeSettings,
        *,
        idle_seconds: float | None = IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        watch_interval: float = WATCH_INTERVAL_SECONDS,
    ) -> None:
        self.settings = settings
        self.api_key = secrets.token_urlsafe(24)  # per session: never stored, never shown
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._watch_interval = watch_interval
        self._lock = threading.RLock()
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._address: str | None = None
        self._log: Path | None = None
        self._in_flight = 0
        self._last_used = clock()
        self._stopping = False
        self._watcher: threading.Thread | None = None
        self._closed = threading.Event()
        self.starts = 0  # how many children were started (for the app's status and the tests)
        _live.add(self)

    # --- state -------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    @property
    def running(self) -> bool:
        return self.pid is not None

    @property
    def base_url(self) -> str | None:
        """``http://127.0.0.1:PORT`` while running, else None."""
        return self._address if self.running else None

    # --- start and stop ----------------------------------------------------------------------

    def ensure_started(self) -> str:
        """The server's address, starting the child (and loading the model) if needed.
        Blocking: seconds for a real model; call it from a worker thread."""
        with self._lock:
            if self.running and self._address:
                self._last_used = self._clock()
                return self._address
            self._discard()
            self._start()
            assert self._address is not None
            self._last_used = self._clock()
            self._ensure_watcher()
            return self._address

    def _start(self) -> None:
        fd, log_path = tempfile.mkstemp(prefix="haiku-rag-model-", suffix=".log")
        self._log = Path(log_path)
        try:
            # llama.cpp's log goes to the file: read back when a load fails
            process, conn = start_child(
                self._command(), connect_timeout=STARTUP_TIMEOUT_SECONDS, stdout=fd, stderr=fd
            )
        except ChildStartError as exc:
            tail = self._log_tail()
            self._discard()
            raise ModelLoadError(
                f"the process loading {self.settings.path.name} did not start ({exc}){_tail_note(tail)}"
            ) from exc
        finally:
            os.close(fd)
        self._process = process
        self._conn = conn
        self.starts += 1
        try:
            conn.send((self.settings, self.api_key))
            reply = conn.recv() if conn.poll(STARTUP_TIMEOUT_SECONDS) else ("timeout", "")
        except (EOFError, OSError):
            reply = ("died", "")
        kind, detail = reply
        if kind == "ready":
            self._address = detail
            log.info("model %s loaded (pid %s) at %s", self.settings.path.name, process.pid, detail)
            return
        if kind == "failed":
            # llama.cpp logs from a thread of its own, flushed when the process exits: the
            # reason ("unknown model architecture") may not be in the file yet when the child
            # says it failed, so let it end first (it does at once after a failed load)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(FAILED_EXIT_SECONDS)
        tail = self._log_tail()
        self._discard()
        name = self.settings.path.name
        if kind == "missing":
            raise RuntimeMissingError(detail)
        if kind == "failed":
            raise ModelLoadError(f"could not load {name}: {_load_reason(tail) or detail}")
        if kind == "timeout":
            raise ModelLoadError(f"{name} did not load within {STARTUP_TIMEOUT_SECONDS:.0f} s")
        raise ModelLoadError(f"the process loading {name} ended ({_ended(process)}){_tail_note(tail)}")

    def _command(self) -> list[str]:
        return child_command(WORKER_FLAG, "haiku.rag.local_models.runtime")

    def stop(self) -> None:
        """Unload: ask the child to stop, kill it if it does not within a grace period."""
        with self._lock:
            self._discard()

    def close(self) -> None:
        """Stop for good (the app's quit): the watcher ends too."""
        self._closed.set()
        self.stop()

    def _discard(self) -> None:
        process, conn = self._process, self._conn
        self._process, self._conn, self._address = None, None, None
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send("stop")
            with contextlib.suppress(OSError):
                conn.close()
        if process is not None:
            try:
                process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
            kill(process)  # if still running; closes its stdin either way
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.unlink()
            self._log = None

    # --- use and idleness --------------------------------------------------------------------

    def request_started(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._last_used = self._clock()

    def request_ended(self) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            self._last_used = self._clock()

    def died(self) -> ModelProcessDied | None:
        """If the child ended on its own since it started: the error to raise, else None."""
        process = self._process
        if process is None or process.poll() is None:
            return None
        return ModelProcessDied(
            f"the built-in model ({self.settings.path.name}) stopped unexpectedly "
            f"({_ended(process)}); ask again to restart it"
        )

    def wait_died(self, timeout: float) -> ModelProcessDied | None:
        """``died()``, after waiting up to ``timeout`` seconds for the child to end."""
        process = self._process
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout)
        return self.died()

    def check_idle(self) -> bool:
        """Unload if running, nothing in flight and unused for ``idle_seconds``; True if it did."""
        with self._lock:
            if self.idle_seconds is None or not self.running or self._in_flight:
                return False
            if self._clock() - self._last_used < self.idle_seconds:
                return False
            log.info("model %s unloaded after %.0f s idle", self.settings.path.name, self.idle_seconds)
            self._discard()
            return True

    def _ensure_watcher(self) -> None:
        if self.idle_seconds is None or (self._watcher is not None and self._watcher.is_alive()):
            return
        ref = weakref.ref(self)
        closed, interval = self._closed, self._watch_interval

        def watch() -> None:
            while not closed.wait(interval):
                runtime = ref()
                if runtime is None or (runtime.check_idle() or not runtime.running):
                    return

        self._watcher = threading.Thread(target=watch, name="model-idle", daemon=True)
        self._watcher.start()

    def _log_tail(self, lines: int = 60) -> str:
        if self._log is None:
            return ""
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _ended(process: subprocess.Popen[bytes]) -> str:
    code = process.poll()
    if code is None:
        return "still running"
    if code < 0:
        sig = -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        hint = ": out of memory?" if sig == getattr(signal, "SIGKILL", None) else ""
        return f"killed by {name}{hint}"
    return f"exit code {code}"


def _load_reason(tail: str) -> str:
    """llama.cpp's own reason, from its log: "error loading model: <why>", else the last error."""
    lines = tail.splitlines()
    for line in lines:
        found = re.search(r"error loading model: (.+)", line)
        if found:
            return found.group(1).strip()
    for line in reversed(lines):
        found = re.match(r"^[\d.]+ E (.+)", line)
        if found:
            return " ".join(found.group(1).split())
    return ""


def _tail_note(tail: str) -> str:
    reason = _load_reason(tail)
    return f": {reason}" if reason else ""


_live: weakref.WeakSet[ModelRuntime] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for runtime in list(_live):
        with contextlib.suppress(Exception):
            runtime.close()


