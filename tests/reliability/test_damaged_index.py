"""A damaged full-text index (issue 32): 64 flipped bytes in each index file made every
full-text and hybrid search fail while ``doctor`` passed every check. Doctor now runs a real
query through each index, says what is damaged, and ``doctor --repair`` rebuilds it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG


def _flip_index_files(db: Path) -> int:
    """XOR 64 bytes in the middle third of every file of the chunks table's full-text index
    folders (those holding a ``metadata.lance`` or ``part_*`` files)."""
    flipped = 0
    for folder in (db / "chunks.lance" / "_indices").iterdir():
        names = {f.name for f in folder.iterdir()}
        if "metadata.lance" not in names and not any(n.startswith("part_") for n in names):
            continue
        for file in folder.iterdir():
            data = bytearray(file.read_bytes())
            start = len(data) // 3
            for i in range(start, min(start + 64, len(data))):
                data[i] ^= 0xFF
            file.write_bytes(bytes(data))
            flipped += 1
    return flipped


def test_doctor_sees_a_damaged_full_text_index_and_repair_restores_search(db_path, config, capsys):
    async def fill() -> None:
        async with HaikuRAG(db_path, config, create=True) as client:
            for n in range(20):
                await client.create_document(f"Walrus herd {n} drifts on the floes near Svalbard", title=f"Walrus {n}", embed=False)
            await client.maintain_indexes(force=True)  # the rows are in the index files now

    async def count() -> int:
        async with HaikuRAG(db_path, config, read_only=True) as client:
            return len(await client.list_documents())

    asyncio.run(fill())
    assert _flip_index_files(db_path) >= 3

    db = ["--db", str(db_path)]
    assert main([*db, "search", "walrus floes", "--search-type", "fts"]) == 1
    assert "run `haiku-rag doctor`" in capsys.readouterr().err

    assert main([*db, "doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL full-text search works" in out and "doctor --repair" in out

    assert main([*db, "doctor", "--repair"]) == 0
    out = capsys.readouterr().out
    assert "rebuilt chunks.content_fts" in out and "all checks pass" in out

    assert main([*db, "search", "walrus floes", "--search-type", "fts"]) == 0
    assert "Walrus herd" in capsys.readouterr().out
    assert main([*db, "doctor"]) == 0
    assert asyncio.run(count()) == 20  # the repair touched no document
