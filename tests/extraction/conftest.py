from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from extraction.papers import Paper, build_library, library_config, make_papers
from haiku.rag.client import HaikuRAG


@dataclass(frozen=True)
class Library:
    db_path: Path
    papers: list[Paper]
    ids: dict[str, str]  # paper title -> document id

    def paper(self, document_id: str) -> Paper:
        title = next(t for t, i in self.ids.items() if i == document_id)
        return next(p for p in self.papers if p.title == title)

    @property
    def document_ids(self) -> list[str]:
        return [self.ids[p.title] for p in self.papers]


@pytest.fixture(scope="session")
def papers_library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    """Ten generated papers ingested once per session (read-only: tests copy it)."""
    root = tmp_path_factory.mktemp("extraction-library")
    papers = make_papers(root)
    db_path, ids = build_library(root, papers)
    return Library(db_path, papers, ids)


@pytest.fixture
def library(papers_library: Library, tmp_path: Path) -> Library:
    """This test's own copy of the ten-paper library."""
    copy = tmp_path / "library.lancedb"
    shutil.copytree(papers_library.db_path, copy)
    return Library(copy, papers_library.papers, papers_library.ids)


def open_client(library: Library, root: Path) -> HaikuRAG:
    return HaikuRAG(library.db_path, library_config(root))


@pytest_asyncio.fixture
async def client(library: Library, tmp_path: Path) -> AsyncIterator[HaikuRAG]:
    async with open_client(library, tmp_path) as opened:
        yield opened


COLUMNS = [
    {"name": "Sample size", "type": "number", "question": "How many participants were enrolled?", "unit": "participants"},
    {"name": "Method", "question": "What study design was used?"},
    {"name": "Blinded", "type": "yes-no", "question": "Were the assessors blinded?"},
    {"name": "Dataset", "question": "Which dataset do the measurements come from?"},
]
