"""Searching while ingesting, in one process and across processes; a second writer process is
refused with a clear message and never corrupts the store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pdf_factory

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.doctor import run_doctor
from haiku.rag.operations import Stage
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")
QUERIES = [
    "marmalade crates",
    "lighthouse keepers",
    "tide tables",
    "customs brokers",
    "storms estuary",
]


def _papers(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        maker = pdf_factory.make_report_pdf if i % 2 == 0 else pdf_factory.make_two_column_pdf
        maker(folder / f"paper-{i:02d}.pdf")
    return folder


async def test_searching_ten_times_a_second_while_ingesting(tmp_path, db_path, config):
    first = pdf_factory.make_report_pdf(tmp_path / "first.pdf").path
    folder = _papers(tmp_path / "papers", 4)
    errors: list[BaseException] = []
    searches = 0
    # The import holds after its first file is stored until four searches have run: searches
    # really overlap the ingest, however fast this machine is.
    searched = threading.Event()

    def hold_after_first_file(progress) -> None:
        if progress.stage == Stage.DONE and not searched.is_set():
            searched.wait(timeout=120)

    async with HaikuRAG(db_path, config, create=True) as client:
        await client.ingest_file(first)
        ingest = asyncio.create_task(client.add_source(folder, progress=hold_after_first_file))

        while not ingest.done():
            if searches >= 4:
                searched.set()
            for search_type in ("hybrid", "fts"):
                try:
                    results = await client.search(
                        QUERIES[searches % len(QUERIES)], search_type=search_type
                    )
                    live = client.store.current_generations()
                    for result in results:  # never a chunk of a half-written document
                        assert result.document_id in live
                except BaseException as exc:  # noqa: BLE001 - every error counts
                    errors.append(exc)
                searches += 1
            await asyncio.sleep(0.1)
        outcomes = await ingest
        assert not errors, errors[:3]
        assert searches >= 4
        assert [o.status for o in outcomes] == ["ingested"] * 4
        assert len(await client.list_documents()) == 5
        assert run_doctor(client.store).ok


def test_a_reader_process_searches_while_this_one_ingests(tmp_path, db_path, config):
    first = pdf_factory.make_report_pdf(tmp_path / "first.pdf").path
    assert main(["--db", str(db_path), "add-src", str(first)]) == 0
    folder = _papers(tmp_path / "papers", 4)
    reader_code = textwrap.dedent(
        f"""
        import sys, time
        from haiku.rag.client import HaikuRAG
        from haiku.rag.config import load_config
        client = HaikuRAG({str(db_path)!r}, load_config(), read_only=True)
        print("ready", flush=True)
        n = 0
        while sys.stdin.readline().strip() == "search":
            client.search_sync("lighthouse keepers", search_type="fts")
            n += 1
            print(n, flush=True)
        """
    )
    reader = subprocess.Popen(
        [sys.executable, "-c", reader_code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout.readline().strip() == "ready"
    searched = 0

    def search_once(progress) -> None:  # from the ingest's own progress: searches interleave
        nonlocal searched
        if progress.stage in (Stage.STORING, Stage.DONE, Stage.EMBEDDING):
            reader.stdin.write("search\n")
            reader.stdin.flush()
            reader.stdout.readline()
            searched += 1

    async def ingest() -> None:
        async with HaikuRAG(db_path, config) as client:
            outcomes = await client.add_source(folder, progress=search_once)
            assert all(o.status == "ingested" for o in outcomes)

    asyncio.run(ingest())
    reader.stdin.write("stop\n")
    reader.stdin.flush()
    _, stderr = reader.communicate(timeout=120)
    assert reader.returncode == 0, stderr
    assert searched >= 8


def test_a_second_writer_process_is_refused_and_changes_nothing(tmp_path, db_path, config, capsys):
    first = pdf_factory.make_report_pdf(tmp_path / "first.pdf").path
    other = pdf_factory.make_two_column_pdf(tmp_path / "other.pdf").path

    async def hold_the_store_and_try_a_second_writer() -> subprocess.CompletedProcess[str]:
        async with HaikuRAG(db_path, config, create=True) as client:
            await client.ingest_file(first)  # this process is now the writer
            return subprocess.run(
                [HAIKU_RAG, "--db", str(db_path), "add-src", str(other)],
                capture_output=True,
                text=True,
                timeout=600,
            )

    second = asyncio.run(hold_the_store_and_try_a_second_writer())
    assert second.returncode == 1
    assert "being written by pid" in second.stderr and "Traceback" not in second.stderr
    assert len(second.stderr.strip().splitlines()) == 1

    store = Store(str(db_path))
    assert [d.uri for d in D.list_documents(store)] == [first.resolve().as_uri()]
    assert run_doctor(store).ok
    store.close()
    # Once the first writer has closed, the second one goes ahead.
    assert main(["--db", str(db_path), "add-src", str(other)]) == 0
