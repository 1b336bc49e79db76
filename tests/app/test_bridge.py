import asyncio

from qt_helpers import run_until

from haiku.rag.operations import Progress, Stage
from haiku_desk.bridge import Operation


def test_operation_reports_progress_from_a_worker_thread_and_succeeds(qloop):
    async def body(token, report):
        def work():
            for page in range(1, 4):
                report(Progress(Stage.PARSING, "x.pdf", page, 3))
            return "done"

        return await asyncio.to_thread(work)

    seen, outcome = [], []
    op = Operation("Adding x.pdf", body)
    op.progressed.connect(lambda p: seen.append(p.done))
    op.succeeded.connect(outcome.append)
    op.start()
    run_until(qloop, lambda: bool(outcome))
    run_until(qloop, lambda: len(seen) == 3)
    assert outcome == ["done"] and seen == [1, 2, 3]


def test_cancelled_operation_emits_cancelled_not_failed(qloop):
    async def body(token, report):
        await asyncio.sleep(30)

    ended, failed, cancelled = [], [], []
    op = Operation("slow", body)
    op.failed.connect(failed.append)
    op.cancelled.connect(lambda: cancelled.append(True))
    op.ended.connect(lambda: ended.append(True))
    op.start()
    run_until(qloop, lambda: op.running)
    op.cancel()
    run_until(qloop, lambda: bool(ended))
    assert cancelled == [True] and failed == [] and op.token.cancelled


def test_failure_is_carried_by_the_failed_signal(qloop):
    async def body(token, report):
        raise ValueError("damaged PDF")

    errors = []
    op = Operation("bad", body)
    op.failed.connect(errors.append)
    op.start()
    run_until(qloop, lambda: bool(errors))
    assert isinstance(errors[0], ValueError) and "damaged PDF" in str(errors[0])


def test_garbage_made_on_the_gui_thread_is_collected_there_even_when_a_worker_allocates(qloop, qtbot):
    """A Qt object freed by the collector on a worker thread is destroyed on the wrong thread
    (a watcher's socket notifier then stays registered on a closed descriptor). Allocating
    past the collector's threshold in a worker must not collect there."""
    import gc
    import threading
    import weakref

    from PySide6.QtCore import QObject

    from haiku_desk.bridge import gui_thread_collector

    assert gui_thread_collector().active
    freed_in: list[str] = []

    class Holder:
        pass

    gc.collect()
    holder = Holder()
    holder.me = holder  # a cycle: only the collector frees it
    holder.qobject = QObject()
    weakref.finalize(holder, lambda: freed_in.append(threading.current_thread().name))
    del holder

    kept: list[list[object]] = []

    def allocate() -> None:  # several times the first generation's threshold, kept alive
        kept.extend([] for _ in range(20 * gc.get_threshold()[0]))

    worker = threading.Thread(target=allocate, name="allocating-worker")
    worker.start()
    worker.join()
    assert freed_in == []
    qtbot.waitUntil(lambda: bool(freed_in), timeout=5000)
    assert freed_in == [threading.main_thread().name]
    kept.clear()


def test_a_worker_that_keeps_the_progress_callback_never_holds_the_last_reference(qloop):
    """A cancelled body's thread runs on after the operation ended; if the last reference to
    the operation were dropped there, the Qt object would be destroyed on that thread."""
    import gc
    import threading
    import weakref

    kept = {}

    async def body(token, report):
        def work():
            kept["report"] = report  # outlives the operation, as a still-running thread's would
            report(Progress(Stage.PARSING, "x.pdf", 1, 1))
            return "done"

        return await asyncio.to_thread(work)

    outcome, seen, freed_in = [], [], []
    op = Operation("Adding x.pdf", body)
    op.succeeded.connect(outcome.append)
    op.progressed.connect(lambda p: seen.append(threading.current_thread().name))
    weakref.finalize(op, lambda: freed_in.append(threading.current_thread().name))
    op.start()
    run_until(qloop, lambda: bool(outcome))
    assert seen == [threading.main_thread().name]  # emitted on the GUI thread

    del op
    gc.collect()

    def late_worker():
        kept["report"](Progress(Stage.PARSING, "x.pdf", 1, 1))  # reported after the end: dropped
        kept.clear()

    late = threading.Thread(target=late_worker, name="late-worker")
    late.start()
    late.join()
    qloop.run_until_complete(asyncio.sleep(0.05))
    assert freed_in == [threading.main_thread().name]


def test_event_loop_callbacks_keep_nones_reference_count(qloop):
    """Every asyncio callback on the Qt loop starts and kills a Qt timer; PySide6 6.12.0's
    killTimer dropped a reference to None each time, so a long session (or a busy ingest)
    aborted with "Fatal Python error: none_dealloc". On Python 3.12+ None is immortal and its
    count does not move at all."""
    import sys

    async def many_callbacks() -> None:
        for _ in range(2000):
            await asyncio.sleep(0)

    before = sys.getrefcount(None)
    qloop.run_until_complete(many_callbacks())
    assert sys.getrefcount(None) - before > -200  # was -2000 on PySide6 6.12.0


LOOP_SLICES_SCRIPT = r"""
import asyncio, sys
from PySide6.QtWidgets import QApplication
from haiku_desk.bridge import install_event_loop

app = QApplication([])
loop = install_event_loop(app)
seen = []  # whether each callback of a call_soon chain found a running loop
chain = {"on": True}

def link():
    seen.append(asyncio._get_running_loop() is loop)
    if chain["on"]:
        loop.call_soon(link)

async def slice_of_work():
    await asyncio.sleep(0.01)

loop.call_soon(link)
for _ in range(20):  # driven in slices, as the self-test and the benches drive it
    loop.run_until_complete(slice_of_work())
chain["on"] = False
loop.run_until_complete(asyncio.sleep(0.01))
print(len(seen), seen.count(False))
sys.exit(0 if seen and all(seen) else 1)
"""


def test_a_callback_run_between_slices_of_the_loop_finds_it_running():
    # qasync processes Qt's events once more after each run_until_complete with no running
    # loop registered; a task stepping then failed with "no running event loop" (an ingest in
    # bench_app, the font task at quit). A fresh process: the production loop, not the tests'.
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", LOOP_SLICES_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert result.returncode == 0, (result.stdout, result.stderr[-2000:])
