from __future__ import annotations

from collections.abc import Iterator

import pytest
from capabilities.corpus import Corpus, build_corpus

from haiku.rag.client import HaikuRAG


@pytest.fixture(scope="session")
def sandbox_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """The capability tests' corpus: five Markdown notes and the three-page report PDF."""
    return build_corpus(tmp_path_factory.mktemp("sandbox-corpus"))


@pytest.fixture(scope="session")
def sandbox_client(sandbox_corpus: Corpus) -> Iterator[HaikuRAG]:
    client = HaikuRAG(sandbox_corpus.db_path, sandbox_corpus.config, read_only=True)
    yield client
    client.close()
