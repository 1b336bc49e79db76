from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai.messages import BinaryImage

from capabilities.corpus import Corpus, build_corpus
from haiku.rag.capabilities.rag import RAGCapability, create_capability
from haiku.rag.client import HaikuRAG
from haiku.rag.store.models import SearchResult


@dataclass
class Deps:
    """Agent dependencies the way a host passes them: a plain state dict the capabilities share."""

    state: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("capabilities-corpus"))


@pytest.fixture(scope="session")
def lent_client(corpus: Corpus) -> Iterator[HaikuRAG]:
    """One read-only client for the session: loading the embedder once keeps the suite fast."""
    client = HaikuRAG(corpus.db_path, corpus.config, read_only=True)
    yield client
    client.close()


@pytest.fixture
def deps() -> Deps:
    return Deps()


@pytest.fixture
def make_rag(corpus: Corpus, lent_client: HaikuRAG):
    """RAG capabilities over the session corpus, sharing the session's client unless told otherwise."""

    def make(**kwargs: Any) -> RAGCapability:
        kwargs.setdefault("rag", lent_client)
        kwargs.setdefault("config", corpus.config)
        return create_capability(corpus.db_path, **kwargs)

    return make


PICTURE_REF = "#/pictures/0"  # the figure on page 2 of the report PDF


@pytest.fixture
def picture_hits(monkeypatch: pytest.MonkeyPatch) -> str:
    """Search results from the report PDF name its figure as matched evidence.

    Every hit on the report PDF names its figure here, so the rendering and labelling path runs
    on any query; real figure hits (ingest/figures.py) are tested end to end in
    tests/answering/test_figures_as_evidence.py.
    """
    original = RAGCapability.search_corpus

    async def with_picture(
        self: RAGCapability, query: str, limit: int | None
    ) -> list[SearchResult]:
        results = await original(self, query, limit)
        return [
            r.model_copy(update={"matched_refs": [*r.matched_refs, PICTURE_REF]})
            if r.document_uri.endswith("report.pdf")
            else r
            for r in results
        ]

    monkeypatch.setattr(RAGCapability, "search_corpus", with_picture)
    return PICTURE_REF


def user_image() -> BinaryImage:
    """A small picture a user might attach to a question."""
    import pymupdf

    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
    pixmap.set_rect(pixmap.irect, (200, 30, 30))
    return BinaryImage(data=pixmap.tobytes("png"), media_type="image/png")
