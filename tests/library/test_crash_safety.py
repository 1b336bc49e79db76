"""A process killed with SIGKILL in the middle of an ingest, an update or a delete leaves a store
that opens and holds only whole documents, and `doctor` passes.

The default run kills once. The randomized suite is marked ``crash``:

    .venv/bin/python -m pytest -m crash tests/library/test_crash_safety.py -rA

It runs 24 seeded cases (8 per operation). Each child process first imports everything, opens
the store, starts the parse worker and loads the embedder, then says "go" and starts the
operation; the kill lands at a random moment of
the operation itself (not during start-up), and a kill that arrives after the operation ended
is retried with a shorter delay, so every case is a kill that landed mid-operation.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pdf_factory
import pytest

from haiku.rag.doctor import run_doctor
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

# The operation, run in a child process after it has printed "go".
CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    db, op, arg = sys.argv[1:4]

    async def main():
        config = load_config()
        async with HaikuRAG(db, config, create=True) as client:
            if op == "delete":
                ids = [d.id for d in await client.list_documents()]
            else:  # start the parse worker and load the embedder now, not after "go"
                from haiku.rag.ingest.isolation import parse_document

                parse_document(b"Warm-up text.", filename="w.txt", uri="w", config=config)
                client.embedder.embed_query("warm-up")
            print("go", flush=True)
            if op in ("ingest", "update"):
                await client.add_source(arg)
            elif op == "create":  # a script's loop; every third call replaces an earlier text
                for n in range(int(arg)):
                    uri = f"note://{n - n % 3 if n % 3 == 2 else n}"
                    await client.create_document(f"Note {n}: quokkas, glaciers and seed vaults. " * 20, uri=uri)
            else:
                for document_id in ids:
                    await client.delete_document(document_id)
        print("done", flush=True)

    asyncio.run(main())
    """
)
# Upper bound of the random kill delay after "go", per operation (seconds; halved on retry).
WINDOWS = {"ingest": 4.0, "update": 3.0, "delete": 0.6, "create": 4.0}


def _papers(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        maker = pdf_factory.make_report_pdf if i % 2 == 0 else pdf_factory.make_two_column_pdf
        maker(folder / f"paper-{i:02d}.pdf")


def _run_child(db: Path, op: str, arg: str = "") -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), op, arg],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline()  # blocks through imports and opening the store
    assert line.strip() == "go", f"child did not start the {op}: {line!r} (exit {process.poll()})"
    return process


def _kill_mid_operation(db: Path, op: str, arg: str, rng: random.Random, backup: Path) -> dict:
    """Kill the child at a random moment of ``op``; retry (from the same starting store) with a
    shorter window when the operation finished first. Returns what happened."""
    window = WINDOWS[op]
    for attempt in range(4):
        if attempt:
            shutil.rmtree(db)
            shutil.copytree(backup, db)
        process = _run_child(db, op, arg)
        delay = rng.uniform(0.0, window)
        time.sleep(delay)
        landed = process.poll() is None
        if landed:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        process.stdout.close()
        if landed:
            return {"op": op, "delay_s": round(delay, 3), "attempts": attempt + 1}
        window /= 2
    raise AssertionError(f"the {op} always finished before the kill")


def _assert_whole(db: Path) -> int:
    reader = Store(str(db), read_only=True)  # opening must work before any repair
    for document in D.list_documents(reader):
        chunks = D.get_chunks(reader, document)
        assert len(chunks) == document.chunk_count > 0
        assert D.get_items(reader, document)
        assert D.get_source_bytes(reader, document)
    reader.close()
    writer = Store(str(db))  # recovery removes any leftovers
    report = run_doctor(writer)
    assert report.ok, [c for c in report.checks if not c.ok]
    count = len(D.list_documents(writer))
    writer.close()
    return count


def _ingest(db: Path, folder: Path) -> None:
    process = _run_child(db, "ingest", str(folder))
    assert process.wait(timeout=600) == 0
    process.stdout.close()


def _case(tmp_path: Path, seed: int, op: str) -> dict:
    rng = random.Random(seed)
    folder, db, backup = tmp_path / "papers", tmp_path / "lib.lancedb", tmp_path / "backup.lancedb"
    _papers(folder, rng.randint(3, 6))
    if op in ("update", "delete"):
        _ingest(db, folder)
        before = _assert_whole(db)
        assert before > 0
    if op == "update":
        for path in sorted(folder.glob("*.pdf"))[::2]:
            pdf_factory.make_rotated_pdf(path)  # new content at the same URI: an update in place
    if db.exists():
        shutil.copytree(db, backup)
    else:
        backup.mkdir()
    record = _kill_mid_operation(db, op, "60" if op == "create" else str(folder), rng, backup)
    record["documents_after"] = _assert_whole(db)
    record["seed"] = seed
    if op == "update":
        assert record["documents_after"] == before  # an update never loses the document
    if op == "delete":
        assert record["documents_after"] <= before
    return record


def test_sigkill_mid_ingest_leaves_only_whole_documents(tmp_path):
    _case(tmp_path, seed=1, op="ingest")


@pytest.mark.crash
@pytest.mark.parametrize("seed", range(24))
def test_randomized_sigkill_during_ingest_update_and_delete(tmp_path, seed):
    op = ("ingest", "update", "delete")[seed % 3]
    record = _case(tmp_path, seed, op)
    print("CRASH-CASE " + json.dumps(record))  # collected for docs/reliability.md (-rA)


@pytest.mark.crash
@pytest.mark.parametrize("seed", range(6))
def test_randomized_sigkill_during_a_create_document_loop(tmp_path, seed):
    """Each create_document writes its document with its vectors in one transaction: a kill
    anywhere leaves whole documents only, and doctor passes (vectors included)."""
    record = _case(tmp_path, 100 + seed, "create")
    print("CRASH-CASE " + json.dumps(record))
