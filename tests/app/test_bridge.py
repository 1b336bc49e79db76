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
