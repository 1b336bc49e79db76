"""Index upkeep on a thread of its own, after a write, so the caller does not wait for it.

``HaikuRAG.create_document`` is called in a loop by scripts, one document at a time: upkeep
(``Store.maintain_indexes``) is due every few dozen calls, and its compactions grow with the
library. Run inline, the call that triggered it paid for all of it. Here it starts after the
call returns and goes on while the caller prepares the next document (parsing and
embedding take no store lock); ``Store.maintain_indexes`` takes the write lock one table at
a time, so the next write waits for one table's compaction at most.

One upkeep at a time: a request while one is queued or running is dropped (the running one
reads the trigger itself, and the next write requests again). A failed upkeep is logged with
its traceback and tried again at the next request; nothing it does changes what is stored.
``finish`` waits for the one in flight; ``close`` does that and stops the thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

log = logging.getLogger("haiku.rag")


class BackgroundUpkeep:
    def __init__(self, upkeep: Callable[[], object]) -> None:
        self._upkeep = upkeep
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None
        self._closed = False

    def request(self) -> None:
        """Start an upkeep check on the background thread, unless one is queued or running."""
        with self._lock:
            if self._closed or (self._pending is not None and not self._pending.done()):
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="haiku-upkeep")
            self._pending = self._executor.submit(self._run)

    def _run(self) -> None:
        try:
            self._upkeep()
        except Exception:
            log.warning("index upkeep failed; it runs again after the next write", exc_info=True)

    @property
    def pending(self) -> Future[None] | None:
        """The upkeep queued or running, if any."""
        with self._lock:
            pending = self._pending
        return None if pending is None or pending.done() else pending

    def finish(self) -> None:
        """Wait for the upkeep queued or running, if any."""
        pending = self.pending
        if pending is not None:
            pending.result()

    def close(self) -> None:
        """Wait for the upkeep in flight and stop the thread; later requests are ignored."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
