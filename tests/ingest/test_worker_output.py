"""The parse worker keeps the parent's stdout clean: what a parser prints goes to stderr."""

from __future__ import annotations

import sys

import pymupdf

from haiku.rag.config import load_config
from haiku.rag.ingest import isolation

NOISE = "a parser library talking"

_WORKER_CODE = """
import os, sys
import haiku.rag.ingest.pipeline as pipeline

real = pipeline.prepare_document

def noisy(data, **kwargs):
    print({noise!r} + " via print")
    sys.stdout.flush()
    os.write(1, ({noise!r} + " via fd 1\\n").encode())  # as C code writes
    return real(data, **kwargs)

pipeline.prepare_document = noisy
from haiku.rag.ingest.isolation import _worker_main
_worker_main()
"""


class NoisyWorker(isolation.ParseWorker):
    def _command(self) -> list[str]:
        return [sys.executable, "-c", _WORKER_CODE.format(noise=NOISE)]


def _pdf() -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Workers keep quiet on stdout", fontsize=12)
    return doc.tobytes()


def test_what_the_worker_prints_goes_to_stderr_not_the_parents_stdout(capfd):
    worker = NoisyWorker()
    try:
        new = worker.prepare(_pdf(), timeout=120, filename="quiet.pdf", uri="file:///quiet.pdf", config=load_config())
    finally:
        worker.stop()
    assert "Workers keep quiet" in new.content
    out, err = capfd.readouterr()
    assert NOISE not in out
    assert f"{NOISE} via print" in err and f"{NOISE} via fd 1" in err  # moved, not lost
