"""The one bridge between Qt's event loop and asyncio.

The app runs a single qasync loop: coroutines (library calls, agent runs) are scheduled on it
and their blocking parts go to worker threads inside ``haiku.rag``. Nothing here touches a
widget; results and progress reach views only as Qt signals, emitted on the GUI thread.

Qt objects belong to the GUI thread, and so does their destruction: worker threads get plain
callables that hold no strong reference to a Qt object, and the garbage collector runs on the
GUI thread (:class:`GuiThreadCollector`).

Long work is an :class:`Operation`: a title, progress, cooperative cancellation, and one
outcome signal. Failures go to the one error sink (``Notifications``) unless the caller
handles ``failed`` itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import itertools
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QApplication

from haiku.rag.operations import CancelToken, Progress

_ids = itertools.count(1)


_installed_loop: asyncio.AbstractEventLoop | None = None
_collector: GuiThreadCollector | None = None


class GuiThreadCollector(QObject):
    """Python's cyclic garbage collector, run on the GUI thread only.

    Python collects cycles in whichever thread happens to allocate past the threshold: often
    a worker thread (an ingest, LanceDB's background loop). A Qt object freed there is
    destroyed on the wrong thread, and Qt cannot unregister what it owns from the GUI
    thread's event loop: a file-system watcher's socket notifier stays registered on a
    closed descriptor, and the loop then spins printing "QSocketNotifier: Invalid socket"
    without end. So automatic collection is off while this runs, and a timer on the GUI
    thread collects the generations Python would have collected. Full collections rescan
    the whole heap, so they are spaced out by at least ``FULL_GAP_S`` (and by 100 times the
    last one's duration), as Python itself defers them until the old generation has grown.
    """

    INTERVAL_MS = 250
    FULL_GAP_S = 10.0

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(self.INTERVAL_MS)
        self._timer.timeout.connect(self.collect_due)
        self._was_enabled = True
        self._next_full = 0.0

    @property
    def active(self) -> bool:
        return self._timer.isActive()

    def start(self) -> None:
        if self.active:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Give collection back to Python (after one collection here, on the GUI thread)."""
        if not self.active:
            return
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    def collect_due(self) -> int:
        """Collect the generations whose thresholds were passed; the number of objects freed."""
        count0, count1, count2 = gc.get_count()
        threshold0, threshold1, threshold2 = gc.get_threshold()
        if count0 < threshold0:
            return 0
        generation = 1 if count1 >= threshold1 else 0
        now = time.monotonic()
        if count2 >= threshold2 and now >= self._next_full:
            generation = 2
        freed = gc.collect(generation)
        if generation == 2:
            done = time.monotonic()
            self._next_full = done + max(self.FULL_GAP_S, 100 * (done - now))
        return freed


def gui_thread_collector() -> GuiThreadCollector | None:
    """The collector started by :func:`install_event_loop` (None before it was called)."""
    return _collector


def app_event_loop_class() -> Callable[[QApplication], asyncio.AbstractEventLoop]:
    """qasync's loop with one repair, used by the app, the self-test and the benches.

    qasync's ``run_until_complete`` processes Qt's pending events once more after its loop
    stopped, with no running loop registered. An asyncio callback run in that pass (a task's
    next step, a ``call_soon``) fails with "RuntimeError: no running event loop" at its first
    ``asyncio.get_running_loop()`` (``asyncio.to_thread``, ``sleep``, ``create_task``). Seen:
    an ingest job failing as "unexpected error" in bench_app, which drives the loop in slices,
    and the CJK font task at every quit. Here the loop stays registered through that pass.
    """
    import qasync

    class AppEventLoop(qasync.QEventLoop):
        _finishing = False

        def _after_run_forever(self) -> None:
            super()._after_run_forever()
            if self._finishing:  # qasync's last processEvents follows: keep the loop running
                asyncio.events._set_running_loop(self)

        def run_until_complete(self, future: Any) -> Any:
            outer = asyncio.events._get_running_loop()
            self._finishing = True
            try:
                return super().run_until_complete(future)
            finally:
                self._finishing = False
                asyncio.events._set_running_loop(outer)

    return AppEventLoop


def install_event_loop(
    app: QApplication, *, loop_factory: Callable[[QApplication], asyncio.AbstractEventLoop] | None = None
) -> asyncio.AbstractEventLoop:
    """Make the one qasync loop driven by ``app`` the current asyncio loop.

    The first call creates it (``loop_factory`` lets tests supply a qasync subclass); later
    calls return the same loop, even after other code (``asyncio.run``, pytest-asyncio) changed
    the current loop in between. The first call also moves garbage collection to the GUI
    thread (:class:`GuiThreadCollector`).
    """
    global _installed_loop, _collector
    if _collector is None:
        _collector = GuiThreadCollector(app)
        _collector.start()
    if _installed_loop is None or _installed_loop.is_closed():
        loop = (loop_factory or app_event_loop_class())(app)
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
    ``progressed`` is emitted on the GUI thread, also for progress reported by worker threads.
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

    def _reporter(self) -> Callable[[Progress], None]:
        """The progress callback handed to the body, which may pass it to worker threads.

        It holds the operation only weakly and emits on the GUI thread: a worker thread that
        outlives the operation (a cancelled body's thread runs on) must never hold the last
        reference to a Qt object, or the object is destroyed on that thread.
        """
        loop = asyncio.get_running_loop()  # called from _run, on the GUI thread
        gui_thread = threading.get_ident()
        operation = weakref.ref(self)

        def deliver(progress: Progress) -> None:
            target = operation()
            if target is not None:
                target.last_progress = progress
                target.progressed.emit(progress)

        def report(progress: Progress) -> None:
            if threading.get_ident() == gui_thread:
                deliver(progress)
            elif not loop.is_closed():
                loop.call_soon_threadsafe(deliver, progress)

        return report

    async def _run(self) -> None:
        from haiku.rag.errors import OperationCancelled

        try:
            self.result = await self._body(self.token, self._reporter())
        except (asyncio.CancelledError, OperationCancelled):
            self.cancelled.emit()
        except Exception as exc:  # the one place an operation's error is caught
            self.error = exc
            self.failed.emit(exc)
        else:
            self.succeeded.emit(self.result)
        finally:
            self.ended.emit()
