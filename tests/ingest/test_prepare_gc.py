"""prepare_document pauses the cyclic garbage collector (speed) and leaves it as it was."""

from __future__ import annotations

import gc

import pymupdf
import pytest

from haiku.rag.config import AppConfig
from haiku.rag.errors import EmptyDocumentError
from haiku.rag.ingest.pipeline import prepare_document


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    if text:
        page.insert_text((72, 100), text, fontsize=11)
    data = doc.tobytes()
    doc.close()
    return data


def _prepare(data: bytes):
    config = AppConfig()
    config.processing.ocr = False
    return prepare_document(data, filename="a.pdf", uri="file:///a.pdf", config=config)


def test_the_collector_is_paused_during_the_work_and_restored_after(monkeypatch):
    import haiku.rag.ingest.chunker as chunker

    seen: list[bool] = []
    real = chunker.chunk_document

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(chunker, "chunk_document", spy)
    assert gc.isenabled()
    new = _prepare(_pdf("Parsing and chunking run with the collector paused."))
    assert new.chunks and seen == [False]
    assert gc.isenabled()


def test_the_collector_is_restored_after_a_failure_and_left_off_when_it_was_off():
    with pytest.raises(EmptyDocumentError):
        _prepare(_pdf(""))
    assert gc.isenabled()
    gc.disable()
    try:
        _prepare(_pdf("A caller that turned the collector off keeps it off."))
        assert not gc.isenabled()
    finally:
        gc.enable()
