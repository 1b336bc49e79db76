"""Bad documents: each is ingested or refused with a specific category and message, nothing
crashes or hangs, stored documents stay untouched, and the store passes `haiku-rag doctor`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pdf_factory
import pytest

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.doctor import run_doctor
from haiku.rag.operations import Stage
from haiku.rag.store.engine import Store

from .badfiles import KNOWN_CATEGORIES, make_bad_files, snapshot
from .stalling import STUCK_NAME


@pytest.fixture
def library(tmp_path):
    """A store already holding one good document."""
    folder = tmp_path / "good"
    folder.mkdir()
    pdf_factory.make_report_pdf(folder / "report.pdf")
    db = tmp_path / "lib.lancedb"
    assert main(["--db", str(db), "add-src", str(folder)]) == 0
    return db


def _snapshot(db: Path) -> dict:
    store = Store(str(db), read_only=True)
    try:
        return snapshot(store)
    finally:
        store.close()


def test_every_generated_bad_file_is_handled_through_add_src(tmp_path, library, capsys):
    expected = make_bad_files(tmp_path / "bad")
    before = _snapshot(library)
    capsys.readouterr()

    assert main(["--db", str(library), "add-src", str(tmp_path / "bad"), "--json"]) == 0
    records = {Path(r["source"]).name: r for r in json.loads(capsys.readouterr().out)}
    assert set(records) == set(expected)
    for name, record in records.items():
        outcome = "ingested" if record["status"] == "ingested" else record["category"]
        assert outcome in expected[name], (name, record)
        if record["status"] == "failed":
            assert record["category"] in KNOWN_CATEGORIES
            assert name in record["reason"], record  # the message names the file

    after = _snapshot(library)
    assert {k: after[k] for k in before} == before  # the earlier document is untouched
    assert main(["--db", str(library), "doctor"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "every chunk has its document" in out

    # The encrypted one goes in once its password is given.
    assert (
        main(
            [
                "--db",
                str(library),
                "add-src",
                str(tmp_path / "bad" / "encrypted.pdf"),
                "--password",
                "s3cret",
            ]
        )
        == 0
    )
    assert "ingested" in capsys.readouterr().out


def test_a_single_bad_file_is_a_one_line_error_and_a_non_zero_exit(tmp_path, library, capsys):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n" + bytes(64))
    capsys.readouterr()
    assert main(["--db", str(library), "add-src", str(path), "--json"]) == 1
    [record] = json.loads(capsys.readouterr().out)
    assert record["status"] == "failed" and record["category"] in KNOWN_CATEGORIES


async def test_a_file_that_stalls_the_parser_is_stopped_and_reported(
    tmp_path, db_path, config, stalling_worker
):
    # The stuck file stalls for ever (the worker blocks on it), so any bound stops it: a short
    # one only for that file keeps the test quick, while the good files keep the default bound
    # and cannot time out on a slow or loaded machine.
    good = pdf_factory.make_report_pdf(tmp_path / "good.pdf").path
    stuck = pdf_factory.make_report_pdf(tmp_path / STUCK_NAME).path  # the worker stalls on it
    async with HaikuRAG(db_path, config, create=True) as client:
        first = await client.ingest_file(good, embed=False)
        assert first.status == "ingested"
        before = snapshot(client.store)
        stalled_pid = stalling_worker.pid

        default_bound = client.config.processing.parse_timeout_seconds
        client.config.processing.parse_timeout_seconds = 0.25
        outcome = await client.ingest_file(stuck, embed=False)
        client.config.processing.parse_timeout_seconds = default_bound
        assert outcome.status == "failed" and outcome.category == "timeout", outcome
        assert "stuck.pdf" in outcome.reason and "parse_timeout_seconds" in outcome.reason
        assert stalling_worker.pid is None  # killed, not left running

        # The stuck worker was replaced: the next file is parsed normally.
        other = pdf_factory.make_two_column_pdf(tmp_path / "next.pdf").path
        assert (await client.ingest_file(other, embed=False)).status == "ingested"
        assert stalling_worker.pid not in (None, stalled_pid)
        after = snapshot(client.store)
        assert {k: after[k] for k in before} == before
        assert run_doctor(client.store).ok


async def test_a_parser_process_that_dies_is_reported_and_replaced(
    tmp_path, db_path, config, stalling_worker
):
    crashing = pdf_factory.make_report_pdf(tmp_path / STUCK_NAME).path  # the worker stalls on it
    killed: list[int] = []

    def kill_worker_once_parsing(progress) -> None:
        # PARSING comes from the worker itself, which then blocks: killing it now is a death
        # mid-parse whatever the machine's speed.
        if progress.stage == Stage.PARSING and not killed:
            pid = stalling_worker.pid
            assert pid is not None
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)

    async with HaikuRAG(db_path, config, create=True) as client:
        outcome = await client.ingest_file(crashing, progress=kill_worker_once_parsing, embed=False)
        assert killed
        assert outcome.status == "failed" and outcome.category == "parser_failed", outcome
        assert "signal 9" in outcome.reason and STUCK_NAME in outcome.reason
        assert await client.list_documents() == []

        good = pdf_factory.make_report_pdf(tmp_path / "good.pdf").path
        assert (await client.ingest_file(good, embed=False)).status == "ingested"
        assert stalling_worker.pid not in (None, killed[0])
        assert run_doctor(client.store).ok


async def test_parsing_in_process_when_isolation_is_off(tmp_path, db_path, config):
    config.processing.parse_isolation = "none"
    good = pdf_factory.make_report_pdf(tmp_path / "good.pdf").path
    async with HaikuRAG(db_path, config, create=True) as client:
        outcome = await client.ingest_file(good, embed=False)
        assert outcome.status == "ingested"
        bad = tmp_path / "bad.pdf"
        bad.write_bytes(b"nope")
        assert (await client.ingest_file(bad, embed=False)).category == "damaged"


async def test_cancelling_a_parse_stops_the_worker_promptly(
    tmp_path, db_path, config, stalling_worker
):
    slow = pdf_factory.make_report_pdf(tmp_path / STUCK_NAME).path  # the worker stalls on it
    async with HaikuRAG(db_path, config, create=True) as client:
        # Cancel once the worker says it is parsing (a fixed delay raced a fast machine, where
        # the page was done first, and a busy one, where the worker was still starting).
        parsing = asyncio.Event()
        loop = asyncio.get_running_loop()

        parsing_pid: list[int | None] = []

        def on_progress(progress) -> None:
            if progress.stage == Stage.PARSING:
                parsing_pid.append(stalling_worker.pid)
                loop.call_soon_threadsafe(parsing.set)

        task = asyncio.create_task(client.ingest_file(slow, embed=False, progress=on_progress))
        await asyncio.wait_for(parsing.wait(), timeout=120)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await client.list_documents() == []
        # The worker stopped cooperatively (within the grace period) and was kept, not killed.
        assert stalling_worker.pid == parsing_pid[0] is not None
        good = pdf_factory.make_report_pdf(tmp_path / "good.pdf").path
        assert (await client.ingest_file(good, embed=False)).status == "ingested"
