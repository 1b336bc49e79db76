"""The parse worker runs under a memory bound (issue 19, item 2): a few-KB PDF whose content
stream inflates to 1 GiB is refused as ``too_large`` with the setting named, and the next
file is parsed by a fresh worker."""

from __future__ import annotations

import sys

import pdf_factory
import pytest

from haiku.rag.client import HaikuRAG
from haiku.rag.ingest.isolation import shared_worker

from .badfiles import make_flate_bomb_pdf

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux only")


async def test_a_flate_bomb_is_refused_as_too_large_and_the_next_file_gets_a_fresh_worker(tmp_path, db_path, config):
    bomb = make_flate_bomb_pdf(tmp_path / "bomb.pdf")
    assert bomb.stat().st_size < 16_000
    first = pdf_factory.make_report_pdf(tmp_path / "first.pdf").path
    after = pdf_factory.make_two_column_pdf(tmp_path / "after.pdf").path
    # Below the bomb's 1 GiB, so it stops while inflating (quick); a report needs far less.
    config.processing.parse_memory_limit_mb = 512
    worker = shared_worker()
    async with HaikuRAG(db_path, config, create=True) as client:
        assert (await client.ingest_file(first, embed=False)).status == "ingested"
        bomb_worker = worker.pid
        bombed = await client.ingest_file(bomb, embed=False)
        assert (bombed.status, bombed.category) == ("failed", "too_large"), bombed.reason
        assert "512 MB memory limit" in bombed.reason and "parse_memory_limit_mb" in bombed.reason
        assert worker.pid is None  # the worker that hit the bound is gone
        assert (await client.ingest_file(after, embed=False)).status == "ingested"
        assert worker.pid not in (None, bomb_worker)
        assert {d.uri for d in await client.list_documents()} == {first.resolve().as_uri(), after.resolve().as_uri()}


async def test_without_a_limit_setting_nothing_is_bounded(tmp_path, config):
    """0 turns the bound off: an ordinary file parses the same."""
    config.processing.parse_memory_limit_mb = 0
    path = pdf_factory.make_report_pdf(tmp_path / "report.pdf").path
    async with HaikuRAG(tmp_path / "db", config, create=True) as client:
        outcome = await client.ingest_file(path, embed=False)
    assert outcome.status == "ingested"
