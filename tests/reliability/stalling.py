"""A real parse worker that stalls on purpose: the machine-independent way to test the
no-progress timeout and a worker that dies mid-parse (a "slow" file is fast on a fast machine).

The worker is the real one (same process, pipe and kill path); only its ``prepare_document``
is wrapped so that a file named ``stuck.pdf`` reports its first page and then blocks until cancelled or killed,
exactly what a parser stuck in C code looks like from the parent."""

from __future__ import annotations

import sys

from haiku.rag.ingest import isolation

STUCK_NAME = "stuck.pdf"

_WORKER_CODE = """
import time
import haiku.rag.ingest.pipeline as pipeline
from haiku.rag.operations import Progress, Stage

real = pipeline.prepare_document

def stalling(data, *, progress=None, **kwargs):
    if kwargs.get("filename") == {name!r}:
        progress(Progress(Stage.PARSING, kwargs["uri"], 0, 1, "page 1 of 1"))
        cancel = kwargs.get("cancel")
        while cancel is None or not cancel.cancelled:  # only a kill or a cancel ends it
            time.sleep(0.01)
        cancel.raise_if_cancelled()  # as the converter does between two pages
    return real(data, progress=progress, **kwargs)

pipeline.prepare_document = stalling
from haiku.rag.ingest.isolation import _worker_main
_worker_main()
"""


class StallingWorker(isolation.ParseWorker):
    def _command(self) -> list[str]:
        return [sys.executable, "-c", _WORKER_CODE.format(name=STUCK_NAME)]
