"""The public batch import (issue 17) and folders at scale (issue 19, item 6): writes are
batched across small files, each document stays atomic, a link loop is one skipped file."""

from __future__ import annotations

import os

import pytest

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG, ImportItem
from haiku.rag.doctor import run_doctor
from haiku.rag.errors import StoreWriteError
from haiku.rag.operations import Stage
from haiku.rag.store import batch as B
from haiku.rag.store import documents as D
from haiku.rag.store import schema as S


def _notes(folder, count: int, start: int = 0):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        (folder / f"note-{i:04d}.txt").write_text(f"Harbour note {i}: the keeper logged ship {i} at dawn.\n")
    return folder


def _versions(client) -> dict[str, int]:
    return {name: client.store.table(name).version for name in (S.DOCUMENTS, S.CHUNKS, S.DOCUMENT_BLOBS)}


async def test_a_folder_of_small_files_is_written_a_batch_at_a_time(tmp_path, db_path, config):
    folder = _notes(tmp_path / "notes", 150)
    async with HaikuRAG(db_path, config, create=True) as client:
        before = _versions(client)
        outcomes = await client.add_source(folder, embed=False)
        after = _versions(client)
        assert [o.status for o in outcomes] == ["ingested"] * 150
        assert len(await client.list_documents()) == 150
        # 150 files in batches of 64: 3 writes per table (one per file made 150)
        for name in after:
            assert after[name] - before[name] <= 3 + 2, (name, before[name], after[name])
        assert run_doctor(client.store).ok


async def test_import_documents_takes_in_memory_documents_and_reports_progress(tmp_path, db_path, config):
    items = (
        ImportItem(f"# Abstract {i}\n\nThe keeper logged ship {i}.\n", uri=f"scifact://{i}", filename=f"{i}.md", title=f"Abstract {i}")
        for i in range(70)
    )  # a generator: the import never needs the whole list
    seen: list[tuple[int, int]] = []

    def progress(p) -> None:
        if p.stage is Stage.DONE and p.done:
            seen.append((p.done, p.total))

    async with HaikuRAG(db_path, config, create=True) as client:
        outcomes = await client.import_documents(items, progress=progress, embed=False)
        assert [o.status for o in outcomes] == ["ingested"] * 70
        assert sorted(d for d, _ in seen) == list(range(1, 71))
        document = await client.get_document_by_uri("scifact://42")
        assert document.title == "Abstract 42"
        assert "ship 42" in await client.get_content(document)
        # again: unchanged, nothing written
        versions = _versions(client)
        again = await client.import_documents(
            [ImportItem(f"# Abstract {i}\n\nThe keeper logged ship {i}.\n", uri=f"scifact://{i}", filename=f"{i}.md") for i in range(70)],
            embed=False,
        )
        assert {o.status for o in again} == {"unchanged"}
        assert _versions(client) == versions


async def test_a_failed_batch_write_loses_no_document_and_leaves_none_half_written(tmp_path, db_path, config, monkeypatch):
    folder = _notes(tmp_path / "notes", 20)
    monkeypatch.setattr(B, "BATCH_DOCUMENTS", 8)
    monkeypatch.setattr(B.DocumentBatch, "__init__", _small_batches)
    real_add = D._add_content
    calls = 0

    def full_disk_on_the_second_batch(store, blobs, items, chunks):
        nonlocal calls
        calls += 1
        real_add(store, blobs, items, chunks)
        if calls == 2:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(D, "_add_content", full_disk_on_the_second_batch)
    async with HaikuRAG(db_path, config, create=True) as client:
        with pytest.raises(StoreWriteError, match="disk is full"):
            await client.add_source(folder, embed=False)
        stored = await client.list_documents()
        assert len(stored) == 8  # the first batch, whole
        for document in stored:
            assert len(await client.get_chunks(document)) == document.chunk_count
        monkeypatch.setattr(D, "_add_content", real_add)
        outcomes = await client.add_source(folder, embed=False)
        assert sorted(o.status for o in outcomes) == ["ingested"] * 12 + ["unchanged"] * 8
        assert run_doctor(client.store).ok


def _small_batches(self, store, max_documents=None, max_bytes=B.BATCH_BYTES):
    self.store, self.max_documents, self.max_bytes = store, B.BATCH_DOCUMENTS, max_bytes
    self._pending, self._uris, self._bytes = [], set(), 0


async def test_a_large_import_is_compacted_after_it(tmp_path, db_path, config):
    folder = _notes(tmp_path / "notes", 300)
    async with HaikuRAG(db_path, config, create=True) as client:
        await client.add_source(folder, embed=False)
        for name in (S.DOCUMENTS, S.CHUNKS, S.DOCUMENT_BLOBS):
            fragments = client.store.table(name).stats()["fragment_stats"]["num_fragments"]
            assert fragments <= 2, (name, fragments)


def test_a_symlink_loop_is_skipped_and_the_folder_goes_on(tmp_path, db_path, capsys):
    folder = _notes(tmp_path / "notes", 2)
    os.symlink("loop-b", folder / "loop-a")
    os.symlink("loop-a", folder / "loop-b")
    assert main(["--db", str(db_path), "add-src", "--no-embed", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "Traceback" not in out
    lines = [line for line in out.splitlines() if line.startswith(("ingested", "skipped"))]
    assert sum(1 for line in lines if line.startswith("skipped") and line.endswith("loop-a: symlink loop")) == 1
    assert sum(1 for line in lines if line.startswith("ingested") and "note-0000.txt" in line) == 1
    assert "2 ingested, 2 skipped" in out
