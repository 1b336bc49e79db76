"""The parse worker's memory bound where RLIMIT_AS does not hold (issue 33, item 4): macOS does
not enforce it and Windows has none, so the parent watches the worker's resident memory and
kills a parse that goes over. Forced here with ``HAIKU_RAG_PARSE_RLIMIT=off`` (no rlimit in the
worker): a decompression bomb and a plain allocation loop are refused as ``too_large`` by the
watchdog (its message names the resident memory it saw), and the next file gets a fresh worker."""

from __future__ import annotations

import sys

import pdf_factory
import pymupdf
import pytest

from haiku.rag.client import HaikuRAG
from haiku.rag.errors import SourceTooLargeError
from haiku.rag.ingest import isolation

from .badfiles import make_flate_bomb_pdf


@pytest.fixture
def no_rlimit(monkeypatch):
    """Workers started for this test run without RLIMIT_AS (the env is read in the worker)."""
    monkeypatch.setenv(isolation.RLIMIT_ENV, "off")
    assert not isolation.rlimit_enforced()
    pool = isolation.ParsePool()
    monkeypatch.setattr(isolation, "_shared", pool)
    yield pool
    pool.stop()


async def test_without_the_rlimit_a_flate_bomb_is_refused_by_the_watchdog(tmp_path, db_path, config, no_rlimit):
    bomb = make_flate_bomb_pdf(tmp_path / "bomb.pdf")
    after = pdf_factory.make_two_column_pdf(tmp_path / "after.pdf").path
    config.processing.parse_memory_limit_mb = 256  # the bomb inflates to 1 GiB
    worker = no_rlimit.first
    async with HaikuRAG(db_path, config, create=True) as client:
        bombed = await client.ingest_file(bomb, embed=False)
        assert (bombed.status, bombed.category) == ("failed", "too_large"), bombed.reason
        assert "256 MB memory limit" in bombed.reason and "parse_memory_limit_mb" in bombed.reason
        assert "resident" in bombed.reason  # the watchdog's word: the rlimit did not act
        assert worker.pid is None  # killed
        assert (await client.ingest_file(after, embed=False)).status == "ingested"
        assert worker.pid is not None
        assert {d.uri for d in await client.list_documents()} == {after.resolve().as_uri()}


_HOG_CODE = """
import haiku.rag.ingest.pipeline as pipeline

real = pipeline.prepare_document

def hog(data, **kwargs):
    if kwargs.get("filename") == "hog.pdf":
        held = []
        for _ in range(256):  # up to 4 GiB, 16 MiB at a time, every page touched
            held.append(bytearray(b"x" * (16 << 20)))
        return real(data, **kwargs)  # not refused: the test sees a parse come back
    return real(data, **kwargs)

pipeline.prepare_document = hog
from haiku.rag.ingest.isolation import _worker_main
_worker_main()
"""


class HogWorker(isolation.ParseWorker):
    def _command(self) -> list[str]:
        return [sys.executable, "-c", _HOG_CODE]


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text, fontsize=12)
    return doc.tobytes()


def test_without_the_rlimit_an_allocation_loop_is_stopped_at_the_bound(config, no_rlimit):
    config.processing.parse_memory_limit_mb = 128
    worker = HogWorker()
    try:
        with pytest.raises(SourceTooLargeError) as refused:
            worker.prepare(_pdf("hungry"), timeout=120, filename="hog.pdf", uri="file:///hog.pdf", config=config)
        message = str(refused.value)
        assert message.startswith("hog.pdf: parsing it needed more than the 128 MB memory limit")
        assert "resident" in message and worker.pid is None
        # the same worker object starts afresh and parses an ordinary file
        new = worker.prepare(_pdf("Sated"), timeout=120, filename="ok.pdf", uri="file:///ok.pdf", config=config)
        assert "Sated" in new.content
    finally:
        worker.stop()
