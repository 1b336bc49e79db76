"""Fixtures of the reliability tests (secrets: a key, a keychain holding it, a library; a
parse worker that stalls on purpose)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import keyring
import pdf_factory
import pytest

from haiku.rag.models import KEYRING_SERVICE

from .secrets_helpers import MemoryKeyring
from .stalling import StallingWorker

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")


@pytest.fixture
def allow_requests(monkeypatch):
    """In-process conversations go to the local server (conftest forbids model requests)."""
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)


@pytest.fixture
def secret() -> str:
    return f"sk-haiku-{uuid.uuid4().hex}"


@pytest.fixture
def keychain(secret):
    previous = keyring.get_keyring()
    memory = MemoryKeyring()
    memory.set_password(KEYRING_SERVICE, "openai-compatible", secret)
    keyring.set_keyring(memory)
    yield memory
    keyring.set_keyring(previous)


@pytest.fixture
def chat_library(tmp_path) -> Path:
    db = tmp_path / "data" / "haiku.rag.lancedb"
    papers = tmp_path / "papers"
    papers.mkdir()
    pdf_factory.make_report_pdf(papers / "report.pdf")
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
    subprocess.run(
        [HAIKU_RAG, "--db", str(db), "add-src", str(papers)],
        check=True,
        env=env,
        capture_output=True,
        timeout=600,
    )
    return db


@pytest.fixture
def stalling_worker(monkeypatch):
    """Make the process-wide parse workers :class:`StallingWorker`s for one test; yields the
    first one (the one every parse uses when parses do not overlap)."""
    from haiku.rag.ingest import isolation

    pool = isolation.ParsePool(StallingWorker)
    monkeypatch.setattr(isolation, "_shared", pool)
    yield pool.first
    pool.stop()
