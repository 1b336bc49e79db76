"""A process killed with SIGKILL in the middle of an ingest leaves a store that opens and holds
only whole documents. The default run kills once; `-m crash` runs the randomized suite."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pdf_factory
import pytest

from haiku.rag.doctor import run_doctor
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")


def _papers(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        maker = pdf_factory.make_report_pdf if i % 2 == 0 else pdf_factory.make_two_column_pdf
        maker(folder / f"paper-{i:02d}.pdf")


def _start_ingest(db: Path, folder: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [HAIKU_RAG, "--db", str(db), "add-src", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_for_store(db: Path, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Wait until the child has created the store (imports take a few seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (db / "settings.lance").exists() or process.poll() is not None:
            return
        time.sleep(0.05)
    raise AssertionError("the ingest process never created the store")


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


def _kill_during_ingest(tmp_path: Path, seed: int, files: int) -> int:
    rng = random.Random(seed)
    folder, db = tmp_path / f"papers-{seed}", tmp_path / f"lib-{seed}.lancedb"
    _papers(folder, files)
    process = _start_ingest(db, folder)
    _wait_for_store(db, process)
    time.sleep(rng.uniform(0.0, 3.0))
    assert process.poll() is None, "the ingest finished before it could be killed: give it more work"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    return _assert_whole(db)


def test_sigkill_mid_ingest_leaves_only_whole_documents(tmp_path):
    _kill_during_ingest(tmp_path, seed=1, files=6)


@pytest.mark.crash
@pytest.mark.parametrize("seed", range(20))
def test_randomized_sigkill_during_ingest_update_and_delete(tmp_path, seed):
    rng = random.Random(seed)
    _kill_during_ingest(tmp_path, seed, files=rng.randint(3, 8))
    # and again while the same folder is re-ingested with changed files (updates in place)
    folder, db = tmp_path / f"papers-{seed}", tmp_path / f"lib-{seed}.lancedb"
    for path in sorted(folder.glob("*.pdf"))[::2]:
        pdf_factory.make_rotated_pdf(path)  # new content at the same URI: an update in place
    process = _start_ingest(db, folder)
    time.sleep(rng.uniform(0.5, 5.0))
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    _assert_whole(db)
    # and while deleting
    store = Store(str(db))
    ids = [d.id for d in D.list_documents(store)]
    store.close()
    if ids:
        process = subprocess.Popen([HAIKU_RAG, "--db", str(db), "delete", ids[0]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 3.0))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        _assert_whole(db)
