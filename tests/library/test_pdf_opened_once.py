"""A dropped PDF is opened once per ingest (issue 31): its bibliographic record is read in the
parse worker, in the same open as the conversion, not again in the parent under the global
MuPDF lock and outside the worker's time and memory bounds.

Opens are counted in both processes: the parent's ``pymupdf.open`` is wrapped in place; the
worker (a fresh interpreter whose path is the parent's) finds a ``sitecustomize`` on that path
which wraps it at start-up and appends a line per open to a file.
"""

from __future__ import annotations

import textwrap

import pytest
from paper_factory import PASA_AUTHORS, PASA_TITLE, make_pasa_like_pdf

from haiku.rag.bibliography import bibliographic
from haiku.rag.client import HaikuRAG
from haiku.rag.ingest import isolation
from haiku.rag.mupdf import import_pymupdf

COUNTING_SITE = textwrap.dedent(
    """
    import os

    _log = os.environ.get("HAIKU_RAG_TEST_OPEN_LOG")
    if _log:
        import pymupdf

        _open = pymupdf.open

        def _counted(*args, **kwargs):
            with open(_log, "a") as log:
                log.write("open\\n")
            return _open(*args, **kwargs)

        pymupdf.open = _counted
    """
)


@pytest.fixture
def opens(tmp_path, monkeypatch):
    """``(parent opens, a function reading the worker's)``, with a fresh worker pool whose
    workers start with the counting hook."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(COUNTING_SITE)
    log = tmp_path / "worker-opens.log"
    log.write_text("")
    monkeypatch.setenv("HAIKU_RAG_TEST_OPEN_LOG", str(log))
    monkeypatch.syspath_prepend(str(site))  # the worker's PYTHONPATH is the parent's sys.path
    pool = isolation.ParsePool()
    monkeypatch.setattr(isolation, "_shared", pool)
    pymupdf = import_pymupdf()
    original = pymupdf.open
    parent: list[str] = []

    def counted(*args, **kwargs):
        parent.append("open")
        return original(*args, **kwargs)

    monkeypatch.setattr(pymupdf, "open", counted)
    yield parent, lambda: log.read_text().splitlines()
    pool.stop()


async def test_a_dropped_pdf_is_opened_once_and_its_record_read_in_that_open(db_path, config, tmp_path, opens):
    parent, worker = opens
    assert config.processing.parse_isolation != "none"
    first, second = make_pasa_like_pdf(), make_pasa_like_pdf(with_doi="10.5555/pasa.2025.42")
    parent.clear()  # the factory draws the PDFs with PyMuPDF
    path = tmp_path / "pasa.pdf"
    path.write_bytes(first)
    async with HaikuRAG(db_path, config, create=True) as client:
        outcome = await client.ingest_file(path, embed=False)
        assert outcome.status == "ingested", outcome.reason
        record = bibliographic(outcome.document.metadata)
        assert parent == [] and worker() == ["open"]

        # a second version of the file: parsed again, opened once again
        path.write_bytes(second)
        again = await client.ingest_file(path, embed=False)
        assert again.status == "updated", again.reason
        assert parent == [] and worker() == ["open", "open"]
    assert record is not None and record.source == "first-page"
    assert record.title == PASA_TITLE
    assert [c.family for c in record.creators] == [family for _, family, _ in PASA_AUTHORS]
    assert bibliographic(again.document.metadata).doi == "10.5555/pasa.2025.42"
