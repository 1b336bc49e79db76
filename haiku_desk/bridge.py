"""The one bridge between Qt's event loop and asyncio.

The app runs a single qasync loop: coroutines (library calls, agent runs) are scheduled on it
and their blocking parts go to worker threads inside ``haiku.rag``. Nothing here touches a
widget; results and progress reach views only as Qt signals, which Qt delivers on the GUI
thread even when a worker thread emits them.

Long work is an :class:`Operation`: a title, progress, cooperative cancellation, and one
outcome signal. Failures go to the one error sink (``Notifications``) unless the caller
handles ``failed`` itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication

from haiku.rag.operations import CancelToken, Progress

_ids = itertools.count(1)


_installed_loop: asyncio.AbstractEventLoop | None = None


def install_event_loop(
    app: QApplication, *, loop_factory: Callable[[QApplication], asyncio.AbstractEventLoop] | None = None
) -> asyncio.AbstractEventLoop:
    """Make the one qasync loop driven by ``app`` the current asyncio loop.

    The first call creates it (``loop_factory`` lets tests supply a qasync subclass); later
    calls return the same loop, even after other code (``asyncio.run``, pytest-asyncio) changed
    the current loop in between.
    """
    global _installed_loop
    if _installed_loop is None or _installed_loop.is_closed():
        import qasync

        loop = (loop_factory or qasync.QEventLoop)(app)
        # Plain Python threads for asyncio.to_thread: qasync's default QThread pool outlives the
        # QApplication at exit and Qt aborts the process ("QThread: Destroyed while thread is
        # still running"); a ThreadPoolExecutor is joined cleanly by the interpreter.
        loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="haiku-desk-worker")
        )
        _installed_loop = loop
    asyncio.set_event_loop(_installed_loop)
    return _installed_loop


OperationBody = Callable[[CancelToken, Callable[[Progress], None]], Awaitable[Any]]


class Operation(QObject):
    """One piece of long work with progress, cancellation and a single outcome.

    Exactly one of ``succeeded``, ``failed`` or ``cancelled`` is emitted, then ``ended``.
    ``progressed`` may be emitted from worker threads (queued to the GUI thread by Qt).
    """

    progressed = Signal(object)  # haiku.rag.operations.Progress
    succeeded = Signal(object)  # the body's result
    failed = Signal(object)  # the exception
    cancelled = Signal()
    ended = Signal()

    def __init__(self, title: str, body: OperationBody, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.id = next(_ids)
        self.title = title
        self.token = CancelToken()
        self._body = body
        self._task: asyncio.Task[Any] | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.last_progress: Progress | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> Operation:
        loop = asyncio.get_event_loop()
        self._task = loop.create_task(self._run())
        return self

    def cancel(self) -> None:
        """Ask the body to stop at its next check; an awaiting coroutine is cancelled too."""
        self.token.cancel()
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def wait(self) -> Any:
        """Await the outcome (for tests and for operations chained by a service)."""
        if self._task is None:
            raise RuntimeError("operation not started")
        await asyncio.wait({self._task})
        return self.result

    def _report(self, progress: Progress) -> None:
        self.last_progress = progress
        self.progressed.emit(progress)

    async def _run(self) -> None:
        from haiku.rag.errors import OperationCancelled

        try:
            self.result = await self._body(self.token, self._report)
        except (asyncio.CancelledError, OperationCancelled):
            self.cancelled.emit()
        except Exception as exc:  # the one place an operation's error is caught
            self.error = exc
            self.failed.emit(exc)
        else:
            self.succeeded.emit(self.result)
        finally:
            self.ended.emit()
